// Helpers for the simulator tests: a GPU and options with round numbers (so expected times are
// computed by hand), and tiny hand-built schedules.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "zerosim/engine.h"

namespace zerosim::simtest {

/// 100 TFLOP/s fp16/bf16, 10 fp32, HBM 1000 GB/s, PCIe 10 GB/s, NVLink 400, NIC 25, 1e12 B.
inline GpuSpec round_gpu() {
  GpuSpec g;
  g.name = "round-gpu";
  g.memory_bytes = 1000000000000ULL;
  g.bf16_tflops = 100;
  g.fp16_tflops = 100;
  g.fp32_tflops = 10;
  g.hbm_gbps = 1000;
  g.intra_node_gbps = 400;
  g.network_gbps = 25;
  g.pcie_gbps = 10;
  return g;
}

/// Efficiency 0.5 (round_gpu names no generation: the fallback), host 100 GB/s, links 100 GB/s
/// busBw with ring alpha 10 µs + 1 µs per hop, ring forced, no host costs (time_model_test.cc tests
/// them), so expected times stay the GPU's alone.
inline EngineOptions round_options() {
  EngineOptions o;
  o.host = HostCosts::none();
  LinkParams l;
  l.intra_gbps = 100;
  l.inter_gbps = 100;
  l.ring = {10, 1, 1};
  l.tree = {10, 1, 1};
  o.links = l;
  o.algorithm = CollectiveAlgorithm::Ring;
  return o;
}

/// `world` ranks on one node, one role, no slots, no ops.
inline Schedule tiny_schedule(std::uint32_t world) {
  Schedule s;
  s.meta.model = "tiny";
  s.meta.optimizer = "DeepSpeedZeroOptimizer";
  s.meta.stage = 2;
  s.meta.world = world;
  s.meta.nodes = 1;
  s.meta.gpus_per_node = world;
  s.comms = {{0, world, 1}};
  RankRole r;
  r.ranks = {{0, world - 1}};
  s.roles = {r};
  return s;
}

inline Op make_op(OpKind k, Stream st = Stream::Compute) {
  Op o;
  o.kind = k;
  o.stream = st;
  o.phase = Phase::Backward;
  o.label = std::string(op_kind_name(k));
  return o;
}
inline Op compute(OpKind k, double flops) {
  Op o = make_op(k);
  o.flops = flops;
  return o;
}
inline Op data(OpKind k, Stream st, DType dt, Elements elements = 0) {
  Op o = make_op(k, st);
  o.dtype = dt;
  o.elements = elements;
  return o;
}
/// A collective on communicator `comm` (Schedule::comms index; 0 is the world).
inline Op collective(CollectiveKind k, Elements numel, Elements out, std::uint32_t comm,
                     Stream st) {
  Op o = make_op(OpKind::Collective, st);
  o.collective = k;
  o.numel = numel;
  o.out_numel = out;
  o.comm = comm;
  o.reduce_op = k == CollectiveKind::AllGather ? ReduceOp::None : ReduceOp::Sum;
  return o;
}
inline Op with_deps(Op o, DepList deps) {
  o.deps = std::move(deps);
  return o;
}
inline Op in_phase(Op o, Phase p) {
  o.phase = p;
  return o;
}
inline Op in_step(Op o, std::uint32_t step) {
  o.step = step;
  return o;
}
inline Op alloc(std::uint32_t b) {
  Op o = make_op(OpKind::Alloc);
  o.buffer = b;
  return o;
}
inline Op free_op(std::uint32_t b) {
  Op o = make_op(OpKind::Free);
  o.buffer = b;
  return o;
}
inline Buffer buffer(std::string name, BufferCategory c, Elements numel, bool persistent = false) {
  Buffer b;
  b.name = std::move(name);
  b.category = c;
  b.numel = numel;
  b.persistent = persistent;
  return b;
}

/// Two roles on 4 ranks: ranks 0-1 own 1e6 elements (slot 0), ranks 2-3 own 3e6. Buffers: 500
/// common fp16 params, the slot-sized grads_in_partition. Ops: both allocations, a slot-sized copy
/// (12,000 ns for the timing role's 3e6), a forward of 5e9 FLOPs (100,000 ns).
inline Schedule two_role_schedule() {
  Schedule s = tiny_schedule(4);
  s.meta.slot_names = {"grads_in_partition"};
  RankRole a, b;
  a.ranks = {{0, 1}};
  a.representative = 0;
  a.slots = {1000000};
  b.ranks = {{2, 3}};
  b.representative = 2;
  b.slots = {3000000};
  s.roles = {a, b};
  s.buffers = {buffer("params", BufferCategory::Param16, 500, true),
               buffer("grads_in_partition", BufferCategory::Grad, 0, true)};
  s.buffers[1].slot = 0;
  Op copy = data(OpKind::Copy, Stream::Compute, DType::Float16);
  copy.slot = 0;
  copy.dst = {1, 0, 0, 0};
  s.ops = {alloc(0), alloc(1), copy, compute(OpKind::Forward, 5e9)};
  return s;
}

/// Runs with round_gpu/round_options; fails the test on diagnostics.
inline SimulationResult run(const Schedule& s, EngineOptions o = round_options()) {
  auto r = simulate(s, round_gpu(), o);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? std::move(r.value()) : SimulationResult{};
}

inline std::vector<std::pair<SimTime, SimTime>> times(const SimulationResult& r) {
  std::vector<std::pair<SimTime, SimTime>> out;
  for (const OpTiming& t : r.ops) out.emplace_back(t.start_ns, t.end_ns);
  return out;
}

}  // namespace zerosim::simtest
