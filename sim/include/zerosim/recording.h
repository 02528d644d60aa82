// A recording of a real training job (tools/zerosim_record): one directory, per rank a manifest
// recording.rankR.json and the collectives in zerosim's collective-log format,
// collectives.rankR.jsonl, the memory counters at phase boundaries, memory.rankR.jsonl (empty on
// a CPU job), and the job's ds_config when the recorder found one (ds_config.rankR.json, named by
// the manifest's "ds_config"); also other_collectives, params and modules files, which this reader
// does not need. `zerosim check --measured DIR` compares a prediction with it; `zerosim validate
// --recording DIR` builds the prediction from its params.rank0.json and ds_config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/trace_compare.h"

namespace zerosim {

/// One line of memory.rankR.jsonl: torch.cuda counters at a phase boundary, bytes.
struct RecordedMemory {
  std::uint32_t rank = 0, step = 0, micro_step = 0;
  std::string event;  ///< forward_begin, forward_end, backward_begin, ..., step_end
  std::uint64_t allocated = 0, max_allocated = 0, reserved = 0;
  std::uint64_t device_free = 0, device_total = 0;  ///< cudaMemGetInfo
};

struct Recording {
  std::string dir;
  std::uint32_t world = 0;
  std::uint32_t steps = 0;              ///< optimizer steps rank 0 completed
  std::uint64_t other_collectives = 0;  ///< summed over ranks: calls zerosim does not model
  std::vector<LoggedCollective> log;    ///< ranks 0..world-1 in order, each in issue order
  std::string device;                   ///< rank 0's manifest: "cuda" or "cpu"
  std::string ds_config;  ///< path of rank 0's recorded ds_config; "" when none was recorded
  std::vector<RecordedMemory> memory;  ///< ranks in order, each in file order; empty on CPU
};

/// Reads and checks a recording directory: every rank 0..W-1 present (W from rank 0's manifest,
/// the same in every manifest), format "zerosim-recording" version 1, complete, and each log
/// holding exactly the collectives its manifest counts (a truncated log is refused), lines of its
/// own rank, and each memory file (when present) well formed. Every problem is one diagnostic
/// naming the file.
Result<Recording> read_recording(const std::string& dir);

/// The recorder sees coarser phases than zerosim's schedule: DeepSpeed runs the boundary
/// reduction and the epilogue inside engine.backward (engine.py, DeepSpeedEngine.backward ->
/// allreduce_gradients) and the post-step all-gather inside engine.step. Maps a predicted log's
/// phases onto the recorder's: boundary_reduce, epilogue -> backward; post_step -> step.
std::vector<LoggedCollective> as_recorded_phases(std::vector<LoggedCollective> log);

/// The notes a comparison with a recording carries (`check --measured DIR`, `validate
/// --recording DIR`): how the prediction's phases were mapped (as_recorded_phases), and the
/// `other_collectives` recorded calls that were not compared, when there are any.
std::vector<std::string> recorded_phase_notes(std::uint64_t other_collectives);

}  // namespace zerosim
