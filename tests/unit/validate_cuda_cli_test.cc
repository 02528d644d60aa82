// `zerosim validate --backend cuda` end to end on a machine without a GPU: a build without the
// backend says so (exit 1); with it, no device is one clear line, a launch whose world size is not
// the schedule's is refused before any allocation, and every CUDA-only flag fed garbage is one
// line and exit 1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cli_testlib.h"

namespace {

using namespace zerosim::clitest;  // NOLINT: test-local helpers

const std::string kCase =
    "validate --backend cuda --model gpt2-small --gpus 2 --gpus-per-node 2 "
    "--stage 2 --precision fp16 --steps 2";

// Sets launcher variables for one test (ctest runs each test in its own process).
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [k, v] : vars) {
      ::setenv(k, v, 1);
      names_.push_back(k);
    }
  }
  ~Env() {
    for (const char* k : names_) ::unsetenv(k);
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

 private:
  std::vector<const char*> names_;
};

TEST(ValidateCuda, WithoutTheBackendSaysSo) {
  if (ZEROSIM_CUDA_BUILT) GTEST_SKIP() << "skipped: this build has the CUDA backend";
  expect_one_line_error(kCase + " --single-gpu", "built without the CUDA backend");
}

// A build with the backend runs zerosim-cuda from zerosim's directory: a zerosim copied alone
// names the file it cannot run (it said "built without the CUDA backend" before, which it was not).
TEST(ValidateCuda, WithoutTheBackendBesideItSaysSoInOneLine) {
  if (!ZEROSIM_CUDA_BUILT) GTEST_SKIP() << "skipped: built without the CUDA backend";
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("zerosim_no_cuda_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(ZEROSIM_CLI_PATH, dir / "zerosim", fs::copy_options::overwrite_existing);
  const CliRun r = run_program((dir / "zerosim").string(), kCase + " --single-gpu");
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("zerosim validate: --backend cuda: cannot run " +
                       (dir / "zerosim-cuda").string() + ": No such file or directory"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(ValidateCuda, NoDeviceIsOneClearLine) {
  if (!ZEROSIM_CUDA_BUILT) GTEST_SKIP() << "skipped: built without the CUDA backend";
  CliRun r = run_cli(kCase + " --single-gpu");
  if (r.exit_code == 0) GTEST_SKIP() << "skipped: a CUDA device is present (the run passed)";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cuda backend: no CUDA device: cudaGetDeviceCount: "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("validate: the run failed; nothing was compared"), std::string::npos);
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(ValidateCuda, WorldSizeMismatchIsRefusedBeforeAnyAllocation) {
  if (!ZEROSIM_CUDA_BUILT) GTEST_SKIP() << "skipped: built without the CUDA backend";
  {
    // A 4-process torchrun launch for a 2-rank schedule.
    Env env({{"RANK", "0"},
             {"WORLD_SIZE", "4"},
             {"LOCAL_RANK", "0"},
             {"MASTER_ADDR", "127.0.0.1"},
             {"MASTER_PORT", "29511"}});
    expect_one_line_error(kCase,
                          "expected 2 processes (the schedule's world size), got a "
                          "4-process torchrun launch");
    // Single-GPU mode is one process.
    expect_one_line_error(kCase + " --single-gpu",
                          "expected one process (single-GPU mode runs the ranks one at a time), "
                          "got a 4-process torchrun launch");
  }
  // No launcher at all and no --single-gpu: one process cannot be 2 ranks.
  expect_one_line_error(kCase, "got one process and no launcher");
}

TEST(ValidateCuda, AMatchingLaunchGetsToTheDevice) {
  if (!ZEROSIM_CUDA_BUILT) GTEST_SKIP() << "skipped: built without the CUDA backend";
  // torchrun and mpirun launches of the schedule's 2 ranks pass the launch check; here they stop
  // at the missing device (or, on a GPU machine, at the missing peer: the id exchange deadline).
  for (int launcher = 0; launcher < 2; ++launcher) {
    Env env = launcher == 0 ? Env({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"LOCAL_RANK", "0"},
                                   {"MASTER_ADDR", "127.0.0.1"},
                                   {"MASTER_PORT", "29512"}})
                            : Env({{"OMPI_COMM_WORLD_RANK", "1"},
                                   {"OMPI_COMM_WORLD_SIZE", "2"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
    CliRun r = run_cli(kCase + " --stall-timeout 0.5");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.find("expected 2 processes"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("validate: the run failed; nothing was compared"), std::string::npos)
        << r.err;
  }
}

TEST(ValidateCuda, GarbageLauncherVariablesAreOneLine) {
  if (!ZEROSIM_CUDA_BUILT) GTEST_SKIP() << "skipped: built without the CUDA backend";
  Env env({{"RANK", "one"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}});
  expect_one_line_error(kCase,
                        "environment variable RANK: expected an integer in [0, 2), got "
                        "\"one\"");
}

TEST(ValidateCuda, FlagGarbage) {
  if (!ZEROSIM_CUDA_BUILT) {
    expect_one_line_error(kCase + " --single-gpu --ranks x", "built without the CUDA backend");
    return;
  }
  expect_one_line_error(kCase + " --single-gpu --ranks x", "--ranks");
  expect_one_line_error(kCase + " --single-gpu --ranks 2", "--ranks");
  expect_one_line_error(kCase + " --single-gpu --ranks 0,", "--ranks");
  expect_one_line_error(kCase + " --ranks 0", "expected --single-gpu for this flag, got none");
  expect_one_line_error(kCase + " --single-gpu --warmup-steps 2", "--warmup-steps");
  expect_one_line_error(kCase + " --single-gpu --warmup-steps -1", "--warmup-steps");
}

TEST(ValidateCuda, HostAndCudaFlagsDoNotMix) {
  expect_one_line_error(kCase + " --no-data", "expected --backend host for this flag, got cuda");
  expect_one_line_error(
      "validate --model gpt2-small --gpus 2 --gpus-per-node 2 --stage 2 --single-gpu",
      "expected --backend cuda for this flag, got host");
  expect_one_line_error(kCase + " --backend gpu", "--backend");
}

}  // namespace
