// Whether a schedule can run in data mode: every op that moves data names where it reads and
// writes (Schedule IR v2 operands), and every element an op reads was written since its buffer's
// Alloc (or is the model's initial weights, or zeros the Alloc filled). The check walks each role's
// representative rank over the program once, with the written ranges of every buffer, so a
// missing operand, a data movement with no op (a buffer read that nothing filled) or a write into
// a buffer that is not allocated yet is refused before anything runs, with one line naming the op
// index, its label and the operand — data mode never guesses what the schedule leaves out
// (scenarios/README.md "Not carried yet"). Private to sim/exec.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zerosim/executor.h"
#include "zerosim/schedule.h"

namespace zerosim::exec {

struct DataCheckOptions {
  /// gradient_clipping of the run (> 0: every optimizer update must carry its norms scratch).
  double gradient_clipping = 0;
  /// Bytes every rank's buffers may hold at their peaks together (0: no cap): data mode backs them
  /// with this process's memory.
  Bytes memory_cap = 0;
};

/// Every rank's buffers at their peaks together (the sum over roles of a role's Alloc/Free peak
/// times its rank count): what data mode backs with this process's memory, before its page cache.
long double data_buffer_peaks(const Schedule& s);

/// The per-rank page-reuse cache data mode's storage may keep (host_storage.h BlockCache): 1 GiB
/// (a stage 1/2 IPG bucket of 5e8 fp16 elements fits), or less under `memory_cap`: each rank gets
/// an equal share of what the buffers' peaks leave under it, so buffers and caches together stay
/// within the cap (0 when the peaks fill it; memory_cap 0: no cap).
std::size_t page_cache_limit(const Schedule& s, Bytes memory_cap);

/// nullopt: data mode can run `s`; otherwise the first gap, naming the op, its label, the rank
/// and the operand. O(roles x operand pieces x log).
Status data_mode_gap(const Schedule& s, const DataCheckOptions& o);

}  // namespace zerosim::exec
