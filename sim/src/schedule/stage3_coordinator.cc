// The PartitionedParameterCoordinator of DeepSpeed stage 3 replayed step by step
// (deepspeed_zero.md §7.2 trace state machine, §7.3 FETCH and prefetch, §7.4 RELEASE, §7.5 gather
// shapes). It keeps the same state DeepSpeed keeps — param status, the in-flight registry with its
// handles, the module and param traces, the prefetch queue, last-consumed steps, active modules and
// n_available — and emits the collectives, allocations and frees that state changes cause.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "schedule/stage3_internal.h"

namespace zerosim::schedule::s3 {
namespace {

// PPC's default for "most recent step a param was fetched for" (int(-1e10)).
constexpr std::int64_t kNever = -10000000000LL;
constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();

std::int64_t to_i64(std::uint64_t v) {
  return v > static_cast<std::uint64_t>(kMaxI64) ? kMaxI64 : static_cast<std::int64_t>(v);
}

std::int64_t sub_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r))
    return b < 0 ? kMaxI64 : std::numeric_limits<std::int64_t>::min();
  return r;
}

bool contains(const std::vector<std::uint32_t>& v, std::uint32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Coordinator::Coordinator(Context& cx)
    // v0.14.4 starts in RECORD (its partitioned_param_coordinator.py:95), edaa722 in INVALID
    // (:108).
    : cx_(cx),
      mode_(cx.version == DeepSpeedVersion::V0_14_4 ? Mode::Record : Mode::Invalid),
      ps_(cx.m.params.size()) {
  for (auto& st : ps_) st.last_consumed = kNever;
}

CollectiveKind Coordinator::fetch_kind() const {
  return cx_.z.use_all_reduce_for_fetch_params ? CollectiveKind::AllReduce
                                               : CollectiveKind::AllGather;
}

void Coordinator::broadcast_list(const std::string& what, Elements length) {
  // assert_ints_same_as_other_ranks: at edaa722 a 1-element length broadcast precedes each list
  // (#7525); v0.14.4 broadcasts the list only.
  // In place on executor-owned int64 scratch (the ids are the coordinator's, not model data).
  if (cx_.version == DeepSpeedVersion::Edaa722)
    cx_.collective(CollectiveKind::Broadcast, 1, 1, kTraceIdDType, ReduceOp::None, Stream::Compute,
                   "trace check: length of " + what, {}, 0, region(cx_.trace_ids(1), 0, 1));
  const Region ids = length == 0 ? Region{} : region(cx_.trace_ids(length), 0, length);
  cx_.collective(CollectiveKind::Broadcast, length, length, kTraceIdDType, ReduceOp::None,
                 Stream::Compute, "trace check: " + what + " (" + std::to_string(length) + ")", {},
                 0, ids);
}

void Coordinator::reset_step() {
  cx_.e.marker("reset_step");
  clean_inflight();
  if (mode_ != Mode::Complete) {
    broadcast_list("module ids", recorded_.size());
    if (mode_ == Mode::Record) {
      trace_ = recorded_;
      param_trace_.clear();
      for (std::uint32_t s = 0; s < trace_.size(); ++s)
        for (auto p : cx_.walk.modules[trace_[s]].params) param_trace_.emplace_back(p, s);
      broadcast_list("param ds_ids", param_trace_.size());
      broadcast_list("param step ids", param_trace_.size());
      mode_ = Mode::Complete;
    } else {
      mode_ = Mode::Record;
    }
    recorded_.clear();
  }
  queue_head_ = 0;
  for (auto& st : ps_) st.last_consumed = kNever;
  step_id_ = 0;
  n_available_ = 0;
}

void Coordinator::invalidate() {
  mode_ = Mode::Invalid;
  trace_.clear();
  param_trace_.clear();
  recorded_.clear();
  queue_head_ = 0;
  for (auto& st : ps_) st.last_consumed = kNever;
  clean_inflight();
}

void Coordinator::clean_inflight() {
  for (std::uint32_t p = 0; p < ps_.size(); ++p) {
    if (ps_[p].handle == kNone) continue;
    wait(p);
    free_param(p);
  }
}

void Coordinator::fetch(std::uint32_t module, bool backward) {
  const Module& mod = cx_.walk.modules[module];
  if (mode_ == Mode::Complete && (step_id_ >= trace_.size() || trace_[step_id_] != module))
    invalidate();
  if (mode_ == Mode::Record) recorded_.push_back(module);
  const std::string what = cx_.e.label(backward ? "bwd " : "fwd ", mod.name);
  to_gather_.clear();
  for (auto p : mod.params)
    if (ps_[p].status == Status::NotAvailable) to_gather_.push_back(p);
  if (!to_gather_.empty()) gather(to_gather_, cx_.e.label("fetch ", what));
  for (auto p : mod.params) {
    if (!contains(ps_[p].active, module)) ps_[p].active.push_back(module);
    if (ps_[p].handle != kNone) wait(p);
  }
  // The compute stream waits for the all-gather stream before the module runs. DeepSpeed's host
  // also synchronizes on the all-gather-stream event of the third-last waited param when more than
  // 2 are outstanding (__max_ongoing_fetch_events). That point is earlier on the same stream than
  // this wait_stream, and launches are instantaneous here, so the throttle never changes a time.
  DepList deps;
  if (cx_.gather_stream != Stream::Compute && last_gather_op_ != kNone)
    deps.push_back(last_gather_op_);
  cx_.e.marker(cx_.e.label("fetch ", what), Stream::Compute, std::move(deps));
  if (mode_ == Mode::Complete) {
    consume_own(mod);
    prefetch();
  }
  ++step_id_;
}

// Pops the module's own entries off the prefetch queue (those no earlier prefetch scan consumed).
void Coordinator::consume_own(const Module& mod) {
  const auto step = static_cast<std::int64_t>(step_id_);
  fresh_.clear();
  for (auto p : mod.params)
    if (ps_[p].last_consumed < step) fresh_.push_back(p);
  popped_.clear();
  while (queue_head_ < param_trace_.size() && popped_.size() < fresh_.size()) {
    const auto [q, s] = param_trace_[queue_head_++];
    ps_[q].last_consumed = s;
    if (!contains(popped_, q)) popped_.push_back(q);
  }
  std::sort(popped_.begin(), popped_.end());
  if (popped_ != fresh_)  // DeepSpeed raises "tracing error at step ..." here
    cx_.internal.error("schedule (internal error)", "",
                       "stage 3 trace: expected the next queue entries to be the params of " +
                           quote(mod.name) + " at step " + std::to_string(step_id_));
}

void Coordinator::prefetch() {
  const std::uint64_t bucket = cx_.z.allgather_sequential ? 1 : cx_.z.prefetch_bucket_size;
  if (bucket == 0) return;
  const std::int64_t budget =
      std::min(sub_sat(to_i64(cx_.z.max_live_parameters), n_available_), to_i64(bucket));
  std::int64_t volume = 0;
  std::vector<std::uint32_t>& pf = to_gather_;  // fetch's list is done with by now
  pf.clear();
  // Strict <: the param that crosses the budget is still taken (overshoot by one).
  while (queue_head_ < param_trace_.size() && volume < budget) {
    const auto [q, s] = param_trace_[queue_head_++];
    const bool take = ps_[q].status == Status::NotAvailable && !contains(pf, q);
    ps_[q].last_consumed = std::max<std::int64_t>(ps_[q].last_consumed, s);
    if (!take) continue;
    pf.push_back(q);
    volume += to_i64(cx_.n(q));
  }
  if (volume > 0) gather(pf, "prefetch");
}

void Coordinator::gather(std::vector<std::uint32_t>& params, const std::string& why) {
  std::sort(params.begin(), params.end());  // all S3 coalesced collectives sort by ds_id
  for (auto p : params) {
    n_available_ += to_i64(cx_.n(p));
    ps_[p].status = Status::InFlight;
  }
  if (cx_.z.allgather_sequential || params.size() == 1) {
    for (auto p : params) {
      handles_.push_back(
          {static_cast<std::uint32_t>(handle_params_.size()), 1, kNone, 0, 1, false});
      handle_params_.push_back(p);
      gather_single(p, why, static_cast<std::uint32_t>(handles_.size() - 1));
    }
    return;
  }
  const auto count = static_cast<std::uint32_t>(params.size());
  handles_.push_back(
      {static_cast<std::uint32_t>(handle_params_.size()), count, kNone, 0, count, false});
  handle_params_.insert(handle_params_.end(), params.begin(), params.end());
  gather_coalesced(params, why, static_cast<std::uint32_t>(handles_.size() - 1));
}

// offload_param: the partitions live on the host and are copied to the device before the gather
// (ds_tensor.to(device) in _allgather_param / all_gather_coalesced: partition_parameters.py:1974,
// :1332 at edaa722). Persistent params included: _partition_param puts their partition on the
// device (:1801-1802), but the optimizer's _create_fp16_partitions_with_defragmentation moves
// every trainable ds_tensor into the pinned CPU flat buffer (stage3.py:950-954 with
// _move_to_flat_buffer :832-834, `src.data = dest.data`; the same in v0.14.4). A persistent param
// outside the optimizer is never moved and is read in place (Context::staged_from_host). Returns
// the device copy, or kNone.
std::uint32_t Coordinator::stage_partitions_on_device(std::span<const std::uint32_t> params,
                                                      Elements& numel) {
  numel = 0;
  if (!cx_.offload_param) return kNone;
  for (auto p : params)
    if (cx_.staged_from_host(p)) numel += cx_.c(p);
  if (numel == 0) return kNone;
  const Stream gs = cx_.gather_stream;
  const auto tmp = cx_.pool.acquire(cx_.e, "offloaded partitions on device", BufferCategory::Temp,
                                    cx_.lp, numel);
  cx_.e.alloc(tmp, gs);
  std::vector<Piece> parts;  // each param's host partition
  parts.reserve(params.size());
  for (auto p : params)
    if (cx_.staged_from_host(p)) parts.push_back(cx_.own_piece(p));
  cx_.data_op(OpKind::HostToDevice, gs, numel, cx_.lp, cx_.pieces(std::move(parts)), region(tmp),
              "H2D partitions for gather");
  return tmp;
}

// Each param's partition as the gather reads it: its chunk of the device copy under
// offload_param (`tmp`), else its LP partition.
std::vector<Piece> Coordinator::own_sources(const std::vector<std::uint32_t>& params,
                                            std::uint32_t tmp) const {
  std::vector<Piece> out;
  Elements at = 0;  // the next param's chunk in the device copy
  for (auto p : params) {
    if (tmp != kNone && cx_.staged_from_host(p)) {
      out.push_back({tmp, at, cx_.c(p)});
      at += cx_.c(p);
    } else {
      out.push_back(cx_.own_piece(p));
    }
  }
  return out;
}

Piece Coordinator::own_source(std::uint32_t p, std::uint32_t tmp) const {
  if (tmp != kNone && cx_.staged_from_host(p)) return {tmp, 0, cx_.c(p)};
  return cx_.own_piece(p);
}

// One param: the output W*c is the param's storage (a view of its first n elements).
// use_all_reduce_for_fetch_params: a zero-filled W·c buffer, the rank's slice copied in at r·c
// (only its real elements: the padding stays 0), one sum all-reduce in place.
void Coordinator::gather_single(std::uint32_t p, const std::string& why, std::uint32_t h) {
  const Stream gs = cx_.gather_stream;
  const Elements c = cx_.c(p), out = c * cx_.world;
  const CollectiveKind k = fetch_kind();
  const bool reduce = k == CollectiveKind::AllReduce;
  cx_.e.alloc(cx_.padded_buf[p], gs, kNone, reduce);
  Elements staged = 0;
  const auto tmp = stage_partitions_on_device(std::span(&p, 1), staged);
  const Piece from = own_source(p, tmp);
  const Region own = region(from.buffer, from.offset, from.length);
  if (reduce)
    cx_.data_op(OpKind::Copy, gs, c, cx_.lp, own,
                cx_.pieces({{.buffer = cx_.padded_buf[p],
                             .offset = 0,
                             .length = c,
                             .rank_stride = c,
                             .limit = cx_.n(p)}}),
                cx_.e.label("own partition into the all-reduce buffer: ", cx_.m.params[p].name));
  last_gather_op_ = cx_.collective(
      k, reduce ? out : c, out, cx_.lp, reduce ? ReduceOp::Sum : ReduceOp::None, gs,
      cx_.e.label(why, ": ", cx_.m.params[p].name), {}, kNone,
      reduce ? region(cx_.padded_buf[p]) : own, reduce ? Region{} : region(cx_.padded_buf[p]));
  if (tmp != kNone) {
    cx_.e.free(tmp, gs);
    cx_.pool.release(tmp);
  }
  ps_[p].storage = cx_.padded_buf[p];
  ps_[p].handle = h;
}

// >= 2 params: own partitions copied into slot r of a W*Σc staging buffer, one collective; each
// param gets a fresh n-element tensor when the handle is first waited on.
void Coordinator::gather_coalesced(const std::vector<std::uint32_t>& params, const std::string& why,
                                   std::uint32_t h) {
  const Stream gs = cx_.gather_stream;
  Elements sum_c = 0;
  for (auto p : params) sum_c += cx_.c(p);
  const Elements out = sum_c * cx_.world;
  const CollectiveKind k = fetch_kind();
  const bool gather = k == CollectiveKind::AllGather;
  const auto staging =
      cx_.pool.acquire(cx_.e, "all-gather staging", BufferCategory::CommBucket, cx_.lp, out);
  cx_.e.alloc(staging, gs, kNone, !gather);  // the all-reduce variant's buffer is torch.zeros
  Elements staged = 0;
  const auto tmp = stage_partitions_on_device(params, staged);
  // From each param's partition (under offload_param the device copies just staged) into the
  // rank's slot; for the all-reduce variant into each param's segment at prefix_n + r·c, only its
  // real elements (partition_parameters.py all_gather_coalesced: start_param += ds_numel).
  const Region own = cx_.pieces(own_sources(params, tmp));
  Region into = rank_slice(staging, sum_c);
  if (!gather) {
    std::vector<Piece> slices;
    Elements seg = 0;
    for (auto p : params) {
      slices.push_back({.buffer = staging,
                        .offset = seg,
                        .length = cx_.c(p),
                        .rank_stride = cx_.c(p),
                        .limit = seg + cx_.n(p)});
      seg += cx_.n(p);
    }
    into = cx_.pieces(std::move(slices));
  }
  cx_.data_op(OpKind::Copy, gs, sum_c, cx_.lp, own, into, "own partitions into the staging slot");
  last_gather_op_ =
      cx_.collective(k, gather ? sum_c : out, out, cx_.lp, gather ? ReduceOp::None : ReduceOp::Sum,
                     gs, cx_.e.label(why, ": ", params.size(), " params"), {}, kNone,
                     gather ? into : region(staging), gather ? region(staging) : Region{});
  if (tmp != kNone) {
    cx_.e.free(tmp, gs);
    cx_.pool.release(tmp);
  }
  handles_[h].staging = staging;
  handles_[h].staging_numel = out;
  for (auto p : params) ps_[p].handle = h;
}

void Coordinator::wait(std::uint32_t p) {
  const std::uint32_t hid = ps_[p].handle;
  const Stream gs = cx_.gather_stream;
  if (!handles_[hid].complete) {
    handles_[hid].complete = true;
    const Elements sum_c = handles_[hid].staging_numel / cx_.world;
    Elements prefix_c = 0, prefix_n = 0;  // q's chunk in each rank's slot; its all-reduce segment
    const Handle hd = handles_[hid];
    for (std::uint32_t i = hd.first; i < hd.first + hd.count; ++i) {
      const std::uint32_t q = handle_params_[i];
      if (handles_[hid].staging != kNone) {
        cx_.e.alloc(cx_.full_buf[q], gs);
        // From q's chunk of every rank's slot (runs of c, Σc apart, cut at n), or its segment of
        // the all-reduced buffer.
        const Piece from = fetch_kind() == CollectiveKind::AllGather
                               ? Piece{.buffer = handles_[hid].staging,
                                       .offset = prefix_c,
                                       .length = cx_.n(q),
                                       .block = cx_.c(q),
                                       .block_stride = sum_c}
                               : Piece{handles_[hid].staging, prefix_n, cx_.n(q)};
        cx_.data_op(OpKind::Copy, gs, cx_.n(q), cx_.lp, cx_.pieces({from}), region(cx_.full_buf[q]),
                    cx_.e.label("assemble ", cx_.m.params[q].name));
        ps_[q].storage = cx_.full_buf[q];
      }
      prefix_c += cx_.c(q);
      prefix_n += cx_.n(q);
      ps_[q].status = Status::Available;
    }
  }
  ps_[p].handle = kNone;
  Handle& h = handles_[hid];
  if (--h.registered == 0 &&
      h.staging != kNone) {  // the last registered param drops the staging buffer
    cx_.e.free(h.staging, gs);
    cx_.pool.release(h.staging);
  }
}

void Coordinator::free_param(std::uint32_t p) {
  ParamState& st = ps_[p];
  if (st.status != Status::Available || !st.active.empty()) return;
  cx_.e.free(st.storage);
  st.storage = kNone;
  st.status = Status::NotAvailable;
  n_available_ -= to_i64(cx_.n(p));
}

void Coordinator::params_to_release(const Module& mod, std::vector<std::uint32_t>& cand) const {
  const auto step = static_cast<std::int64_t>(step_id_);
  cand.clear();
  for (auto p :
       mod.params)  // a use the prefetcher skipped past keeps the param (its last use > now)
    if (!cx_.persistent(p) && ps_[p].last_consumed <= step) cand.push_back(p);
  std::uint64_t walked = 0;
  for (std::size_t i = step_id_; i < trace_.size() && !cand.empty(); ++i) {
    if (walked >= cx_.z.max_reuse_distance) break;
    for (auto q : cx_.walk.modules[trace_[i]].params) {
      cand.erase(std::remove(cand.begin(), cand.end(), q), cand.end());
      walked = checked_add(walked, cx_.n(q)).value_or(std::numeric_limits<std::uint64_t>::max());
    }
  }
}

void Coordinator::release(std::uint32_t module) {
  const Module& mod = cx_.walk.modules[module];
  // Recording or invalid trace: everything goes, persistent params included.
  const bool complete = mode_ == Mode::Complete;
  if (complete) {
    params_to_release(mod, release_);
    if (releasing_.size() < ps_.size()) releasing_.assign(ps_.size(), 0);
    for (auto p : release_) releasing_[p] = 1;
  }
  for (auto p : mod.params) {
    auto& act = ps_[p].active;
    act.erase(std::remove(act.begin(), act.end(), module), act.end());
    if (!complete || releasing_[p] != 0) free_param(p);
  }
  if (complete)
    for (auto p : release_) releasing_[p] = 0;
}

void Coordinator::release_all() {
  for (std::uint32_t p = 0; p < ps_.size(); ++p) {
    if (ps_[p].handle != kNone) wait(p);
    ps_[p].active.clear();
    free_param(p);
  }
}

void Coordinator::gather_persistent() {
  std::uint32_t issued = 0;
  for (std::uint32_t p = 0; p < ps_.size(); ++p) {  // the persistent list is in ds_id order
    if (!cx_.persistent(p) || ps_[p].status != Status::NotAvailable) continue;
    cx_.e.alloc(cx_.padded_buf[p]);
    // Under offload_param the partition is on the host (stage_partitions_on_device): copied into
    // the rank's slot of the output first, as the hook registration gathers do.
    const bool staged = cx_.staged_from_host(p);
    const Region in = staged ? rank_slice(cx_.padded_buf[p], cx_.c(p)) : cx_.own_partition(p);
    if (staged)
      cx_.data_op(OpKind::HostToDevice, Stream::Compute, cx_.c(p), cx_.lp, cx_.own_partition(p), in,
                  cx_.e.label("H2D partition of persistent ", cx_.m.params[p].name));
    cx_.collective(CollectiveKind::AllGather, cx_.c(p), cx_.c(p) * cx_.world, cx_.lp,
                   ReduceOp::None, Stream::Compute,
                   cx_.e.label("post-step gather of persistent ", cx_.m.params[p].name), {}, kNone,
                   in, region(cx_.padded_buf[p]));
    ps_[p].status = Status::Available;  // outside the coordinator: n_available is not counted
    ps_[p].storage = cx_.padded_buf[p];
    ++issued;
  }
  if (issued == 0) return;
  cx_.e.sync("post-step gather: device synchronize");
}

}  // namespace zerosim::schedule::s3
