// Predicted against measured: what `zerosim check` compares, in the trace target (it needs no
// core: two traces, or a trace and a collective log, are enough).
//
// Compared, each with a verdict:
//   * identity: traces of different schedules (model, world size, stage, DeepSpeed behaviour,
//     mode, steps, micro-steps, and the schedule digest when both carry one) are refused, not
//     compared;
//   * the collective sequence of every rank, element for element (kind, counts, dtype, group,
//     phase, step, and micro-step, reduce op, root and bucket where both sides carry them): the
//     first difference with a few lines of context;
//   * peak device memory per rank and category (a measured rank is compared with the predicted
//     rank of its role), within --memory-tolerance (a fraction; default 0: to the byte);
//   * bytes per collective kind: the calls and nccl-tests' S summed over every rank's calls,
//     exactly (within --bytes-tolerance); bytes sent are shown beside them but not judged, since a
//     trace's prediction is the ring's per-rank average rounded up per call (the busiest rank for
//     reduce and broadcast) while a measurement is each rank's own count (`zerosim validate`,
//     which has the schedule, checks every rank's count against the ring's plan);
//   * time, only with --time-tolerance: the measured run's span against the predicted one.
// The collective log is the JSON-lines format of `zerosim schedule --collectives-out`
// (scenarios/README.md "Collective log"); any log in that format — one recorded from a real
// DeepSpeed job — is accepted as the measured side of the sequence comparison.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/trace.h"
#include "zerosim/units.h"

namespace zerosim {

/// One collective of one rank, as a collective log line or a trace's comm record gives it.
/// Fields a source does not carry are absent (nullopt) and not compared.
struct LoggedCollective {
  std::uint32_t rank = 0;  ///< kAllRanks: every rank (a simulated trace's one program)
  std::uint32_t step = 0;
  std::optional<std::uint32_t> micro_step;
  Phase phase = Phase::Backward;
  CollectiveKind kind = CollectiveKind::AllReduce;
  Elements numel = 0;
  Elements out_numel = 0;
  DType dtype = DType::Float16;
  std::uint32_t group_size = 1;
  std::optional<ReduceOp> reduce_op;
  std::optional<std::int32_t> root;
  std::optional<std::uint32_t> bucket;
};

/// Parses a collective log (one JSON object per line; blank lines ignored). Every problem is a
/// diagnostic "file:line: /key: expected ..., got ...". Never throws.
Result<std::vector<LoggedCollective>> read_collective_log(const std::string& text,
                                                          const std::string& source);
/// The comm records of a trace as logged collectives (launch order, ranks as the trace has them).
std::vector<LoggedCollective> collectives_of(const Trace& trace);

struct Tolerances {
  double memory = 0;           ///< relative: |measured - predicted| <= memory × predicted
  double bytes = 0;            ///< relative, for the S totals
  std::optional<double> time;  ///< relative; nullopt: time is reported, not judged
};

struct SequenceCheck {
  bool equal = true;
  std::uint64_t ranks = 0;           ///< ranks compared
  std::uint64_t collectives = 0;     ///< measured collectives compared
  std::uint32_t rank = 0;            ///< first rank that differs
  std::uint64_t index = 0;           ///< position of the first difference in that rank's sequence
  std::string difference;            ///< what differs, one line
  std::vector<std::string> context;  ///< "  predicted #12: ..." / "  measured  #12: ..." lines
};

struct MemoryCheck {
  std::uint32_t rank = 0;
  std::uint32_t role = 0;
  Bytes predicted = 0, measured = 0;  ///< device peak
  CategoryBytes predicted_by_category{}, measured_by_category{};
  bool within = true;
};

struct BytesCheck {
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::uint64_t predicted_calls = 0, measured_calls = 0;  ///< over every rank
  Bytes predicted_s = 0, measured_s = 0;                  ///< Σ S over every rank's calls
  Bytes predicted_sent = 0, measured_sent = 0;            ///< Σ bytes sent over every rank
  bool within = true;
};

struct Comparison {
  SequenceCheck sequence;
  std::vector<MemoryCheck> memory;  ///< measured ranks whose role the prediction carries
  std::vector<BytesCheck> bytes;    ///< kinds either side issued, enum order
  SimTime predicted_ns = 0, measured_ns = 0;
  std::optional<bool> time_within;  ///< only with a time tolerance
  std::vector<std::string> notes;   ///< what was not compared and why
  bool sequence_only = false;       ///< a log or recording on a side: no memory, bytes or time
  bool passed() const;
};

/// Refuses traces of different schedules (one diagnostic per differing identity field, naming
/// both files), then compares everything listed in the file comment.
Result<Comparison> compare_traces(const Trace& predicted, const std::string& predicted_source,
                                  const Trace& measured, const std::string& measured_source,
                                  const Tolerances& tolerances);
/// The collective sequences alone (a trace against a collective log, or two logs). `world` ranks
/// are expected; a kAllRanks entry stands for every rank.
SequenceCheck compare_sequences(const std::vector<LoggedCollective>& predicted,
                                const std::vector<LoggedCollective>& measured, std::uint32_t world);

/// One line for a logged collective ("rank 0 step 0 backward all_reduce 8->8 float16 group 2
/// sum bucket 0").
std::string describe(const LoggedCollective& c);
/// The comparison as a table for people, or JSON ({"format": "zerosim-check", "version": 1}).
void write_comparison_table(const Comparison& c, std::ostream& out);
void write_comparison_json(const Comparison& c, std::ostream& out);

}  // namespace zerosim
