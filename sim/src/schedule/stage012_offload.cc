// CpuOffload (stage012_pieces.h): DeepSpeedZeroOptimizer's CPU optimizer offload at stage 1/2
// (deepspeed_zero.md §3.3, §4.5): the host buffers created by __init__, the copies to and from
// host memory after each flush (copy_grads_in_partition, stage_1_and_2.py:1650-1664 at edaa722)
// and the copy of the host-updated LP slice back to the GPU after step()'s update.
#include <algorithm>
#include <string>
#include <utility>

#include "schedule/stage012_pieces.h"

namespace zerosim::schedule::s12 {
namespace {

Buffer offload_buffer(std::string name, std::string spec, MemoryPool pool, DType dt, Elements numel,
                      std::uint32_t slot = kNone) {
  return make_buffer(std::move(name), std::move(spec), BufferCategory::Grad, pool, dt, numel, true,
                     slot);
}

// A host transient of __init__ (unpinned memory, not persistent).
Buffer init_transient(std::string name, DType dt, Elements numel) {
  Buffer b = offload_buffer(std::move(name), "T5", MemoryPool::Host, dt, numel);
  b.category = BufferCategory::Temp;
  b.persistent = false;
  return b;
}

}  // namespace

// With pinned offload the host holds transients at init (DeepSpeed edaa722
// runtime/zero/stage_1_and_2.py:492-507): `.to(device="cpu", dtype=fp32)` makes an unpinned fp32
// copy that pin_memory then copies into pinned memory (both live for a moment), and the LP
// `temp_buffer_bit16` that pin_memory copies into B5 stays referenced until the next group
// rebinds the name, the last one until __init__ returns (v0.14.4 has no temp_buffer_bit16:
// stage_1_and_2.py:393-400 there).
std::uint32_t CpuOffload::unpinned_master(std::size_t g, Elements s) {
  if (cfg_.host_pool != MemoryPool::Pinned) return kNone;
  const std::uint32_t b = e_.buffer(
      init_transient("fp32 master before pin_memory [" + std::to_string(g) + "]", cfg_.mw, s));
  e_.alloc(b);
  return b;
}

void CpuOffload::create_group(std::size_t g, Elements s, std::uint32_t unpinned) {
  const std::string gs = std::to_string(g);
  if (unpinned != kNone) e_.free(unpinned);
  if (cfg_.host_pool == MemoryPool::Pinned && !cfg_.v0144) {
    const std::uint32_t lp =
        e_.buffer(init_transient("temp_buffer_bit16 [" + gs + "]", cfg_.lp, s));
    e_.alloc(lp);
    if (temp_bit16_ != kNone) e_.free(temp_bit16_);  // the name rebound: the previous one dropped
    temp_bit16_ = lp;
  }
  b4_.push_back(e_.buffer(
      offload_buffer("fp32 grad partition [" + gs + "]", "B4", cfg_.host_pool, cfg_.mw, s)));
  e_.alloc(b4_.back(), Stream::Compute, kNone, true);  // zeros: the padding stays 0
  Buffer b5 = offload_buffer("param_buffer_of_bit16_for_cpu_offload_groups[" + gs + "]", "B5",
                             cfg_.host_pool, cfg_.lp, s);
  b5.category = BufferCategory::Param16;
  b5_.push_back(e_.buffer(std::move(b5)));
  e_.alloc(b5_.back());
}

void CpuOffload::create_staging() {
  Elements largest = 0;
  for (const FlatGroup& fg : cfg_.plan.groups)
    for (std::uint32_t p : fg.params) largest = std::max(largest, cfg_.m.params[p].numel);
  b6_ = e_.buffer(offload_buffer("temp_grad_buffer_for_gpu_offload", "B6", MemoryPool::Device,
                                 cfg_.lp, largest));
  e_.alloc(b6_);
  b7_ = e_.buffer(
      offload_buffer("temp_grad_buffer_for_cpu_offload", "B7", cfg_.host_pool, cfg_.lp, largest));
  e_.alloc(b7_);
}

void CpuOffload::init_returns() {
  if (temp_bit16_ != kNone) e_.free(temp_bit16_);
  temp_bit16_ = kNone;
}

// Whether any flush goes through async_accumulate_grad_in_cpu_via_gpu (post_flush): at v0.14.4
// whenever gradient_accumulation_steps > 1 (stage_1_and_2.py:1324 at v0.14.4); at edaa722 when
// micro_step_id > 0 or the backward is not a boundary (:1656), which with several micro-steps
// happens at stage 2 only: stage 1 reduces at its boundary alone, where micro_step_id is still 0.
bool CpuOffload::accumulates_on_cpu() const {
  return cfg_.gas > 1 && (cfg_.v0144 || cfg_.stage == 2);
}

std::uint32_t CpuOffload::add_pass() {
  PassRecord r;
  r.b8_buf.assign(cfg_.m.params.size(), kNone);
  r.b8_slot.assign(cfg_.m.params.size(), kNone);
  r.b8_live.assign(cfg_.m.params.size(), false);
  passes_.push_back(std::move(r));
  return static_cast<std::uint32_t>(passes_.size() - 1);
}

void CpuOffload::attach(std::uint32_t id, const std::vector<std::uint32_t>& params) {
  if (!accumulates_on_cpu()) return;
  PassRecord& r = passes_[id];
  // One CPU accumulator per param, of its whole numel, on the ranks whose partition it touches
  // (accumulated_grads_in_cpu[param_id]: stage_1_and_2.py:1524-1527 at edaa722).
  for (std::uint32_t p : params) {
    r.b8_slot[p] = slots_.touching(cfg_.pname(p) + ": full numel if it touches the rank", {p});
    r.b8_buf[p] = e_.buffer(offload_buffer("accumulated_grads_in_cpu (" + cfg_.pname(p) + ")", "B8",
                                           cfg_.host_pool, cfg_.lp, 0, r.b8_slot[p]));
  }
}

// With gradient accumulation, each touching gradient goes through DeepSpeed's
// async_accumulate_grad_in_cpu_via_gpu (stage_1_and_2.py:1516-1559 at edaa722, :1183-1228 at
// v0.14.4), called per param from copy_grads_in_partition (:1650-1664) after the flush's
// reduction: its accumulator B8 (torch.zeros at the first call, :1527), from the second micro-step
// on copied into the first numel of the one-param staging buffer B6 (temp_grad_buffer_for_gpu_
// offload, :1522, :1536) and added into the reduced gradient (:1537), then the sum copied back
// into B8 (:1549; v0.14.4 skips that copy at the boundary, :1226-1227, where edaa722 makes it
// unconditionally). B6 is reused by the next param: its H2D is issued after this add (it waits
// for the stream that produced the data). Each op is the param's numel on the ranks it touches
// (its Touching({p}) slot), 0 elsewhere. The owned slices then go to B4 in one copy per flush
// (DeepSpeed copies them per param right after each accumulation: the same data, read after every
// add). "Second micro-step" is DeepSpeed's micro_step_id > 0 (below), which is not the micro-step
// index at stage 1 at edaa722: there no flush accumulates (accumulates_on_cpu), and the boundary's
// reduction of the autograd-accumulated grads is all B4 needs.
void CpuOffload::post_flush(std::uint32_t id, std::uint32_t owned_slot,
                            const std::vector<FlushEntry>& entries, std::uint32_t flush_plan,
                            bool boundary, std::uint32_t micro, Stream st) {
  PassRecord& r = passes_[id];
  // DeepSpeed's micro_step_id at this flush: v0.14.4 counts backward() calls since the step
  // (:2036, reset at :1820); edaa722 counts backwards whose first hook found the IPG buffers
  // released (setup_buckets :2494-2495; _release_ipg_buffers :835; reset in step() :2283), and
  // only stage 2 releases them every backward (stage 1 at its boundary epilogue).
  const std::uint32_t ds_micro = cfg_.v0144 || cfg_.stage == 2 ? micro : 0;
  const bool accumulate = cfg_.v0144 ? cfg_.gas > 1 : ds_micro > 0 || !boundary;
  if (accumulate && accumulates_on_cpu()) {
    const bool to_cpu = !boundary || !cfg_.v0144;
    for (const FlushEntry& en : entries) {
      const std::uint32_t p = en.tensor, slot = r.b8_slot[p];
      const Region grad = region(en.buffer, en.offset);  // the reduced gradient, where reduced
      if (!r.b8_live[p]) {
        e_.alloc(r.b8_buf[p], st, kNone, true);
        r.b8_live[p] = true;
      }
      if (ds_micro > 0) {
        const std::uint32_t h2d = e_.copy(
            {.kind = OpKind::HostToDevice,
             .stream = Stream::H2D,
             .dtype = cfg_.lp,
             .slot = slot,
             .src = region(r.b8_buf[p]),
             .dst = region(b6_),
             .after = cfg_.produced_on(),
             .label = e_.label("accumulated grad of ", cfg_.pname(p), " to GPU (B8 -> B6)")});
        e_.copy({.stream = st,
                 .dtype = cfg_.lp,
                 .slot = slot,
                 .src = region(b6_),
                 .dst = grad,
                 .mode = CopyMode::Add,
                 .deps = {h2d},
                 .label = e_.label("add accumulated grad of ", cfg_.pname(p))});
      }
      if (to_cpu)
        e_.copy({.kind = OpKind::DeviceToHost,
                 .stream = Stream::D2H,
                 .dtype = cfg_.lp,
                 .slot = slot,
                 .src = grad,
                 .dst = region(r.b8_buf[p]),
                 .after = cfg_.produced_on(),
                 .label = e_.label("grad of ", cfg_.pname(p), " to CPU accumulator (B8)")});
    }
  }
  if (!boundary) return;
  // The D2H's operands, interned once per flush plan (every step repeats them).
  if (flush_plan >= b4_copy_.size()) b4_copy_.resize(flush_plan + 1);
  auto& [owned, partition] = b4_copy_[flush_plan];
  if (owned.empty()) {
    owned = e_.derived({.kind = DerivedKind::OwnedGrads, .flush_plan = flush_plan});
    partition =
        e_.derived({.kind = DerivedKind::OwnedPartition, .flush_plan = flush_plan, .buffers = b4_});
  }
  e_.copy({.kind = OpKind::DeviceToHost,
           .stream = Stream::D2H,
           .dtype = cfg_.mw,
           .slot = owned_slot,  // each owned slice into its group's B4, cast to MW
           .src = owned,
           .dst = partition,
           .after = cfg_.produced_on(),
           .label = e_.label("owned gradient slices to fp32 CPU partition (B4)")});
}

void CpuOffload::copy_back(std::size_t g, Elements s, std::uint32_t master, std::uint32_t flat) {
  e_.copy({.stream = Stream::Host,
           .dtype = cfg_.lp,
           .elements = s,
           .src = region(master),
           .dst = region(b5_[g]),
           .label = "master -> LP staging (B5)"});
  e_.copy({.kind = OpKind::HostToDevice,
           .stream = Stream::H2D,
           .dtype = cfg_.lp,
           .elements = s,
           .src = region(b5_[g]),
           .dst = rank_slice(flat, s),
           .after = Stream::Host,  // the staging copy the host just made
           .label = "updated LP slice to the GPU"});
  e_.wait_stream(Stream::Compute, Stream::H2D);
}

}  // namespace zerosim::schedule::s12
