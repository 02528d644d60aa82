// broadcast_id (id_broadcast.h).
#include "id_broadcast.h"

#include <cstring>
#include <vector>

#include "zerosim/cuda_id_exchange.h"

#if defined(ZEROSIM_CUDA_MPI)
#include <mpi.h>
#endif

namespace zerosim::cuda {
#if defined(ZEROSIM_CUDA_MPI)
namespace {
bool mpi_started = false;  // broadcast_id called MPI_Init: finish_launch calls MPI_Finalize
}
#endif

bool built_with_mpi() {
#if defined(ZEROSIM_CUDA_MPI)
  return true;
#else
  return false;
#endif
}

exec::Status broadcast_id(const LaunchInfo& launch, ncclUniqueId& id,
                          std::chrono::milliseconds timeout) {
#if defined(ZEROSIM_CUDA_MPI)
  if (launch.source == LaunchSource::Mpi) {
    int init = 0;
    MPI_Initialized(&init);
    if (!init && MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
      return Diagnostic{Severity::Error, "mpirun", "", "MPI_Init failed", {}};
    mpi_started = !init;
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (static_cast<std::uint32_t>(rank) != launch.rank ||
        static_cast<std::uint32_t>(size) != launch.world)
      return Diagnostic{Severity::Error,
                        "mpirun",
                        "",
                        "expected MPI's rank/size to equal the launch environment's (" +
                            std::to_string(launch.rank) + "/" + std::to_string(launch.world) +
                            "), got " + std::to_string(rank) + "/" + std::to_string(size),
                        {}};
    if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
      return Diagnostic{
          Severity::Error, "mpirun", "", "MPI_Bcast of the NCCL unique id failed", {}};
    return std::nullopt;
  }
#endif
  if (launch.master_addr.empty() || launch.master_port == 0)
    return Diagnostic{
        Severity::Error, "environment variable MASTER_ADDR", "",
        "expected MASTER_ADDR and MASTER_PORT for the NCCL unique-id exchange (this "
        "build has no MPI), got " +
            std::string(launch.master_addr.empty() ? "no MASTER_ADDR" : "no MASTER_PORT"),
        "export MASTER_ADDR=<rank 0's host> MASTER_PORT=29500"};
  std::vector<unsigned char> bytes(sizeof id);
  if (launch.rank == 0) {
    std::memcpy(bytes.data(), &id, sizeof id);
    return serve_id(launch.master_port, launch.world, bytes, timeout);
  }
  if (exec::Status e = fetch_id(launch.master_addr, launch.master_port, bytes, timeout)) return e;
  if (bytes.size() != sizeof id)
    return Diagnostic{
        Severity::Error,
        "NCCL unique-id exchange",
        "",
        "expected " + std::to_string(sizeof id) + " bytes, got " + std::to_string(bytes.size()),
        {}};
  std::memcpy(&id, bytes.data(), sizeof id);
  return std::nullopt;
}

void finish_launch() {
#if defined(ZEROSIM_CUDA_MPI)
  if (mpi_started) MPI_Finalize();
  mpi_started = false;
#endif
}

}  // namespace zerosim::cuda
