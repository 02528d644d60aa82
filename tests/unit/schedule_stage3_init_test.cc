// Stage 3 initialization's transient buffers (stage3.py at edaa722): the converted tensor beside
// each sub-group's fp32 master clone (_create_fp32_partitions, :1031-1126), the zeroed scratch and
// the pageable zeros that pin_memory copies (initialize_optimizer_states, :1251-1312; the
// grad_partitions_flat_buffer, :742-746; offload_param's flat CPU memory, :857-858), and fp32
// training, where the LP partitions are the master weights (:1112-1117).
#include <map>
#include <string>
#include <vector>

#include "schedule_stage3_test_util.h"

namespace zerosim {
namespace {

using namespace s3test;  // NOLINT

constexpr std::size_t kNever = SIZE_MAX;

struct Life {
  std::size_t alloc = kNever, free = kNever;
};

std::map<std::string, Life> lives(const Schedule& s) {
  std::map<std::string, Life> out;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.kind != OpKind::Alloc && op.kind != OpKind::Free) continue;
    Life& l = out[s.buffers[op.buffer].name];
    (op.kind == OpKind::Alloc ? l.alloc : l.free) = i;
  }
  return out;
}

// Params {10, 7, 2} on 4 ranks: partitions {3, 2, 1}; sub-groups {p10, p7} (5) and {p2} (1).
DsConfig config() {
  DsConfig ds = stage3_config();
  ds.zero.sub_group_size = 5;
  ds.zero.param_persistence_threshold = 0;
  return ds;
}

const ModelDesc& model() {
  static const ModelDesc m = param_model({10, 7, 2}, {2, 1, 0});
  return m;
}

MemoryPool pool_of(const Schedule& s, const std::string& name) {
  const std::size_t b = find_buffer(s, name);
  EXPECT_LT(b, s.buffers.size()) << name;
  return b < s.buffers.size() ? s.buffers[b].pool : MemoryPool::Device;
}

TEST(ScheduleStage3Init, EachMasterIsACloneOfItsConvertedPartition) {
  const Schedule s = build(model(), config(), 4);
  auto l = lives(s);
  const Life& c0 = l["converted fp32 partition [sub-group 0]"];
  const Life& c1 = l["converted fp32 partition [sub-group 1]"];
  const Life& m0 = l["fp32 master [sub-group 0]"];
  const Life& m1 = l["fp32 master [sub-group 1]"];
  // converted_0 lives through master_0's clone and until converted_1 rebinds the name ...
  EXPECT_LT(c0.alloc, m0.alloc);
  EXPECT_LT(c1.alloc, c0.free);
  EXPECT_LT(c0.free, m1.alloc);
  // ... and the last one until _create_fp32_partitions returns, before the optimizer states.
  EXPECT_GT(c1.free, m1.alloc);
  EXPECT_LT(c1.free, l["init fp32 grad scratch"].alloc);
  EXPECT_EQ(m0.free, kNever);
  // Both on the GPU without offload; the scratch is the largest sub-group's (5 elements).
  EXPECT_EQ(pool_of(s, "converted fp32 partition [sub-group 0]"), MemoryPool::Device);
  const std::size_t scratch = find_buffer(s, "init fp32 grad scratch");
  ASSERT_LT(scratch, s.buffers.size());
  EXPECT_EQ(s.buffers[scratch].numel, 5u);
  EXPECT_EQ(s.buffers[scratch].pool, MemoryPool::Device);
  // The init peak of temporaries: converted_0 and converted_1 for a moment (5 + 1), as much as
  // the scratch and nothing else (the step's temporaries come later).
  std::size_t init_end = 0;
  while (init_end < s.ops.size() && s.ops[init_end].phase == Phase::Init) ++init_end;
  EXPECT_EQ(peak_elements(s, 0, init_end, BufferCategory::Temp), 6u);
}

TEST(ScheduleStage3Init, PinnedOffloadCopiesPageableZerosIntoPinnedBuffers) {
  DsConfig ds = config();
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  ds.zero.offload_optimizer.pin_memory = true;
  const Schedule s = build(model(), ds, 4);
  auto l = lives(s);
  // The masters are clones of a .to("cpu"): pageable, whatever pin_memory says.
  EXPECT_EQ(pool_of(s, "fp32 master [sub-group 0]"), MemoryPool::Host);
  EXPECT_EQ(pool_of(s, "converted fp32 partition [sub-group 1]"), MemoryPool::Host);
  // The scratch is made on the optimizer's device (the host) and dropped at the end.
  EXPECT_EQ(pool_of(s, "init fp32 grad scratch"), MemoryPool::Host);
  for (const std::string g : {"0", "1"}) {
    const Life& zeros = l["fp32 grads before pin_memory [sub-group " + g + "]"];
    const Life& grads = l["fp32 grads [sub-group " + g + "]"];
    EXPECT_EQ(pool_of(s, "fp32 grads before pin_memory [sub-group " + g + "]"), MemoryPool::Host);
    EXPECT_EQ(pool_of(s, "fp32 grads [sub-group " + g + "]"), MemoryPool::Pinned);
    EXPECT_LT(zeros.alloc, grads.alloc) << g;
    EXPECT_GT(zeros.free, grads.alloc) << g;
    EXPECT_LT(zeros.free, l["init fp32 grad scratch"].free) << g;
  }
  const Life& flat0 = l["grad_partitions_flat_buffer before pin_memory"];
  const Life& flat = l["grad_partitions_flat_buffer"];
  EXPECT_LT(flat0.alloc, flat.alloc);
  EXPECT_GT(flat0.free, flat.alloc);
  EXPECT_EQ(pool_of(s, "grad_partitions_flat_buffer"), MemoryPool::Pinned);
  // Without pin_memory nothing is copied: no pageable twins.
  ds.zero.offload_optimizer.pin_memory = false;
  const Schedule u = build(model(), ds, 4);
  EXPECT_EQ(find_buffer(u, "grad_partitions_flat_buffer before pin_memory"), u.buffers.size());
  EXPECT_EQ(find_buffer(u, "fp32 grads before pin_memory [sub-group 0]"), u.buffers.size());
  EXPECT_EQ(pool_of(u, "fp32 grads [sub-group 0]"), MemoryPool::Host);
}

TEST(ScheduleStage3Init, OffloadParamPinsItsFlatBufferByCopying) {
  DsConfig ds = config();
  ds.zero.offload_param.device = OffloadDevice::Cpu;
  ds.zero.offload_param.pin_memory =
      false;  // _create_param_groups_fp16_flat_cpu_memory pins anyway
  const Schedule s = build(model(), ds, 4);
  auto l = lives(s);
  const Life& unpinned = l["fp16 flat CPU memory before pin_memory"];
  const Life& flat = l["lp_param_buffer (LP partitions)"];
  EXPECT_EQ(pool_of(s, "fp16 flat CPU memory before pin_memory"), MemoryPool::Host);
  EXPECT_EQ(pool_of(s, "lp_param_buffer (LP partitions)"), MemoryPool::Pinned);
  EXPECT_LT(unpinned.alloc, flat.alloc);
  EXPECT_GT(unpinned.free, flat.alloc);
  EXPECT_NE(unpinned.free, kNever);
}

TEST(ScheduleStage3Init, Fp32TrainingUpdatesTheLpPartitionsInPlace) {
  DsConfig ds = config();
  ds.fp16 = false;
  const Schedule s = build(model(), ds, 4);
  EXPECT_EQ(find_buffer(s, "fp32 master [sub-group 0]"), s.buffers.size());
  EXPECT_EQ(find_buffer(s, "converted fp32 partition [sub-group 0]"), s.buffers.size());
  const auto lp = static_cast<std::uint32_t>(find_buffer(s, "lp_param_buffer (LP partitions)"));
  int steps = 0;
  for (const Op& o : s.ops) {
    EXPECT_NE(o.label, "master to LP partitions [sub-group 0]");
    if (o.kind != OpKind::OptimizerStep) continue;
    ++steps;
    ASSERT_LT(o.update, s.updates.size());
    const UpdateCall& call = s.updates[o.update];
    EXPECT_EQ(call.master.buffer, lp);
    EXPECT_EQ(call.master, call.lp_out);
  }
  EXPECT_EQ(steps, 2);
  // bf16 keeps its fp32 master copy.
  ds.bf16 = true;
  const Schedule b = build(model(), ds, 4);
  EXPECT_LT(find_buffer(b, "fp32 master [sub-group 0]"), b.buffers.size());
}

}  // namespace
}  // namespace zerosim
