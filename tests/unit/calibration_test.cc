// zerosim calibrate and --calibration (calibration.h). No GPU here: the "measurements" are
// simulations with known, non-default time-model values whose trace clock is relabelled as CUDA
// events. Such a synthetic measurement is the one case where the true parameters are known, so the
// fit can be held to them; a real GPU's traces go through the same code.
#include "zerosim/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_testlib.h"
#include "zerosim/engine.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"

namespace zerosim {
namespace {

using clitest::expect_one_line_error;
using clitest::run_cli;

const std::string kGpu = "H100-SXM-80GB";  // the shipped nccl-tests tables are 8 x H100

std::string scenario(int stage) {
  return std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/gpt2-xl_zero" + std::to_string(stage) +
         "_8xa100.json";
}

struct BuiltCase {
  Schedule schedule;
  GpuSpec gpu;
  GemmShape gemm;
};

// gpt2-xl on 8 x H100 at `stage` and micro-batch `mb`, as `zerosim simulate` builds it.
BuiltCase build(int stage, std::uint64_t mb) {
  auto s = load_scenario_file(scenario(stage));
  EXPECT_TRUE(s.ok());
  Scenario& sc = s.value();
  sc.cluster.gpu = find_gpu(kGpu).value();
  sc.ds.micro_batch = mb;
  sc.ds.train_batch_size = mb * sc.ds.grad_accum_steps * sc.cluster.world_size();
  sc.training.micro_batch = mb;
  auto plan = plan_partition(
      sc.model, partition_options(sc.ds, static_cast<std::uint32_t>(sc.cluster.world_size())));
  EXPECT_TRUE(plan.ok());
  auto schedule = build_schedule(schedule_input(sc, plan.value()));
  EXPECT_TRUE(schedule.ok());
  return {std::move(schedule.value()), sc.cluster.gpu,
          GemmShape{sc.model.arch->hidden, mb * sc.training.seq_len}};
}

CalibratedLinks nccl_all_reduce() {
  auto c = load_nccl_tests(clitest::data("nccl_tests/all_reduce_8xh100.txt"));
  EXPECT_TRUE(c.ok());
  return c.value();
}

// The "true" time model of the synthetic GPU: nothing at its default.
EngineOptions truth() {
  EngineOptions o;
  o.compute_efficiency = 0.29;
  o.host.kernel_launch_us = 12;
  o.host.stage3_fetch_hook_us = 150;
  o.host.stage3_release_hook_us = 75;
  // No collective launch in the truth: the engine charges the launch only on the first of
  // identical calls (simulator_compile.cc cost_op's seen-call path copies the cost without it), so
  // a non-zero truth would be half there; reported to the lead, to be fixed in the engine.
  o.host.collective_launch_us = 0;
  o.host.given = true;
  o.calibration = nccl_all_reduce();
  return o;
}

struct Simulated {
  Trace trace;
  SimTime steady_ns = 0;
};

Simulated simulate_run(const BuiltCase& r, EngineOptions o) {
  o.gemm = r.gemm;
  auto sim = simulate(r.schedule, r.gpu, o);
  EXPECT_TRUE(sim.ok());
  Simulated out;
  out.trace = std::move(sim->trace);
  const auto& last = sim->summary.steps.back();
  out.steady_ns = last.end_ns - last.start_ns;
  return out;
}

CalibrationInput measured(const BuiltCase& r, const EngineOptions& o) {
  CalibrationInput in;
  in.path = "synthetic.json";
  in.digest = "fnv1a64:0000000000000000";
  in.trace = simulate_run(r, o).trace;
  in.trace.meta.clock = "cuda_events";  // the relabelling: see the file comment
  in.trace.meta.backend = "cuda";
  in.hidden = r.gemm.hidden;
  return in;
}

double rel(double got, double want) { return std::fabs(got - want) / want; }

// (a) Round trip on two runs of one GPU: stage 3, where the transformer blocks' module passes are
// host-bound and the LM head is GPU-bound (efficiency, kernel launch, hooks), and stage 2, whose
// gradient all-reduce buckets come in several sizes (the collective's line, and its launch against
// the nccl-tests table's device alpha): every parameter of the truth comes back.
TEST(Calibration, RoundTripRecoversTheTrueParameters) {
  const EngineOptions t = truth();
  const CalibratedLinks nccl = nccl_all_reduce();
  auto cal = fit_calibration({measured(build(3, 2), t), measured(build(2, 2), t)}, &nccl, false);
  ASSERT_TRUE(cal.ok()) << cal.diagnostics().items().front().to_string();
  const Calibration& c = cal.value();
  EXPECT_EQ(c.gpu, kGpu);
  ASSERT_FALSE(c.curve);  // one hidden size: a size class, and it says so
  EXPECT_EQ(c.hidden, 1600u);
  EXPECT_NE(c.efficiency.basis.find("size class"), std::string::npos);
  ASSERT_TRUE(c.efficiency.value);
  EXPECT_LT(rel(*c.efficiency.value, 0.29), 0.005) << *c.efficiency.value;
  ASSERT_TRUE(c.kernel_launch_us.value) << c.kernel_launch_us.basis;
  EXPECT_LT(rel(*c.kernel_launch_us.value, 12), 0.02) << *c.kernel_launch_us.value;
  ASSERT_TRUE(c.stage3_hooks_us.value) << c.stage3_hooks_us.basis;
  EXPECT_LT(rel(*c.stage3_hooks_us.value, 225), 0.02) << *c.stage3_hooks_us.value;
  ASSERT_TRUE(c.collective_launch_us.value) << c.collective_launch_us.basis;
  EXPECT_NEAR(*c.collective_launch_us.value, 0, 0.3) << c.collective_launch_us.basis;
  const CalibratedCollective& dev = *nccl.find(CollectiveKind::AllReduce);
  bool all_reduce = false;
  for (const FittedCollective& f : c.collectives)
    if (f.kind == CollectiveKind::AllReduce) {
      all_reduce = true;
      EXPECT_LT(rel(f.fit.busbw_gbps, dev.busbw_gbps), 0.01) << f.fit.busbw_gbps;
      EXPECT_NEAR(f.fit.alpha_us, dev.alpha_us, 0.5) << f.basis;
    }
  EXPECT_TRUE(all_reduce);
}

// The calibration file round-trips and applying it reproduces the measured step.
TEST(Calibration, FileRoundTripAndApplyReproduceTheMeasuredStep) {
  const BuiltCase r = build(3, 2);
  const EngineOptions t = truth();
  const CalibratedLinks nccl = nccl_all_reduce();
  auto cal = fit_calibration({measured(r, t), measured(build(2, 2), t)}, &nccl, false);
  ASSERT_TRUE(cal.ok());
  std::ostringstream json;
  write_calibration_json(cal.value(), json);
  auto back = read_calibration_text(json.str(), "cal.json");
  ASSERT_TRUE(back.ok()) << back.diagnostics().items().front().to_string();
  std::ostringstream again;
  write_calibration_json(back.value(), again);
  EXPECT_EQ(json.str(), again.str());
  EngineOptions o;
  EXPECT_FALSE(apply_calibration(back.value(), r.gpu, o).has_errors());
  const double truth_ns = static_cast<double>(simulate_run(r, t).steady_ns);
  const double predicted = static_cast<double>(simulate_run(r, o).steady_ns);
  EXPECT_LT(rel(predicted, truth_ns), 0.01) << predicted << " vs " << truth_ns;
  GpuSpec other = find_gpu("A100-80GB").value();
  const Diagnostics d = apply_calibration(back.value(), other, o);
  ASSERT_TRUE(d.has_errors());
  EXPECT_NE(d.items().front().message.find("fitted on \"H100-SXM-80GB\""), std::string::npos);
}

// (b) The issue's acceptance criterion in miniature: calibrate on micro-batch 2 at stage 2,
// predict micro-batch 4 at stage 3 of the same GPU within 10 % of its "measured" step. The
// stage-3 hooks cannot be seen in a stage-2 run, so this truth keeps them at their defaults; what
// transfers is the efficiency, the kernel launch and the collectives. The defaults alone miss.
TEST(Calibration, CalibratedOnOneRunPredictsAnotherWithinTenPercent) {
  EngineOptions t = truth();
  t.host.stage3_fetch_hook_us = HostCosts{}.stage3_fetch_hook_us;
  t.host.stage3_release_hook_us = HostCosts{}.stage3_release_hook_us;
  const CalibratedLinks nccl = nccl_all_reduce();
  auto cal = fit_calibration({measured(build(2, 2), t)}, &nccl, false);
  ASSERT_TRUE(cal.ok());
  EXPECT_FALSE(cal->stage3_hooks_us.value);  // not observable at stage 2: the default stays
  const BuiltCase b = build(3, 4);
  const double measured_ns = static_cast<double>(simulate_run(b, t).steady_ns);
  EngineOptions o;
  ASSERT_FALSE(apply_calibration(cal.value(), b.gpu, o).has_errors());
  const double calibrated = static_cast<double>(simulate_run(b, o).steady_ns);
  const double uncalibrated = static_cast<double>(simulate_run(b, EngineOptions{}).steady_ns);
  RecordProperty("measured_ns", std::to_string(measured_ns));
  RecordProperty("calibrated_ns", std::to_string(calibrated));
  RecordProperty("uncalibrated_ns", std::to_string(uncalibrated));
  EXPECT_LT(rel(calibrated, measured_ns), 0.10) << calibrated << " vs " << measured_ns;
  EXPECT_GT(rel(uncalibrated, measured_ns), 0.10) << uncalibrated << " vs " << measured_ns;
}

// A measured run carries host issue times: the host's time per op is the gap to the next issue.
// Synthetic issue times from a known host (launch 7 us per kernel, 33 us per collective) come
// back, also where the compute op is GPU-bound and its duration tells nothing about the host.
TEST(Calibration, IssueTimeGapsGiveTheHostCosts) {
  CalibrationInput in = measured(build(2, 2), truth());
  std::map<std::pair<std::string, std::uint32_t>, std::uint32_t> pieces;
  for (const Span& s : in.trace.spans)
    if (s.step == 0 && s.micro_step == 0 && s.phase != Phase::Init) ++pieces[{s.category, s.layer}];
  std::vector<Span*> order;
  for (Span& s : in.trace.spans) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(),
                   [](const Span* a, const Span* b) { return a->start_ns < b->start_ns; });
  SimTime host = 0;
  for (Span* s : order) {
    s->issue_ns = host;
    const bool compute =
        s->category == "forward" || s->category == "backward" || s->category == "recompute";
    const double kernels = s->category == "backward" ? 32.0 : 16.0;
    host += compute ? static_cast<SimTime>(7000 * kernels / pieces[{s->category, s->layer}])
            : s->category == "collective" ? 33000
                                          : 1000;
  }
  auto cal = fit_calibration({in}, nullptr, false);
  ASSERT_TRUE(cal.ok());
  ASSERT_TRUE(cal->kernel_launch_us.value) << cal->kernel_launch_us.basis;
  EXPECT_NEAR(*cal->kernel_launch_us.value, 7, 0.01) << cal->kernel_launch_us.basis;
  EXPECT_NE(cal->kernel_launch_us.basis.find("host issue gaps"), std::string::npos);
  ASSERT_TRUE(cal->collective_launch_us.value);
  EXPECT_NEAR(*cal->collective_launch_us.value, 33, 0.01);
}

TEST(Calibration, RefusesPredictionsHostClocksAndEmptyTraces) {
  const BuiltCase r = build(2, 2);
  CalibrationInput in = measured(r, truth());
  CalibrationInput sim = in;
  sim.trace.meta.clock = "simulated";
  auto a = fit_calibration({sim}, nullptr, false);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.diagnostics().items().front().message.find("clock \"simulated\""), std::string::npos);
  CalibrationInput host = in;
  host.trace.meta.clock = "host_steady";
  auto b = fit_calibration({host}, nullptr, false);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.diagnostics().items().front().message.find("host time is not GPU time"),
            std::string::npos);
  EXPECT_TRUE(fit_calibration({host}, nullptr, true).ok());
  CalibrationInput no_comms = in;
  no_comms.trace.comms.clear();
  auto c = fit_calibration({no_comms}, nullptr, false);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.diagnostics().items().front().pointer, "/comms");
  CalibrationInput no_compute = in;
  std::erase_if(no_compute.trace.spans, [](const Span& s) {
    return s.category == "forward" || s.category == "backward" || s.category == "recompute";
  });
  auto d = fit_calibration({no_compute}, nullptr, false);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.diagnostics().items().front().pointer, "/spans");
  CalibrationInput other = in;
  other.trace.meta.gpu = "A100-80GB";
  EXPECT_FALSE(fit_calibration({in, other}, nullptr, false).ok());
}

// Spans of 1.7e308 FLOPs sum to inf: the efficiency fitted inf, which the file wrote as null and
// read back as "not fitted" (calibrate exited 0; a hostile-input pass). Refused, one line.
TEST(Calibration, RefusesAFitThatIsNotFinite) {
  CalibrationInput in = measured(build(2, 2), truth());
  for (Span& s : in.trace.spans)
    if (s.flops > 0) s.flops = 1.7e308;
  auto r = fit_calibration({in}, nullptr, false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().to_string(),
            "zerosim calibrate: expected finite fitted values, got compute efficiency inf: the "
            "traces' FLOPs, bytes or times overflow a double; nothing written\n");
}

// --- The CLI: one line and exit 1 for every bad input. ---

std::string tmp(const std::string& name) {
  return ::testing::TempDir() + "zerosim_calibrate_" + std::to_string(getpid()) + "_" + name;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// A trace of gpt2-xl stage 2 on 8 x H100 at --efficiency 0.3, relabelled as measured.
std::string measured_trace_file() {
  static const std::string path = [] {
    const std::string sim = tmp("sim.json");
    std::string m = tmp("measured.json");
    auto r = run_cli("simulate --scenario " + scenario(2) + " --gpu " + kGpu +
                     " --efficiency 0.3 --trace " + sim);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    write(m, replace(clitest::read_all(sim), "\"clock\": \"simulated\"",
                     "\"clock\": \"cuda_events\""));
    return m;
  }();
  return path;
}

TEST(CalibrateCli, FitsPrintsAndAppliesWithProvenance) {
  const std::string cal = tmp("cal.json");
  auto r = run_cli("calibrate " + measured_trace_file() + " --nccl-tests " +
                   clitest::data("nccl_tests/all_reduce_8xh100.txt") + " -o " + cal);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("compute efficiency at hidden 1600   0.3 of dense"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("residual"), std::string::npos);
  const std::string text = clitest::read_all(cal);
  EXPECT_NE(text.find("\"format\": \"zerosim-calibration\""), std::string::npos);
  EXPECT_NE(text.find("\"digest\": \"fnv1a64:"), std::string::npos);
  EXPECT_NE(text.find("\"gpu\": \"H100-SXM-80GB\""), std::string::npos);
  auto s =
      run_cli("simulate --scenario " + scenario(3) + " --gpu " + kGpu + " --calibration " + cal);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("[calibrated: " + cal + " (efficiency 0.3 at hidden 1600"),
            std::string::npos)
      << s.out;
  EXPECT_NE(s.out.find("all_reduce (calibrated: " + cal), std::string::npos) << s.out;
  auto p = run_cli("plan --scenario " + scenario(3) + " --gpu " + kGpu + " --calibration " + cal);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("time model calibrated: " + cal), std::string::npos) << p.out;
  // The calibration changes plan's predicted steady step (stage 3 row).
  auto p0 = run_cli("plan --scenario " + scenario(3) + " --gpu " + kGpu);
  EXPECT_NE(p.out, p0.out);
  // Fitted within one node (8 x H100), applied to 8 nodes: a warning names the collective (an
  // 8-GPU nccl-tests table timed a 64-GPU run's collectives at NVLink speed without a word).
  EXPECT_EQ(s.err.find("within one node"), std::string::npos) << s.err;
  EXPECT_EQ(p.out.find("within one node"), std::string::npos) << p.out;
  const std::string across =
      "was fitted on 8 ranks within one node, this run is 64 GPUs over 8 "
      "nodes: its all_reduce is timed at the fitted bus bandwidth all the same";
  auto s64 = run_cli("simulate --scenario " + scenario(3) + " --gpu " + kGpu + " --gpus 64" +
                     " --calibration " + cal);
  ASSERT_EQ(s64.exit_code, 0) << s64.err;
  EXPECT_NE(s64.err.find("warning: " + cal + ": all_reduce " + across), std::string::npos)
      << s64.err;
  auto p64 = run_cli("plan --scenario " + scenario(3) + " --gpu " + kGpu + " --gpus 64" +
                     " --calibration " + cal);
  ASSERT_EQ(p64.exit_code, 0) << p64.err;
  EXPECT_NE(p64.out.find("warning: " + cal + ": all_reduce " + across), std::string::npos)
      << p64.out;
}

TEST(CalibrateCli, BadInputIsOneLine) {
  const std::string m = measured_trace_file();
  const std::string cal = tmp("cal_bad.json");
  expect_one_line_error("calibrate -o " + cal, "expected one or more measured traces");
  expect_one_line_error("calibrate " + m, "--output: expected -o FILE");
  expect_one_line_error("calibrate " + m + " -o " + cal + " --format yaml", "--format");
  expect_one_line_error("calibrate " + m + " -o " + cal + " --hidden -3", "--hidden");
  expect_one_line_error("calibrate " + m + " -o " + cal + " --bogus", "--bogus");
  // One file twice was fitted as two measurements.
  const std::string slash = m.substr(0, m.rfind('/') + 1) + "./" + m.substr(m.rfind('/') + 1);
  expect_one_line_error(
      "calibrate " + m + " " + slash + " -o " + cal,
      slash + ": expected each measured trace once, got the file of \"" + m + "\" again");
  expect_one_line_error("calibrate " + m + " -o " + m, "other than the measured trace");
  expect_one_line_error("calibrate " + m + " --nccl-tests", "--nccl-tests: expected a FILE");
  const std::string sim = tmp("sim.json");  // written by measured_trace_file()
  expect_one_line_error("calibrate " + sim + " -o " + cal, "got clock \"simulated\"");
  const std::string host = tmp("host.json");
  write(host, replace(clitest::read_all(m), "\"cuda_events\"", "\"host_steady\""));
  expect_one_line_error("calibrate " + host + " -o " + cal, "host time is not GPU time");
  const std::string huge = tmp("huge_flops.json");
  {
    auto j = nlohmann::json::parse(clitest::read_all(m));
    for (auto& span : j["spans"])
      if (span.contains("flops")) span["flops"] = 1.7e308;
    write(huge, j.dump());
  }
  expect_one_line_error("calibrate " + huge + " -o " + cal, "got compute efficiency inf");
  EXPECT_FALSE(std::ifstream(cal).good());
  // Two files with a table of one collective: the second silently replaced the first (within a
  // file that is refused), now refused across files too.
  const std::string ar = clitest::data("nccl_tests/all_reduce_8xh100.txt"), ar2 = tmp("ar2.txt");
  write(ar2, clitest::read_all(ar));
  expect_one_line_error(
      "calibrate " + m + " --nccl-tests " + ar + " --nccl-tests " + ar2 + " -o " + cal,
      ar2 + ": lines ");
  expect_one_line_error(
      "calibrate " + m + " --nccl-tests " + ar + " --nccl-tests " + ar2 + " -o " + cal,
      ": a second all_reduce_perf table (the first is " + ar + ": lines ");
  // A host-backend trace names no GPU ("host"): --gpu names it (found by a new-user pass; the
  // refusal suggested --gpu-memory, which calibrate does not take), and a fit --calibration cannot
  // read is refused, nothing written (a count-only run fitted 3e4 of the dense peak; calibrate
  // wrote it and plan refused the file).
  const std::string hv = tmp("host_validate.json");
  ASSERT_EQ(
      run_cli("validate --model gpt2-small --gpus 2 --stage 2 --no-data --gpu A100-80GB -o " + hv)
          .exit_code,
      0);
  expect_one_line_error("calibrate " + hv + " --allow-host-clock -o " + cal,
                        "/meta/gpu: expected a catalog GPU, got \"host\" (a host-backend "
                        "trace): give --gpu NAME");
  expect_one_line_error("calibrate " + m + " --gpu RTX-4090 -o " + cal,
                        "/meta/gpu: expected \"RTX-4090\" (--gpu), got ");
  const clitest::CliRun fit =
      run_cli("calibrate " + hv + " --allow-host-clock --gpu A100-80GB -o " + cal);
  EXPECT_EQ(fit.exit_code, 1) << fit.err;
  EXPECT_NE(fit.err.find("expected a fit that --calibration can use, got "
                         "/compute/efficiency/value: expected a number in [1e-06, 1]"),
            std::string::npos)
      << fit.err;
  EXPECT_NE(fit.err.find("nothing written"), std::string::npos);
  EXPECT_FALSE(std::ifstream(cal).good());
  std::remove(hv.c_str());
  // A good calibration, then broken copies of it.
  ASSERT_EQ(run_cli("calibrate " + m + " -o " + cal).exit_code, 0);
  const std::string good = clitest::read_all(cal);
  const std::string sc = "simulate --scenario " + scenario(2) + " --gpu " + kGpu;
  const std::string v2 = tmp("v2.json");
  write(v2, replace(good, "\"version\": 1", "\"version\": 2"));
  expect_one_line_error(sc + " --calibration " + v2, "expected version 1, got 2");
  const std::string fmt = tmp("fmt.json");
  write(fmt, replace(good, "zerosim-calibration", "zerosim-trace"));
  expect_one_line_error(sc + " --calibration " + fmt,
                        "expected \"format\": \"zerosim-calibration\"");
  const std::string eff = tmp("eff.json");
  std::string bad = good;
  const auto at = bad.find("\"value\": ", bad.find("\"efficiency\": {"));
  bad.replace(at, bad.find(',', at) - at, "\"value\": 7");
  write(eff, bad);
  expect_one_line_error(sc + " --calibration " + eff, "/compute/efficiency/value");
  // A size class at hidden 0 was read as a flat curve (a step 524 -> 673 ms), a meaning calibrate
  // never writes; a hostile-input pass.
  const std::string h0 = tmp("h0.json");
  bad = good;
  const auto hat = bad.find("\"hidden\": ", bad.find("\"compute\": {"));
  ASSERT_NE(hat, std::string::npos) << good;
  bad.replace(hat, bad.find_first_of(",}", hat) - hat, "\"hidden\": 0");
  write(h0, bad);
  expect_one_line_error(sc + " --calibration " + h0, "/compute/hidden: expected an integer 1..");
  // A collective kind twice: the last entry won without a word.
  const std::string twice = tmp("twice.json");
  {
    auto j = nlohmann::json::parse(good);
    ASSERT_FALSE(j["collectives"].empty()) << good;
    j["collectives"].push_back(j["collectives"][0]);
    write(twice, j.dump());
  }
  expect_one_line_error(sc + " --calibration " + twice, "expected each collective kind once, got");
  expect_one_line_error("simulate --scenario " + scenario(2) + " --calibration " + cal,
                        "fitted on \"H100-SXM-80GB\", this run is on \"A100-80GB\"");
  expect_one_line_error("plan --scenario " + scenario(2) + " --calibration " + cal,
                        "fitted on \"H100-SXM-80GB\"");
  expect_one_line_error(sc + " --calibration " + tmp("missing.json"), "missing.json");
}

TEST(CalibrateCli, CheckTakesTheCalibrationThePredictionUsed) {
  const std::string m = measured_trace_file();
  const std::string cal = tmp("cal_check.json");
  ASSERT_EQ(run_cli("calibrate " + m + " -o " + cal).exit_code, 0);
  const std::string with = tmp("pred_cal.json"), without = tmp("pred_default.json");
  const std::string sc = "simulate --scenario " + scenario(2) + " --gpu " + kGpu;
  ASSERT_EQ(run_cli(sc + " --calibration " + cal + " --trace " + with).exit_code, 0);
  ASSERT_EQ(run_cli(sc + " --trace " + without).exit_code, 0);
  auto ok = run_cli("check --predicted " + with + " --measured " + m +
                    " --time-tolerance 0.03 --calibration " + cal);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("time model calibrated: " + cal), std::string::npos) << ok.out;
  expect_one_line_error(
      "check --predicted " + without + " --measured " + m + " --calibration " + cal,
      "notes name no such calibration");
}

}  // namespace
}  // namespace zerosim
