// The collective log (schedule_io.h; spec in scenarios/README.md "Collective log"): one JSON object
// per line for every collective every rank issues. The Schedule holds one program for all ranks, so
// a rank's log is the program's collectives in order; every field is a fixed identifier or an
// integer, which is why lines are formatted by hand (no escaping needed) and streamed straight to
// the output: W × collectives lines never become one string.
#include <algorithm>
#include <ostream>

#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

bool is_reduction(CollectiveKind k) {
  return k == CollectiveKind::AllReduce || k == CollectiveKind::Reduce ||
         k == CollectiveKind::ReduceScatter;
}

// Everything after "rank":N: the same for every rank of a communicator group (a collective's sizes
// do not depend on the rank's role: NCCL requires every rank to pass the same counts).
void write_tail(std::ostream& out, const Schedule& s, const Op& o, std::uint32_t rank) {
  const CommGroup& comm = s.comms[o.comm];
  out << ",\"step\":" << o.step << ",\"micro_step\":" << o.micro_step << ",\"phase\":\""
      << phase_name(o.phase) << "\",\"op\":\"" << collective_name(o.collective)
      << "\",\"numel\":" << o.numel << ",\"out_numel\":" << o.out_numel << ",\"dtype\":\""
      << dtype_name(o.dtype) << "\",\"group_size\":" << comm.size;
  if (is_reduction(o.collective)) out << ",\"reduce_op\":\"" << reduce_op_name(o.reduce_op) << '"';
  // The root as a rank (the op names its index in the communicator).
  if (o.collective == CollectiveKind::Reduce) out << ",\"dst\":" << comm.rank_at(rank, o.root);
  if (o.collective == CollectiveKind::Broadcast) out << ",\"src\":" << comm.rank_at(rank, o.root);
  if (o.bucket != kNone) out << ",\"bucket\":" << o.bucket;
  out << "}\n";
}

}  // namespace

void write_collective_line(std::ostream& out, const Schedule& s, std::uint32_t rank, const Op& op) {
  out << "{\"rank\":" << rank;
  write_tail(out, s, op, rank);
}

Result<std::uint64_t> write_collective_log(const Schedule& s, std::ostream& out,
                                           const CollectiveLogOptions& options) {
  std::vector<std::uint32_t> ranks = options.ranks;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  Diagnostics diags;
  for (std::uint32_t r : ranks) {
    if (r < s.meta.world) continue;
    diags.error("--ranks", "",
                s.meta.world == 0
                    ? "expected no ranks (the schedule has world 0), got " + std::to_string(r)
                    : "expected ranks 0.." + std::to_string(s.meta.world - 1) + ", got " +
                          std::to_string(r));
  }
  if (diags.has_errors()) return Result<std::uint64_t>(diags);

  std::vector<std::uint32_t> collectives;
  for (std::uint32_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].kind == OpKind::Collective) collectives.push_back(i);

  std::uint64_t lines = 0;
  auto write_rank = [&](std::uint32_t rank) {
    for (std::uint32_t i : collectives) {
      out << "{\"rank\":" << rank;
      write_tail(out, s, s.ops[i], rank);
      ++lines;
    }
  };
  if (ranks.empty()) {
    for (std::uint32_t r = 0; r < s.meta.world; ++r) write_rank(r);
  } else {
    for (std::uint32_t r : ranks) write_rank(r);
  }
  return lines;
}

}  // namespace zerosim
