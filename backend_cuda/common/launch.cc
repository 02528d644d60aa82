// launch_from_env and launch_mismatch (cuda_launch.h).
#include <cstdlib>

#include "zerosim/cuda_launch.h"

namespace zerosim::cuda {
namespace {

Diagnostic env_error(const std::string& var, std::string message) {
  return Diagnostic{Severity::Error, "environment variable " + var, "", std::move(message), {}};
}

// A decimal integer in [lo, hi]: digits only (no sign, space or suffix), at most 10 of them.
Result<std::uint64_t> read_uint(const EnvReader& env, const std::string& var, std::uint64_t lo,
                                std::uint64_t hi, const std::string& range) {
  const std::optional<std::string> v = env(var);
  Diagnostics d;
  const std::string got = v ? quote(*v) : "nothing";
  bool ok = v && !v->empty() && v->size() <= 10;
  std::uint64_t n = 0;
  if (ok)
    for (char c : *v) {
      if (c < '0' || c > '9') {
        ok = false;
        break;
      }
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
  if (!ok || n < lo || n > hi) {
    d.add(env_error(var, "expected an integer in " + range + ", got " + got));
    return Result<std::uint64_t>(std::move(d));
  }
  return n;
}

struct Names {
  LaunchSource source;
  const char *rank, *world, *local;
};

}  // namespace

std::string launch_source_name(LaunchSource s) {
  switch (s) {
    case LaunchSource::None:
      return "none";
    case LaunchSource::Torchrun:
      return "torchrun";
    case LaunchSource::Mpi:
      return "mpirun";
    case LaunchSource::Slurm:
      return "slurm";
  }
  return "none";
}

EnvReader process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read at start-up
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Result<LaunchInfo> launch_from_env(const EnvReader& env) {
  // torchrun first (it also runs under Slurm and MPI allocations), then MPI, then srun.
  static const Names kSources[] = {
      {LaunchSource::Torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {LaunchSource::Mpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK"},
      {LaunchSource::Mpi, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {LaunchSource::Slurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
  };
  LaunchInfo info;
  Diagnostics d;
  const Names* found = nullptr;
  for (const Names& n : kSources)
    if (env(n.rank) || env(n.world)) {
      found = &n;
      break;
    }
  if (found) {
    info.source = found->source;
    if (!env(found->rank) || !env(found->world)) {
      const std::string missing = env(found->rank) ? found->world : found->rank;
      const std::string present = env(found->rank) ? found->rank : found->world;
      d.add(env_error(missing, "expected it beside " + present + " (" +
                                   launch_source_name(found->source) + " sets both), got nothing"));
      return Result<LaunchInfo>(std::move(d));
    }
    auto world = read_uint(env, found->world, 1, 1u << 20, "[1, 1048576]");
    if (!world.ok()) return Result<LaunchInfo>(world.diagnostics());
    info.world = static_cast<std::uint32_t>(world.value());
    const std::string rank_range = "[0, " + std::to_string(info.world) + ")";
    auto rank = read_uint(env, found->rank, 0, info.world - 1, rank_range);
    if (!rank.ok()) return Result<LaunchInfo>(rank.diagnostics());
    info.rank = static_cast<std::uint32_t>(rank.value());
    if (env(found->local)) {
      auto local = read_uint(env, found->local, 0, info.world - 1, rank_range);
      if (!local.ok()) return Result<LaunchInfo>(local.diagnostics());
      info.local_rank = static_cast<std::uint32_t>(local.value());
    } else if (found->source != LaunchSource::Mpi) {
      d.add(env_error(found->local, "expected the GPU index on this node beside " +
                                        std::string(found->rank) + ", got nothing"));
      return Result<LaunchInfo>(std::move(d));
    }
  }
  if (auto addr = env("MASTER_ADDR")) {
    if (addr->empty() || addr->size() > 253 || addr->find_first_of(" \t\n/") != std::string::npos) {
      d.add(env_error("MASTER_ADDR", "expected a host name or IP address, got " + quote(*addr)));
      return Result<LaunchInfo>(std::move(d));
    }
    info.master_addr = *addr;
  }
  if (env("MASTER_PORT")) {
    auto port = read_uint(env, "MASTER_PORT", 1, 65535, "[1, 65535]");
    if (!port.ok()) return Result<LaunchInfo>(port.diagnostics());
    info.master_port = static_cast<std::uint16_t>(port.value());
  }
  // The unique id's TCP exchange needs both (MPI broadcasts it instead when built with MPI).
  if (info.world > 1 && info.source != LaunchSource::Mpi &&
      (info.master_addr.empty() || info.master_port == 0)) {
    const std::string var = info.master_addr.empty() ? "MASTER_ADDR" : "MASTER_PORT";
    d.add(env_error(var, "expected it for a " + std::to_string(info.world) + "-process " +
                             launch_source_name(info.source) +
                             " launch (rank 0 serves the NCCL unique id there), got nothing"));
    return Result<LaunchInfo>(std::move(d));
  }
  return info;
}

std::optional<Diagnostic> launch_mismatch(const LaunchInfo& launch, std::uint32_t schedule_world,
                                          bool single_gpu) {
  const std::string src = launch_source_name(launch.source);
  if (single_gpu && launch.world != 1)
    return Diagnostic{
        Severity::Error, "--single-gpu", "",
        "expected one process (single-GPU mode runs the ranks one at a time), got a " +
            std::to_string(launch.world) + "-process " + src + " launch",
        "start one process, or drop --single-gpu to run one rank per process"};
  if (!single_gpu && launch.world != schedule_world)
    return Diagnostic{
        Severity::Error, "launch", "",
        "expected " + std::to_string(schedule_world) + " processes (the schedule's world size), " +
            "got " +
            (launch.source == LaunchSource::None
                 ? std::string("one process and no launcher")
                 : "a " + std::to_string(launch.world) + "-process " + src + " launch"),
        "start one process per rank: mpirun -np " + std::to_string(schedule_world) +
            ", or torchrun --nproc-per-node N per node; or pass --single-gpu"};
  return std::nullopt;
}

}  // namespace zerosim::cuda
