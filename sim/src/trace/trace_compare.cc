// compare_traces, compare_sequences and the comparison reporters (trace_compare.h).
#include "zerosim/trace_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "zerosim/saturating.h"

namespace zerosim {
namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

// Fields both sides carry must agree; a field one side lacks is not compared.
std::string first_difference(const LoggedCollective& p, const LoggedCollective& m) {
  if (p.kind != m.kind)
    return "op: predicted " + std::string(collective_name(p.kind)) + ", measured " +
           std::string(collective_name(m.kind));
  if (p.numel != m.numel) return "numel: predicted " + str(p.numel) + ", measured " + str(m.numel);
  if (p.out_numel != m.out_numel)
    return "out_numel: predicted " + str(p.out_numel) + ", measured " + str(m.out_numel);
  if (p.dtype != m.dtype)
    return "dtype: predicted " + std::string(dtype_name(p.dtype)) + ", measured " +
           std::string(dtype_name(m.dtype));
  if (p.group_size != m.group_size)
    return "group_size: predicted " + str(p.group_size) + ", measured " + str(m.group_size);
  if (p.phase != m.phase)
    return "phase: predicted " + std::string(phase_name(p.phase)) + ", measured " +
           std::string(phase_name(m.phase));
  if (p.step != m.step) return "step: predicted " + str(p.step) + ", measured " + str(m.step);
  if (p.micro_step && m.micro_step && *p.micro_step != *m.micro_step)
    return "micro_step: predicted " + str(*p.micro_step) + ", measured " + str(*m.micro_step);
  if (p.reduce_op && m.reduce_op && *p.reduce_op != *m.reduce_op)
    return "reduce_op: predicted " + std::string(reduce_op_name(*p.reduce_op)) + ", measured " +
           std::string(reduce_op_name(*m.reduce_op));
  if (p.root && m.root && *p.root != *m.root)
    return "root: predicted " + std::to_string(*p.root) + ", measured " + std::to_string(*m.root);
  if (p.bucket && m.bucket && *p.bucket != *m.bucket)
    return "bucket: predicted " + str(*p.bucket) + ", measured " + str(*m.bucket);
  return {};
}

// Per rank, the collectives in order, kept sparse: a kAllRanks entry goes to every rank, so every
// rank no entry names has the same sequence (`every`, the kAllRanks entries alone) and only the
// named ranks get their own. Expanded per rank, a trace of one program for a 2^20-rank world took
// world x comms pointers (8 GB for 1000 comm records).
struct RankSequences {
  std::map<std::uint32_t, std::vector<const LoggedCollective*>> named;
  std::vector<const LoggedCollective*> every;
  const std::vector<const LoggedCollective*>& of(std::uint32_t rank) const {
    auto it = named.find(rank);
    return it == named.end() ? every : it->second;
  }
};

RankSequences by_rank(const std::vector<LoggedCollective>& v,
                      const std::set<std::uint32_t>& ranks) {
  RankSequences out;
  for (std::uint32_t r : ranks) out.named[r];
  for (const LoggedCollective& c : v) {
    if (c.rank == kAllRanks) {
      out.every.push_back(&c);
      for (auto& [r, seq] : out.named) seq.push_back(&c);
    } else if (auto it = out.named.find(c.rank); it != out.named.end()) {
      it->second.push_back(&c);
    }
  }
  return out;
}

bool within(double predicted, double measured, double tolerance) {
  return std::fabs(measured - predicted) <= tolerance * predicted;
}

// A rank's device peak and its breakdown: the producer's own statistics when the trace carries
// them (the simulator's ledger for every role), else the first sample of the curve that reaches it.
MemorySample peak_of(const TraceRank& r) {
  MemorySample best;
  if (r.peaks) {
    best.t = r.peaks->device.t;
    best.total = r.peaks->device.bytes;
    best.by_category = r.peaks->device.by_category;
    return best;
  }
  for (const MemorySample& s : r.memory)
    if (s.total > best.total) best = s;
  return best;
}

SimTime span_of(const Trace& t) {
  SimTime end = 0;
  for (const Span& s : t.spans) end = std::max(end, span_end(s.start_ns, s.dur_ns));
  for (const CommRecord& c : t.comms) end = std::max(end, span_end(c.start_ns, c.dur_ns));
  return end;
}

std::string gib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f GiB", static_cast<double>(b) / kGiB);
  return buf;
}

}  // namespace

std::string describe(const LoggedCollective& c) {
  std::string s = (c.rank == kAllRanks ? std::string("every rank") : "rank " + str(c.rank)) +
                  " step " + str(c.step);
  if (c.micro_step) s += "." + str(*c.micro_step);
  s += " " + std::string(phase_name(c.phase)) + " " + std::string(collective_name(c.kind)) + " " +
       str(c.numel) + "->" + str(c.out_numel) + " " + std::string(dtype_name(c.dtype)) + " group " +
       str(c.group_size);
  if (c.reduce_op && *c.reduce_op != ReduceOp::None)
    s += " " + std::string(reduce_op_name(*c.reduce_op));
  if (c.root) s += " root " + std::to_string(*c.root);
  if (c.bucket) s += " bucket " + str(*c.bucket);
  return s;
}

SequenceCheck compare_sequences(const std::vector<LoggedCollective>& predicted,
                                const std::vector<LoggedCollective>& measured,
                                std::uint32_t world) {
  SequenceCheck out;
  std::set<std::uint32_t> named;  // the ranks an entry of either side names
  for (const auto* v : {&predicted, &measured})
    for (const LoggedCollective& c : *v)
      if (c.rank != kAllRanks && c.rank < world) named.insert(c.rank);
  const RankSequences ps = by_rank(predicted, named), ms = by_rank(measured, named);
  // The ranks compared, in order: the named ones and the lowest unnamed one, which stands for all
  // world - named.size() unnamed ranks (their sequences are alike).
  std::uint32_t unnamed = 0;
  for (std::uint32_t r : named) {
    if (r != unnamed) break;
    ++unnamed;
  }
  std::vector<std::uint32_t> order(named.begin(), named.end());
  if (unnamed < world) order.insert(std::lower_bound(order.begin(), order.end(), unnamed), unnamed);
  // The unnamed ranks below `end` (r + 1 at a difference, else the world) count as compared, as
  // when every rank was compared in turn and the first difference stopped the count.
  const bool unnamed_compared = unnamed < world && !(ps.every.empty() && ms.every.empty());
  const auto count_unnamed = [&](std::uint32_t end) {
    if (!unnamed_compared) return;
    const auto n =
        end - static_cast<std::uint64_t>(std::distance(named.begin(), named.lower_bound(end)));
    out.ranks += n;
    out.collectives += ms.every.size() * n;
  };
  for (std::uint32_t r : order) {
    const bool is_named = named.count(r) != 0;
    const auto &pr = ps.of(r), &mr = ms.of(r);
    if (mr.empty() && pr.empty()) continue;
    if (is_named) {
      ++out.ranks;
      out.collectives += mr.size();
    }
    const std::size_t n = std::min(pr.size(), mr.size());
    std::size_t i = 0;
    std::string diff;
    for (; i < n; ++i)
      if (!(diff = first_difference(*pr[i], *mr[i])).empty()) break;
    if (diff.empty() && pr.size() == mr.size()) continue;
    if (diff.empty())
      diff = "length: predicted " + str(pr.size()) + " collectives, measured " + str(mr.size());
    count_unnamed(r + 1);
    out.equal = false;
    out.rank = r;
    out.index = i;
    out.difference = diff;
    const std::size_t from = i >= 2 ? i - 2 : 0;
    for (std::size_t k = from; k <= i + 1; ++k) {
      if (k < pr.size()) out.context.push_back("  predicted #" + str(k) + ": " + describe(*pr[k]));
      if (k < mr.size()) out.context.push_back("  measured  #" + str(k) + ": " + describe(*mr[k]));
    }
    return out;
  }
  count_unnamed(world);
  return out;
}

Result<Comparison> compare_traces(const Trace& predicted, const std::string& psrc,
                                  const Trace& measured, const std::string& msrc,
                                  const Tolerances& tol) {
  Diagnostics d;
  const auto refuse = [&](const std::string& field, const std::string& p, const std::string& m) {
    if (p != m)
      d.error(msrc, "/meta/" + field,
              "expected the schedule of " + psrc + " (" + field + " " + p + "), got " + field +
                  " " + m + ": traces of different schedules are not compared");
  };
  // The current digest scheme leaves the model's name out (a param list named by a relative and
  // by an absolute path is one schedule): two such digests decide, the names are not compared.
  // Digests of two schemes (a trace of an earlier zerosim) cannot be compared; the fields are.
  const std::string& pd = predicted.meta.schedule_digest;
  const std::string& md = measured.meta.schedule_digest;
  const auto scheme = [](const std::string& digest) { return digest.substr(0, digest.find(':')); };
  const bool digests = !pd.empty() && !md.empty() && scheme(pd) == scheme(md);
  const bool by_digest = digests && pd.rfind(kScheduleDigestScheme, 0) == 0;
  if (!by_digest) refuse("model", predicted.meta.model, measured.meta.model);
  refuse("world", str(predicted.meta.world), str(measured.meta.world));
  refuse("stage", str(static_cast<std::uint64_t>(predicted.meta.stage)),
         str(static_cast<std::uint64_t>(measured.meta.stage)));
  refuse("deepspeed_version", predicted.meta.deepspeed_version, measured.meta.deepspeed_version);
  refuse("mode", predicted.meta.mode, measured.meta.mode);
  refuse("steps", str(predicted.meta.steps), str(measured.meta.steps));
  refuse("grad_accum", str(predicted.meta.grad_accum), str(measured.meta.grad_accum));
  if (digests) refuse("schedule_digest", pd, md);
  // A measured trace without ranks has no memory to compare: check said PASS with the memory
  // table empty (found by a hostile-input pass).
  if (measured.ranks.empty())
    d.error(msrc, "/ranks",
            "expected the memory of the measured ranks (meta/world " + str(measured.meta.world) +
                "), got none: a trace without ranks cannot pass the memory check");
  if (d.has_errors()) return d;
  Comparison c;
  const std::uint32_t world = predicted.meta.world;
  c.sequence = compare_sequences(collectives_of(predicted), collectives_of(measured), world);

  // Memory: each measured rank against the predicted rank of its role.
  std::map<std::uint32_t, const TraceRank*> predicted_role;
  for (const TraceRank& r : predicted.ranks) predicted_role.emplace(r.role, &r);
  std::uint64_t uncompared = 0;
  for (const TraceRank& r : measured.ranks) {
    auto it = predicted_role.find(r.role);
    if (it == predicted_role.end()) {
      ++uncompared;
      continue;
    }
    const MemorySample pp = peak_of(*it->second), mp = peak_of(r);
    MemoryCheck mc;
    mc.rank = r.rank;
    mc.role = r.role;
    mc.predicted = pp.total;
    mc.measured = mp.total;
    mc.predicted_by_category = pp.by_category;
    mc.measured_by_category = mp.by_category;
    mc.within = within(static_cast<double>(pp.total), static_cast<double>(mp.total), tol.memory);
    for (std::size_t k = 0; k < kCategoryCount; ++k)
      mc.within = mc.within && within(static_cast<double>(pp.by_category[k]),
                                      static_cast<double>(mp.by_category[k]), tol.memory);
    c.memory.push_back(mc);
  }
  if (measured.ranks.size() < world)
    c.notes.push_back("memory compared for " + str(measured.ranks.size()) + " of " + str(world) +
                      " ranks: the measured trace carries no others");
  if (uncompared > 0)
    c.notes.push_back(str(uncompared) +
                      " measured ranks have a role whose memory the prediction does not carry "
                      "(simulate --trace keeps a few roles): not compared");

  // Bytes per kind over every rank. The sums saturate (saturating.h): two records of 2^63 bytes
  // wrapped to a sum that matched the prediction and passed (found by a hostile-input pass).
  const auto add = [](Bytes& sum, Bytes bytes, std::uint64_t ranks) {
    sum = saturating_add(sum, checked_mul(bytes, ranks).value_or(kBytesOverflow));
  };
  std::array<BytesCheck, kCollectiveKindCount> b{};
  for (std::size_t k = 0; k < kCollectiveKindCount; ++k) b[k].kind = static_cast<CollectiveKind>(k);
  for (const CommRecord& r : predicted.comms) {
    const std::uint64_t ranks = r.rank == kAllRanks ? world : 1;
    BytesCheck& x = b[static_cast<std::size_t>(r.kind)];
    x.predicted_calls += ranks;
    add(x.predicted_s, r.bytes, ranks);
    add(x.predicted_sent, r.bytes_sent, ranks);
  }
  for (const CommRecord& r : measured.comms) {
    const std::uint64_t ranks = r.rank == kAllRanks ? world : 1;
    BytesCheck& x = b[static_cast<std::size_t>(r.kind)];
    x.measured_calls += ranks;
    add(x.measured_s, r.bytes, ranks);
    add(x.measured_sent, r.bytes_sent, ranks);
  }
  for (BytesCheck& x : b) {
    if (x.predicted_calls == 0 && x.measured_calls == 0) continue;
    // Judged: the calls and nccl-tests' S. Bytes sent are shown, not judged: the prediction is
    // the ring's per-rank average rounded up per call (the busiest rank for reduce/broadcast),
    // the measurement each rank's own count (zerosim validate checks those per rank). A sum that
    // overflowed is no traffic either side had: never within.
    x.within =
        x.predicted_calls == x.measured_calls && x.predicted_s != kBytesOverflow &&
        x.measured_s != kBytesOverflow &&
        within(static_cast<double>(x.predicted_s), static_cast<double>(x.measured_s), tol.bytes);
    c.bytes.push_back(x);
  }

  c.predicted_ns = span_of(predicted);
  c.measured_ns = span_of(measured);
  if (tol.time)
    c.time_within =
        within(static_cast<double>(c.predicted_ns), static_cast<double>(c.measured_ns), *tol.time);
  else
    c.notes.push_back("time reported, not judged (give --time-tolerance to judge it)");
  if (measured.meta.backend == "host")
    c.notes.push_back("the measured times are the host's steady clock, not GPU time");
  return c;
}

bool Comparison::passed() const {
  bool ok = sequence.equal && time_within.value_or(true);
  for (const MemoryCheck& m : memory) ok = ok && m.within;
  for (const BytesCheck& b : bytes) ok = ok && b.within;
  return ok;
}

void write_comparison_table(const Comparison& c, std::ostream& out) {
  out << "collective sequence: " << (c.sequence.equal ? "identical" : "DIFFERS") << " ("
      << c.sequence.ranks << (c.sequence.ranks == 1 ? " rank, " : " ranks, ")
      << c.sequence.collectives << " measured collective"
      << (c.sequence.collectives == 1 ? "" : "s") << ")\n";
  if (!c.sequence.equal) {
    out << "  first difference: rank " << c.sequence.rank << ", collective #" << c.sequence.index
        << ": " << c.sequence.difference << "\n";
    for (const std::string& l : c.sequence.context) out << l << "\n";
  }
  if (c.sequence_only) {  // a log carries no memory, bytes per kind or time: no empty sections
    out << "\n";
    for (const std::string& n : c.notes) out << "note: " << n << "\n";
    out << "\nverdict: " << (c.passed() ? "PASS" : "FAIL") << "\n";
    return;
  }
  out << "\npeak device memory per rank (predicted = the rank's role):\n";
  std::size_t shown = 0;
  for (const MemoryCheck& m : c.memory) {
    if (shown == 8 && m.within) continue;
    ++shown;
    out << "  rank " << m.rank << " (role " << m.role << "): predicted " << gib(m.predicted)
        << ", measured " << gib(m.measured) << ", delta "
        << static_cast<long long>(m.measured) - static_cast<long long>(m.predicted) << " bytes"
        << (m.within ? "" : "  DRIFT") << "\n";
    if (!m.within)
      for (std::size_t k = 0; k < kCategoryCount; ++k)
        if (m.predicted_by_category[k] != m.measured_by_category[k])
          out << "    " << category_name(static_cast<BufferCategory>(k)) << ": predicted "
              << m.predicted_by_category[k] << ", measured " << m.measured_by_category[k]
              << " bytes\n";
  }
  if (c.memory.size() > shown)
    out << "  ... " << c.memory.size() - shown << " more ranks within tolerance\n";
  out << "\nbytes per collective kind (every rank's calls):\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s %10s %10s %18s %18s %18s %18s\n", "collective", "calls",
                "(meas.)", "S predicted", "S measured", "sent predicted", "sent measured");
  out << line;
  const auto bytes = [](Bytes v) { return v == kBytesOverflow ? std::string("overflow") : str(v); };
  for (const BytesCheck& b : c.bytes) {
    std::snprintf(line, sizeof line, "  %-24s %10llu %10llu %18s %18s %18s %18s%s\n",
                  std::string(collective_name(b.kind)).c_str(),
                  static_cast<unsigned long long>(b.predicted_calls),
                  static_cast<unsigned long long>(b.measured_calls), bytes(b.predicted_s).c_str(),
                  bytes(b.measured_s).c_str(), bytes(b.predicted_sent).c_str(),
                  bytes(b.measured_sent).c_str(), b.within ? "" : "  DRIFT");
    out << line;
  }
  std::snprintf(line, sizeof line, "\ntime: predicted %.3f ms, measured %.3f ms%s\n",
                static_cast<double>(c.predicted_ns) / 1e6, static_cast<double>(c.measured_ns) / 1e6,
                c.time_within ? (*c.time_within ? "" : "  DRIFT") : "");
  out << line;
  for (const std::string& n : c.notes) out << "note: " << n << "\n";
  out << "\nverdict: " << (c.passed() ? "PASS" : "FAIL") << "\n";
}

void write_comparison_json(const Comparison& c, std::ostream& out) {
  out << "{\"format\": \"zerosim-check\", \"version\": 1, \"passed\": "
      << (c.passed() ? "true" : "false")
      << ",\n \"sequence\": {\"equal\": " << (c.sequence.equal ? "true" : "false")
      << ", \"ranks\": " << c.sequence.ranks << ", \"collectives\": " << c.sequence.collectives;
  if (!c.sequence.equal) {
    out << ", \"rank\": " << c.sequence.rank << ", \"index\": " << c.sequence.index
        << ", \"difference\": \"";
    for (char ch : c.sequence.difference) {  // identifiers and numbers only; escape defensively
      if (ch == '"' || ch == '\\') out << '\\';
      out << ch;
    }
    out << "\"";
  }
  out << "},\n \"memory\": [";
  for (std::size_t i = 0; i < c.memory.size(); ++i) {
    const MemoryCheck& m = c.memory[i];
    out << (i ? ",\n  " : "\n  ") << "{\"rank\": " << m.rank << ", \"role\": " << m.role
        << ", \"predicted_bytes\": " << m.predicted << ", \"measured_bytes\": " << m.measured
        << ", \"within\": " << (m.within ? "true" : "false") << "}";
  }
  out << "],\n \"bytes\": [";
  // An overflowed sum is null, as plan --format json writes one.
  const auto bytes = [](Bytes v) { return v == kBytesOverflow ? std::string("null") : str(v); };
  for (std::size_t i = 0; i < c.bytes.size(); ++i) {
    const BytesCheck& b = c.bytes[i];
    out << (i ? ",\n  " : "\n  ") << "{\"kind\": \"" << collective_name(b.kind)
        << "\", \"predicted_calls\": " << b.predicted_calls
        << ", \"measured_calls\": " << b.measured_calls
        << ", \"predicted_s\": " << bytes(b.predicted_s)
        << ", \"measured_s\": " << bytes(b.measured_s)
        << ", \"predicted_sent\": " << bytes(b.predicted_sent)
        << ", \"measured_sent\": " << bytes(b.measured_sent)
        << ", \"within\": " << (b.within ? "true" : "false") << "}";
  }
  out << "],\n \"predicted_ns\": " << c.predicted_ns << ", \"measured_ns\": " << c.measured_ns
      << ", \"time_within\": " << (c.time_within ? (*c.time_within ? "true" : "false") : "null")
      << "}\n";
}

}  // namespace zerosim
