// Numbers at the edges (issue 12): sizes that do not fit in 64 bits saturate and are shown as
// "overflow" or refused naming the inputs, never wrapped or printed as a real size; the headroom
// keeps its sign beyond 2^63; span ends and duration sums do not overflow int64; and each edge the
// issue lists (1 parameter, 1 GPU, 10^13 and 10^15 parameters, 2^20 and 2^24 GPUs, bucket size 1
// and larger than the model, sequence length 2^24) gives a correct answer or one clear input error.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_testlib.h"
#include "temp_path.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_loader.h"
#include "zerosim/planner.h"
#include "zerosim/saturating.h"
#include "zerosim/trace.h"
#include "zerosim/units.h"
#include "zerosim/work_limit.h"

namespace zerosim {
namespace {

using clitest::run_cli;
constexpr std::int64_t kI64Max = INT64_MAX;

TEST(NumericEdges, SaturatedBytesAreShownAsOverflow) {
  EXPECT_EQ(format_gib(kBytesOverflow), "overflow");
  EXPECT_EQ(format_gib(kBytesOverflow - 1), "17179869184.00 GiB");  // a real (huge) size
  EXPECT_EQ(saturating_add(kBytesOverflow - 1, 1), kBytesOverflow);
  EXPECT_EQ(saturating_add(kBytesOverflow - 1, 2), kBytesOverflow);  // plain + gives 0
  EXPECT_EQ(saturating_add(kBytesOverflow, 0), kBytesOverflow);
}

// validate printed a tiny model's peak as "largest 0.00 GiB" (found by a new-user pass; the
// README's first validate example showed it): below 1 GiB a size takes the unit it fills.
TEST(NumericEdges, SmallSizesTakeTheUnitTheyFill) {
  EXPECT_EQ(format_size(0), "0 B");
  EXPECT_EQ(format_size(1023), "1023 B");
  EXPECT_EQ(format_size(1024), "1.00 KiB");
  EXPECT_EQ(format_size(1730000), "1.65 MiB");
  EXPECT_EQ(format_size((Bytes{1} << 20) - 1), "1.00 MiB");  // the unit follows the rounding
  EXPECT_EQ(format_size((Bytes{1} << 20) - 11), "1023.99 KiB");
  EXPECT_EQ(format_size((Bytes{1} << 30) - 1), "1.00 GiB");
  EXPECT_EQ(format_size(Bytes{1} << 30), "1.00 GiB");
  EXPECT_EQ(format_size(kBytesOverflow), "overflow");
}

TEST(NumericEdges, HeadroomKeepsItsSignBeyondTwoToThe63) {
  const Bytes two63 = Bytes{1} << 63;
  // static_cast<int64_t>(2^63 + 2^40) is negative: a GPU that size had a negative headroom.
  EXPECT_EQ(signed_difference(two63 + (Bytes{1} << 40), Bytes{1} << 30), kI64Max);
  EXPECT_EQ(signed_difference(Bytes{1} << 30, two63 + 5),
            -static_cast<std::int64_t>(two63 + 5 - (Bytes{1} << 30)));
  EXPECT_EQ(signed_difference(Bytes{1} << 30, two63 + (Bytes{1} << 31)), -kI64Max);  // clamped
  EXPECT_EQ(signed_difference(80, 100), -20);
  EXPECT_EQ(signed_difference(100, 80), 20);
  EXPECT_EQ(signed_difference(kBytesOverflow, 0), kI64Max);
  EXPECT_EQ(signed_difference(0, kBytesOverflow), -kI64Max);  // negating it is defined
}

TEST(NumericEdges, PlanOnAGpuLargerThanTwoToThe63HasAPositiveHeadroom) {
  PlanRequest req;
  auto m = load_zoo_model("gpt2-small");
  ASSERT_TRUE(m.ok()) << m.diagnostics().to_string();
  req.model = m.value();
  req.cluster.gpu = find_gpu("H100-SXM-80GB").value();
  req.cluster.gpu.memory_bytes = (Bytes{1} << 63) + (Bytes{1} << 40);
  req.cluster.nodes = 1;
  req.cluster.gpus_per_node = 2;
  req.base = default_ds_config(0, DType::BFloat16);
  req.training.seq_len = 256;
  req.sweep_max_gpus = 2;
  auto plan = make_plan(req);
  ASSERT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  for (const PlanRow& r : plan->rows) {
    EXPECT_TRUE(r.fits);
    EXPECT_EQ(r.headroom_bytes, kI64Max) << "stage " << r.stage;  // clamped, never negative
  }
}

TEST(NumericEdges, SpanEndsAndDurationSumsSaturate) {
  EXPECT_EQ(span_end(kI64Max - 10, 10), kI64Max);
  EXPECT_EQ(span_end(kI64Max - 10, 11), kI64Max);
  EXPECT_EQ(add_time(kI64Max, kI64Max), kI64Max);
  EXPECT_EQ(add_time(5, 7), 12);
  // Two overlapping compute spans of almost INT64_MAX each, as a measured trace may hold (the
  // reader accepts each one: it ends before INT64_MAX). Their sum overflowed the step's
  // compute_ns (UBSan: signed overflow).
  Trace t;
  t.meta.steps = 1;
  for (int i = 0; i < 2; ++i) {
    Span s;
    s.rank = 0;
    s.category = std::string(op_kind_name(OpKind::Forward));
    s.start_ns = 1;
    s.dur_ns = kI64Max - 1;
    s.step = 0;
    t.spans.push_back(s);
  }
  CommRecord c;
  c.rank = 0;
  c.start_ns = 0;
  c.dur_ns = kI64Max;
  c.bytes_sent = kBytesOverflow;
  t.comms.push_back(c);
  t.comms.push_back(c);
  const Summary s = summarize(t);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].compute_ns, kI64Max);
  EXPECT_EQ(s.total_ns, kI64Max);
  EXPECT_EQ(s.compute_ns, kI64Max);
}

TEST(NumericEdges, RoleTableLimitAtTheLimitPassesAndOneMoreIsRefused) {
  Diagnostics d;
  EXPECT_TRUE(check_role_table(1, kDefaultMaxRoleTable, 8, d));
  EXPECT_FALSE(d.has_errors());
  EXPECT_FALSE(check_role_table(2, kDefaultMaxRoleTable / 2 + 1, 8, d));
  EXPECT_EQ(d.to_string(),
            "--gpus: expected ranks with distinct partitions x size slots <= 134217728 (the "
            "role-table limit of a stage 0-2 schedule; ZEROSIM_MAX_ROLE_TABLE raises it), got 2 x "
            "67108865 = 134217730 at 8 GPUs; fewer GPUs or fewer, larger tensors shrink it\n");
  Diagnostics w;
  EXPECT_FALSE(check_role_table(std::uint64_t{1} << 32, std::uint64_t{1} << 32, 8, w));
  EXPECT_NE(w.to_string().find("= more than 2^64 at 8 GPUs"), std::string::npos) << w.to_string();
}

// --- The issue's edges, end to end ---------------------------------------------------------------

nlohmann::json plan_json(const std::string& args, int expected_exit) {
  const auto r = run_cli("plan " + args + " --format json");
  EXPECT_EQ(r.exit_code, expected_exit) << args << "\n" << r.err;
  if (r.out.empty()) return {};
  return nlohmann::json::parse(r.out);
}

// Every row: the total is the sum of its layers (no saturated term, no wrap), below 2^62, and the
// headroom is exactly capacity - total with its sign.
void expect_exact_rows(const nlohmann::json& j, const std::string& what) {
  ASSERT_TRUE(j.contains("rows")) << what;
  const auto capacity = static_cast<std::int64_t>(80ULL << 30);  // H100-SXM-80GB
  for (const auto& row : j["rows"]) {
    const auto total = row["total_bytes"].get<std::uint64_t>();
    EXPECT_GT(total, 0u) << what;
    EXPECT_LT(total, 1ULL << 62) << what;
    EXPECT_EQ(total, row["model_states_bytes"].get<std::uint64_t>() +
                         row["buffers_bytes"].get<std::uint64_t>() +
                         row["activations_bytes"].get<std::uint64_t>() +
                         row["overhead_bytes"].get<std::uint64_t>())
        << what;
    EXPECT_EQ(row["headroom_bytes"].get<std::int64_t>(),
              capacity - static_cast<std::int64_t>(total))
        << what;
    EXPECT_EQ(row["fits"].get<bool>(), static_cast<std::int64_t>(total) <= capacity) << what;
  }
}

TEST(NumericEdges, OneParameterOnOneGpuFits) {
  const auto j = plan_json("--params 1 --gpus 1", 0);
  EXPECT_EQ(j["model"]["parameters"].get<std::uint64_t>(), 1u);
  expect_exact_rows(j, "1 parameter");
  for (const auto& row : j["rows"]) {
    EXPECT_TRUE(row["fits"].get<bool>());
    EXPECT_EQ(row["comm_bytes_per_step"].get<std::uint64_t>(), 0u);  // one GPU sends nothing
  }
}

TEST(NumericEdges, TenToThe13ParametersOnOneGpuAreExactAndDoNotFit) {
  // 10^15 at 8 GPUs is Cli.AbsurdSizesDoNotOverflow, and so is 10^15 at 2^20 GPUs (refused).
  const auto j = plan_json("--params 1e13 --gpus 1 --max-gpus 1", 2);  // 2: infeasible, printed
  expect_exact_rows(j, "1e13");
  for (const auto& row : j["rows"]) EXPECT_FALSE(row["fits"].get<bool>());
}

TEST(NumericEdges, TwoToThe20GpusPlanExactly) {
  const auto j = plan_json("--model gpt2 --gpus 1048576 --gpus-per-node 8", 0);
  expect_exact_rows(j, "2^20 GPUs");
}

// 2^24 is --gpus' largest value; a small model keeps it to seconds (Llama-2-7B takes minutes).
TEST(NumericEdges, TwoToThe24GpusPlanExactly) {
  const auto j = plan_json("--model gpt2-small --gpus 16777216 --gpus-per-node 8", 0);
  expect_exact_rows(j, "2^24 GPUs");
  for (const auto& row : j["rows"]) EXPECT_TRUE(row["fits"].get<bool>());  // 124M params
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = zerosim::testutil::unique_temp_path(name);
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

TEST(NumericEdges, ASaturatedDeepSpeedEstimateIsNullNotTwoToThe64) {
  // zero2 with CPU offload: DeepSpeed's CPU estimate is P x max(4N, 16) x 1.5 bytes, past 2^64 for
  // 10^15 parameters at 4096 GPUs; it was printed as 18446744073709551615 bytes (17179869184.00
  // GiB). One tensor keeps the schedules small.
  const std::string list = write_temp(
      "zerosim_one_tensor_1e15.json",
      R"({"format": "zerosim-param-list", "version": 1, "params": [["w", [1000000000, 1000000]]]})");
  const std::string args =
      "plan --param-list " + list + " --gpus 4096 --gpus-per-node 8 --max-gpus 4096";
  const auto r = run_cli(args + " --format json");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  int saturated = 0;
  for (const auto& row : j["rows"]) {
    if (row["deepspeed_estimator"].is_null()) continue;
    const auto& cpu = row["deepspeed_estimator"]["cpu_bytes"];
    if (cpu.is_null()) {
      ++saturated;
    } else {
      EXPECT_LT(cpu.get<std::uint64_t>(), ~std::uint64_t{0});
    }
  }
  EXPECT_GT(saturated, 0) << r.out;
  const auto t = run_cli(args);
  EXPECT_NE(t.out.find("CPU overflow"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("17179869184.00 GiB"), std::string::npos) << t.out;
}

TEST(NumericEdges, SequenceLengthTwoToThe24IsAnExactAnswer) {
  // A rotary model: a learned position table (GPT-2's 1024 rows) refuses a longer sequence.
  const auto j = plan_json("--model pythia-1.4b --gpus 8 --seq-len 16777216", 2);
  expect_exact_rows(j, "seq 2^24");
  for (const auto& row : j["rows"])
    EXPECT_GT(row["activations_bytes"].get<std::uint64_t>(), 80ULL << 30);
}

TEST(NumericEdges, ActivationsBeyondTwoToThe62AreRefusedNamingTheInputs) {
  const std::string expected =
      "zerosim: expected activations per GPU of at most 2^62 bytes (4 EiB), got more than 2^64 "
      "bytes at sequence length 16777216 x micro-batch 1048576 (--seq-len, --micro-batch) for "
      "llama2-70b\n";
  // Before: "schedule: /buffers: expected buffer sizes whose sum fits in 64 bits" (deepspeed), and
  // 50 lines of "simulator: /ops/N: expected finite FLOPs >= 0" for finite FLOPs (paper).
  for (const char* cmd : {"plan", "plan --mode paper", "simulate --stage 3"}) {
    const auto r = run_cli(std::string(cmd) +
                           " --model llama2-70b --gpus 8 --seq-len 16777216 --micro-batch 1048576");
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err, expected) << cmd;
    EXPECT_TRUE(r.out.empty()) << cmd;
  }
}

TEST(NumericEdges, BucketSizeOneAndLargerThanTheModel) {
  const std::string one = write_temp("zerosim_bucket_one.json",
                                     R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization":
                                   {"stage": 2, "reduce_bucket_size": 1, "allgather_bucket_size": 2}})");
  const std::string huge = write_temp("zerosim_bucket_huge.json",
                                      R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization":
                                   {"stage": 2, "reduce_bucket_size": 1e12, "allgather_bucket_size": 1e12}})");
  // Bucket size 1: every gradient is its own flush (one all-reduce each); 10^12, far above the
  // model's 124M: one flush per micro-step. Either way the gradient traffic is the same bytes.
  const auto a = run_cli("simulate --model gpt2 --gpus 8 --seq-len 1024 --ds-config " + one +
                         " --format json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto b = run_cli("simulate --model gpt2 --gpus 8 --seq-len 1024 --ds-config " + huge +
                         " --format json");
  // DeepSpeed allocates the IPG buffer at the full reduce_bucket_size: 10^12 fp32 elements, 4 TB,
  // does not fit (exit 2), and the OOM names it with its exact size.
  ASSERT_EQ(b.exit_code, 2) << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  auto all_reduce = [](const nlohmann::json& j) {
    for (const auto& c : j["comm"])
      if (c["kind"] == "all_reduce") return c;
    return nlohmann::json();
  };
  const auto ra = all_reduce(ja), rb = all_reduce(jb);
  ASSERT_FALSE(ra.is_null());
  ASSERT_FALSE(rb.is_null());
  EXPECT_GT(ra["calls"].get<int>(), 50 * rb["calls"].get<int>());  // 312 vs 4
  EXPECT_EQ(ra["bytes"], rb["bytes"]);
  EXPECT_EQ(ra["bytes_sent_per_rank"], rb["bytes_sent_per_rank"]);
  EXPECT_TRUE(ja["oom"].is_null());
  EXPECT_EQ(jb["oom"]["buffer"], "ipg[0]");
  EXPECT_EQ(jb["oom"]["bytes"].get<std::uint64_t>(), 4000000000000ULL);
}

}  // namespace
}  // namespace zerosim
