// The time model through the CLI and the planner: the cluster link flags (their effect on network
// and NVLink time, their garbage input), the speed lines of simulate, the defaults-vs-given notes,
// and plan's recommendation on predicted speed.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_testlib.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/model_loader.h"
#include "zerosim/partition_plan.h"
#include "zerosim/planner.h"

namespace zerosim {
namespace {

using clitest::expect_one_line_error;
using clitest::run_cli;

// The summary JSON of a simulate run; total collective time over the run (ns).
std::int64_t comm_ns(const std::string& args) {
  const auto r = run_cli("simulate " + args + " --format json");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  std::int64_t t = 0;
  if (!j.is_discarded())
    for (const auto& c : j["comm"]) t += c["time_ns"].get<std::int64_t>();
  return t;
}

constexpr const char* kTwoNodes = "--model llama2-7b --gpus 16 --gpus-per-node 8 --stage 2";
constexpr const char* kOneNode = "--model llama2-7b --gpus 8 --stage 2";

TEST(ClusterFlags, NetworkBandwidthChangesTheNetworkTime) {
  const std::int64_t base = comm_ns(kTwoNodes);
  const std::int64_t slow = comm_ns(std::string(kTwoNodes) + " --network-gbps 12.5");
  const std::int64_t fast = comm_ns(std::string(kTwoNodes) + " --network-gbps 100");
  EXPECT_GT(slow, base * 2) << "a quarter of the NIC bandwidth";
  // The default 50 GB/s per GPU x 8 GPUs = 400 GB/s already exceeds the NVLink busBw (360): a
  // faster NIC cannot help, the ring is bound by NVLink (collective_cost.cc bus_bandwidth).
  EXPECT_EQ(fast, base);
  // 4 NICs of 50 GB/s for 8 GPUs is 25 GB/s per GPU, the same as 8 NICs of 25 GB/s.
  EXPECT_EQ(comm_ns(std::string(kTwoNodes) + " --nics-per-node 4"),
            comm_ns(std::string(kTwoNodes) + " --network-gbps 25"));
  // One node: the network is not used.
  EXPECT_EQ(comm_ns(std::string(kOneNode) + " --network-gbps 12.5"), comm_ns(kOneNode));
}

TEST(ClusterFlags, IntraNodeBandwidthChangesTheNvlinkTime) {
  const std::int64_t base = comm_ns(kOneNode);
  const std::int64_t half = comm_ns(std::string(kOneNode) + " --intra-node-gbps 225");
  EXPECT_GT(half, base * 3 / 2);
}

TEST(ClusterFlags, OutputsSayWhatWasGiven) {
  const auto given = run_cli(std::string("simulate ") + kTwoNodes + " --network-gbps 25");
  EXPECT_NE(given.out.find("[given: --network-gbps 25 (network 25 GB/s per GPU)]"),
            std::string::npos)
      << given.out;
  const auto def = run_cli(std::string("simulate ") + kTwoNodes);
  EXPECT_NE(def.out.find("[default: GPU catalog]"), std::string::npos) << def.out;
  EXPECT_NE(def.out.find("default: hopper GEMM curve at hidden 4096"), std::string::npos);
  EXPECT_NE(def.out.find("us per kernel launch"), std::string::npos);
  const auto eff = run_cli(std::string("simulate ") + kOneNode + " --efficiency 0.4");
  EXPECT_NE(eff.out.find("[given: --efficiency 0.400]"), std::string::npos) << eff.out;
  // A scenario file takes the link flags too (they describe the machine).
  const auto sc = run_cli(std::string("simulate --scenario ") + ZEROSIM_SOURCE_DIR +
                          "/scenarios/llama2-7b_zero2_8xh100.json --intra-node-gbps 300");
  EXPECT_EQ(sc.exit_code, 0) << sc.err;
  EXPECT_NE(sc.out.find("given: --intra-node-gbps 300"), std::string::npos) << sc.out;
  // plan --scenario honours them and says so in its notes (they are not scenario overrides).
  const std::string scenario =
      std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/llama2-70b_zero3_64xh100.json";
  const auto plan = run_cli("plan --scenario " + scenario + " --network-gbps 25");
  EXPECT_NE(plan.out.find("cluster links given: --network-gbps 25 (network 25 GB/s per GPU)"),
            std::string::npos)
      << plan.out << plan.err;
  expect_one_line_error("plan --scenario " + scenario + " --nics-per-node x", "--nics-per-node");
}

// Every time-model note of simulate says where its figures come from (docs/time_model.md: each
// ends in [default: …], [given: …] or names its calibration); the memory-bound note (HBM, host
// and PCIe bandwidths, which time the offload rows) said nothing.
TEST(ClusterFlags, EveryTimeModelNoteSaysItsBasis) {
  for (const std::string& extra : {std::string(), std::string(" --gpu-bandwidth 2000")}) {
    const auto r = run_cli(std::string("simulate ") + kOneNode + extra);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    int notes = 0;
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);) {
      for (const char* p :
           {"note: compute: ", "note: host: ", "note: memory-bound ops: ", "note: collectives: "}) {
        if (l.rfind(p, 0) != 0) continue;
        ++notes;
        EXPECT_TRUE(l.find("[default: ") != std::string::npos ||
                    l.find("[given") != std::string::npos ||
                    l.find("calibrated: ") != std::string::npos)
            << l;
      }
    }
    EXPECT_EQ(notes, 4) << r.out;
  }
  const auto def = run_cli(std::string("simulate ") + kOneNode);
  EXPECT_NE(def.out.find("per element [default: host assumed, HBM and PCIe: GPU catalog; "
                         "docs/time_model.md]"),
            std::string::npos)
      << def.out;
  const auto flags = run_cli(std::string("simulate ") + kOneNode + " --gpu-bandwidth 2000");
  EXPECT_NE(flags.out.find("HBM 2000 GB/s"), std::string::npos) << flags.out;
  EXPECT_NE(flags.out.find("HBM and PCIe from the GPU flags"), std::string::npos) << flags.out;
}

// plan without a scenario honours the link flags (its rows are timed on the given network) and,
// as with a scenario, its notes say so (#13 item 4: the output states what was given). It timed
// them silently before.
TEST(ClusterFlags, PlanFromFlagsSaysWhatWasGiven) {
  const std::string base = "plan --model gpt2-xl --gpus 16 --gpus-per-node 8 --format json";
  const auto def = run_cli(base);
  const auto slow = run_cli(base + " --network-gbps 12.5");
  ASSERT_EQ(def.exit_code, 0) << def.err;
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  const auto jd = nlohmann::json::parse(def.out, nullptr, false);
  const auto js = nlohmann::json::parse(slow.out, nullptr, false);
  ASSERT_FALSE(jd.is_discarded() || js.is_discarded());
  // Stage 2 without offload (row 3): its steady step crosses the slower network.
  EXPECT_GT(js["rows"][3]["steady_step_ns"].get<std::int64_t>(),
            jd["rows"][3]["steady_step_ns"].get<std::int64_t>());
  const auto has_note = [](const nlohmann::json& j, const std::string& text) {
    for (const auto& n : j["notes"])
      if (n.get<std::string>().find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has_note(js, "cluster links given: --network-gbps 12.5 (network 12.5 GB/s per GPU)"))
      << js["notes"].dump();
  EXPECT_FALSE(has_note(jd, "cluster links")) << jd["notes"].dump();
  const auto table = run_cli("plan --model gpt2-xl --gpus 16 --intra-node-gbps 300");
  EXPECT_NE(table.out.find("  - cluster links given: --intra-node-gbps 300\n"), std::string::npos)
      << table.out;
}

TEST(ClusterFlags, GarbageIsOneLine) {
  for (const char* cmd :
       {"simulate --model llama2-7b --gpus 8 --stage 2", "plan --model gpt2-small"}) {
    const std::string c = cmd;
    expect_one_line_error(c + " --network-gbps abc", "--network-gbps");
    expect_one_line_error(c + " --network-gbps 400", "expected GB/s per NIC in (0, 250]");
    expect_one_line_error(c + " --network-gbps 0", "--network-gbps");
    expect_one_line_error(c + " --network-gbps nan", "--network-gbps");
    expect_one_line_error(c + " --nics-per-node 0", "--nics-per-node");
    expect_one_line_error(c + " --nics-per-node 2.5", "--nics-per-node");
    expect_one_line_error(c + " --intra-node-gbps -1", "--intra-node-gbps");
    expect_one_line_error(c + " --intra-node-gbps 1e9", "--intra-node-gbps");
    // One range per flag: a negative value said "[0, 1e+12]", zero "(0, 250]".
    for (const char* v : {"-5", "0", "abc"})
      expect_one_line_error(
          c + " --network-gbps " + v,
          std::string("--network-gbps: expected GB/s per NIC in (0, 250], got \"") + v + "\"");
    expect_one_line_error(c + " --intra-node-gbps -1",
                          "--intra-node-gbps: expected GB/s one way per GPU in (0, 10000], got "
                          "\"-1\"");
  }
}

TEST(SimulateSpeed, ReportsStepTimeTokensAndMfu) {
  const auto r = run_cli(std::string("simulate ") + kOneNode);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("speed of the steady step (step 1):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" tokens/s ("), std::string::npos);
  EXPECT_NE(r.out.find("model FLOPs utilisation "), std::string::npos);
  // Human units: a half-second step reads as ms, not as a six-digit ms figure.
  EXPECT_EQ(r.out.find("000 ms"), std::string::npos) << r.out;
  // A param list has no layer FLOPs and no sequence: no MFU or tokens/s is invented.
  const auto tiny = run_cli(std::string("simulate --scenario ") + ZEROSIM_SOURCE_DIR +
                            "/scenarios/tiny_zero2_4gpu.json");
  ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
  EXPECT_NE(tiny.out.find("model FLOPs utilisation: not known"), std::string::npos) << tiny.out;
  EXPECT_EQ(tiny.out.find("tokens/s"), std::string::npos) << tiny.out;
}

PlanRequest llama7b_on_8_h100() {
  PlanRequest req;
  req.model = load_zoo_model("llama2-7b").value();
  req.cluster.gpu = find_gpu("H100-SXM-80GB").value();
  req.cluster.nodes = 1;
  req.cluster.gpus_per_node = 8;
  req.base = default_ds_config(0, DType::BFloat16);
  req.training.seq_len = 4096;
  return req;
}

TEST(PlanSpeed, RecommendsTheFasterConfigurationOverTheLowestStageThatFits) {
  // Llama-2-7B on 8 x H100 at micro-batch 1: stage 1 is the lowest stage that fits (micro-batch
  // 1), but stage 3 fits micro-batch 2 and moves more tokens per second.
  auto plan = make_plan(llama7b_on_8_h100());
  ASSERT_TRUE(plan.ok());
  const PlanResult& p = plan.value();
  std::optional<std::size_t> lowest;
  for (std::size_t i = 0; i < p.rows.size(); ++i)
    if (p.rows[i].fits && p.rows[i].offload == OffloadVariant::None && !lowest) lowest = i;
  ASSERT_TRUE(lowest);
  EXPECT_EQ(p.rows[*lowest].stage, 1);
  ASSERT_TRUE(p.recommended);
  const PlanRow& rec = p.rows[*p.recommended];
  EXPECT_GT(rec.stage, p.rows[*lowest].stage) << p.recommendation;
  ASSERT_TRUE(rec.speed && p.rows[*lowest].speed);
  EXPECT_GT(rec.speed->tokens_per_s, p.rows[*lowest].speed->tokens_per_s);
  EXPECT_GT(rec.speed->micro_batch, p.rows[*lowest].speed->micro_batch);
  // No simulated configuration is faster than the recommended one.
  for (const PlanRow& r : p.rows)
    for (const auto& s : {r.speed, r.speed_checkpointed})
      if (s) {
        EXPECT_LE(s->tokens_per_s, rec.speed->tokens_per_s);
      }
  EXPECT_NE(p.recommendation.find("the fastest configuration that fits"), std::string::npos);
  EXPECT_NE(p.recommendation.find("the lowest stage that fits, stage 1"), std::string::npos)
      << p.recommendation;
}

TEST(PlanSpeed, CandidatesSimulatedInParallelGiveTheOneAtATimeSpeeds) {
  // predict_speeds simulates `window` candidates at a time and takes them in order: every window
  // gives the speeds and notes of one at a time, also where the bound stops the loop early (a
  // candidate a window computed past that point is dropped). The candidates are set so that it
  // does: at 256 tokens per sequence, stage 3 at micro-batch 64 runs far more tokens/s than the
  // bound of micro-batch 1 (its compute alone at a small GEMM's efficiency).
  PlanRequest req = llama7b_on_8_h100();
  req.training.seq_len = 32;
  auto plan = make_plan(req);
  ASSERT_TRUE(plan.ok());
  for (PlanRow& r : plan->rows) {
    r.max_micro_batch = r.offload != OffloadVariant::None ? 0 : r.stage == 3 ? 1024 : 1;
    r.max_micro_batch_checkpointed = 0;
  }
  std::map<int, PartitionPlan> plans;  // by stage, at the request's 8 GPUs
  auto plan_of = [&](const PlanRow& r) -> const PartitionPlan* {
    auto it = plans.find(r.stage);
    if (it == plans.end()) {
      const DsConfig ds = variant_config(req.base, r.stage, r.offload);
      auto p = plan_partition(req.model, partition_options(ds, 8));
      if (!p.ok()) return nullptr;
      it = plans.emplace(r.stage, std::move(p.value())).first;
    }
    return &it->second;
  };
  auto speeds_with = [&](std::size_t window) {
    PlanResult out = plan.value();
    out.notes.clear();
    for (PlanRow& r : out.rows) r.speed = r.speed_checkpointed = std::nullopt;
    predict_speeds(out, plan_of, window);
    return out;
  };
  auto same = [](const std::optional<RowSpeed>& a, const std::optional<RowSpeed>& b) {
    if (!a || !b) return a.has_value() == b.has_value();
    return a->micro_batch == b->micro_batch &&
           a->activation_checkpointing == b->activation_checkpointing && a->step_ns == b->step_ns &&
           a->tokens_per_s == b->tokens_per_s && a->mfu == b->mfu;
  };
  const PlanResult one = speeds_with(1);
  std::size_t simulated = 0, left_out = 0;
  for (const PlanRow& r : one.rows) {
    simulated += r.speed.has_value() + r.speed_checkpointed.has_value();
    left_out += r.max_micro_batch > 0 && !r.speed;
  }
  ASSERT_GT(simulated, 0u);
  ASSERT_GT(left_out, 0u) << "the bound should leave a fitting row unsimulated";
  for (std::size_t window : {2, 3, 8}) {
    SCOPED_TRACE("window " + std::to_string(window));
    const PlanResult w = speeds_with(window);
    ASSERT_EQ(w.rows.size(), one.rows.size());
    for (std::size_t i = 0; i < w.rows.size(); ++i) {
      EXPECT_TRUE(same(w.rows[i].speed, one.rows[i].speed)) << "row " << i;
      EXPECT_TRUE(same(w.rows[i].speed_checkpointed, one.rows[i].speed_checkpointed))
          << "row " << i;
    }
    EXPECT_EQ(w.notes, one.notes);
    for (std::size_t i = 0; i < w.rows.size(); ++i) {
      EXPECT_EQ(w.rows[i].speed_skip, one.rows[i].speed_skip) << "row " << i;
      EXPECT_EQ(w.rows[i].speed_checkpointed_skip, one.rows[i].speed_checkpointed_skip);
    }
  }
  // What the rows left out say: the fitting ones the bound stopped, the others that nothing fits.
  for (const PlanRow& r : one.rows) {
    SCOPED_TRACE("stage " + std::to_string(r.stage));
    const SpeedSkip want = r.speed                 ? SpeedSkip::None
                           : r.max_micro_batch > 0 ? SpeedSkip::Bounded
                                                   : SpeedSkip::NoFit;
    EXPECT_EQ(r.speed_skip, want);
    EXPECT_EQ(r.speed_checkpointed_skip, SpeedSkip::NoFit);
  }
}

TEST(PlanSpeed, NamesActivationCheckpointingWhenOnlyItFits) {
  // Llama-2-70B on 8 x A100-40GB at 4096 tokens: no row fits without checkpointing.
  PlanRequest req = llama7b_on_8_h100();
  req.model = load_zoo_model("llama2-70b").value();
  req.cluster.gpu = find_gpu("A100-40GB").value();
  // Built under zero.Init (as HF Trainer does for stage 3): without it every GPU holds the whole
  // 16-bit model (128 GiB) at init, and no row fits at all.
  req.training.zero_init = true;
  auto plan = make_plan(req);
  ASSERT_TRUE(plan.ok());
  const PlanResult& p = plan.value();
  for (const PlanRow& r : p.rows) EXPECT_EQ(r.max_micro_batch, 0u) << r.stage;
  ASSERT_TRUE(p.recommended) << p.recommendation;
  EXPECT_TRUE(p.recommend_checkpointing);
  EXPECT_NE(p.recommendation.find("activation checkpointing (--activation-checkpointing)"),
            std::string::npos)
      << p.recommendation;
  EXPECT_NE(p.rows[*p.recommended].offload, OffloadVariant::None) << p.recommendation;
  // ... and the recommendation names the offload as what unlocks it (#13 item 5).
  EXPECT_NE(p.recommendation.find("; the offload frees the GPU memory that micro-batch needs"),
            std::string::npos)
      << p.recommendation;
}

TEST(PlanSpeed, ModelsWithoutShapeKeepTheMemoryRule) {
  PlanRequest req = llama7b_on_8_h100();
  auto m = synthetic_model(1e9, "--params");
  ASSERT_TRUE(m.ok());
  req.model = m.value();
  req.model.arch.reset();
  auto plan = make_plan(req);
  ASSERT_TRUE(plan.ok());
  for (const PlanRow& r : plan->rows) {
    EXPECT_FALSE(r.speed);
    EXPECT_EQ(r.speed_skip, SpeedSkip::NoShape);
  }
  EXPECT_NE(plan->recommendation.find("the lowest stage that fits"), std::string::npos);
}

TEST(PlanSpeed, EveryFittingRowLeftUnsimulatedSaysWhy) {
  // The default plan (Llama-2-7B on 8 x H100): stage 3 without offload fits micro-batch 3, so its
  // offload rows at micro-batch 3 are never faster and are not simulated. The table said "-" in
  // their place, with no word on why.
  auto plan = make_plan(llama7b_on_8_h100());
  ASSERT_TRUE(plan.ok());
  std::size_t dominated = 0;
  for (const PlanRow& r : plan->rows) {
    SCOPED_TRACE("stage " + std::to_string(r.stage) + " offload " +
                 std::string(offload_name(r.offload)));
    EXPECT_EQ(r.speed.has_value(), r.speed_skip == SpeedSkip::None);
    EXPECT_EQ(r.speed_checkpointed.has_value(), r.speed_checkpointed_skip == SpeedSkip::None);
    if (r.max_micro_batch == 0) {
      EXPECT_EQ(r.speed_skip, SpeedSkip::NoFit);
    }
    dominated += r.speed_skip == SpeedSkip::Dominated;
  }
  EXPECT_EQ(dominated, 2u);
  const auto t = run_cli("plan");
  EXPECT_NE(t.out.find("3      optimizer->cpu     dominated          -             -      -  "),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("\n  dominated: not simulated, because a row of the same stage with no "
                       "more offload and no more recompute runs at least this micro-batch"),
            std::string::npos)
      << t.out;
  EXPECT_EQ(t.out.find("\n  bounded: "), std::string::npos) << "explained only where shown";
  const auto j = run_cli("plan --format json");
  const auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  for (const auto& r : doc["rows"]) {
    EXPECT_EQ(r["speed"].is_null(), r["speed_skipped"].is_string()) << r.dump();
    EXPECT_EQ(r["speed_checkpointed"].is_null(), r["speed_checkpointed_skipped"].is_string());
  }
  EXPECT_EQ(doc["rows"][6]["speed_skipped"], "dominated");
  EXPECT_EQ(doc["rows"][0]["speed_skipped"], "no_fit");
}

TEST(PlanSpeed, ARequestThatCheckpointsHasNoCheckpointingColumn) {
  // Every row already recomputes its forward: the column (all "-" before) is left out, and the
  // JSON's checkpointed speed is null with no reason to give.
  const auto t = run_cli("plan --activation-checkpointing");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("stage  offload          micro-batch  step time  tokens/s/GPU    MFU\n"),
            std::string::npos)
      << t.out;
  const auto j = run_cli("plan --activation-checkpointing --format json");
  const auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  for (const auto& r : doc["rows"]) {
    EXPECT_TRUE(r["speed_checkpointed"].is_null());
    EXPECT_TRUE(r["speed_checkpointed_skipped"].is_null());
  }
}

TEST(PlanSpeed, TablesAndJsonCarryTheSpeed) {
  const auto t = run_cli("plan");
  EXPECT_NE(t.out.find("predicted speed (simulated steady step"), std::string::npos) << t.out;
  const auto j = run_cli("plan --format json");
  const auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_TRUE(doc["recommendation"]["micro_batch"].is_number());
  bool any = false;
  for (const auto& r : doc["rows"]) any = any || r["speed"].is_object();
  EXPECT_TRUE(any);
}

}  // namespace
}  // namespace zerosim
