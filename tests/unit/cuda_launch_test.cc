// The CUDA backend's launcher environment (backend_cuda/include/zerosim/cuda_launch.h): torchrun,
// mpirun and Slurm variables, garbage values, and the world-size refusal. No GPU needed.
#include "zerosim/cuda_launch.h"

#include <gtest/gtest.h>

#include <map>

namespace zerosim::cuda {
namespace {

EnvReader env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(const Result<LaunchInfo>& r) {
  return r.ok() ? "" : r.diagnostics().items().front().to_string();
}

TEST(CudaLaunch, NoLauncherIsOneProcess) {
  auto r = launch_from_env(env_of({}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, LaunchSource::None);
  EXPECT_EQ(r->world, 1u);
  EXPECT_EQ(r->rank, 0u);
}

TEST(CudaLaunch, Torchrun) {
  auto r = launch_from_env(env_of({{"RANK", "5"},
                                   {"WORLD_SIZE", "8"},
                                   {"LOCAL_RANK", "1"},
                                   {"MASTER_ADDR", "node-0"},
                                   {"MASTER_PORT", "29500"}}));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->source, LaunchSource::Torchrun);
  EXPECT_EQ(r->rank, 5u);
  EXPECT_EQ(r->world, 8u);
  EXPECT_EQ(r->local_rank, 1u);
  EXPECT_EQ(r->master_addr, "node-0");
  EXPECT_EQ(r->master_port, 29500);
}

TEST(CudaLaunch, OpenMpiNeedsNoMasterAddress) {
  auto r = launch_from_env(env_of({{"OMPI_COMM_WORLD_RANK", "3"},
                                   {"OMPI_COMM_WORLD_SIZE", "4"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->source, LaunchSource::Mpi);
  EXPECT_EQ(r->rank, 3u);
  EXPECT_EQ(r->local_rank, 3u);
}

TEST(CudaLaunch, SlurmWithMaster) {
  auto r = launch_from_env(env_of({{"SLURM_PROCID", "9"},
                                   {"SLURM_NTASKS", "16"},
                                   {"SLURM_LOCALID", "1"},
                                   {"MASTER_ADDR", "10.0.0.1"},
                                   {"MASTER_PORT", "1234"}}));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->source, LaunchSource::Slurm);
  EXPECT_EQ(r->rank, 9u);
  EXPECT_EQ(r->world, 16u);
}

TEST(CudaLaunch, TorchrunWinsOverSlurm) {
  // torchrun inside an salloc: both sets exist; RANK is the process's.
  auto r = launch_from_env(env_of({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"LOCAL_RANK", "1"},
                                   {"MASTER_ADDR", "h"},
                                   {"MASTER_PORT", "2"},
                                   {"SLURM_PROCID", "0"},
                                   {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->source, LaunchSource::Torchrun);
  EXPECT_EQ(r->rank, 1u);
}

struct Garbage {
  std::map<std::string, std::string> vars;
  std::string expected;
};

TEST(CudaLaunch, GarbageValuesAreOneLineNamingTheVariable) {
  const std::map<std::string, std::string> ok = {
      {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  const auto with = [&](std::map<std::string, std::string> v) {
    for (const auto& kv : ok) v.insert(kv);
    return v;
  };
  const std::vector<Garbage> cases = {
      {with({{"RANK", "x"}, {"WORLD_SIZE", "2"}}),
       "environment variable RANK: expected an integer in [0, 2), got \"x\""},
      {with({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}),
       "environment variable RANK: expected an integer in [0, 2), got \"-1\""},
      {with({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
       "environment variable RANK: expected an integer in [0, 2), got \"2\""},
      {with({{"RANK", " 1"}, {"WORLD_SIZE", "2"}}),
       "environment variable RANK: expected an integer in [0, 2), got \" 1\""},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
       "environment variable WORLD_SIZE: expected an integer in [1, 1048576], got \"0\""},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}),
       "environment variable WORLD_SIZE: expected an integer in [1, 1048576], got "
       "\"99999999999\""},
      {with({{"RANK", "0"}, {"WORLD_SIZE", ""}}),
       "environment variable WORLD_SIZE: expected an integer in [1, 1048576], got \"\""},
      {with({{"RANK", "0"}}),
       "environment variable WORLD_SIZE: expected it beside RANK (torchrun sets both), got "
       "nothing"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}},
       "environment variable LOCAL_RANK: expected the GPU index on this node beside RANK, got "
       "nothing"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_PORT", "1"}},
       "environment variable MASTER_ADDR: expected it for a 2-process torchrun launch (rank 0 "
       "serves the NCCL unique id there), got nothing"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "65536"}}),
       "environment variable MASTER_PORT: expected an integer in [1, 65535], got \"65536\""},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a b"}}),
       "environment variable MASTER_ADDR: expected a host name or IP address, got \"a b\""},
      {{{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
       "environment variable OMPI_COMM_WORLD_RANK: expected an integer in [0, 4), got \"4\""},
  };
  for (const Garbage& g : cases) {
    auto r = launch_from_env(env_of(g.vars));
    ASSERT_FALSE(r.ok()) << g.expected;
    EXPECT_EQ(r.diagnostics().items().size(), 1u);
    EXPECT_EQ(error_of(r), g.expected);
  }
}

TEST(CudaLaunch, WorldSizeMismatchIsRefused) {
  LaunchInfo l;
  l.source = LaunchSource::Torchrun;
  l.world = 2;
  auto d = launch_mismatch(l, 4, false);
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->message.find("expected 4 processes (the schedule's world size), got a 2-process "
                            "torchrun launch"),
            std::string::npos)
      << d->message;
  EXPECT_FALSE(launch_mismatch(l, 2, false).has_value());
  // One process and no launcher: only single-GPU mode (or a 1-rank schedule) runs.
  LaunchInfo none;
  ASSERT_TRUE(launch_mismatch(none, 4, false).has_value());
  EXPECT_NE(launch_mismatch(none, 4, false)->message.find("got one process and no launcher"),
            std::string::npos);
  EXPECT_FALSE(launch_mismatch(none, 4, true).has_value());
  EXPECT_FALSE(launch_mismatch(none, 1, false).has_value());
  // Single-GPU mode under a multi-process launch.
  ASSERT_TRUE(launch_mismatch(l, 2, true).has_value());
  EXPECT_EQ(launch_mismatch(l, 2, true)->source, "--single-gpu");
}

}  // namespace
}  // namespace zerosim::cuda
