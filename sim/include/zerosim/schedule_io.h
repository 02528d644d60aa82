// Schedule files and the collective log: the two text forms of a Schedule (schedule.h).
//
// Schedule JSON ("format": "zerosim-schedule", "version": 2) is what `zerosim schedule -o` writes
// and what the backends read back; a version 1 file is refused with the way out (regenerate it).
// Keys are written in a fixed order (meta, comms, tensors, layout, updates, lists, buffers, roles,
// ops; scenarios/README.md "Schedule file") and each communicator, tensor, update, list, buffer,
// role and op sits on its own line, so equal schedules give byte-identical files and files diff
// well. Ops are compact: "kind" is always written, every other field only when it differs from its
// value in a default-constructed Op (schedule.h); buffers likewise always carry "name". Reading
// checks types, enum names and keys, then runs lower_schedule (schedule_graph.h: index ranges,
// deps pointing backwards, slots, rank roles covering 0..world-1 once, communicators, operand
// regions inside their buffers, the layout against its plan) and returns every problem as a
// Diagnostic "file: /ops/12/dst/buffer: expected a buffer index 0..4, got 9"; it never throws.
//
// The collective log is one JSON object per line for every collective every rank issues, in the
// order rank 0..W-1 and, per rank, program order; scenarios/README.md ("Collective log") is its
// spec. It is the interface a real DeepSpeed run's recorded collectives are compared with.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/model_desc.h"
#include "zerosim/schedule.h"

namespace zerosim {

inline constexpr const char* kScheduleFormat = "zerosim-schedule";

/// How a role's "slots" are written: Sparse, {"count": N, "nonzero": [[slot, value], ...]} (what
/// `zerosim schedule` writes: O(non-zero values), not O(ranks x slots)); Dense, one value per slot,
/// the form files had before (schedule_digest hashes it, so digests did not change with the form).
/// The reader accepts both.
enum class SlotsForm { Sparse, Dense };

/// Writes `s` as schedule JSON. Deterministic: equal schedules give byte-identical output.
/// Streams op by op (memory O(largest op), not O(file)). Precondition: `s` is valid
/// (lower_schedule, schedule_graph.h); flops must be finite.
/// `names` false leaves meta's "model" and "notes" out (what schedule_digest hashes: the model
/// file's path and the explanatory notes name a schedule, they are not part of it); such text is
/// not a schedule file.
void write_schedule_json(const Schedule& s, std::ostream& out, SlotsForm slots = SlotsForm::Sparse,
                         bool names = true);

/// Parses schedule JSON. `source` names the file in diagnostics. When `model` is given, op `param`
/// and `layer` indices are also checked against its params and layers (a Schedule does not record
/// those counts). Every problem is reported; the schedule must also lower (lower_schedule,
/// schedule_graph.h).
Result<Schedule> read_schedule_json(const std::string& text, const std::string& source,
                                    const ModelDesc* model = nullptr);
/// Reads the file at `path` and parses it (source = path).
Result<Schedule> read_schedule_file(const std::string& path, const ModelDesc* model = nullptr);

struct CollectiveLogOptions {
  /// Ranks to log (any order, duplicates allowed); empty = every rank. Output is always in
  /// ascending rank order.
  std::vector<std::uint32_t> ranks;
};

/// Writes one line per (rank, collective op) as described in scenarios/README.md "Collective log":
///   {"rank":0,"step":0,"micro_step":0,"phase":"backward","op":"all_reduce","numel":8,
///    "out_numel":8,"dtype":"float16","group_size":2,"reduce_op":"sum","bucket":0}
/// Streams line by line (memory O(collective ops), independent of W). Returns the number of lines
/// written, or an error (nothing written) when a filtered rank is not below meta.world.
Result<std::uint64_t> write_collective_log(const Schedule& s, std::ostream& out,
                                           const CollectiveLogOptions& options = {});

/// One line of the collective log: collective op `op` as rank `rank` issued it (the executors write
/// their measured logs with it, so predicted and measured lines compare as text).
void write_collective_line(std::ostream& out, const Schedule& s, std::uint32_t rank, const Op& op);

}  // namespace zerosim
