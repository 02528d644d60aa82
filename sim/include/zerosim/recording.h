// A recording of a real training job (tools/zerosim_record): one directory, per rank a manifest
// recording.rankR.json and the collectives in zerosim's collective-log format,
// collectives.rankR.jsonl (also other_collectives, memory, params and modules files, which this
// reader does not need). `zerosim check --measured DIR` compares a prediction with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/trace_compare.h"

namespace zerosim {

struct Recording {
  std::string dir;
  std::uint32_t world = 0;
  std::uint32_t steps = 0;              ///< optimizer steps rank 0 completed
  std::uint64_t other_collectives = 0;  ///< summed over ranks: calls zerosim does not model
  std::vector<LoggedCollective> log;    ///< ranks 0..world-1 in order, each in issue order
};

/// Reads and checks a recording directory: every rank 0..W-1 present (W from rank 0's manifest,
/// the same in every manifest), format "zerosim-recording" version 1, complete, and each log
/// holding exactly the collectives its manifest counts (a truncated log is refused), lines of its
/// own rank. Every problem is one diagnostic naming the file.
Result<Recording> read_recording(const std::string& dir);

/// The recorder sees coarser phases than zerosim's schedule: DeepSpeed runs the boundary
/// reduction and the epilogue inside engine.backward (engine.py, DeepSpeedEngine.backward ->
/// allreduce_gradients) and the post-step all-gather inside engine.step. Maps a predicted log's
/// phases onto the recorder's: boundary_reduce, epilogue -> backward; post_step -> step.
std::vector<LoggedCollective> as_recorded_phases(std::vector<LoggedCollective> log);

}  // namespace zerosim
