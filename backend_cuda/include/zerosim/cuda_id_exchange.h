// The small TCP exchange of the NCCL unique id for torchrun/Slurm launches (issue #10): rank 0
// listens on MASTER_PORT and sends the id's bytes to each of the other world - 1 ranks, which
// connect to MASTER_ADDR:MASTER_PORT (retrying until the deadline: rank 0 may start later). A
// message is "ZSID", the payload length (4 bytes, big-endian) and the payload, so a stray server
// on that port is detected instead of read as an id. mpirun launches use MPI_Bcast instead when
// the backend was built with MPI. Plain POSIX sockets: tested here without a GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/executor.h"

namespace zerosim::cuda {

/// Rank 0: serves `payload` to `world - 1` clients on `port` (all interfaces), returning once each
/// has received it or at the deadline.
exec::Status serve_id(std::uint16_t port, std::uint32_t world,
                      const std::vector<unsigned char>& payload, std::chrono::milliseconds timeout);
/// Another rank: fetches the payload from addr:port, retrying until the deadline.
exec::Status fetch_id(const std::string& addr, std::uint16_t port,
                      std::vector<unsigned char>& payload, std::chrono::milliseconds timeout);

}  // namespace zerosim::cuda
