// Stage 3 initialization (deepspeed_zero.md §7.1): without zero.Init, the engine broadcast of every
// param, the conversion broadcast and partitioning; under zero.Init, one broadcast per param as it
// is constructed and partitioned (one whole param alive at a time); then the defragmented LP
// partition buffer, fp32 master per sub-group, the IPG buffer and grad_partitions_flat_buffer, and
// one synchronous all-gather per trainable param while its gradient hook is registered. The three
// dist.barrier() calls move no data and appear as markers.
#include <algorithm>
#include <string>
#include <vector>

#include "schedule/stage3_internal.h"

namespace zerosim::schedule::s3 {
namespace {

std::uint32_t persistent_buffer(Context& cx, std::string name, BufferCategory cat, DType dt,
                                Elements numel, MemoryPool pool) {
  Buffer b;
  b.name = std::move(name);
  b.category = cat;
  b.pool = pool;
  b.dtype = dt;
  b.numel = numel;
  b.persistent = true;
  return cx.e.buffer(std::move(b));
}

std::uint32_t temp_buffer(Context& cx, std::string name, BufferCategory cat, DType dt,
                          Elements numel, MemoryPool pool = MemoryPool::Device) {
  Buffer b;
  b.name = std::move(name);
  b.category = cat;
  b.pool = pool;
  b.dtype = dt;
  b.numel = numel;
  return cx.e.buffer(std::move(b));
}

// In place on each param's slice of the whole-model buffer (declaration order).
void broadcasts(Context& cx, const std::string& what, std::uint32_t whole) {
  Elements at = 0;
  for (std::uint32_t p = 0; p < cx.m.params.size(); ++p) {
    cx.collective(CollectiveKind::Broadcast, cx.n(p), cx.n(p), cx.lp, ReduceOp::None,
                  Stream::Compute, cx.e.label(what, " ", cx.m.params[p].name), {}, 0,
                  region(whole, at, cx.n(p)));
    at += cx.n(p);
  }
}

// Partitions of every param, before the defragmenting copy, and of params outside the optimizer.
std::uint32_t alloc_partitions(Context& cx, MemoryPool lp_pool) {
  const auto parts =
      temp_buffer(cx, "LP partitions before defragmentation", BufferCategory::Param16, cx.lp,
                  cx.plan.s3_partition_numel, lp_pool);
  cx.e.alloc(parts);
  if (cx.plan.s3_unoptimized_partition_numel > 0) {
    cx.frozen_partitions = persistent_buffer(cx, "LP partitions of params outside the optimizer",
                                             BufferCategory::Param16, cx.lp,
                                             cx.plan.s3_unoptimized_partition_numel, lp_pool);
    cx.e.alloc(cx.frozen_partitions);
  }
  return parts;
}

// Rank r's c-chunk of a whole param stored at `offset` of `whole`: its elements [r·c, r·c + c),
// zeros past its end (DeepSpeed's _partition_param copies the real elements only; the padding of
// the last ranks' partitions is never read as param data).
Piece whole_chunk(const Context& cx, std::uint32_t whole, Elements offset, std::uint32_t p) {
  return {.buffer = whole,
          .offset = offset,
          .length = cx.c(p),
          .rank_stride = cx.c(p),
          .limit = offset + cx.n(p)};
}

// X2: every param's partition cut from the whole model (declaration order in `whole`): the
// trainable ones into `parts` in sub-group order (lp_param_buffer's layout), the others into the
// frozen partitions in declaration order.
void partition_whole_model(Context& cx, std::uint32_t whole, std::uint32_t parts) {
  std::vector<Elements> at(cx.m.params.size(), 0);
  Elements sum = 0;
  for (std::uint32_t p = 0; p < cx.m.params.size(); ++p) {
    at[p] = sum;
    sum += cx.n(p);
  }
  std::vector<Piece> trainable, frozen;
  for (const auto& sg : cx.plan.sub_groups)
    for (auto p : sg.params) trainable.push_back(whole_chunk(cx, whole, at[p], p));
  for (std::uint32_t p = 0; p < cx.m.params.size(); ++p)
    if (cx.sg_of_param[p] == kNone) frozen.push_back(whole_chunk(cx, whole, at[p], p));
  if (!trainable.empty())
    cx.data_op(OpKind::Copy, Stream::Compute, cx.plan.s3_partition_numel, cx.lp,
               cx.pieces(std::move(trainable)), region(parts), "partition params");
  if (!frozen.empty() && cx.frozen_partitions != kNone)
    cx.data_op(OpKind::Copy, Stream::Compute, cx.plan.s3_unoptimized_partition_numel, cx.lp,
               cx.pieces(std::move(frozen)), region(cx.frozen_partitions),
               "partition params outside the optimizer");
}

// Without zero.Init: whole params on the device, broadcast twice, then cut to their partitions.
// Under zero.Init: each param is broadcast from rank 0 and partitioned as it is constructed, so one
// whole param is alive at a time (per param, not per module: an approximation of construction
// order); the engine's broadcast is skipped (§7.1 steps 1, 4). The partitions are counted from the
// start in both cases (they only grow while the whole params exist).
void convert_params(Context& cx) {
  const MemoryPool lp_pool = cx.offload_param ? cx.host_pool : MemoryPool::Device;
  const Elements trainable = cx.plan.s3_partition_numel;
  std::uint32_t parts = kNone;
  if (cx.zero_init) {
    parts = alloc_partitions(cx, lp_pool);
    for (std::uint32_t p = 0; p < cx.m.params.size(); ++p) {
      const std::string& name = cx.m.params[p].name;
      const auto whole = temp_buffer(cx, "zero.Init construction:" + name, BufferCategory::Param16,
                                     cx.lp, cx.n(p));
      cx.e.alloc(whole);
      cx.collective(CollectiveKind::Broadcast, cx.n(p), cx.n(p), cx.lp, ReduceOp::None,
                    Stream::Compute, cx.e.label("zero.Init broadcast ", name), {}, 0,
                    region(whole));
      const std::uint32_t into = cx.sg_of_param[p] != kNone ? parts : cx.frozen_partitions;
      if (into != kNone && cx.c(p) > 0)  // X2: the rank keeps its chunk
        cx.data_op(OpKind::Copy, Stream::Compute, cx.c(p), cx.lp,
                   cx.pieces({whole_chunk(cx, whole, 0, p)}),
                   region(into, cx.part_offset[p], cx.c(p)), cx.e.label("partition ", name));
      cx.e.free(whole);
    }
  } else {
    Elements total = 0;
    for (std::uint32_t p = 0; p < cx.m.params.size(); ++p) total += cx.n(p);
    const auto whole =
        temp_buffer(cx, kStage3WholeModelBuffer, BufferCategory::Param16, cx.lp, total);
    cx.e.alloc(whole);
    broadcasts(cx, "engine broadcast", whole);
    broadcasts(cx, "zero conversion broadcast", whole);
    parts = alloc_partitions(cx, lp_pool);
    partition_whole_model(cx, whole, parts);
    cx.e.free(whole);
  }
  cx.e.marker("dist.barrier (create fp16 partitions)");
  // Under offload_param the flat buffer is param_groups_fp16_flat_cpu_memory, always pinned by
  // copying a fresh torch.empty (stage3.py:857-858), whatever pin_memory says.
  std::uint32_t unpinned = kNone;
  if (cx.offload_param) {
    unpinned = temp_buffer(cx, "fp16 flat CPU memory before pin_memory", BufferCategory::Temp,
                           cx.lp, trainable, MemoryPool::Host);
    cx.e.alloc(unpinned);
  }
  cx.lp_partitions =
      persistent_buffer(cx, "lp_param_buffer (LP partitions)", BufferCategory::Param16, cx.lp,
                        trainable, cx.offload_param ? MemoryPool::Pinned : lp_pool);
  cx.e.alloc(cx.lp_partitions);
  if (unpinned != kNone) cx.e.free(unpinned);
  cx.data_op(OpKind::Copy, Stream::Compute, trainable, cx.lp, region(parts),
             region(cx.lp_partitions), "defragment LP partitions");
  cx.e.free(parts);
}

// _create_fp32_partitions (stage3.py:1031-1126): each sub-group's master is
// `lp_flat.to(device, master dtype).clone()` (:1108-1110, :1119-1121), so the converted tensor
// lives beside its clone and is dropped only when the next sub-group's conversion rebinds
// `converted` (the last one when the function returns). Tensor.to returns the tensor itself when
// dtype and device already match: then the clone is the only copy, and on the optimizer's own
// device DeepSpeed takes the LP partitions as the master outright (:1112-1117; master_is_lp). The
// masters are plain (pageable) tensors on the host under offload_optimizer: the clone of a
// `.to("cpu")` is never pinned.
void fp32_partitions(Context& cx) {
  std::uint32_t converted = kNone;
  for (std::size_t i = 0; i < cx.plan.sub_groups.size(); ++i) {
    if (cx.master_is_lp(i)) continue;
    const Elements sc = cx.plan.sub_groups[i].partition_numel;
    const bool cpu = cx.sg_on_cpu(i);
    const MemoryPool pool = cpu ? MemoryPool::Host : MemoryPool::Device;
    const Stream st = cpu ? Stream::Host : Stream::Compute;
    const std::string sg = std::to_string(i);
    const Region lp = region(cx.lp_partitions, cx.sg_offset[i], sc);
    Region from = lp;
    if (cx.lp != cx.mw || cpu != cx.offload_param) {
      const auto next = temp_buffer(cx, "converted fp32 partition [sub-group " + sg + "]",
                                    BufferCategory::Temp, cx.mw, sc, pool);
      cx.e.alloc(next);
      cx.data_op(OpKind::Copy, st, sc, cx.mw, lp, region(next),
                 "LP partitions to fp32, sub-group " + sg);
      if (converted != kNone) cx.e.free(converted);
      converted = next;
      from = region(converted);
    }
    cx.master[i] = persistent_buffer(cx, "fp32 master [sub-group " + sg + "]",
                                     BufferCategory::Param32, cx.mw, sc, pool);
    cx.e.alloc(cx.master[i]);
    cx.data_op(OpKind::Copy, st, sc, cx.mw, from, region(cx.master[i]),
               "clone fp32 master, sub-group " + sg);
  }
  if (converted != kNone) cx.e.free(converted);
  // Adam's two moments are created lazily at the first step (allocated there).
  for (std::size_t i = 0; i < cx.plan.sub_groups.size(); ++i) {
    const Elements sc = cx.plan.sub_groups[i].partition_numel;
    cx.adam[i] = persistent_buffer(cx, "Adam states [sub-group " + std::to_string(i) + "]",
                                   BufferCategory::OptimState, cx.mw, 2 * sc,
                                   cx.sg_on_cpu(i) ? MemoryPool::Host : MemoryPool::Device);
  }
}

// initialize_optimizer_states (stage3.py:1251-1312): a zeroed scratch of the largest sub-group on
// the optimizer's device (the host under offload_optimizer, :328) that GPU sub-groups' .grad
// narrow into, dropped when the function returns; each CPU sub-group's .grad is a zeroed buffer
// of its own, pinned by copying when offload_optimizer.pin_memory (:1288-1291), so the pageable
// zeros and the pinned copy coexist for a moment.
void optimizer_states(Context& cx) {
  Elements largest = 0;
  for (const auto& sg : cx.plan.sub_groups) largest = std::max(largest, sg.partition_numel);
  if (largest == 0) return;
  const MemoryPool scratch_pool = cx.offload_opt ? MemoryPool::Host : MemoryPool::Device;
  const auto scratch =
      temp_buffer(cx, "init fp32 grad scratch", BufferCategory::Temp, cx.mw, largest, scratch_pool);
  cx.e.alloc(scratch);
  const bool pin = cx.offload_opt && cx.z.offload_optimizer.pin_memory;
  for (std::size_t i = 0; i < cx.plan.sub_groups.size(); ++i) {
    if (!cx.sg_on_cpu(i)) continue;
    const Elements sc = cx.plan.sub_groups[i].partition_numel;
    const std::string sg = std::to_string(i);
    std::uint32_t zeros = kNone;
    if (pin) {
      zeros = temp_buffer(cx, "fp32 grads before pin_memory [sub-group " + sg + "]",
                          BufferCategory::Temp, cx.mw, sc, MemoryPool::Host);
      cx.e.alloc(zeros);
    }
    cx.host_fp32_grads[i] =
        persistent_buffer(cx, "fp32 grads [sub-group " + sg + "]", BufferCategory::Grad, cx.mw, sc,
                          pin ? MemoryPool::Pinned : MemoryPool::Host);
    cx.e.alloc(cx.host_fp32_grads[i]);
    if (zeros != kNone) cx.e.free(zeros);
  }
  cx.e.free(scratch);
}

void reduction_buffers(Context& cx) {
  if (cx.z.contiguous_gradients) {  // one buffer of R elements in CD, never freed, no double
                                    // buffering
    cx.ipg = persistent_buffer(cx, "IPG bucket", BufferCategory::CommBucket, cx.cd,
                               cx.z.reduce_bucket_size, MemoryPool::Device);
    cx.e.alloc(cx.ipg);
  }
  // Under offload_optimizer with pin_memory the zeros are made on the host and then pinned by
  // copying (stage3.py:742-746): both exist for a moment.
  std::uint32_t unpinned = kNone;
  if (cx.offload_opt && cx.z.offload_optimizer.pin_memory) {
    unpinned =
        temp_buffer(cx, "grad_partitions_flat_buffer before pin_memory", BufferCategory::Temp,
                    cx.ga, cx.plan.s3_partition_numel, MemoryPool::Host);
    cx.e.alloc(unpinned);
  }
  cx.grad_partitions = persistent_buffer(cx, "grad_partitions_flat_buffer", BufferCategory::Grad,
                                         cx.ga, cx.plan.s3_partition_numel,
                                         cx.offload_opt ? cx.host_pool : MemoryPool::Device);
  cx.e.alloc(cx.grad_partitions, Stream::Compute, kNone, true);  // torch.zeros (§7.1 step 8)
  if (unpinned != kNone) cx.e.free(unpinned);
}

// Hook registration gathers each trainable param synchronously (output W*c) and re-partitions it.
void hook_gathers(Context& cx) {
  for (std::uint32_t p = 0; p < cx.m.params.size(); ++p) {
    if (!cx.m.params[p].trainable) continue;
    cx.e.alloc(cx.padded_buf[p]);
    // Under offload_param every partition, persistent ones included, is in the host flat buffer
    // by now (Coordinator::stage_partitions_on_device): copied into the rank's slot of the gather
    // output first.
    const bool staged = cx.staged_from_host(p);
    if (staged)
      cx.data_op(OpKind::HostToDevice, Stream::Compute, cx.c(p), cx.lp, cx.own_partition(p),
                 rank_slice(cx.padded_buf[p], cx.c(p)),
                 cx.e.label("H2D partition of ", cx.m.params[p].name));
    const Region in = staged ? rank_slice(cx.padded_buf[p], cx.c(p)) : cx.own_partition(p);
    cx.collective(CollectiveKind::AllGather, cx.c(p), cx.c(p) * cx.world, cx.lp, ReduceOp::None,
                  Stream::Compute,
                  cx.e.label("grad hook registration: gather ", cx.m.params[p].name), {}, kNone, in,
                  region(cx.padded_buf[p]));
    cx.e.free(cx.padded_buf[p]);
  }
}

}  // namespace

void emit_init(Context& cx) {
  cx.e.set_phase(Phase::Init);
  cx.e.set_step(0, 0);
  convert_params(cx);
  fp32_partitions(cx);
  cx.e.marker("dist.barrier (setup for real optimizer, after fp32 partitions)");  // :716
  optimizer_states(cx);
  cx.e.marker("dist.barrier (setup for real optimizer, after optimizer states)");  // :725
  reduction_buffers(cx);
  hook_gathers(cx);
}

}  // namespace zerosim::schedule::s3
