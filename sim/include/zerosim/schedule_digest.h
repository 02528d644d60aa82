// The identity of a schedule: a digest of its schedule JSON, carried by every trace made from it
// (TraceMeta::schedule_digest) so that `zerosim check` compares only runs of the same schedule.
#pragma once

#include <string>

#include "zerosim/schedule.h"
#include "zerosim/trace.h"  // kScheduleDigestScheme

namespace zerosim {

/// kScheduleDigestScheme and 16 lowercase hex digits: FNV-1a (64-bit) of write_schedule_json's
/// text with SlotsForm::Dense (the form files had before slots were written sparsely, so a digest
/// does not depend on which form a file uses) and without meta's model and notes (a param list
/// named by a relative or an absolute path is the same schedule), streamed (no copy of the text is
/// kept). Equal schedules give equal digests; O(schedule size + roles x slots) time, O(largest
/// line) memory.
std::string schedule_digest(const Schedule& s);

}  // namespace zerosim
