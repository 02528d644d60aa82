// "ZeRO changes memory, not training" (issue #8): a ZeRO schedule of the builders, executed in data
// mode, leaves every rank's parameters equal to the unpartitioned data-parallel AdamW reference
// (data_reference.h) fed the same stand-in gradients — for every stage and the config variants
// DeepSpeed users set. A configuration whose schedule does not carry every operand yet is refused
// by data mode before it runs; its case is skipped with the refusal as the reason (so `ctest`
// lists what is not carried), and runs as soon as the builders carry it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "data_reference.h"
#include "host_data.h"
#include "numerics.h"
#include "zerosim/host_backend.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"

namespace zerosim::exec {
namespace {

struct Variant {
  std::string name;
  std::string zero;       ///< zero_optimization keys besides the stage
  std::string precision;  ///< the fp16 / bf16 block (empty: fp32 training)
  int stage = 2;
  std::uint32_t grad_accum = 1;
  std::vector<std::uint32_t> overflow_steps;  ///< training.overflow_steps
  /// The first gap (scenarios/README.md "Not carried yet") that makes data mode refuse the
  /// variant: the case is skipped naming it, and fails once the gap is closed (un-skip it then).
  std::string data_gap{};
};

Variant V(std::string name, std::string zero, std::string precision, int stage,
          std::uint32_t grad_accum = 1, std::vector<std::uint32_t> overflow_steps = {}) {
  return {std::move(name),
          std::move(zero),
          std::move(precision),
          stage,
          grad_accum,
          std::move(overflow_steps),
          {}};
}

// Unused while every variant is carried; kept for the next configuration with a gap.
[[maybe_unused]] Variant with_gap(Variant v, std::string gap) {
  v.data_gap = std::move(gap);
  return v;
}

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

Result<Schedule> build(const Variant& v, std::uint32_t world, std::uint32_t steps) {
  std::string overflow;
  for (std::uint32_t k : v.overflow_steps)
    overflow += (overflow.empty() ? ", \"overflow_steps\": [" : ", ") + std::to_string(k);
  if (!overflow.empty()) overflow += "]";
  const std::string text =
      R"({"format": "zerosim-scenario", "version": 1, "model": {"param_list": ")" +
      std::string(ZEROSIM_SOURCE_DIR) +
      R"(/scenarios/tiny_params.json"}, "deepspeed": {"train_micro_batch_size_per_gpu": 1,
      "gradient_accumulation_steps": )" +
      std::to_string(v.grad_accum) + (v.precision.empty() ? "" : ", " + v.precision) +
      R"(, "zero_optimization": {"stage": )" + std::to_string(v.stage) +
      (v.zero.empty() ? "" : ", " + v.zero) +
      R"(}}, "cluster": {"gpu": "RTX-4090", "nodes": 1, "gpus_per_node": )" +
      std::to_string(world) + R"(}, "training": {"seq_len": 64, "steps": )" +
      std::to_string(steps) + overflow + "}}";
  auto sc = load_scenario_text(text, v.name, "");
  if (!sc.ok()) return Result<Schedule>(sc.diagnostics());
  auto plan = plan_partition(sc->model, partition_options(sc->ds, world));
  if (!plan.ok()) return Result<Schedule>(plan.diagnostics());
  return build_schedule(schedule_input(sc.value(), plan.value()));
}

class ZeroVsReference : public ::testing::TestWithParam<Variant> {};

TEST_P(ZeroVsReference, EveryRanksParametersEqualTheReference) {
  const Variant& v = GetParam();
  const std::uint32_t world = 4, steps = 3;
  auto sched = build(v, world, steps);
  ASSERT_TRUE(sched.ok()) << sched.diagnostics().to_string();
  const Schedule& s = sched.value();
  auto g = lower_schedule(s);
  ASSERT_TRUE(g.ok()) << g.diagnostics().to_string();
  HostOptions o;
  o.data = true;
  o.stall_timeout = std::chrono::milliseconds(10000);
  o.data_options.keep_buffers = true;
  o.data_options.quantum_bits = s.meta.lp == DType::BFloat16 ? 3 : 6;
  o.data_options.overflow_steps = v.overflow_steps;
  // DeepSpeed's default gradient_clipping (1.0): the stand-in gradients' global norm (about 0.1)
  // stays below it, so the clip factor is 1 in both runs and the comparison can be bitwise even
  // though the squared norms are summed in another order.
  o.data_options.gradient_clipping = 1.0;
  const auto gap = data_mode_refusal(s, o);
  if (!v.data_gap.empty()) {
    ASSERT_TRUE(gap) << v.data_gap << " is carried now: clear the variant's data_gap";
    GTEST_SKIP() << v.data_gap << "; data mode refuses: " << gap->message;
  }
  ASSERT_FALSE(gap) << "data mode refuses: " << gap->message;
  auto run = run_host(s, g.value(), o);
  ASSERT_TRUE(run.ok()) << run.diagnostics().to_string();
  // The reference: the tensors in table order, starting from rank 0's initial weights in the
  // module's buffer (the init broadcasts' sources: asserted to be the concatenation).
  ReferenceSpec rs;
  Elements off = 0;
  const std::uint32_t alloc = model_weights_alloc(s);
  ASSERT_NE(alloc, kNone);
  rs.weights_buffer = s.ops[alloc].buffer;
  for (const TensorInfo& t : s.tensors) rs.tensors.push_back(t.numel);
  std::uint32_t k = 0;
  for (const Op& op : s.ops)
    if (op.kind == OpKind::Collective && op.collective == CollectiveKind::Broadcast &&
        op.phase == Phase::Init && op.src.buffer == rs.weights_buffer && k < s.tensors.size()) {
      EXPECT_EQ(op.src.offset, off) << op.label;
      off += s.tensors[k++].numel;
    }
  rs.world = world;
  rs.steps = steps;
  rs.grad_accum = v.grad_accum;
  rs.lp = s.meta.lp;
  const ReferenceRun ref = reference_train(o.data_options, rs);
  const auto lp_at = [&](const HostRankResult& r, std::uint32_t b, Elements at) {
    if (s.meta.lp == DType::Float32) {
      float f;
      std::memcpy(&f, r.buffers[b].data() + 4 * at, 4);
      return f;
    }
    std::uint16_t h;
    std::memcpy(&h, r.buffers[b].data() + 2 * at, 2);
    return s.meta.lp == DType::Float16 ? fp16_to_float(h) : bf16_to_float(h);
  };
  if (s.meta.stage == 3) {
    // Each rank's 16-bit partitions (the updates' lp_out buffer): tensor t's c = ceil(n / W)
    // elements from r·c, at its chunk's offset (Σc of the earlier tensors in sub-group order);
    // the padding past n is not compared.
    ASSERT_FALSE(s.updates.empty());
    const std::uint32_t b = s.updates[0].lp_out.buffer;
    for (const HostRankResult& r : run->ranks) {
      Elements at = 0;
      for (const SubGroupLayout& sg : s.layout.sub_groups)
        for (std::uint32_t t : sg.params) {
          const TensorInfo& ti = s.tensors[t];
          const Elements c = (ti.numel + world - 1) / world;
          for (Elements j = 0; j < c && r.rank * c + j < ti.numel; ++j)
            ASSERT_EQ(float_bits(lp_at(r, b, at + j)), float_bits(ref.params[t][r.rank * c + j]))
                << "rank " << r.rank << ", " << ti.name << "[" << r.rank * c + j << "]";
          at += c;
        }
    }
    return;
  }
  // Each tensor's 16-bit weights in its param group's flat buffer (the update's lp_out), where
  // the post-step all-gather leaves the whole group on every rank.
  for (const HostRankResult& r : run->ranks)
    for (std::uint32_t t = 0; t < s.tensors.size(); ++t) {
      const TensorInfo& ti = s.tensors[t];
      ASSERT_LT(ti.group, s.updates.size());
      const std::uint32_t b = s.updates[ti.group].lp_out.buffer;
      for (Elements i = 0; i < ti.numel; ++i)
        ASSERT_EQ(float_bits(lp_at(r, b, ti.flat_offset + i)), float_bits(ref.params[t][i]))
            << "rank " << r.rank << ", " << ti.name << "[" << i << "]";
    }
}

const char* const kFp16 = R"("fp16": {"enabled": true})";
const char* const kBf16 = R"("bf16": {"enabled": true})";

INSTANTIATE_TEST_SUITE_P(
    Stages, ZeroVsReference,
    ::testing::Values(
        V("stage0_fp16", "", kFp16, 0), V("stage0_bf16", "", kBf16, 0),
        V("stage0_fp16_overflow_step", "", kFp16, 0, 1, {1}), V("stage1_fp16", "", kFp16, 1),
        V("stage2_fp16", "", kFp16, 2), V("stage3_fp16", "", kFp16, 3),
        V("stage2_small_buckets", R"("reduce_bucket_size": 5000, "allgather_bucket_size": 5000)",
          kFp16, 2),
        V("stage2_overlap_comm", R"("overlap_comm": true)", kFp16, 2),
        V("stage2_no_contiguous_gradients", R"("contiguous_gradients": false)", kFp16, 2),
        V("stage2_no_contiguous_gradients_overlap",
          R"("contiguous_gradients": false, "overlap_comm": true, "reduce_bucket_size": 5000)",
          kFp16, 2),
        V("stage2_no_contiguous_gradients_grad_accum", R"("contiguous_gradients": false)", kFp16, 2,
          2),
        V("stage1_no_contiguous_gradients", R"("contiguous_gradients": false)", kFp16, 1),
        V("stage2_no_reduce_scatter", R"("reduce_scatter": false)", kFp16, 2),
        V("stage2_no_multi_rank_allreduce", R"("use_multi_rank_bucket_allreduce": false)", kFp16,
          2),
        // X4's copy-backs: an extra-large param's owner slices cut by CHUNK_GT into several
        // all-reduces, each cast to fp32 for the reduction (so flattened and copied back), and
        // the reduces to each owner of a bucket flattened from several slices.
        V("stage2_chunked_allreduce_fp32_comm",
          R"("reduce_bucket_size": 5000, "allgather_bucket_size": 5000)",
          R"("fp16": {"enabled": true}, "communication_data_type": "fp32")", 2),
        V("stage2_no_multi_rank_small_buckets",
          R"("use_multi_rank_bucket_allreduce": false, "reduce_bucket_size": 5000)", kFp16, 2),
        V("stage2_round_robin", R"("round_robin_gradients": true)", kFp16, 2),
        V("stage2_grad_accum", "", kFp16, 2, 2),
        V("stage2_fp16_overflow_step", "", kFp16, 2, 1, {1}), V("stage2_bf16", "", kBf16, 2),
        // fp32 training: no cast before the update, which reads the one averaged gradient
        // itself on a rank whose partition holds one tensor (the frees follow the update).
        V("stage1_fp32", "", "", 1), V("stage2_fp32", "", "", 2),
        // fp32 without contiguous gradients: the update reads the kept autograd grads (X6).
        V("stage1_fp32_no_contiguous_gradients", R"("contiguous_gradients": false)", "", 1),
        V("stage2_fp32_no_contiguous_gradients", R"("contiguous_gradients": false)", "", 2),
        V("stage1_fp32_no_contiguous_gradients_grad_accum", R"("contiguous_gradients": false)", "",
          1, 2),
        V("stage2_fp32_no_contiguous_gradients_grad_accum", R"("contiguous_gradients": false)", "",
          2, 2),
        V("stage2_fp32_no_contiguous_gradients_small_buckets",
          R"("contiguous_gradients": false, "reduce_bucket_size": 5000)", "", 2),
        V("stage2_cpu_offload", R"("offload_optimizer": {"device": "cpu"})", kFp16, 2),
        V("stage2_cpu_offload_grad_accum", R"("offload_optimizer": {"device": "cpu"})", kFp16, 2,
          2),
        V("stage3_offload_param",
          R"("offload_param": {"device": "cpu"}, "stage3_param_persistence_threshold": 1000)",
          kFp16, 3)),
    [](const ::testing::TestParamInfo<Variant>& i) { return i.param.name; });

}  // namespace
}  // namespace zerosim::exec
