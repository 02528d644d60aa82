// Issue 11 items 4 and 5 end to end: any GPU (catalog names, ambiguous names, --gpu-memory and its
// rates) and host memory (the host/node column, --cpu-memory-per-node on both sides, NVMe offload,
// the warnings on the first screen).
#include <nlohmann/json.hpp>

#include "cli_testlib.h"

namespace zerosim::clitest {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path =
      ::testing::TempDir() + "gpu_host_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

// --- any GPU ---------------------------------------------------------------------------------

TEST(CliGpu, CatalogGpusPeopleFineTuneOnArePlanned) {
  for (const char* gpu :
       {"A10G", "L4", "A6000", "RTX-3090", "H800", "H20", "V100-16GB", "MI250X", "GH200-96GB"}) {
    // fp16: V100 has no bf16.
    CliRun r = run_cli(std::string("plan --model gpt2 --gpus 2 --precision fp16 --gpu ") + gpu +
                       " --format json");
    ASSERT_EQ(r.exit_code, 0) << gpu << "\n" << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["cluster"]["gpu_source"], "catalog") << gpu;
    EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  }
}

TEST(CliGpu, AmbiguousNameIsRefusedWithTheChoicesOnEveryCommand) {
  expect_one_line_error("plan --model gpt2 --gpu A100",
                        "--gpu: \"A100\" names more than one GPU; give one of: A100-40GB (40.00 "
                        "GiB");
  expect_one_line_error("simulate --model gpt2 --stage 2 --gpus 2 --gpu H100",
                        "\"H100\" names more than one GPU; give one of: H100-SXM-80GB");
  expect_one_line_error("schedule --model gpt2 --stage 1 --gpus 2 --gpu V100",
                        "V100-16GB (16.00 GiB");
}

// A GPU without bfloat16 under the default bf16: one line naming what chose bf16 and the way out,
// not the simulator's "simulator: /gpu: expected a dense bfloat16 rate for \"V100-32GB\"".
TEST(CliGpu, AGpuWithoutBfloat16SaysWhichPrecisionToUse) {
  expect_one_line_error("plan --gpu V100-32GB --model gpt2-xl",
                        "--gpu: V100-32GB has no bfloat16; expected --precision fp16 or fp32, got "
                        "bf16 (the default precision)");
  expect_one_line_error(
      "simulate --gpu V100-32GB --model gpt2-xl --stage 2 --precision bf16",
      "--precision: V100-32GB has no bfloat16; expected --precision fp16 or fp32, "
      "got bf16");
  const CliRun fp16 = run_cli("plan --gpu V100-32GB --model gpt2-xl --precision fp16");
  EXPECT_EQ(fp16.exit_code, 0) << fp16.err;
}

TEST(CliGpu, GpuMemoryDescribesAnyOtherGpu) {
  CliRun r = run_cli(
      "plan --model gpt2 --gpus 2 --gpu-memory 12GiB --gpu-tflops 40 "
      "--gpu-bandwidth 360");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on 2 x custom (12.00 GiB each;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU given: --gpu-memory 12GiB, --gpu-tflops 40, --gpu-bandwidth 360; "
                       "other figures H100-SXM-80GB's"),
            std::string::npos)
      << r.out;
  CliRun j = run_cli("plan --model gpt2 --gpus 2 --gpu-memory 12GiB --format json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["cluster"]["gpu"], "custom");
  EXPECT_EQ(doc["cluster"]["gpu_source"], "flags");
  EXPECT_EQ(doc["cluster"]["gpu_memory_bytes"], 12ULL << 30);
  // With --gpu, the named GPU's other figures: an H100 NVL-like 94 GiB part.
  CliRun nvl = run_cli(
      "plan --model gpt2 --gpus 2 --gpu H100-PCIe-80GB --gpu-memory 94GiB "
      "--format json");
  ASSERT_EQ(nvl.exit_code, 0) << nvl.err;
  auto n = nlohmann::json::parse(nvl.out);
  EXPECT_EQ(n["cluster"]["gpu"], "H100-PCIe-80GB-custom");
  EXPECT_EQ(n["cluster"]["gpu_memory_bytes"], 94ULL << 30);
}

// The memory given decides the fit: 1 GiB cannot hold GPT-2 (124 M parameters) at stage 0, 4 GiB
// can.
TEST(CliGpu, GpuMemoryDecidesTheFit) {
  CliRun small = run_cli("plan --model gpt2 --gpus 1 --gpu-memory 1GiB --format json");
  EXPECT_EQ(small.exit_code, 2) << small.err;
  CliRun big = run_cli("plan --model gpt2 --gpus 1 --gpu-memory 16GiB --format json");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  EXPECT_TRUE(nlohmann::json::parse(big.out)["rows"][0]["fits"]);
}

// --gpu-tflops changes the predicted step time; --gpu-bandwidth is accepted on simulate.
TEST(CliGpu, GpuRatesReachTheTimeModel) {
  auto step = [](const std::string& extra) {
    CliRun r = run_cli("simulate --model gpt2 --stage 2 --gpus 2 --format json" + extra);
    EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.err;
    return nlohmann::json::parse(r.out)["time"]["total_ns"].get<double>();
  };
  const double base = step(" --gpu H100-SXM-80GB");
  const double slow = step(" --gpu H100-SXM-80GB --gpu-tflops 100 --gpu-bandwidth 500");
  EXPECT_GT(slow, base);
  CliRun s = run_cli("simulate --model gpt2 --stage 2 --gpus 2 --gpu-memory 24GiB");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("2 x custom"), std::string::npos) << s.out;
}

TEST(CliGpu, GpuFigureFlagsRefuseGarbage) {
  const std::string plan = "plan --model gpt2 --gpus 1 ";
  for (const char* bad :
       {"abc", "24", "-1GiB", "0GiB", "0.5GiB", "1e30GiB", "24XiB", "GiB", "nanGiB", "infGiB"})
    expect_one_line_error(plan + "--gpu-memory " + bad,
                          std::string("--gpu-memory: expected a size"));
  expect_one_line_error(plan + "--gpu-memory 24GB", "memory sold as \"24 GB\" holds 24 GiB");
  for (const char* bad : {"fast", "-5", "0", "1e9", "100TFLOPS", "nan", "inf"})
    expect_one_line_error(plan + "--gpu-tflops " + bad,
                          std::string("--gpu-tflops: expected dense TFLOP/s in (0, 100000], got"));
  for (const char* bad : {"fast", "-1", "0", "1e12", "3TB/s"})
    expect_one_line_error(plan + "--gpu-bandwidth " + bad,
                          std::string("--gpu-bandwidth: expected GB/s in (0, 100000], got"));
  expect_one_line_error("simulate --model gpt2 --stage 1 --gpus 2 --gpu-memory 24",
                        "expected a size");
}

TEST(CliGpu, EveryCommandThatTakesGpuListsTheFigureFlags) {
  for (const char* cmd : {"plan", "simulate", "schedule", "validate"}) {
    CliRun r = run_cli(std::string(cmd) + " --help");
    ASSERT_EQ(r.exit_code, 0) << cmd;
    for (const char* f : {"--gpu-memory", "--gpu-tflops", "--gpu-bandwidth"})
      EXPECT_NE(r.out.find(f), std::string::npos) << cmd << " " << f;
  }
  CliRun p = run_cli("plan --help");
  EXPECT_NE(p.out.find("--cpu-memory-per-node"), std::string::npos);
}

// --- host memory -----------------------------------------------------------------------------

TEST(CliHost, EveryFormatHasTheHostPerNodeColumn) {
  CliRun t = run_cli("plan --model gpt2 --gpus 4");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("host/node"), std::string::npos);
  CliRun m = run_cli("plan --model gpt2 --gpus 4 --format markdown");
  EXPECT_NE(m.out.find("| host/node |"), std::string::npos) << m.out;
  CliRun c = run_cli("plan --model gpt2 --gpus 4 --format csv");
  EXPECT_NE(c.out.find(",steady_bytes,host_per_node_bytes,fits,fits_gpu,fits_host,"),
            std::string::npos)
      << c.out;
  CliRun j = run_cli("plan --model gpt2 --gpus 4 --format json");
  auto doc = nlohmann::json::parse(j.out);
  bool some_host = false;
  for (const auto& row : doc["rows"]) {
    // One process per GPU on the node: 4 ranks' host peaks.
    EXPECT_EQ(row["host_bytes_per_node"].get<std::uint64_t>(),
              row["host_bytes"].get<std::uint64_t>() * 4);
    some_host |= row["host_bytes"].get<std::uint64_t>() > 0;
    EXPECT_TRUE(row["fits_host"].is_null());  // not checked without --cpu-memory-per-node
  }
  EXPECT_TRUE(some_host);  // the offload rows hold host buffers
}

// The offload rows need host RAM: with too little, they fail on the host side and say so; the rows
// without offload still fit, so the plan does.
TEST(CliHost, CpuMemoryPerNodeIsCheckedAndTheVerdictSaysWhichSide) {
  CliRun r = run_cli("plan --model llama2-7b --gpus 8 --cpu-memory-per-node 64GiB --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["cluster"]["cpu_memory_per_node_bytes"], 64ULL << 30);
  int host_fails = 0;
  for (const auto& row : doc["rows"]) {
    const bool host_ok = row["host_bytes_per_node"].get<std::uint64_t>() <= (64ULL << 30);
    EXPECT_EQ(row["fits_host"], host_ok);
    EXPECT_EQ(row["fits"], host_ok && row["fits_gpu"].get<bool>());
    if (!host_ok) {
      ++host_fails;
      EXPECT_EQ(row["max_micro_batch"], 0);
      EXPECT_NE(row["offload"], "none");
    }
  }
  EXPECT_GT(host_fails, 0);
  CliRun t = run_cli("plan --model llama2-7b --gpus 8 --cpu-memory-per-node 64GiB");
  EXPECT_NE(t.out.find("no (host)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("host memory: 64.00 GiB per node"), std::string::npos) << t.out;
  // Plenty of host RAM: the same rows fit.
  CliRun big = run_cli("plan --model llama2-7b --gpus 8 --cpu-memory-per-node 4TiB");
  EXPECT_EQ(big.out.find("no (host)"), std::string::npos) << big.out;
}

TEST(CliHost, TheDsConfigRowFailingOnTheHostSaysHost) {
  const std::string ds = write_temp("offload.json", R"({"train_micro_batch_size_per_gpu": 1,
    "bf16": {"enabled": true},
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})");
  CliRun r =
      run_cli("plan --model llama2-7b --gpus 8 --ds-config " + ds + " --cpu-memory-per-node 32GiB");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("zerosim plan: infeasible: the ds_config's row (stage 2, offload "
                       "optimizer) does not fit on 8 x H100-SXM-80GB (host: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" over per node)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("GPU:"), std::string::npos) << r.err;
}

TEST(CliHost, CpuMemoryPerNodeRefusesGarbage) {
  const std::string plan = "plan --model gpt2 --gpus 1 --cpu-memory-per-node ";
  for (const char* bad : {"lots", "512", "-1GiB", "0GiB", "1e30GiB", "512XiB"})
    expect_one_line_error(plan + bad, "--cpu-memory-per-node: expected a size");
  expect_one_line_error(plan + "512GB", "write 24GiB");
}

// ZeRO-Infinity at stage 3 is refused with the file and key; stage 1/2 run it as CPU offload, as
// DeepSpeed's stage 1/2 optimizer does, and say so.
TEST(CliHost, NvmeOffloadIsRefusedAtStage3AndCpuOffloadBelow) {
  const std::string s3 = write_temp("nvme3.json", R"({"train_micro_batch_size_per_gpu": 1,
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme",
    "nvme_path": "/local_nvme"}}})");
  for (const char* cmd : {"plan --model gpt2 --gpus 2", "simulate --model gpt2 --gpus 2",
                          "schedule --model gpt2 --gpus 2"})
    expect_one_line_error(std::string(cmd) + " --ds-config " + s3,
                          s3 + ": /zero_optimization/offload_optimizer/device: expected \"cpu\" "
                               "or \"none\" at stage 3, got \"nvme\"");
  const std::string p3 = write_temp("nvmep.json", R"({"train_micro_batch_size_per_gpu": 1,
    "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})");
  expect_one_line_error("plan --model gpt2 --gpus 2 --ds-config " + p3,
                        "/zero_optimization/offload_param/device: expected");
  const std::string s2 = write_temp("nvme2.json", R"({"train_micro_batch_size_per_gpu": 1,
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}})");
  CliRun r = run_cli("plan --model gpt2 --gpus 2 --ds-config " + s2 + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  bool noted = false;
  for (const auto& n : doc["notes"])
    noted |= n.get<std::string>().find("stage_1_and_2.py:186") != std::string::npos;
  EXPECT_TRUE(noted) << doc["notes"].dump();
  for (const auto& row : doc["rows"]) {
    if (row["matches_ds_config"]) {
      EXPECT_EQ(row["offload"], "optimizer");
    }
  }
}

// Tensor parallelism, ZeRO++ and MiCS change every number: a warning before the table (and in
// JSON), not a --verbose line.
TEST(CliHost, UnmodelledParallelismIsAWarningOnTheFirstScreen) {
  const std::string ds = write_temp("zpp.json", R"({"train_micro_batch_size_per_gpu": 1,
    "bf16": {"enabled": true}, "tensor_parallel": {"autotp_size": 2},
    "zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8,
      "zero_quantized_weights": true, "zero_quantized_gradients": true, "mics_shard_size": 4}})");
  CliRun t = run_cli("plan --model gpt2 --gpus 8 --ds-config " + ds);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const std::size_t table = t.out.find("stage  offload");
  ASSERT_NE(table, std::string::npos) << t.out;
  for (const char* w : {"warning: tensor_parallel.autotp_size = 2",
                        "warning: zero_hpz_partition_size = 8", "warning: zero_quantized_weights",
                        "warning: zero_quantized_gradients", "warning: mics_shard_size = 4"}) {
    const std::size_t at = t.out.find(w);
    EXPECT_NE(at, std::string::npos) << w << "\n" << t.out;
    EXPECT_LT(at, table) << w;
  }
  CliRun j = run_cli("plan --model gpt2 --gpus 8 --format json --ds-config " + ds);
  EXPECT_EQ(nlohmann::json::parse(j.out)["warnings"].size(), 5u);
  CliRun s = run_cli("simulate --model gpt2 --gpus 8 --ds-config " + ds);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::size_t time = s.out.find("time (simulated)");
  const std::size_t warn = s.out.find("warning: zero_hpz_partition_size = 8");
  EXPECT_NE(warn, std::string::npos) << s.out;
  EXPECT_LT(warn, time);
  // Keys set to their defaults change nothing and say nothing.
  const std::string off = write_temp("zpp_off.json", R"({"train_micro_batch_size_per_gpu": 1,
    "tensor_parallel": {"autotp_size": 1}, "zero_optimization": {"stage": 3,
    "zero_hpz_partition_size": 1, "zero_quantized_weights": false, "mics_shard_size": -1}})");
  CliRun quiet = run_cli("plan --model gpt2 --gpus 8 --ds-config " + off);
  EXPECT_EQ(quiet.out.find("warning:"), std::string::npos) << quiet.out;
}

}  // namespace
}  // namespace zerosim::clitest
