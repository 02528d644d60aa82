// The stage 1/2 IPG bucket (deepspeed_zero.md §4.3–§4.5, §3.3): planning which params land in which
// flush, and emitting each flush as DeepSpeed issues it — the owner-slice all-reduce (or one reduce
// per owner), the in-place all-reduce without reduce_scatter, the per-dtype all-reduce without
// contiguous gradients — followed by the post-flush copies into grads_in_partition (or, with CPU
// optimizer offload, CpuOffload's copies to and from host memory). The planning functions come
// first; IpgBuckets (stage012_pieces.h: DeepSpeedZeroOptimizer's IPGBucket and reduce_ipg_grads)
// emits the plan.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "schedule/stage012_pieces.h"

namespace zerosim::schedule::s12 {

IpgPass plan_ipg_pass(const ModelDesc& m, const std::vector<std::uint32_t>& order, Elements r,
                      bool contiguous, bool swap) {
  IpgPass pass;
  PlannedFlush cur;
  for (std::uint32_t p : order) {
    const Elements n = m.params[p].numel;
    if (n == 0) continue;  // IPG_INSERT ignores zero-size params entirely
    PlannedInsert ins;
    ins.param = p;
    if (cur.elements + n > r) {  // strict >, and no "bucket non-empty" guard
      const std::uint32_t index = cur.buffer_index;
      pass.flushes.push_back(std::move(cur));
      cur = PlannedFlush{};
      cur.buffer_index = swap ? 1 - index : index;
      ins.flush_before = true;
    }
    if (contiguous && n > r) {
      cur.extra_large = true;  // reduced from its own storage, never copied
    } else {
      ins.copied = contiguous;
    }
    ins.buffer_index = cur.buffer_index;
    ins.offset = cur.elements;
    ins.flush = static_cast<std::uint32_t>(pass.flushes.size());
    cur.elements += n;
    cur.params.push_back(p);
    pass.inserts.push_back(ins);
    pass.params.push_back(p);
  }
  pass.flushes.push_back(std::move(cur));  // the epilogue's flush (possibly empty)
  return pass;
}

// The owner slices of PartitionPlan::owners (§2.1 step 8), computed in place: the query's vector
// per param was most of a flush's planning.
void owner_slices(const PartitionPlan& plan, const ModelDesc& m,
                  const std::vector<std::uint32_t>& params, std::vector<BucketSlice>& out) {
  out.clear();
  Elements base = 0;
  for (std::uint32_t p : params) {
    const std::size_t g = p < plan.param_group.size() ? plan.param_group[p] : plan.groups.size();
    if (g < plan.groups.size() && p < plan.flat_index.size()) {
      const FlatGroup& fg = plan.groups[g];
      const std::size_t idx = plan.flat_index[p];
      const Elements start = fg.flat_offset[idx];
      const Elements end = idx + 1 < fg.flat_offset.size() ? fg.flat_offset[idx + 1] : fg.numel;
      const Elements s = fg.partition;
      if (s != 0 && start < fg.aligned && start != end) {
        for (Elements k = start / s, last = (end - 1) / s; k <= last; ++k) {
          const Elements lo = std::max(start, k * s), hi = std::min(end, (k + 1) * s);
          if (hi == lo) continue;
          const auto rank = static_cast<std::uint32_t>(k);
          if (!out.empty() && out.back().owner == rank) {
            out.back().length += hi - lo;  // adjacent slices of one owner are merged
          } else {
            out.push_back({rank, base + (lo - start), hi - lo});
          }
        }
      }
    }
    base += m.params[p].numel;
  }
}

std::vector<std::pair<std::size_t, std::size_t>> chunk_gt(const std::vector<Elements>& sizes,
                                                          Elements limit) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t begin = 0;
  Elements total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    total += sizes[i];
    if (total > limit) {
      out.emplace_back(begin, i + 1);
      begin = i + 1;
      total = 0;
    }
  }
  if (begin < sizes.size()) out.emplace_back(begin, sizes.size());
  return out;
}

void IpgBuckets::create_buffers() {
  for (std::uint32_t i = 0; i < (cfg_.overlap ? 2u : 1u); ++i) {
    Buffer b;
    b.name = "ipg[" + std::to_string(i) + "]";
    b.spec_id = "T2";
    b.category = BufferCategory::CommBucket;
    b.pool = MemoryPool::Device;
    b.dtype = cfg_.lp;
    b.numel = cfg_.r;
    if (cfg_.contiguous) ipg_.push_back(e_.buffer(std::move(b)));
  }
}

void IpgBuckets::setup() {
  if (ipg_live_)
    for (std::uint32_t b : ipg_) e_.free(b);  // v0.14.4 replaces the list every backward
  for (std::uint32_t b : ipg_) e_.alloc(b);
  ipg_live_ = true;
}

void IpgBuckets::on_first_hook() {
  if (!cfg_.hooks || cfg_.v0144 || ready_for_gradients_) return;
  ready_for_gradients_ = true;
  if (cfg_.contiguous) setup();
}

void IpgBuckets::prepare(IpgPass& pass, const std::string& name) {
  std::vector<std::vector<std::uint32_t>> lists;
  for (const auto& f : pass.flushes) lists.push_back(f.params);
  const std::uint32_t id = slots_.add_pass(std::move(lists));
  pass.slot_pass = id;
  const std::size_t nf = pass.flushes.size();
  pass.copy_slot.assign(nf, kNone);
  pass.owned_slot.assign(nf, kNone);
  pass.first_slot.assign(nf, kNone);
  for (auto& v : pass.gip_buf) v.assign(nf, kNone);
  for (auto& v : pass.retained_buf) v.assign(nf, kNone);
  if (cfg_.offload) pass.offload = offload_.add_pass();
  const bool second_set = cfg_.stage == 2 && cfg_.gas > 1;
  const auto grad_buffer = [&](std::string bname, std::string spec, std::uint32_t slot) {
    Buffer b;
    b.name = std::move(bname);
    b.spec_id = std::move(spec);
    b.category = BufferCategory::Grad;
    b.pool = MemoryPool::Device;
    b.dtype = cfg_.lp;
    b.slot = slot;
    return e_.buffer(std::move(b));
  };
  for (std::uint32_t f = 0; f < nf; ++f) {
    const std::string fname = concat({name, " flush ", std::to_string(f)});
    pass.copy_slot[f] =
        slots_.flush_touching(concat({fname, ": full numel of the rank's params"}), id, f);
    if (cfg_.offload || (cfg_.contiguous && cfg_.reduce_scatter && cfg_.multi_rank))
      pass.owned_slot[f] =  // the B4 D2H, the copy-back
          slots_.flush_owned_slice(concat({fname, ": owned slice"}), id, f);
    if (cfg_.offload) {
      offload_.attach(pass.offload, pass.flushes[f].params);
    } else if (cfg_.contiguous) {
      pass.first_slot[f] =
          slots_.first_touch(concat({fname, ": grads_in_partition if first touched here"}), id, f);
      pass.gip_buf[0][f] =
          grad_buffer(concat({"grads_in_partition (", fname, ")"}), "T3", pass.first_slot[f]);
      if (second_set)
        pass.gip_buf[1][f] =
            grad_buffer(concat({"grads_in_partition #2 (", fname, ")"}), "T3", pass.first_slot[f]);
    } else {
      for (std::uint32_t set = 0; set < (second_set ? 2u : 1u); ++set)
        pass.retained_buf[set][f] = grad_buffer(
            std::string(set ? "kept autograd grads #2 (" : "kept autograd grads (") + fname + ")",
            "T1", pass.copy_slot[f]);
    }
  }
  pass.all_slot = slots_.touching(name + ": full numel of all the rank's params", pass.params);
  // Each flush's gradients where it reduces them: the IPG buffer at the bucket offset when copied,
  // else the param's own gradient (extra-large, non-contiguous).
  std::vector<FlushPlan> plans(nf);
  for (std::uint32_t f = 0; f < nf; ++f) plans[f].entries.reserve(pass.flushes[f].params.size());
  for (const PlannedInsert& ins : pass.inserts)
    plans[ins.flush].entries.push_back(
        ins.copied ? FlushEntry{ins.param, ipg_[ins.buffer_index], ins.offset}
                   : FlushEntry{ins.param, module_.grad(ins.param), 0});
  pass.flush_plan.assign(nf, kNone);  // an empty flush shares the one empty plan
  pass.entries.assign(nf, {});
  for (std::uint32_t f = 0; f < nf; ++f) {
    pass.entries[f] = plans[f].entries;
    pass.flush_plan[f] = e_.flush_plan(std::move(plans[f]));
  }
  if (cfg_.contiguous && !cfg_.offload) {
    GradPass gp;
    gp.flush_plans = pass.flush_plan;
    gp.t3.push_back(pass.gip_buf[0]);
    if (second_set) gp.t3.push_back(pass.gip_buf[1]);
    pass.grad_pass = e_.grad_pass(std::move(gp));
  } else if (!cfg_.offload && cfg_.stage == 2) {
    // Without contiguous gradients (X6) each flush keeps the touching grads whole (DeepSpeed's
    // reduce_ipg_grads clears only the other partitions' p.grad, stage_1_and_2.py:1742-1749 at
    // edaa722): the flush's kept buffer holds them from its start, and averaged_gradients views
    // them there (the epilogue's get_flat_partition over the kept p.grad, :936-953, :2106-2190).
    GradPass gp;
    gp.flush_plans = pass.flush_plan;
    gp.t3.push_back(pass.retained_buf[0]);
    if (second_set) gp.t3.push_back(pass.retained_buf[1]);
    gp.per_flush = true;
    pass.grad_pass = e_.grad_pass(std::move(gp));
  }
}

// The sum of `src` over the ranks, averaged (cfg_.average), lands in `dst` (empty: in place; a
// reduce: on the root only).
std::uint32_t IpgBuckets::flush_collective(CollectiveKind k, Elements numel, Stream st,
                                           const std::string& tag, std::uint32_t seq, Region src,
                                           std::uint32_t root, Region dst) {
  return e_.collective(
      {.kind = k,
       .dtype = cfg_.cd,
       .numel = numel,
       .out_numel = numel,
       .op = ReduceOp::Sum,
       .root = root,
       .flush = seq,
       .src = src,
       .dst = dst,
       .scale = cfg_.average,
       .stream = st,
       .label = e_.labels() ? collective_label(tag, k, numel, numel, root) : std::string()});
}

// One reduction of `total` elements gathered from `pieces` slices (`src`: a region or a list):
// flattened into a temporary (cast to CD) unless it is one slice already in CD. The reduced
// result goes back where the slices are: a costed copy (`back`), or the collective's dst.
void IpgBuckets::reduce_chunk(CollectiveKind k, Elements total, std::size_t pieces, Stream st,
                              const std::string& tag, std::uint32_t seq, Region src,
                              std::uint32_t root, const CopyBack& back, ChunkOperands* cached) {
  const bool flatten = pieces > 1 || cfg_.cd != cfg_.lp;
  const bool copy_back = flatten && back.copied;
  ChunkOperands local;
  ChunkOperands& ops = cached != nullptr ? *cached : local;
  if (!ops.ready) {  // interned in this order at the first emission: the ids stay the same
    ops.ready = true;
    if (flatten && ops.tmp == kNone) ops.tmp = e_.temp("reduction temp", total, cfg_.cd);
    if (copy_back && back.slot != kNone && back.window_length > 0) {  // one chunk's owned slices
      const DerivedOperand owned{.kind = DerivedKind::OwnedGrads,
                                 .flush_plan = back.plan,
                                 .window = back.window,
                                 .window_length = back.window_length,
                                 .rank = back.root};
      DerivedOperand in_tmp = owned;
      in_tmp.into = ops.tmp;
      in_tmp.packed = back.root != kNone;  // one owner's slices were flattened one after another
      ops.back_src = e_.derived(std::move(in_tmp));
      ops.back_dst = e_.derived(owned);
    } else if (copy_back && back.slot != kNone) {  // the rank's owned slices
      ops.back_src = e_.derived({.kind = DerivedKind::OwnedGrads, .flush_plan = back.in_tmp});
      ops.back_dst = e_.derived({.kind = DerivedKind::OwnedGrads, .flush_plan = back.plan});
    }
  }
  const std::uint32_t tmp = ops.tmp;
  if (flatten) {
    e_.alloc(tmp, st);
    e_.copy({.stream = st,
             .dtype = cfg_.cd,
             .elements = total,
             .src = src,
             .dst = region(tmp),
             .label = e_.label(tag, ": flatten")});
  }
  flush_collective(k, total, st, tag, seq, flatten ? region(tmp) : src, root,
                   flatten && !copy_back ? src : Region{});
  if (copy_back && back.slot == kNone) {  // every rank the whole result
    e_.copy({.stream = st,
             .dtype = cfg_.cd,
             .elements = total,
             .src = region(tmp),
             .dst = src,
             .label = e_.label(tag, ": copy back")});
  } else if (copy_back) {  // the owned slices (of one chunk, or of the whole flush)
    e_.copy({.stream = st,
             .dtype = cfg_.cd,
             .slot = back.slot,
             .src = ops.back_src,
             .dst = ops.back_dst,
             .label = e_.label(tag, ": copy back")});
  }
  if (flatten) e_.free(tmp, st);
}

// The reduce_scatter path's reductions of flush f: CHUNK_GT over all owner slices (one all-reduce
// per chunk), or, without use_multi_rank_bucket_allreduce, per owner in order of first appearance.
std::vector<PlannedReduction>& IpgBuckets::owner_reductions(IpgPass& pass, std::uint32_t f) {
  if (pass.reductions.size() != pass.flushes.size()) {
    pass.reductions.assign(pass.flushes.size(), {});
    pass.reductions_ready.assign(pass.flushes.size(), false);
  }
  auto& out = pass.reductions[f];
  if (pass.reductions_ready[f]) return out;
  pass.reductions_ready[f] = true;
  owner_slices(cfg_.plan, cfg_.m, pass.flushes[f].params, slices_);
  const PlannedFlush& fl = pass.flushes[f];
  const std::uint32_t bucket =
      fl.extra_large ? module_.grad(fl.params.front()) : ipg_[fl.buffer_index];
  // CHUNK_GT over `chunk_slices`: a chunk closes once its running total exceeds the bucket size.
  auto add_chunks = [&](const std::vector<BucketSlice>& chunk_slices, std::uint32_t root) {
    const auto add = [&](std::size_t b, std::size_t e, Elements total) {
      // All owners' slices tile the bucket in order, so an all-reduce chunk is one range; one
      // owner's slices (reduce to it) are a list, the same on every rank.
      Region src = region(bucket, chunk_slices[b].offset, total);
      if (root != kNone && e - b > 1) {
        std::vector<Piece> pieces;
        pieces.reserve(e - b);
        for (std::size_t i = b; i < e; ++i)
          pieces.push_back({bucket, chunk_slices[i].offset, chunk_slices[i].length});
        src = list_region(e_.list(std::move(pieces)));
      }
      const Elements span =
          chunk_slices[e - 1].offset + chunk_slices[e - 1].length - chunk_slices[b].offset;
      out.push_back({total, chunk_slices[b].offset, span, e - b, root, src});
    };
    std::size_t begin = 0;
    Elements total = 0;
    for (std::size_t i = 0; i < chunk_slices.size(); ++i) {
      total += chunk_slices[i].length;
      if (total > cfg_.r) {
        add(begin, i + 1, total);
        begin = i + 1;
        total = 0;
      }
    }
    if (begin < chunk_slices.size()) add(begin, chunk_slices.size(), total);
  };
  if (cfg_.multi_rank) {
    add_chunks(slices_, kNone);
    return out;
  }
  std::vector<std::uint32_t> owner_order;
  std::map<std::uint32_t, std::vector<BucketSlice>> by_owner;
  for (const auto& sl : slices_) {
    auto [it, fresh] = by_owner.try_emplace(sl.owner);
    if (fresh) owner_order.push_back(sl.owner);
    it->second.push_back(sl);
  }
  for (std::uint32_t k : owner_order) add_chunks(by_owner[k], k);
  return out;
}

CopyBack IpgBuckets::copy_back_of(IpgPass& pass, std::uint32_t f, PlannedReduction& red,
                                  std::size_t reductions, const std::string& tag) {
  const bool to_owner = red.root != kNone;
  const bool flattened = red.pieces > 1 || cfg_.cd != cfg_.lp;  // else reduced in place
  if (flattened && (to_owner || reductions > 1)) {
    // One chunk of several, or one owner's slices: each rank copies back what it owns there
    // (allreduce_and_copy_with_multiple_ranks), the root what it was reduced to (X4).
    return {
        .copied = true,
        .slot = slots_.owned_chunk(
            concat({tag, ": owned slices at bucket positions [", std::to_string(red.offset), ", ",
                    std::to_string(red.offset + red.span), ")", to_owner ? " on rank " : "",
                    to_owner ? std::to_string(red.root) : std::string()}),
            pass.slot_pass, f, red.offset, red.span, red.root),
        .plan = pass.flush_plan[f],
        .window = red.offset,
        .window_length = red.span,
        .root = red.root};
  }
  if (!to_owner && reductions == 1 && pass.owned_slot[f] != kNone) {
    // The flush's one all-reduce: each rank copies back the slices it owns (X4), from the
    // temporary at their bucket offset less the chunk's.
    FlushPlan in_tmp;
    const std::uint32_t tmp = e_.temp("reduction temp", red.total, cfg_.cd);
    red.ops.tmp = tmp;  // the temporary reduce_chunk flattens into (the same name and size)
    in_tmp.entries.reserve(pass.entries[f].size());
    for (const FlushEntry& en : pass.entries[f])
      in_tmp.entries.push_back({en.tensor, tmp, en.offset - red.offset});
    return {.copied = true,
            .slot = pass.owned_slot[f],
            .plan = pass.flush_plan[f],
            .in_tmp = e_.flush_plan(std::move(in_tmp))};
  }
  return {};
}

void IpgBuckets::reduce_contiguous(IpgPass& pass, std::uint32_t f, Stream st,
                                   const std::string& tag, std::uint32_t seq) {
  const PlannedFlush& fl = pass.flushes[f];
  // The bucket, or for an extra-large flush the one param's own gradient.
  const std::uint32_t src =
      fl.extra_large ? module_.grad(fl.params.front()) : ipg_[fl.buffer_index];
  if (fl.elements == 0) {
    // v0.14.4's gradient_reduction_w_predivide has no empty-tensor guard (v0.14.4 :970).
    if (!cfg_.reduce_scatter && cfg_.v0144)
      flush_collective(CollectiveKind::AllReduce, 0, st, tag, seq, region(src));
    return;
  }
  if (!cfg_.reduce_scatter) {  // in place, post-scaled; a CD copy only when CD != LP
    reduce_chunk(CollectiveKind::AllReduce, fl.elements, 1, st, tag, seq, region(src), kNone,
                 {.copied = true});
    return;
  }
  auto& reductions = owner_reductions(pass, f);
  for (PlannedReduction& red : reductions) {
    if (stopped()) return;  // one slot per owner: 2^21 owners emit millions of ops
    const bool to_owner = red.root != kNone;
    if (to_owner && cfg_.overlap) e_.sync(e_.label(tag, ": synchronize before reduce"));
    if (!red.emitted) {  // the slot and plans of the copy-back, registered once
      red.emitted = true;
      red.back = copy_back_of(pass, f, red, reductions.size(), tag);
    }
    reduce_chunk(to_owner ? CollectiveKind::Reduce : CollectiveKind::AllReduce, red.total,
                 red.pieces, st, tag, seq, red.src, red.root, red.back, &red.ops);
  }
}

// contiguous_gradients=false: BUFFERED_REDUCE_FALLBACK with the bucket as chunk limit: one
// all-reduce per dtype (all grads share the LP dtype here), on a flattened copy unless one tensor.
void IpgBuckets::reduce_fallback(const PlannedFlush& fl, Stream st, const std::string& tag,
                                 std::uint32_t seq) {
  if (fl.params.empty()) return;
  if (cfg_.overlap) e_.sync(e_.label(tag, ": synchronize before all_reduce"));
  // One tensor is reduced in place in its own gradient; several are flattened first (their
  // grads in insertion order) and the result copied back into them.
  std::vector<Piece> grads;
  for (std::uint32_t p : fl.params) grads.push_back({module_.grad(p), 0, cfg_.m.params[p].numel});
  reduce_chunk(CollectiveKind::AllReduce, fl.elements, fl.params.size(), st, tag, seq,
               fl.params.size() == 1 ? region(module_.grad(fl.params.front()))
                                     : list_region(e_.list(std::move(grads))),
               kNone, {.copied = true});
}

void IpgBuckets::drop_deferred(Stream st) {
  for (std::uint32_t p : deferred_grad_frees_) module_.free_grad(p, st);
  // The kept buffer adopts the touching grads the frees just released (Op::src of an Alloc): the
  // ledger sees DeepSpeed's bytes, the data stays where DeepSpeed keeps it, at no cost.
  for (const auto& [b, plan] : deferred_retained_) e_.adopt(b, plan, st);
  deferred_grad_frees_.clear();
  deferred_retained_.clear();
}

// Flush f's piece of grads_in_partition set `set`, interned once per pass.
Region IpgBuckets::partition_grads(IpgPass& pass, std::uint32_t set, std::uint32_t f) {
  auto& cache = pass.gip_dst[set];
  if (cache.size() != pass.flushes.size()) cache.assign(pass.flushes.size(), Region{});
  if (cache[f].empty())
    cache[f] = e_.derived(
        {.kind = DerivedKind::PartitionGrads, .pass = pass.grad_pass, .set = set, .flush = f});
  return cache[f];
}

void IpgBuckets::flush(IpgPass& pass, std::uint32_t f, std::uint32_t set, bool boundary,
                       std::uint32_t micro) {
  const PlannedFlush& fl = pass.flushes[f];
  const std::uint32_t seq = flush_seq_++;
  const Stream st = cfg_.reduce_stream();
  const std::string tag = e_.label("flush ", seq);
  drop_deferred(st);
  if (cfg_.contiguous) {
    if (cfg_.overlap) {  // AVERAGE_TENSOR: reduce stream waits for compute, compute for the
                         // previous flush
      e_.wait_stream(Stream::Reduce, Stream::Compute);
      e_.wait_stream(Stream::Compute, Stream::Reduce);
    }
    reduce_contiguous(pass, f, st, tag, seq);
  } else {
    reduce_fallback(fl, st, tag, seq);
  }
  // POST_FLUSH (§4.5).
  if (cfg_.offload) {
    offload_.post_flush(pass.offload, pass.owned_slot[f], pass.entries[f], pass.flush_plan[f],
                        boundary, micro, st);
  } else if (cfg_.contiguous) {
    if (!fl.params.empty()) {
      e_.alloc(pass.gip_buf[set][f], st);  // lazily, at the rank's first in-partition copy
      averaged_.hold(pass.gip_buf[set][f], set);
      // The rank's touching grads, whole, insertion order, into the T3 piece of the flush that
      // first touches the rank, packed after the earlier flushes' (§4.5).
      Region touched;
      touched.flush_grads = pass.flush_plan[f];
      e_.copy({.stream = st,
               .dtype = cfg_.lp,
               .slot = pass.copy_slot[f],
               .src = touched,
               .dst = partition_grads(pass, set, f),
               .label = e_.label(tag, ": copy the rank's grads into grads_in_partition")});
    }
  } else if (cfg_.stage == 2) {
    // Non-owned grads are dropped, owned ones kept whole; with overlap the drop waits for the next
    // flush.
    for (std::uint32_t p : fl.params) deferred_grad_frees_.push_back(p);
    deferred_retained_.emplace_back(pass.retained_buf[set][f], pass.flush_plan[f]);
    averaged_.hold(pass.retained_buf[set][f], set);
    if (!cfg_.overlap) drop_deferred(st);
  }
  if (cfg_.contiguous && fl.extra_large) module_.free_grad(fl.params.front(), st);
}

void IpgBuckets::insert(IpgPass& pass, std::size_t i, std::uint32_t set, bool boundary,
                        std::uint32_t micro) {
  if (stopped()) return;
  const PlannedInsert& ins = pass.inserts[i];
  if (ins.flush_before) flush(pass, ins.flush - 1, set, boundary, micro);
  if (!ins.copied) return;
  e_.copy({.kind = OpKind::CopyToBucket,
           .dtype = cfg_.lp,
           .elements = cfg_.m.params[ins.param].numel,
           .src = region(module_.grad(ins.param)),
           .dst = region(ipg_[ins.buffer_index], ins.offset),
           .param = ins.param,
           .flush = flush_seq_,  // the flush that will reduce this bucket
           .label = e_.label("copy ", cfg_.pname(ins.param), " into ipg[", ins.buffer_index, "]")});
  module_.free_grad(ins.param);  // p.grad now views the bucket
}

void IpgBuckets::epilogue(IpgPass& pass, std::uint32_t set, bool boundary, std::uint32_t micro) {
  e_.set_phase(Phase::Epilogue);
  e_.marker("epilogue");
  flush(pass, static_cast<std::uint32_t>(pass.flushes.size() - 1), set, boundary, micro);
  if (cfg_.overlap) e_.sync("epilogue: synchronize");
  drop_deferred(Stream::Compute);
  if (!cfg_.offload) averaged_.epilogue(pass, set, boundary);
  if (ipg_live_) {  // _release_ipg_buffers (:828)
    for (std::uint32_t b : ipg_) e_.free(b);
    ipg_live_ = false;
  }
  ready_for_gradients_ = false;
}

}  // namespace zerosim::schedule::s12
