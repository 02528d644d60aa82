// Bucket fills and stage 3 parameter events: see derived_lanes.h.
#include "model/derived_lanes.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace zerosim::view {

std::vector<BucketFill> bucket_fills(const Trace& trace, const std::vector<std::uint32_t>& spans) {
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // step, micro, bucket
  std::map<Key, BucketFill> by_key;
  // Copies first, so that a flush op of a key without copies does not create a fill.
  for (std::uint32_t i : spans) {
    const Span& s = trace.spans[i];
    if (s.bucket == kNone || s.category != "copy_to_bucket") continue;
    BucketFill& f = by_key[{s.step, s.micro_step, s.bucket}];
    f.copies.push_back(i);
  }
  for (std::uint32_t i : spans) {
    const Span& s = trace.spans[i];
    if (s.bucket == kNone || s.category == "copy_to_bucket") continue;
    auto it = by_key.find({s.step, s.micro_step, s.bucket});
    if (it == by_key.end()) continue;
    BucketFill& f = it->second;
    if (f.flush_ns == kNoTime || s.start_ns < f.flush_ns) f.flush_ns = s.start_ns;
    if (s.category == "collective" &&
        (f.collective == kNone || s.start_ns < trace.spans[f.collective].start_ns)) {
      f.collective = i;
    }
  }
  std::vector<BucketFill> out;
  out.reserve(by_key.size());
  for (auto& [key, f] : by_key) {
    std::tie(f.step, f.micro_step, f.bucket) = key;
    std::stable_sort(f.copies.begin(), f.copies.end(), [&](std::uint32_t a, std::uint32_t b) {
      return trace.spans[a].start_ns < trace.spans[b].start_ns;
    });
    f.start_ns = trace.spans[f.copies.front()].start_ns;
    f.end_ns = f.start_ns;
    for (std::uint32_t c : f.copies) {
      const Span& s = trace.spans[c];
      f.end_ns = std::max(f.end_ns, s.start_ns + s.dur_ns);
      f.bytes += s.bytes;
    }
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(), [](const BucketFill& a, const BucketFill& b) {
    return a.start_ns < b.start_ns;
  });
  return out;
}

std::string bucket_param_name(const Span& copy) {
  const std::string& n = copy.name;
  for (const char* prefix : {"copy ", "grad "}) {
    const std::string p(prefix);
    if (n.rfind(p, 0) != 0) continue;
    const std::size_t into = n.find(" into ", p.size());
    if (into == std::string::npos || into == p.size()) break;
    return n.substr(p.size(), into - p.size());
  }
  return n;
}

std::vector<ParamEvent> param_events(const Trace& trace, const TraceRank& rank,
                                     const std::vector<std::uint32_t>& spans) {
  std::vector<ParamEvent> out;
  if (trace.meta.stage != 3) return out;
  for (std::uint32_t i : spans) {
    const Span& s = trace.spans[i];
    if (s.comm == kNone || s.comm >= trace.comms.size()) continue;
    if (trace.comms[s.comm].kind != CollectiveKind::AllGather) continue;
    out.push_back(
        {ParamEvent::Kind::Gather, s.start_ns + s.dur_ns, trace.comms[s.comm].bytes, i, 0});
  }
  constexpr auto kGathered = static_cast<std::size_t>(BufferCategory::GatheredParam);
  const std::vector<MemorySample>& m = rank.memory;
  Bytes prev = 0;  // gathered bytes after the previous sample
  for (std::size_t i = 0; i < m.size();) {
    // Each sample is the state after one ledger event; the drops of the samples at one ns add up
    // (a free followed by an allocation in the same instant still shows the free).
    Bytes freed = 0;
    std::size_t j = i;
    for (; j < m.size() && m[j].t == m[i].t; ++j) {
      const Bytes now = m[j].by_category[kGathered];
      if (now < prev) freed += prev - now;
      prev = now;
    }
    if (freed > 0) out.push_back({ParamEvent::Kind::Release, m[i].t, freed, kNone, prev});
    i = j;
  }
  std::stable_sort(out.begin(), out.end(), [](const ParamEvent& a, const ParamEvent& b) {
    return a.t != b.t ? a.t < b.t : a.kind < b.kind;
  });
  return out;
}

}  // namespace zerosim::view
