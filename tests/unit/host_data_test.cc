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
};

class PlainDp : public ::testing::TestWithParam<Case> {};

// With gradients that are multiples of 2^-q small enough that every partial sum is exact in the
// 16-bit dtype, the ring all-reduce's per-hop rounding changes nothing and the order of summation
// does not matter: data mode equals the reference bit for bit.
TEST_P(PlainDp, EqualsTheReferenceBitForBit) {
  const Case c = GetParam();
  const std::uint32_t steps = 3;
  const Schedule s = plain_dp_schedule({kTensors, c.world, steps, c.lp});
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
  rs.average = false;  // the schedule's all-reduce sums (no Op::scale yet)
  const ReferenceRun ref = reference_train(o.data_options, rs);
  const Compared cmp = compare(run.value(), ref, c.lp);
  EXPECT_EQ(cmp.bitwise, cmp.elements) << "max |difference| " << cmp.max_abs;
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
                                           Case{3, DType::Float16, 6},
                                           Case{4, DType::BFloat16, 3}));

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
  rs.average = false;
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

// The shipped builders do not carry every operand yet: data mode refuses them with the first gap,
// and run_host returns it without running a rank.
TEST(DataModeRefuses, TodaysBuilderSchedules) {
  for (int stage : {0, 1, 2, 3}) {
    auto sc =
        load_scenario_file(std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_zero2_4gpu.json");
    ASSERT_TRUE(sc.ok());
    Scenario scn = sc.value();
    scn.ds.zero.stage = stage;
    auto plan = plan_partition(scn.model, partition_options(scn.ds, 4));
    ASSERT_TRUE(plan.ok());
    auto sched = build_schedule(schedule_input(scn, plan.value()));
    ASSERT_TRUE(sched.ok()) << sched.diagnostics().to_string();
    auto g = lower_schedule(sched.value());
    ASSERT_TRUE(g.ok());
    auto run = run_host(sched.value(), g.value(), data_options(0));
    ASSERT_FALSE(run.ok()) << "stage " << stage << " now carries every operand: add it to the "
                           << "reference comparison";
    const Diagnostic& d = run.diagnostics().items().front();
    EXPECT_EQ(d.source, "data mode");
    EXPECT_NE(d.message.find(", op "), std::string::npos) << d.message;
    EXPECT_NE(d.hint.find("--no-data"), std::string::npos);
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
