// `zerosim validate --backend cuda` (cmd_validate.cc hands over once the schedule is built and
// simulated): runs it on the CUDA backend (cuda_backend.h) and prints predicted vs measured per
// rank: zerosim's tracked peak memory to the byte, the pool's and the device's readings beside it,
// the collective calls and bytes at the NCCL boundary, and the median step time with its error.
#pragma once

#include <ostream>
#include <vector>

#include "args.h"
#include "zerosim/engine.h"
#include "zerosim/host_backend.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_graph.h"

namespace zerosim::cli {

/// The flags only the CUDA backend reads (validate's --help lists them).
std::vector<FlagSpec> validate_cuda_flags();
/// Before anything is built: exit code 1 with one line when the CUDA backend is not built, the
/// launch environment is garbage or does not match --single-gpu; -1 when the run may go on.
/// In `zerosim`, when the build has the backend: executes zerosim-cuda with `argv` (validate's
/// arguments) in this process's place, and returns only if that fails.
int validate_cuda_precheck(const std::vector<std::string>& argv, const ParsedArgs& args,
                           std::ostream& err);
/// The run and its report; exit 0 when memory and collectives agree, 2 when they differ or the run
/// failed (no CUDA device, a failed call, does not fit), 1 for a launch the schedule refuses.
int run_validate_cuda(const ParsedArgs& args, const Schedule& s, const ScheduleGraph& g,
                      const SimulationResult& predicted, const exec::DataOptions& data,
                      std::ostream& out, std::ostream& err);

}  // namespace zerosim::cli
