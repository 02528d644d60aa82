// Data mode of the host backend (host_data.h, data_check.h, data_reference.h): a schedule that
// carries every operand trains exactly like the unpartitioned data-parallel reference fed the same
// stand-in gradients, with the same memory counters, collective log and bytes as count-only; a
// schedule that leaves an operand out is refused before anything runs, naming the op, its label and
// the operand.
#include "host_data.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <sstream>

#include "data_check.h"
#include "data_reference.h"
#include "numerics.h"
#include "zerosim/host_backend.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/schedule_io.h"

namespace zerosim::exec {
namespace {

const std::vector<Elements> kTensors = {1000, 37, 256, 3, 513};  // odd sizes: pieces straddle

HostOptions data_options(std::uint32_t quantum_bits) {
  HostOptions o;
  o.data = true;
  o.stall_timeout = std::chrono::milliseconds(5000);
  o.data_options.keep_buffers = true;
  o.data_options.quantum_bits = quantum_bits;
  return o;
}

float element(const std::vector<unsigned char>& b, DType t, Elements i) {
  std::uint16_t h;
  std::memcpy(&h, b.data() + 2 * i, 2);
  return t == DType::Float16 ? fp16_to_float(h) : bf16_to_float(h);
}

struct Compared {
  Elements elements = 0, bitwise = 0;
  double max_abs = 0;
};

// Every rank's 16-bit weights (buffer 0) against the reference's.
Compared compare(const HostRun& run, const ReferenceRun& ref, DType lp) {
  Compared c;
  for (const HostRankResult& r : run.ranks) {
    Elements off = 0;
    for (std::size_t t = 0; t < kTensors.size(); ++t) {
      for (Elements i = 0; i < kTensors[t]; ++i) {
        const float got = element(r.buffers[0], lp, off + i), want = ref.params[t][i];
        ++c.elements;
        if (float_bits(got) == float_bits(want)) ++c.bitwise;
        c.max_abs = std::max(c.max_abs, static_cast<double>(std::fabs(got - want)));
      }
      off += kTensors[t];
    }
  }
  return c;
}

struct Case {
  std::uint32_t world;
  DType lp;
  std::uint32_t quantum_bits;
  std::uint32_t grad_accum = 1;
};

class PlainDp : public ::testing::TestWithParam<Case> {};

// With gradients that are multiples of 2^-q small enough that every partial sum is exact in the
// 16-bit dtype, the ring all-reduce's per-hop rounding changes nothing and the order of summation
// does not matter: data mode equals the reference bit for bit. Averaging by a power-of-two world
// and scaling by 1/grad_accum are exact too; at 3 ranks x 1/3 both round the same sum once, the
// same way (the schedule's all-reduce x scale and the reference's mean are one float
// multiplication).
TEST_P(PlainDp, EqualsTheReferenceBitForBit) {
  const Case c = GetParam();
  const std::uint32_t steps = 3;
  const Schedule s = plain_dp_schedule({kTensors, c.world, steps, c.lp, c.grad_accum});
  auto g = lower_schedule(s);
  ASSERT_TRUE(g.ok()) << g.diagnostics().to_string();
  const HostOptions o = data_options(c.quantum_bits);
  auto run = run_host(s, g.value(), o);
  ASSERT_TRUE(run.ok()) << run.diagnostics().to_string();
  ReferenceSpec rs;
  rs.tensors = kTensors;
  rs.world = c.world;
  rs.steps = steps;
  rs.lp = c.lp;
  rs.grad_accum = c.grad_accum;
  const ReferenceRun ref = reference_train(o.data_options, rs);
  const Compared cmp = compare(run.value(), ref, c.lp);
  EXPECT_EQ(cmp.bitwise, cmp.elements) << "max |difference| " << cmp.max_abs;
  // Not averaging (or not scaling the micro-steps) gives other weights: the test sees the scales.
  ReferenceSpec sum = rs;
  sum.average = false;
  EXPECT_LT(compare(run.value(), reference_train(o.data_options, sum), c.lp).bitwise, cmp.elements);
  // The weights moved (the comparison is not of two untouched copies) ...
  ReferenceSpec none = rs;
  none.steps = 0;
  EXPECT_LT(compare(run.value(), reference_train(o.data_options, none), c.lp).bitwise,
            cmp.elements / 2);
  // ... and another seed's gradients give other weights: the comparison can fail.
  DataOptions other = o.data_options;
  other.seed = 2;
  EXPECT_LT(compare(run.value(), reference_train(other, rs), c.lp).bitwise, cmp.elements);
  for (const HostRankResult& r : run->ranks) EXPECT_EQ(r.loss_scale, ref.loss_scale);
}

INSTANTIATE_TEST_SUITE_P(Exact, PlainDp,
                         ::testing::Values(Case{2, DType::Float16, 6}, Case{4, DType::Float16, 6},
                                           Case{3, DType::Float16, 6}, Case{4, DType::BFloat16, 3},
                                           Case{4, DType::Float16, 6, 2},
                                           Case{2, DType::BFloat16, 3, 4}));

// Full 24-bit gradients: the ring rounds each hop's partial sum to fp16, the reference rounds the
// exact sum once, so a reduced gradient may differ by an ulp of the sum. Adam divides the moment by
// its root, so such an ulp moves an update by far less than lr, except where the sum is near 0 and
// the ulp flips its sign (an update of ±lr): every weight is within 2·lr·steps of the reference,
// and almost all are bitwise equal.
TEST(PlainDpTolerance, FullPrecisionGradientsWithinTheRingsRounding) {
  const std::uint32_t steps = 3, world = 4;
  const Schedule s = plain_dp_schedule({kTensors, world, steps, DType::Float16});
  auto g = lower_schedule(s);
  ASSERT_TRUE(g.ok());
  const HostOptions o = data_options(0);
  auto run = run_host(s, g.value(), o);
  ASSERT_TRUE(run.ok()) << run.diagnostics().to_string();
  ReferenceSpec rs;
  rs.tensors = kTensors;
  rs.world = world;
  rs.steps = steps;
  const Compared cmp = compare(run.value(), reference_train(o.data_options, rs), DType::Float16);
  EXPECT_LE(cmp.max_abs, 2.0 * o.data_options.lr * steps);
  EXPECT_GE(static_cast<double>(cmp.bitwise), 0.95 * static_cast<double>(cmp.elements));
}

// Data mode keeps the count-only path's measurements: the same memory counters per rank and
// category, the same collective log, the same bytes per kind.
TEST(DataMode, MeasuresWhatCountOnlyMeasures) {
  const Schedule s = plain_dp_schedule({kTensors, 4, 2, DType::Float16});
  auto g = lower_schedule(s);
  ASSERT_TRUE(g.ok());
  HostOptions counting = data_options(6);
  counting.data = false;
  auto a = run_host(s, g.value(), counting);
  auto b = run_host(s, g.value(), data_options(6));
  ASSERT_TRUE(a.ok() && b.ok());
  std::ostringstream la, lb;
  write_measured_collective_log(s, a.value(), la);
  write_measured_collective_log(s, b.value(), lb);
  EXPECT_EQ(la.str(), lb.str());
  for (std::size_t r = 0; r < a->ranks.size(); ++r) {
    EXPECT_EQ(a->ranks[r].memory.device_peak, b->ranks[r].memory.device_peak);
    EXPECT_EQ(a->ranks[r].memory.device_peak_by_category,
              b->ranks[r].memory.device_peak_by_category);
    EXPECT_EQ(a->ranks[r].sent_by_kind, b->ranks[r].sent_by_kind);
    EXPECT_EQ(a->ranks[r].received_by_kind, b->ranks[r].received_by_kind);
  }
  // The trace says what ran: stand-ins, not a model.
  bool says = false;
  for (const std::string& n : b->trace.meta.notes) says = says || n.find("stand-ins") != n.npos;
  EXPECT_TRUE(says);
}

// Refusals: one line naming the op index, its label and the missing operand, before any rank runs.
std::string refusal(const Schedule& s, const DataOptions& o = {}) {
  DataCheckOptions dc;
  dc.gradient_clipping = o.gradient_clipping;
  Status gap = data_mode_gap(s, dc);
  return gap ? gap->message : std::string();
}

std::uint32_t find_op(const Schedule& s, const std::string& label) {
  for (std::uint32_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].label == label) return i;
  ADD_FAILURE() << "no op " << label;
  return 0;
}

TEST(DataModeRefuses, AnEmptyRegion) {
  Schedule s = plain_dp_schedule({kTensors, 2, 1, DType::Float16});
  EXPECT_EQ(refusal(s), "");
  const std::uint32_t i = find_op(s, "cast grads to fp32");
  s.ops[i].src = {};
  EXPECT_EQ(refusal(s), "rank 0, op " + std::to_string(i) +
                            " (\"cast grads to fp32\"): src is not carried (empty region)");
}

TEST(DataModeRefuses, AnUpdateWithoutItsOperands) {
  Schedule s = plain_dp_schedule({kTensors, 2, 1, DType::Float16});
  const std::uint32_t i = find_op(s, "optimizer step");
  s.updates[0].exp_avg_sq = {};
  EXPECT_NE(refusal(s).find("op " + std::to_string(i) +
                            " (\"optimizer step\"): update exp_avg_sq is not carried"),
            std::string::npos);
  s = plain_dp_schedule({kTensors, 2, 1, DType::Float16});
  s.ops[i].update = kNone;
  EXPECT_NE(refusal(s).find("the update's operands are not carried"), std::string::npos);
  // Clipping needs the norms scratch.
  s = plain_dp_schedule({kTensors, 2, 1, DType::Float16});
  DataOptions clip;
  clip.gradient_clipping = 1.0;
  EXPECT_NE(refusal(s, clip).find("update norms (gradient clipping is on) is not carried"),
            std::string::npos);
}

TEST(DataModeRefuses, AReadOfWhatNothingWrote) {
  Schedule s = plain_dp_schedule({kTensors, 2, 1, DType::Float16});
  const std::uint32_t i = find_op(s, "master from the LP params");
  s.ops[i].kind = OpKind::Marker;  // the master is never filled
  const std::string why = refusal(s);
  EXPECT_NE(why.find("(\"optimizer step\"): update master reads element 0 of buffer #1 "
                     "(\"fp32 master\"), which no earlier op wrote since its Alloc"),
            std::string::npos)
      << why;
}

TEST(DataModeRefuses, AWriteBeforeTheAlloc) {
  Schedule s = plain_dp_schedule({kTensors, 2, 1, DType::Float16});
  // Swap a gradient's Alloc and its GradReady (design study gap X5).
  const std::uint32_t i = find_op(s, "grad ready 4");
  std::swap(s.ops[i - 1], s.ops[i]);
  EXPECT_NE(refusal(s).find("op " + std::to_string(i - 1) +
                            " (\"grad ready 4\"): dst (the gradient) writes buffer #7 "
                            "(\"grad:4\"), which is not allocated here"),
            std::string::npos)
      << refusal(s);
}

TEST(DataModeRefuses, MoreMemoryThanTheCap) {
  const Schedule s = plain_dp_schedule({kTensors, 2, 1, DType::Float16});
  DataCheckOptions dc;
  dc.memory_cap = 1000;
  Status gap = data_mode_gap(s, dc);
  ASSERT_TRUE(gap);
  EXPECT_NE(gap->message.find("expected every rank's buffers to fit in 1000 bytes"),
            std::string::npos);
}

// The shipped scenario runs in data mode at every stage (X1, X3, X6 and the local norm and
// overflow checks carried), also without contiguous gradients (X6), and in fp32 at stage 1/2.
Scenario tiny_zero2_at(int stage) {
  auto sc = load_scenario_file(std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_zero2_4gpu.json");
  EXPECT_TRUE(sc.ok());
  Scenario scn = sc.value();
  scn.ds.zero.stage = stage;
  return scn;
}

Result<HostRun> run_scenario(const Scenario& scn) {
  auto plan = plan_partition(scn.model, partition_options(scn.ds, 4));
  EXPECT_TRUE(plan.ok());
  auto sched = build_schedule(schedule_input(scn, plan.value()));
  EXPECT_TRUE(sched.ok()) << sched.diagnostics().to_string();
  auto g = lower_schedule(sched.value());
  EXPECT_TRUE(g.ok());
  return run_host(sched.value(), g.value(), data_options(0));
}

// fp32 training at stage 1/2: the update reads a rank's one averaged gradient uncast, from
// grads_in_partition itself, whose frees now follow the update (data mode refused it before).
TEST(DataMode, Fp32TrainingRunsAtStages1And2) {
  for (int stage : {1, 2}) {
    Scenario scn = tiny_zero2_at(stage);
    scn.ds.fp16 = false;
    scn.ds.bf16 = false;
    auto run = run_scenario(scn);
    EXPECT_TRUE(run.ok()) << "stage " << stage << " in fp32: " << run.diagnostics().to_string();
  }
}

TEST(DataMode, TheShippedScenarioRunsAtEveryStage) {
  for (int stage : {0, 1, 2, 3}) {
    auto run = run_scenario(tiny_zero2_at(stage));
    EXPECT_TRUE(run.ok()) << "stage " << stage << ": " << run.diagnostics().to_string();
  }
  for (int stage : {1, 2}) {  // the kept autograd grads (X6)
    Scenario scn = tiny_zero2_at(stage);
    scn.ds.zero.contiguous_gradients = false;
    auto run = run_scenario(scn);
    EXPECT_TRUE(run.ok()) << "stage " << stage
                          << " without contiguous gradients: " << run.diagnostics().to_string();
  }
}

}  // namespace
}  // namespace zerosim::exec

namespace zerosim::exec {
namespace {

// A rank that fails in data mode ends the run in bounded time with a report naming it; the ranks
// waiting for it in the all-reduce return.
TEST(DataMode, AFailingRankEndsTheRun) {
  const Schedule s = plain_dp_schedule({kTensors, 4, 1, DType::Float16});
  auto g = lower_schedule(s);
  ASSERT_TRUE(g.ok());
  HostOptions o = data_options(0);
  o.stall_timeout = std::chrono::milliseconds(3000);
  o.fail_rank = 2;
  o.fail_op = find_op(s, "all-reduce grads");
  const auto t0 = std::chrono::steady_clock::now();
  auto run = run_host(s, g.value(), o);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.diagnostics().to_string().find("rank 2, op " + std::to_string(o.fail_op) +
                                               " (\"all-reduce grads\"): injected failure"),
            std::string::npos)
      << run.diagnostics().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

}  // namespace
}  // namespace zerosim::exec

namespace zerosim::exec {
namespace {

// The data path's calls one by one, on one rank of a one-rank world (collectives of one rank).
struct OneRank {
  Schedule s = plain_dp_schedule({{8}, 1, 1, DType::Float16});
  DataOptions o;
  RingRegistry rings{std::chrono::milliseconds(2000)};
  std::unique_ptr<DataPath> dp;
  static constexpr std::uint32_t kLp = 0, kMaster = 1, kStates = 2, kGrad = 3;
  OneRank() {
    // Executor-owned scratch: an overflow flag the update names.
    Buffer flag;
    flag.name = "overflow flag (scratch)";
    flag.dtype = DType::UInt8;
    flag.numel = 1;
    flag.executor_owned = true;
    s.buffers.push_back(flag);
    s.updates[0].overflow = {flag_buffer(), 0, 0, 1};
    o.overflow_steps = {1, 2};
    dp = std::make_unique<DataPath>(s, o, 0, rings);
  }
  std::uint32_t flag_buffer() const { return static_cast<std::uint32_t>(s.buffers.size() - 1); }
  void set32(std::uint32_t b, const std::vector<float>& v) {
    std::memcpy(dp->bytes(b), v.data(), 4 * v.size());
  }
  std::vector<float> get(std::uint32_t b, DType t, Elements n) {
    std::vector<float> v;
    for (Elements i = 0; i < n; ++i) {
      float f;
      if (t == DType::Float32) {
        std::memcpy(&f, dp->bytes(b) + 4 * i, 4);
      } else {
        std::uint16_t h;
        std::memcpy(&h, dp->bytes(b) + 2 * i, 2);
        f = t == DType::Float16 ? fp16_to_float(h) : bf16_to_float(h);
      }
      v.push_back(f);
    }
    return v;
  }
  Status all_reduce_flag(std::uint32_t step) {
    CollectiveCall c;
    c.kind = CollectiveKind::AllReduce;
    c.numel = c.out_numel = 1;
    c.dtype = DType::UInt8;
    c.reduce_op = ReduceOp::Max;
    c.step = step;
    c.src = {{flag_buffer(), 0, 1, DType::UInt8}};
    return dp->collective(c);
  }
};

WorkCall copy_call(OperandPiece src, OperandPiece dst, double scale, bool add) {
  WorkCall w;
  w.kind = OpKind::Copy;
  w.src = {src};
  w.dst = {dst};
  w.scale = scale;
  w.accumulate = add;
  return w;
}

TEST(DataPath, CopiesCastScaleAndAccumulateWithRoundToNearestEven) {
  OneRank r;
  ASSERT_FALSE(r.dp->allocate(OneRank::kLp, 16, /*zero_fill=*/true, false));
  EXPECT_EQ(r.get(OneRank::kLp, DType::Float16, 8), std::vector<float>(8, 0.0f));
  ASSERT_FALSE(r.dp->allocate(OneRank::kMaster, 32, false, false));
  // 1 + 2^-11 is a tie between fp16's 1 and 1 + 2^-10: to even, 1; 1 + 3·2^-11 rounds up.
  r.set32(OneRank::kMaster, {1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 65520.0f, 3.0f, 1, 1, 1, 1});
  const OperandPiece m{OneRank::kMaster, 0, 8, DType::Float32};
  const OperandPiece lp{OneRank::kLp, 0, 8, DType::Float16};
  ASSERT_FALSE(r.dp->work(copy_call(m, lp, 1.0, false)));
  std::vector<float> got = r.get(OneRank::kLp, DType::Float16, 4);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f + 0x1p-9f);
  EXPECT_TRUE(std::isinf(got[2]));  // 65520 rounds to infinity in fp16
  EXPECT_EQ(got[3], 3.0f);
  // dst += src x 0.5 in float, rounded once: 3 + 1.5 = 4.5.
  ASSERT_FALSE(r.dp->work(copy_call(m, lp, 0.5, true)));
  EXPECT_EQ(r.get(OneRank::kLp, DType::Float16, 4)[3], 4.5f);
  // Zeros (a piece with no buffer) assigned and lengths that differ refused.
  ASSERT_FALSE(r.dp->work(copy_call({kNone, 0, 8, DType::Float32}, m, 1.0, false)));
  EXPECT_EQ(r.get(OneRank::kMaster, DType::Float32, 8), std::vector<float>(8, 0.0f));
  Status bad = r.dp->work(copy_call({OneRank::kMaster, 0, 4, DType::Float32}, lp, 1.0, false));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->message, "expected src and dst of equal length, got 4 and 8 elements");
  // A region outside its buffer and a buffer not allocated are errors, not overruns.
  bad = r.dp->work(copy_call({OneRank::kMaster, 4, 8, DType::Float32}, lp, 1.0, false));
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->message.find("lie outside buffer #1"), std::string::npos) << bad->message;
  bad = r.dp->work(copy_call({OneRank::kGrad, 0, 8, DType::Float16}, lp, 1.0, false));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->message, "src: buffer #3 is not allocated");
}

TEST(DataPath, TheStandInBackwardWritesScaledSyntheticGradients) {
  OneRank r;
  ASSERT_FALSE(r.dp->allocate(OneRank::kGrad, 16, false, false));
  WorkCall w;
  w.kind = OpKind::GradReady;
  w.param = 0;
  w.dst = {{OneRank::kGrad, 0, 8, DType::Float16}};
  ASSERT_FALSE(r.dp->work(w));
  const StandInGrads g(r.o, 0, 0, 0, 0);
  for (Elements i = 0; i < 8; ++i)  // x the fp16 loss scale 2^16, rounded as autograd stores it
    EXPECT_EQ(r.get(OneRank::kGrad, DType::Float16, 8)[i],
              fp16_to_float(float_to_fp16(g(i) * 65536.0f)));
  w.accumulate = true;  // a second micro-step adds
  w.micro_step = 1;
  const std::vector<float> before = r.get(OneRank::kGrad, DType::Float16, 8);
  ASSERT_FALSE(r.dp->work(w));
  const StandInGrads g1(r.o, 0, 0, 1, 0);
  EXPECT_EQ(r.get(OneRank::kGrad, DType::Float16, 8)[5],
            fp16_to_float(float_to_fp16(before[5] + g1(5) * 65536.0f)));
}

// DeepSpeed's loss scaling through the data path: an overflow step's backward writes an inf, the
// overflow all-reduce sees it, the step is skipped and the scaler's hysteresis (2) absorbs the
// first overflow and halves the scale at the second; an update while the flag is set is an error.
TEST(DataPath, OverflowStepsSkipAndLowerTheLossScale) {
  OneRank r;
  ASSERT_FALSE(r.dp->allocate(OneRank::kGrad, 16, false, false));
  for (std::uint32_t step : {0u, 1u, 2u}) {
    WorkCall w;
    w.kind = OpKind::GradReady;
    w.step = step;
    w.dst = {{OneRank::kGrad, 0, 8, DType::Float16}};
    ASSERT_FALSE(r.dp->work(w));
    const bool inf = std::isinf(r.get(OneRank::kGrad, DType::Float16, 1)[0]);
    EXPECT_EQ(inf, step >= 1) << "step " << step;
    // The local check is not an op of the IR yet: set the flag as it would.
    r.dp->bytes(r.flag_buffer())[0] = inf ? 1 : 0;
    ASSERT_FALSE(r.all_reduce_flag(step));
  }
  r.dp->finish();
  EXPECT_EQ(r.dp->skipped_steps(), 2u);
  EXPECT_EQ(r.dp->loss_scale(), 32768.0);  // 65536, hysteresis 2: the second overflow halves it
  DynamicLossScaler ref;
  for (bool overflow : {false, true, true}) ref.update(overflow);
  EXPECT_EQ(r.dp->loss_scale(), ref.scale());
  // An update while the flag says overflow: the schedule and the data disagree.
  OneRank u;
  for (std::uint32_t b : {OneRank::kMaster, OneRank::kStates})
    ASSERT_FALSE(u.dp->allocate(b, b == OneRank::kStates ? 64 : 32, true, false));
  ASSERT_FALSE(u.dp->allocate(5, 32, true, false));  // fp32 grads
  u.dp->bytes(u.flag_buffer())[0] = 1;
  WorkCall step;
  step.kind = OpKind::OptimizerStep;
  step.update = 0;
  step.operands.master = {{OneRank::kMaster, 0, 8, DType::Float32}};
  step.operands.grad = {{5, 0, 8, DType::Float32}};
  step.operands.exp_avg = {{OneRank::kStates, 0, 8, DType::Float32}};
  step.operands.exp_avg_sq = {{OneRank::kStates, 8, 8, DType::Float32}};
  step.operands.overflow = {{u.flag_buffer(), 0, 1, DType::UInt8}};
  Status e = u.dp->work(step);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("the overflow flag is set"), std::string::npos);
  u.dp->bytes(u.flag_buffer())[0] = 0;
  EXPECT_FALSE(u.dp->work(step));
}

// A collective's output x scale (DeepSpeed's averaging), on a one-rank group.
TEST(DataPath, ACollectiveScalesItsOutput) {
  OneRank r;
  ASSERT_FALSE(r.dp->allocate(OneRank::kMaster, 32, false, false));
  r.set32(OneRank::kMaster, {1, 2, 3, 4, 5, 6, 7, 8});
  CollectiveCall c;
  c.kind = CollectiveKind::AllReduce;
  c.numel = c.out_numel = 8;
  c.dtype = DType::Float32;
  c.reduce_op = ReduceOp::Sum;
  c.scale = 0.25;
  c.src = {{OneRank::kMaster, 0, 8, DType::Float32}};
  ASSERT_FALSE(r.dp->collective(c));
  EXPECT_EQ(r.get(OneRank::kMaster, DType::Float32, 8),
            (std::vector<float>{0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f, 2}));
  c.dtype = DType::Float16;  // buffers in another dtype than the call's: refused
  EXPECT_TRUE(r.dp->collective(c));
}

}  // namespace
}  // namespace zerosim::exec
