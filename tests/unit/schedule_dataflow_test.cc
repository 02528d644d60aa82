// A reference data-flow interpreter over built stage 0/1/2 schedules: every rank's buffers hold
// numbers (doubles, so no dtype rounding), each op applies its operands, copy mode and scale
// (schedule.h Region, Op::copy_mode, Op::scale, Op::zero_fill), collectives combine the ranks, and
// autograd's GradReady writes a synthetic gradient that depends on the tensor, the element, the
// rank and the micro-step. After the step, every optimizer update's gradient must be, element by
// element, the accumulated average over the ranks of the gradients of the flat range the rank
// updates (deepspeed_zero.md §4.4-§4.7, §5, §3.3-§3.5): a wrong offset, slice, copy mode, missing
// averaging or an uninitialised read (buffers start as NaN unless zero-filled; a Free poisons
// them, except that an adopting Alloc first takes what the Frees right before it released, X6)
// shows up as a wrong or NaN value. Executors can reuse the idea for their data mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "schedule_stage012_testlib.h"

namespace zerosim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The gradient autograd produces for element e of tensor t on `rank` at micro-step `micro`.
double synthetic_grad(std::uint32_t t, Elements e, std::uint32_t rank, std::uint32_t micro) {
  return 1.0 + 0.37 * t + 0.001 * static_cast<double>(e) + 10.0 * rank + 100.0 * micro;
}

class Interpreter {
 public:
  explicit Interpreter(const Schedule& s) : s_(s), mem_(s.meta.world) {
    for (std::uint32_t rank = 0; rank < s.meta.world; ++rank)
      for (std::uint32_t b = 0; b < s.buffers.size(); ++b)
        if (s.buffers[b].executor_owned) alloc(rank, b, false);
  }

  void run() {
    // A run of Frees right before an adopting Alloc (Op::src) releases its buffers only once the
    // Alloc has taken their contents (as executor.cc's defer_release): they are poisoned after.
    defer_.assign(s_.ops.size(), false);
    for (std::size_t i = s_.ops.size(); i-- > 0;)
      if (s_.ops[i].kind == OpKind::Free && i + 1 < s_.ops.size())
        defer_[i] = (s_.ops[i + 1].kind == OpKind::Alloc && !s_.ops[i + 1].src.empty()) ||
                    (s_.ops[i + 1].kind == OpKind::Free && defer_[i + 1]);
    for (std::size_t i = 0; i < s_.ops.size(); ++i) {
      if (defer_[i]) {
        deferred_.push_back(s_.ops[i].buffer);
        continue;
      }
      apply(s_.ops[i]);
    }
  }

  /// Per optimizer op, per rank: the values of its update's gradient.
  std::vector<std::vector<std::vector<double>>> update_grads;
  /// Data ops (copy-like, grad_ready, collectives on data) that named no operand.
  std::vector<std::string> skipped;

 private:
  void alloc(std::uint32_t rank, std::uint32_t b, bool zero) {
    mem_[rank][b].assign(s_.buffer_numel(b, s_.role_of(rank)), zero ? 0.0 : kNaN);
  }

  void poison(std::uint32_t b) {
    for (std::uint32_t r = 0; r < s_.meta.world; ++r)
      for (double& x : mem_[r][b]) x = kNaN;
  }

  std::vector<double> read(std::uint32_t rank, const Op& op, const Region& r, bool is_src) {
    std::vector<double> out;
    for (const OperandSpan& sp : resolve_pieces(s_, op, r, rank, is_src)) {
      if (sp.buffer == kNone) {
        out.insert(out.end(), sp.length, 0.0);
        continue;
      }
      const auto& buf = mem_[rank][sp.buffer];
      for (Elements i = 0; i < sp.length; ++i)
        out.push_back(sp.offset + i < buf.size() ? buf[sp.offset + i] : kNaN);
    }
    return out;
  }

  void write(std::uint32_t rank, const Op& op, const Region& r, const std::vector<double>& v,
             bool add, double scale) {
    std::size_t k = 0;
    for (const OperandSpan& sp : resolve_pieces(s_, op, r, rank, false)) {
      for (Elements i = 0; i < sp.length && k < v.size(); ++i, ++k) {
        if (sp.buffer == kNone) continue;  // dropped
        auto& buf = mem_[rank][sp.buffer];
        ASSERT_LT(sp.offset + i, buf.size()) << op.label << ": write outside a live buffer";
        buf[sp.offset + i] = (add ? buf[sp.offset + i] : 0.0) + v[k] * scale;
      }
    }
    EXPECT_EQ(k, v.size()) << op.label << ": src and dst lengths differ";
  }

  void apply(const Op& op) {
    const std::uint32_t world = s_.meta.world;
    const bool add = op.copy_mode == CopyMode::Add;
    switch (op.kind) {
      case OpKind::Alloc:
        for (std::uint32_t r = 0; r < world; ++r) {
          // An adopting Alloc starts holding what the Frees right before released.
          const std::vector<double> adopted =
              op.src.empty() ? std::vector<double>{} : read(r, op, op.src, true);
          alloc(r, op.buffer, op.zero_fill);
          if (op.src.empty()) continue;
          auto& buf = mem_[r][op.buffer];
          EXPECT_EQ(adopted.size(), buf.size()) << op.label << ": adopts another size";
          std::copy_n(adopted.begin(), std::min(adopted.size(), buf.size()), buf.begin());
        }
        for (std::uint32_t b : deferred_) poison(b);
        deferred_.clear();
        return;
      case OpKind::Free:
        poison(op.buffer);
        return;
      case OpKind::GradReady:
        if (op.dst.empty()) return skipped.push_back(op.label);
        for (std::uint32_t r = 0; r < world; ++r) {
          std::vector<double> g(s_.tensors[op.param].numel);
          for (Elements e = 0; e < g.size(); ++e)
            g[e] = synthetic_grad(op.param, e, r, op.micro_step);
          write(r, op, op.dst, g, add, op.scale);
        }
        return;
      case OpKind::Copy:
      case OpKind::CopyToBucket:
      case OpKind::WriteBack:
      case OpKind::HostToDevice:
      case OpKind::DeviceToHost:
        if (op.src.empty() || op.dst.empty()) return skipped.push_back(op.label);
        for (std::uint32_t r = 0; r < world; ++r) {
          if (s_.op_elements(op, s_.role_of(r)) == 0) continue;  // moves nothing on this rank
          write(r, op, op.dst, read(r, op, op.src, true), add, op.scale);
        }
        return;
      case OpKind::Collective:
        return collective(op);
      case OpKind::OptimizerStep: {
        auto& per_rank = update_grads.emplace_back(world);
        if (op.update == kNone || s_.updates[op.update].grad.empty()) return;
        for (std::uint32_t r = 0; r < world; ++r)
          per_rank[r] = read(r, op, s_.updates[op.update].grad, true);
        return;
      }
      default:
        return;
    }
  }

  void collective(const Op& op) {
    const std::uint32_t world = s_.meta.world;
    if (op.src.empty()) return skipped.push_back(op.label);
    const Region& out = op.dst.empty() ? op.src : op.dst;
    std::vector<std::vector<double>> in(world);
    for (std::uint32_t r = 0; r < world; ++r) in[r] = read(r, op, op.src, true);
    switch (op.collective) {
      case CollectiveKind::AllReduce:
      case CollectiveKind::Reduce: {
        std::vector<double> sum(in[0].size(), 0.0);
        for (std::uint32_t r = 0; r < world; ++r)
          for (std::size_t i = 0; i < sum.size(); ++i)
            sum[i] =
                op.reduce_op == ReduceOp::Max ? std::fmax(sum[i], in[r][i]) : sum[i] + in[r][i];
        for (std::uint32_t r = 0; r < world; ++r)
          if (op.collective == CollectiveKind::AllReduce || r == op.root)
            write(r, op, out, sum, false, op.scale);
        return;
      }
      case CollectiveKind::Broadcast:
        for (std::uint32_t r = 0; r < world; ++r) write(r, op, out, in[op.root], false, 1.0);
        return;
      case CollectiveKind::AllGather: {
        std::vector<double> all;
        for (std::uint32_t r = 0; r < world; ++r) all.insert(all.end(), in[r].begin(), in[r].end());
        for (std::uint32_t r = 0; r < world; ++r) write(r, op, out, all, false, 1.0);
        return;
      }
      case CollectiveKind::ReduceScatter:
        ADD_FAILURE() << "no reduce-scatter at stage 0-2: " << op.label;
        return;
    }
  }

  const Schedule& s_;
  std::vector<std::map<std::uint32_t, std::vector<double>>> mem_;  // [rank][buffer]
  std::vector<bool> defer_;              ///< per op: a Free whose release waits for an adoption
  std::vector<std::uint32_t> deferred_;  ///< the buffers those Frees released, not yet poisoned
};

// The averaged, accumulated gradient of flat position x of group g: the tensor holding it, or 0
// (padding).
double expected_at(const Schedule& s, std::uint32_t g, Elements x) {
  const GroupLayout& gl = s.layout.groups[g];
  for (std::uint32_t t : gl.flat_order) {
    const TensorInfo& ti = s.tensors[t];
    if (x < ti.flat_offset || x >= ti.flat_offset + ti.numel) continue;
    const Elements e = x - ti.flat_offset;
    const std::uint32_t gas = s.meta.grad_accum, world = s.meta.world;
    double total = 0;
    for (std::uint32_t micro = 0; micro < gas; ++micro) {
      double sum = 0;
      for (std::uint32_t r = 0; r < world; ++r) sum += synthetic_grad(t, e, r, micro);
      total += sum / world / gas;
    }
    return total;
  }
  return 0.0;
}

// Runs the schedule and checks every update's gradient on every rank. `partitioned`: the update
// covers the rank's S_g partition (ZeRO, BF16_Optimizer); else the whole group (stage 0).
void expect_averaged_grads(const testlib::Built& b, bool partitioned) {
  ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
  const Schedule& s = b.s();
  Interpreter it(s);
  it.run();
  std::vector<std::uint32_t> groups;  // the groups updated, in order
  for (std::uint32_t g = 0; g < s.layout.groups.size(); ++g)
    if ((partitioned ? s.layout.groups[g].partition : s.layout.groups[g].numel) > 0)
      groups.push_back(g);
  // Every step updates every group (the synthetic gradients do not depend on the step).
  ASSERT_EQ(it.update_grads.size(), groups.size() * s.meta.steps);
  for (std::size_t u = 0; u < it.update_grads.size(); ++u) {
    const std::uint32_t g = groups[u % groups.size()];
    const Elements part = s.layout.groups[g].partition;
    for (std::uint32_t r = 0; r < s.meta.world; ++r) {
      const auto& got = it.update_grads[u][r];
      const Elements len = partitioned ? part : s.layout.groups[g].numel;
      ASSERT_EQ(got.size(), len) << "group " << g << " rank " << r;
      for (Elements i = 0; i < len; ++i) {
        const Elements x = (partitioned ? part * r : 0) + i;
        ASSERT_NEAR(got[i], expected_at(s, g, x), 1e-9)
            << "group " << g << " rank " << r << " flat element " << x;
      }
    }
  }
}

using testlib::build;
using testlib::make_model;
using testlib::zero_config;

// G1's sizes [5,3,7] plus an extra-large param (12 > R = 8) and a rank holding only padding:
// several flushes, params straddling partitions, owner slices split across chunks.
const std::vector<Elements> kSizes = {5, 3, 7, 12, 2};

TEST(ScheduleDataflow, Stage2ReducesEveryOwnedSliceToTheAverage) {
  for (const bool overlap : {false, true})
    for (const std::uint32_t world : {2u, 4u}) {
      SCOPED_TRACE("overlap " + std::to_string(overlap) + " world " + std::to_string(world));
      expect_averaged_grads(build(make_model(kSizes), zero_config(2, 8, overlap), world), true);
    }
}

TEST(ScheduleDataflow, Stage2AccumulatesMicroStepsInTheSecondGradsInPartition) {
  auto ds = zero_config(2, 8, false);
  ds.grad_accum_steps = 2;  // T3 #2 is added into T3 #1 by the epilogue; loss / 2 each micro-step
  expect_averaged_grads(build(make_model(kSizes), ds, 4), true);
}

TEST(ScheduleDataflow, Stage1AccumulatesInTheAutogradGrads) {
  for (const bool overlap : {false, true}) {
    SCOPED_TRACE("overlap " + std::to_string(overlap));
    auto ds = zero_config(1, 8, overlap);
    ds.grad_accum_steps = 2;  // p.grad accumulates (add) across micro-steps, reduced once
    expect_averaged_grads(build(make_model(kSizes), ds, 4), true);
  }
}

TEST(ScheduleDataflow, ReductionVariantsLandTheSameAverages) {
  auto per_owner = zero_config(2, 8, false);
  per_owner.zero.use_multi_rank_bucket_allreduce = false;  // reduce(dst=k) of k's slices
  expect_averaged_grads(build(make_model(kSizes), per_owner, 4), true);
  // X4: with an fp32 communication dtype every chunk is flattened (cast) and copied back: the
  // extra-large param's CHUNK_GT chunks by their owners, each reduce to an owner by its root.
  for (const bool multi_rank : {true, false}) {
    SCOPED_TRACE("fp32 communication, multi_rank " + std::to_string(multi_rank));
    auto fp32_comm = zero_config(2, 8, false);
    fp32_comm.communication_data_type = DType::Float32;
    fp32_comm.zero.use_multi_rank_bucket_allreduce = multi_rank;
    expect_averaged_grads(build(make_model(kSizes), fp32_comm, 4), true);
  }
  auto all_reduce = zero_config(2, 8, false);
  all_reduce.zero.reduce_scatter = false;  // in place, post-scaled
  expect_averaged_grads(build(make_model(kSizes), all_reduce, 4), true);
  auto rr = zero_config(2, 8, false);
  rr.zero.round_robin_gradients = true;
  expect_averaged_grads(build(make_model({4, 4, 4, 4, 4}), rr, 2), true);  // G10
  // G11: two groups sharing one bucket; a group's update reads only its own slices.
  expect_averaged_grads(build(make_model({6, 3, 3}, {2, 1, 0}), zero_config(2, 8, false), 2,
                              testlib::with_groups({{0}, {1, 2}})),
                        true);
}

TEST(ScheduleDataflow, CpuOffloadCopiesTheOwnedSlicesIntoTheFp32Partitions) {
  auto ds = zero_config(2, 8, false);
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  expect_averaged_grads(build(make_model(kSizes), ds, 4, testlib::with_groups({{0, 1, 2}, {3, 4}})),
                        true);
}

// X7: with gradient accumulation each touching gradient is accumulated through its CPU buffer
// (B8 -> B6 -> add, then back to B8) before the boundary copies the owned slices into B4: a
// missing staging operand leaves B4 with the last micro-step's gradients only.
TEST(ScheduleDataflow, CpuOffloadAccumulatesMicroStepsThroughTheCpuBuffers) {
  for (const DeepSpeedVersion v : {DeepSpeedVersion::Edaa722, DeepSpeedVersion::V0_14_4})
    for (const bool overlap : {false, true})
      for (const int stage : {1, 2}) {
        SCOPED_TRACE("stage " + std::to_string(stage) + " overlap " + std::to_string(overlap) +
                     (v == DeepSpeedVersion::V0_14_4 ? " v0.14.4" : ""));
        auto ds = zero_config(stage, 8, overlap);
        ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
        ds.grad_accum_steps = 3;
        auto o = testlib::with_groups({{0, 1, 2}, {3, 4}});
        o.version = v;
        o.steps = 2;  // the second step's first micro-step overwrites B8 (no stale accumulation)
        auto b = build(make_model(kSizes), ds, 4, o);
        expect_averaged_grads(b, true);
        // The one-param staging buffer B6 is what every add reads: no op stages more than it holds.
        const Schedule& s = b.s();
        // Stage 1 reduces once, at the boundary, where edaa722's micro_step_id is 0: no CPU
        // accumulator at all; v0.14.4 and stage 2 accumulate every touching param through one.
        std::size_t b8_allocs = 0;
        for (const Op& op : s.ops)
          if (op.kind == OpKind::Alloc && s.buffers[op.buffer].spec_id == "B8") ++b8_allocs;
        if (stage == 1 && v == DeepSpeedVersion::Edaa722) {
          EXPECT_EQ(b8_allocs, 0u);
        } else {
          EXPECT_EQ(b8_allocs, kSizes.size());  // once per param, then persistent
        }
        for (const Op& op : s.ops) {
          if (op.kind != OpKind::HostToDevice || op.dst.buffer == kNone ||
              s.buffers[op.dst.buffer].spec_id != "B6")
            continue;
          for (std::uint32_t r = 0; r < 4; ++r) {
            EXPECT_LE(s.op_elements(op, s.role_of(r)), s.buffers[op.dst.buffer].numel) << op.label;
          }
        }
      }
}

TEST(ScheduleDataflow, EnginePathsAverageTheWholeModel) {
  auto fp16 = zero_config(0, 8, false);  // FP16_Optimizer: flat fp32 copy of the group's grads
  fp16.grad_accum_steps = 2;
  expect_averaged_grads(build(make_model(kSizes), fp16, 4), false);
  DsConfig fp32;  // a bare torch optimizer over the module's own params and grads
  fp32.zero.stage = 0;
  expect_averaged_grads(build(make_model(kSizes), fp32, 4), false);
  DsConfig bf16;  // stage 1 + bf16 + fp32 accumulation: BF16_Optimizer's fp32 buffer, partitioned
  bf16.bf16 = true;
  bf16.zero.stage = 1;
  bf16.grad_accum_dtype = DType::Float32;
  bf16.grad_accum_steps = 2;
  expect_averaged_grads(build(make_model(kSizes), bf16, 4), true);
  // X9: with two param groups each group's bf16 grads are added into its own fp32 buffer.
  expect_averaged_grads(
      build(make_model(kSizes), bf16, 4, testlib::with_groups({{0, 1, 2}, {3, 4}})), true);
}

// fp32 training at stage 1/2: no cast before the update, which on a rank whose averaged_gradients
// is one tensor reads grads_in_partition (or the kept grads) itself, so their frees come after it
// (a Free before the update poisons what it reads).
TEST(ScheduleDataflow, Fp32UpdatesReadTheirGradientsBeforeTheFrees) {
  for (const int stage : {1, 2})
    for (const bool contiguous : {true, false})
      for (const std::uint32_t gas : {1u, 2u}) {
        SCOPED_TRACE("stage " + std::to_string(stage) + " contiguous " +
                     std::to_string(contiguous) + " gas " + std::to_string(gas));
        auto ds = zero_config(stage, 8, false);
        ds.fp16 = false;
        ds.zero.contiguous_gradients = contiguous;
        ds.grad_accum_steps = gas;
        expect_averaged_grads(build(make_model(kSizes), ds, 4), true);
        expect_averaged_grads(
            build(make_model(kSizes), ds, 4, testlib::with_groups({{0, 1, 2}, {3, 4}})), true);
      }
}

}  // namespace
}  // namespace zerosim
