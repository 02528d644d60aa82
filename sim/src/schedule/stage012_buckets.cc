// The stage 1/2 IPG bucket (deepspeed_zero.md §4.3–§4.5, §3.3): planning which params land in which
// flush, and emitting each flush as DeepSpeed issues it — the owner-slice all-reduce (or one reduce
// per owner), the in-place all-reduce without reduce_scatter, the per-dtype all-reduce without
// contiguous gradients — followed by the post-flush copies into grads_in_partition (or, with CPU
// optimizer offload, the copies to and from host memory).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "schedule/stage012_internal.h"

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

std::vector<BucketSlice> owner_slices(const PartitionPlan& plan, const ModelDesc& m,
                                      const std::vector<std::uint32_t>& params) {
  std::vector<BucketSlice> out;
  Elements base = 0;
  for (std::uint32_t p : params) {
    for (const OwnerSlice& os : plan.owners(plan.param_group[p], p)) {
      if (os.length == 0) continue;
      if (!out.empty() && out.back().owner == os.rank) {
        out.back().length += os.length;  // adjacent slices of one owner are merged
      } else {
        out.push_back({os.rank, base + os.offset, os.length});
      }
    }
    base += m.params[p].numel;
  }
  return out;
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

namespace {

// Whether any flush goes through async_accumulate_grad_in_cpu_via_gpu (offload_post_flush): at
// v0.14.4 whenever gradient_accumulation_steps > 1 (stage_1_and_2.py:1324 at v0.14.4); at edaa722
// when micro_step_id > 0 or the backward is not a boundary (:1656), which with several micro-steps
// happens at stage 2 only: stage 1 reduces at its boundary alone, where micro_step_id is still 0.
bool accumulates_on_cpu(const Ctx& c) { return c.gas > 1 && (c.v0144 || c.stage == 2); }

}  // namespace

void prepare_pass(Ctx& c, IpgPass& pass, const std::string& name) {
  std::vector<std::vector<std::uint32_t>> lists;
  for (const auto& f : pass.flushes) lists.push_back(f.params);
  const std::uint32_t id = c.slots.add_pass(std::move(lists));
  const std::size_t nf = pass.flushes.size();
  pass.copy_slot.assign(nf, kNone);
  pass.owned_slot.assign(nf, kNone);
  pass.first_slot.assign(nf, kNone);
  for (auto& v : pass.gip_buf) v.assign(nf, kNone);
  for (auto& v : pass.retained_buf) v.assign(nf, kNone);
  pass.b8_buf.assign(c.m.params.size(), kNone);
  pass.b8_slot.assign(c.m.params.size(), kNone);
  pass.b8_live.assign(c.m.params.size(), false);
  const bool second_set = c.stage == 2 && c.gas > 1;
  for (std::uint32_t f = 0; f < nf; ++f) {
    const std::string fname = name + " flush " + std::to_string(f);
    pass.copy_slot[f] =
        c.slots.touching(fname + ": full numel of the rank's params", pass.flushes[f].params);
    auto buffer = [&](std::string bname, std::string spec, BufferCategory cat, MemoryPool pool,
                      DType dt, std::uint32_t slot, bool persistent = false) {
      Buffer b;
      b.name = std::move(bname);
      b.spec_id = std::move(spec);
      b.category = cat;
      b.pool = pool;
      b.dtype = dt;
      b.slot = slot;
      b.persistent = persistent;
      return c.e.buffer(std::move(b));
    };
    if (c.offload || (c.contiguous && c.reduce_scatter && c.multi_rank))  // B4 D2H, copy-back
      pass.owned_slot[f] = c.slots.owned_slice(fname + ": owned slice", pass.flushes[f].params);
    if (c.offload) {
      if (accumulates_on_cpu(c)) {
        // One CPU accumulator per param, of its whole numel, on the ranks whose partition it
        // touches (accumulated_grads_in_cpu[param_id]: stage_1_and_2.py:1524-1527 at edaa722).
        const MemoryPool pool =
            c.ds.zero.offload_optimizer.pin_memory ? MemoryPool::Pinned : MemoryPool::Host;
        for (std::uint32_t p : pass.flushes[f].params) {
          pass.b8_slot[p] =
              c.slots.touching(c.pname(p) + ": full numel if it touches the rank", {p});
          pass.b8_buf[p] = buffer("accumulated_grads_in_cpu (" + c.pname(p) + ")", "B8",
                                  BufferCategory::Grad, pool, c.lp, pass.b8_slot[p], true);
        }
      }
    } else if (c.contiguous) {
      pass.first_slot[f] =
          c.slots.first_touch(fname + ": grads_in_partition if first touched here", id, f);
      pass.gip_buf[0][f] = buffer("grads_in_partition (" + fname + ")", "T3", BufferCategory::Grad,
                                  MemoryPool::Device, c.lp, pass.first_slot[f]);
      if (second_set)
        pass.gip_buf[1][f] =
            buffer("grads_in_partition #2 (" + fname + ")", "T3", BufferCategory::Grad,
                   MemoryPool::Device, c.lp, pass.first_slot[f]);
    } else {
      for (std::uint32_t set = 0; set < (second_set ? 2u : 1u); ++set)
        pass.retained_buf[set][f] = buffer(
            std::string(set ? "kept autograd grads #2 (" : "kept autograd grads (") + fname + ")",
            "T1", BufferCategory::Grad, MemoryPool::Device, c.lp, pass.copy_slot[f]);
    }
  }
  pass.all_slot = c.slots.touching(name + ": full numel of all the rank's params", pass.params);
  // Each flush's gradients where it reduces them: the IPG buffer at the bucket offset when copied,
  // else the param's own gradient (extra-large, non-contiguous).
  std::vector<FlushPlan> plans(nf);
  for (const PlannedInsert& ins : pass.inserts)
    plans[ins.flush].entries.push_back(
        ins.copied ? FlushEntry{ins.param, c.ipg[ins.buffer_index], ins.offset}
                   : FlushEntry{ins.param, c.grad_buf[ins.param], 0});
  pass.flush_plan.assign(nf, kNone);  // an empty flush shares the one empty plan
  pass.entries.assign(nf, {});
  for (std::uint32_t f = 0; f < nf; ++f) {
    pass.entries[f] = plans[f].entries;
    pass.flush_plan[f] = c.e.flush_plan(std::move(plans[f]));
  }
  if (c.contiguous && !c.offload) {
    GradPass gp;
    gp.flush_plans = pass.flush_plan;
    gp.t3.push_back(pass.gip_buf[0]);
    if (second_set) gp.t3.push_back(pass.gip_buf[1]);
    pass.grad_pass = c.e.grad_pass(std::move(gp));
  } else if (!c.offload && c.stage == 2) {
    // Without contiguous gradients (X6) each flush keeps the touching grads whole (DeepSpeed's
    // reduce_ipg_grads clears only the other partitions' p.grad, stage_1_and_2.py:1742-1749 at
    // edaa722): the flush's kept buffer holds them from its start, and averaged_gradients views
    // them there (the epilogue's get_flat_partition over the kept p.grad, :936-953, :2106-2190).
    GradPass gp;
    gp.flush_plans = pass.flush_plan;
    gp.t3.push_back(pass.retained_buf[0]);
    if (second_set) gp.t3.push_back(pass.retained_buf[1]);
    gp.per_flush = true;
    pass.grad_pass = c.e.grad_pass(std::move(gp));
  }
}

namespace {

// The sum of `src` over the ranks, averaged (c.average), lands in `dst` (empty: in place; a
// reduce: on the root only).
std::uint32_t flush_collective(Ctx& c, CollectiveKind k, Elements numel, Stream st,
                               const std::string& tag, std::uint32_t seq, Region src,
                               std::uint32_t root = kNone, Region dst = {}) {
  return c.e.collective({.kind = k,
                         .dtype = c.cd,
                         .numel = numel,
                         .out_numel = numel,
                         .op = ReduceOp::Sum,
                         .root = root,
                         .flush = seq,
                         .src = src,
                         .dst = dst,
                         .scale = c.average,
                         .stream = st,
                         .label = collective_label(tag, k, numel, numel, root)});
}

// Where a flattened reduction's result goes back (X4): DeepSpeed copies the temporary back after
// the collective (§4.4): every rank the whole tensor (the cast back to LP without reduce_scatter,
// gradient_reduction_w_predivide, stage_1_and_2.py:1285-1286 at edaa722; each gradient of a
// non-contiguous bucket, allreduce_and_copy :1904-1906), or only the slices the local rank owns
// (allreduce_and_copy_with_multiple_ranks :1305-1311): `slot` OwnedSlice of the flush, `src` and
// `dst` its owned slices in the temporary and where the flush reduces them. Absent (`copied`
// false): the collective writes the slices itself and the copy is not costed (a multi-chunk
// reduction or one reduced to its owner: the rank-dependent part of a chunk has no slot yet).
struct CopyBack {
  bool copied = false;
  std::uint32_t slot = kNone;    ///< kNone: every rank copies `total`
  std::uint32_t plan = kNone;    ///< the flush plan whose owned slices go back (slot != kNone)
  std::uint32_t in_tmp = kNone;  ///< the same entries at their offsets in the temporary
};

// One reduction of `total` elements gathered from `pieces` slices (`src`: a region or a list):
// flattened into a temporary (cast to CD) unless it is one slice already in CD. The reduced
// result goes back where the slices are: a costed copy (`back`), or the collective's dst.
void reduce_chunk(Ctx& c, CollectiveKind k, Elements total, std::size_t pieces, Stream st,
                  const std::string& tag, std::uint32_t seq, Region src, std::uint32_t root,
                  const CopyBack& back = {}) {
  const bool flatten = pieces > 1 || c.cd != c.lp;
  std::uint32_t tmp = kNone;
  if (flatten) {
    tmp = c.e.temp("reduction temp", total, c.cd);
    c.e.alloc(tmp, st);
    c.e.copy({.stream = st,
              .dtype = c.cd,
              .elements = total,
              .src = src,
              .dst = region(tmp),
              .label = tag + ": flatten"});
  }
  const bool copy_back = flatten && back.copied;
  flush_collective(c, k, total, st, tag, seq, flatten ? region(tmp) : src, root,
                   flatten && !copy_back ? src : Region{});
  if (copy_back) {
    CopySpec cp{.stream = st, .dtype = c.cd, .label = tag + ": copy back"};
    if (back.slot == kNone) {
      cp.elements = total;
      cp.src = region(tmp);
      cp.dst = src;
    } else {
      cp.slot = back.slot;
      cp.src = c.e.derived({.kind = DerivedKind::OwnedGrads, .flush_plan = back.in_tmp});
      cp.dst = c.e.derived({.kind = DerivedKind::OwnedGrads, .flush_plan = back.plan});
    }
    c.e.copy(std::move(cp));
  }
  if (flatten) c.e.free(tmp, st);
}

// The reduce_scatter path's reductions of flush f: CHUNK_GT over all owner slices (one all-reduce
// per chunk), or, without use_multi_rank_bucket_allreduce, per owner in order of first appearance.
const std::vector<PlannedReduction>& owner_reductions(Ctx& c, IpgPass& pass, std::uint32_t f) {
  if (pass.reductions.size() != pass.flushes.size()) {
    pass.reductions.assign(pass.flushes.size(), {});
    pass.reductions_ready.assign(pass.flushes.size(), false);
  }
  auto& out = pass.reductions[f];
  if (pass.reductions_ready[f]) return out;
  pass.reductions_ready[f] = true;
  const auto slices = owner_slices(c.plan, c.m, pass.flushes[f].params);
  const PlannedFlush& fl = pass.flushes[f];
  const std::uint32_t bucket =
      fl.extra_large ? c.grad_buf[fl.params.front()] : c.ipg[fl.buffer_index];
  auto add_chunks = [&](const std::vector<BucketSlice>& chunk_slices, std::uint32_t root) {
    std::vector<Elements> sizes;
    sizes.reserve(chunk_slices.size());
    for (const auto& sl : chunk_slices) sizes.push_back(sl.length);
    for (const auto& [b, e] : chunk_gt(sizes, c.r)) {
      Elements total = 0;
      for (std::size_t i = b; i < e; ++i) total += sizes[i];
      // All owners' slices tile the bucket in order, so an all-reduce chunk is one range; one
      // owner's slices (reduce to it) are a list, the same on every rank.
      Region src = region(bucket, chunk_slices[b].offset, total);
      if (root != kNone && e - b > 1) {
        std::vector<Piece> pieces;
        for (std::size_t i = b; i < e; ++i)
          pieces.push_back({bucket, chunk_slices[i].offset, chunk_slices[i].length});
        src = list_region(c.e.list(std::move(pieces)));
      }
      out.push_back({total, chunk_slices[b].offset, e - b, root, src});
    }
  };
  if (c.multi_rank) {
    add_chunks(slices, kNone);
    return out;
  }
  std::vector<std::uint32_t> owner_order;
  std::map<std::uint32_t, std::vector<BucketSlice>> by_owner;
  for (const auto& sl : slices) {
    auto [it, fresh] = by_owner.try_emplace(sl.owner);
    if (fresh) owner_order.push_back(sl.owner);
    it->second.push_back(sl);
  }
  for (std::uint32_t k : owner_order) add_chunks(by_owner[k], k);
  return out;
}

void reduce_contiguous(Ctx& c, IpgPass& pass, std::uint32_t f, Stream st, const std::string& tag,
                       std::uint32_t seq) {
  const PlannedFlush& fl = pass.flushes[f];
  // The bucket, or for an extra-large flush the one param's own gradient.
  const std::uint32_t src = fl.extra_large ? c.grad_buf[fl.params.front()] : c.ipg[fl.buffer_index];
  if (fl.elements == 0) {
    // v0.14.4's gradient_reduction_w_predivide has no empty-tensor guard (v0.14.4 :970).
    if (!c.reduce_scatter && c.v0144)
      flush_collective(c, CollectiveKind::AllReduce, 0, st, tag, seq, region(src));
    return;
  }
  if (!c.reduce_scatter) {  // in place, post-scaled; a CD copy only when CD != LP
    reduce_chunk(c, CollectiveKind::AllReduce, fl.elements, 1, st, tag, seq, region(src), kNone,
                 {.copied = true});
    return;
  }
  const auto& reductions = owner_reductions(c, pass, f);
  for (const PlannedReduction& red : reductions) {
    const bool to_owner = red.root != kNone;
    if (to_owner && c.overlap) c.e.sync(tag + ": synchronize before reduce");
    CopyBack back;
    if (!to_owner && reductions.size() == 1 && pass.owned_slot[f] != kNone) {
      // The flush's one all-reduce: each rank copies back the slices it owns (X4), from the
      // temporary at their bucket offset less the chunk's.
      FlushPlan in_tmp;
      const std::uint32_t tmp = c.e.temp("reduction temp", red.total, c.cd);
      for (const FlushEntry& en : pass.entries[f])
        in_tmp.entries.push_back({en.tensor, tmp, en.offset - red.offset});
      back = {.copied = true,
              .slot = pass.owned_slot[f],
              .plan = pass.flush_plan[f],
              .in_tmp = c.e.flush_plan(std::move(in_tmp))};
    }
    reduce_chunk(c, to_owner ? CollectiveKind::Reduce : CollectiveKind::AllReduce, red.total,
                 red.pieces, st, tag, seq, red.src, red.root, back);
  }
}

// contiguous_gradients=false: BUFFERED_REDUCE_FALLBACK with the bucket as chunk limit: one
// all-reduce per dtype (all grads share the LP dtype here), on a flattened copy unless one tensor.
void reduce_fallback(Ctx& c, const PlannedFlush& fl, Stream st, const std::string& tag,
                     std::uint32_t seq) {
  if (fl.params.empty()) return;
  if (c.overlap) c.e.sync(tag + ": synchronize before all_reduce");
  // One tensor is reduced in place in its own gradient; several are flattened first (their
  // grads in insertion order) and the result copied back into them.
  std::vector<Piece> grads;
  for (std::uint32_t p : fl.params) grads.push_back({c.grad_buf[p], 0, c.m.params[p].numel});
  reduce_chunk(c, CollectiveKind::AllReduce, fl.elements, fl.params.size(), st, tag, seq,
               fl.params.size() == 1 ? region(c.grad_buf[fl.params.front()])
                                     : list_region(c.e.list(std::move(grads))),
               kNone, {.copied = true});
}

// With gradient accumulation, each touching gradient goes through DeepSpeed's
// async_accumulate_grad_in_cpu_via_gpu (stage_1_and_2.py:1516-1559 at edaa722, :1183-1228 at
// v0.14.4), called per param from copy_grads_in_partition (:1650-1664) after the flush's
// reduction: its accumulator B8 (torch.zeros at the first call, :1527), from the second micro-step
// on copied into the first numel of the one-param staging buffer B6 (temp_grad_buffer_for_gpu_
// offload, :1522, :1536) and added into the reduced gradient (:1537), then the sum copied back
// into B8 (:1549; v0.14.4 skips that copy at the boundary, :1226-1227, where edaa722 makes it
// unconditionally). B6 is reused by the next param: its H2D is issued after this add (transfer()
// waits for the reduction stream). Each op is the param's numel on the ranks it touches (its
// Touching({p}) slot), 0 elsewhere. The owned slices then go to B4 in one copy per flush (DeepSpeed
// copies them per param right after each accumulation: the same data, read after every add).
// "Second micro-step" is DeepSpeed's micro_step_id > 0 (below), which is not the micro-step index
// at stage 1 at edaa722: there no flush accumulates (accumulates_on_cpu), and the boundary's
// reduction of the autograd-accumulated grads is all B4 needs.
void offload_post_flush(Ctx& c, IpgPass& pass, std::uint32_t f, bool boundary, std::uint32_t micro,
                        Stream st) {
  // DeepSpeed's micro_step_id at this flush: v0.14.4 counts backward() calls since the step
  // (:2036, reset at :1820); edaa722 counts backwards whose first hook found the IPG buffers
  // released (setup_buckets :2494-2495; _release_ipg_buffers :835; reset in step() :2283), and
  // only stage 2 releases them every backward (stage 1 at its boundary epilogue).
  const std::uint32_t ds_micro = c.v0144 || c.stage == 2 ? micro : 0;
  const bool accumulate = c.v0144 ? c.gas > 1 : ds_micro > 0 || !boundary;
  if (accumulate && accumulates_on_cpu(c)) {
    const bool to_cpu = !boundary || !c.v0144;
    for (const FlushEntry& en : pass.entries[f]) {
      const std::uint32_t p = en.tensor, slot = pass.b8_slot[p];
      const Region grad = region(en.buffer, en.offset);  // the reduced gradient, where reduced
      if (!pass.b8_live[p]) {
        c.e.alloc(pass.b8_buf[p], st, kNone, true);
        pass.b8_live[p] = true;
      }
      if (ds_micro > 0) {
        CopySpec to_gpu = c.transfer(OpKind::HostToDevice, c.lp);
        to_gpu.slot = slot;
        to_gpu.src = region(pass.b8_buf[p]);
        to_gpu.dst = region(c.b6);
        to_gpu.label = "accumulated grad of " + c.pname(p) + " to GPU (B8 -> B6)";
        const std::uint32_t h2d = c.e.copy(std::move(to_gpu));
        c.e.copy({.stream = st,
                  .dtype = c.lp,
                  .slot = slot,
                  .src = region(c.b6),
                  .dst = grad,
                  .mode = CopyMode::Add,
                  .deps = {h2d},
                  .label = "add accumulated grad of " + c.pname(p)});
      }
      if (to_cpu) {
        CopySpec back = c.transfer(OpKind::DeviceToHost, c.lp);
        back.slot = slot;
        back.src = grad;
        back.dst = region(pass.b8_buf[p]);
        back.label = "grad of " + c.pname(p) + " to CPU accumulator (B8)";
        c.e.copy(std::move(back));
      }
    }
  }
  if (boundary) {
    CopySpec owned = c.transfer(OpKind::DeviceToHost, c.mw);
    owned.slot = pass.owned_slot[f];  // each owned slice into its group's B4, cast to MW
    owned.src = c.e.derived({.kind = DerivedKind::OwnedGrads, .flush_plan = pass.flush_plan[f]});
    owned.dst = c.e.derived(
        {.kind = DerivedKind::OwnedPartition, .flush_plan = pass.flush_plan[f], .buffers = c.b4});
    owned.label = "owned gradient slices to fp32 CPU partition (B4)";
    c.e.copy(std::move(owned));
  }
}

}  // namespace

void drop_deferred(Ctx& c, Stream st) {
  for (std::uint32_t p : c.deferred_grad_frees) c.free_grad(p, st);
  // The kept buffer adopts the touching grads the frees just released (Op::src of an Alloc): the
  // ledger sees DeepSpeed's bytes, the data stays where DeepSpeed keeps it, at no cost.
  for (const auto& [b, plan] : c.deferred_retained) c.e.adopt(b, plan, st);
  c.deferred_grad_frees.clear();
  c.deferred_retained.clear();
}

void emit_flush(Ctx& c, IpgPass& pass, std::uint32_t f, std::uint32_t set, bool boundary,
                std::uint32_t micro) {
  const PlannedFlush& fl = pass.flushes[f];
  const std::uint32_t seq = c.flush_seq++;
  const Stream st = c.overlap ? Stream::Reduce : Stream::Compute;
  const std::string tag = "flush " + std::to_string(seq);
  drop_deferred(c, st);
  if (c.contiguous) {
    if (c.overlap) {  // AVERAGE_TENSOR: reduce stream waits for compute, compute for the previous
                      // flush
      c.e.wait_stream(Stream::Reduce, Stream::Compute);
      c.e.wait_stream(Stream::Compute, Stream::Reduce);
    }
    reduce_contiguous(c, pass, f, st, tag, seq);
  } else {
    reduce_fallback(c, fl, st, tag, seq);
  }
  // POST_FLUSH (§4.5).
  if (c.offload) {
    offload_post_flush(c, pass, f, boundary, micro, st);
  } else if (c.contiguous) {
    if (!fl.params.empty()) {
      c.e.alloc(pass.gip_buf[set][f], st);  // lazily, at the rank's first in-partition copy
      (set == 0 ? c.step_frees : c.epilogue_frees).push_back(pass.gip_buf[set][f]);
      // The rank's touching grads, whole, insertion order, into the T3 piece of the flush that
      // first touches the rank, packed after the earlier flushes' (§4.5).
      Region touched;
      touched.flush_grads = pass.flush_plan[f];
      c.e.copy({.stream = st,
                .dtype = c.lp,
                .slot = pass.copy_slot[f],
                .src = touched,
                .dst = c.e.derived({.kind = DerivedKind::PartitionGrads,
                                    .pass = pass.grad_pass,
                                    .set = set,
                                    .flush = f}),
                .label = tag + ": copy the rank's grads into grads_in_partition"});
    }
  } else if (c.stage == 2) {
    // Non-owned grads are dropped, owned ones kept whole; with overlap the drop waits for the next
    // flush.
    for (std::uint32_t p : fl.params) c.deferred_grad_frees.push_back(p);
    c.deferred_retained.emplace_back(pass.retained_buf[set][f], pass.flush_plan[f]);
    (set == 0 ? c.step_frees : c.epilogue_frees).push_back(pass.retained_buf[set][f]);
    if (!c.overlap) drop_deferred(c, st);
  }
  if (c.contiguous && fl.extra_large) c.free_grad(fl.params.front(), st);
}

void emit_insert(Ctx& c, IpgPass& pass, std::size_t i, std::uint32_t set, bool boundary,
                 std::uint32_t micro) {
  const PlannedInsert& ins = pass.inserts[i];
  if (ins.flush_before) emit_flush(c, pass, ins.flush - 1, set, boundary, micro);
  if (!ins.copied) return;
  c.e.copy({.kind = OpKind::CopyToBucket,
            .dtype = c.lp,
            .elements = c.m.params[ins.param].numel,
            .src = region(c.grad_buf[ins.param]),
            .dst = region(c.ipg[ins.buffer_index], ins.offset),
            .param = ins.param,
            .flush = c.flush_seq,  // the flush that will reduce this bucket
            .label = "copy " + c.pname(ins.param) + " into ipg[" +
                     std::to_string(ins.buffer_index) + "]"});
  c.free_grad(ins.param);  // p.grad now views the bucket
}

}  // namespace zerosim::schedule::s12
