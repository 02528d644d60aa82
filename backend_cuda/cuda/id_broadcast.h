// The NCCL unique id from rank 0 to every rank: MPI_Bcast under mpirun when the backend was built
// with MPI (as nccl-tests does), else the TCP exchange of cuda_id_exchange.h.
#pragma once

#include <nccl.h>

#include "zerosim/cuda_backend.h"
#include "zerosim/cuda_launch.h"

namespace zerosim::cuda {

/// Whether this build links MPI.
bool built_with_mpi();
/// On rank 0 `id` holds the id; on return every rank holds it.
exec::Status broadcast_id(const LaunchInfo& launch, ncclUniqueId& id,
                          std::chrono::milliseconds timeout);
/// MPI_Finalize when broadcast_id initialised MPI (at the end of the run).
void finish_launch();

}  // namespace zerosim::cuda
