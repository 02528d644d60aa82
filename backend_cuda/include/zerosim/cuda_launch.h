// How a CUDA-backend process learns its rank: from the launcher that started it, never from a
// home-made one (issue #10 "Execution"). Three sources, tried in this order:
//   * torchrun / torch.distributed.run: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT;
//   * mpirun: Open MPI's OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK}, or PMI_RANK / PMI_SIZE (MPICH,
//     Intel MPI); the NCCL unique id then travels by MPI_Bcast when the backend was built with MPI,
//     else by the TCP exchange (MASTER_ADDR / MASTER_PORT must be set);
//   * Slurm's srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, with MASTER_ADDR / MASTER_PORT.
// None of them: one process, world size 1. Every value is checked (decimal, in range); a garbage
// value is one line naming the variable, what was expected and what was found.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "zerosim/diagnostic.h"

namespace zerosim::cuda {

enum class LaunchSource : std::uint8_t { None, Torchrun, Mpi, Slurm };
/// "none", "torchrun", "mpirun", "slurm".
std::string launch_source_name(LaunchSource s);

struct LaunchInfo {
  LaunchSource source = LaunchSource::None;
  std::uint32_t rank = 0;
  std::uint32_t world = 1;
  std::uint32_t local_rank = 0;   ///< the GPU index on this node (cudaSetDevice)
  std::string master_addr;        ///< empty: none given
  std::uint16_t master_port = 0;  ///< 0: none given
};

/// Reads one environment variable (nullopt: unset). Tests pass a map; the backend, getenv.
using EnvReader = std::function<std::optional<std::string>(const std::string& name)>;
EnvReader process_env();

/// The launch this process is part of. Errors: a garbage or out-of-range value, a rank without a
/// world size (or the reverse), a multi-process torchrun/Slurm launch without MASTER_ADDR or
/// MASTER_PORT.
Result<LaunchInfo> launch_from_env(const EnvReader& env);

/// A launch that cannot run the schedule, refused before any allocation: world size different
/// from the schedule's (or, with `single_gpu`, more than one process). nullopt: it can.
std::optional<Diagnostic> launch_mismatch(const LaunchInfo& launch, std::uint32_t schedule_world,
                                          bool single_gpu);

}  // namespace zerosim::cuda
