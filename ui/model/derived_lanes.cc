// Bucket fills and stage 3 parameter events: see derived_lanes.h.
#include "model/derived_lanes.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string_view>
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

std::string gathered_params_name(const Span& gather) {
  const std::string& n = gather.name;
  static constexpr std::array<std::string_view, 4> kPrefixes = {
      "fetch fwd ", "fetch bwd ", "prefetch: ", "post-step gather of persistent "};
  for (const std::string_view prefix : kPrefixes) {
    if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size()) return n.substr(prefix.size());
  }
  return n;
}

namespace {

// The gathered buffers live on a rank, in the order they were gathered: which all-gather filled
// each (kNone: a rise no all-gather explains) and its bytes.
class GatheredBuffers {
 public:
  GatheredBuffers(const Trace& trace, const std::vector<std::uint32_t>& gathers) : trace_(trace) {
    for (std::uint32_t i : gathers) by_bytes_[bytes_of(i)].push_back(i);
    for (auto& [bytes, list] : by_bytes_) {
      std::stable_sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
        return trace_.spans[a].start_ns < trace_.spans[b].start_ns;
      });
    }
  }
  // A rise of `bytes` at `t`: the earliest unclaimed all-gather of those bytes started by `t`
  // (a prefetched module's gather starts before the one in use allocates).
  void rise(SimTime t, Bytes bytes) {
    std::uint32_t span = kNone;
    if (auto it = by_bytes_.find(bytes); it != by_bytes_.end()) {
      for (const std::uint32_t i : it->second) {
        if (trace_.spans[i].start_ns > t) break;
        if (claimed_.insert(i).second) {
          span = i;
          break;
        }
      }
    }
    live_.push_back({bytes, span});
  }
  // A drop of `bytes`: the oldest live buffer of exactly that size, else the oldest run of
  // consecutive ones adding up to it; appends their all-gathers to `released`. A drop nothing
  // adds up to leaves the buffers as they were (the release stays unnamed).
  void drop(Bytes bytes, std::vector<std::uint32_t>& released) {
    for (std::size_t k = 0; k < live_.size(); ++k) {
      if (live_[k].bytes == bytes) return take(k, k + 1, released);
    }
    for (std::size_t k = 0; k < live_.size(); ++k) {
      Bytes sum = 0;
      std::size_t e = k;
      while (e < live_.size() && sum < bytes) sum += live_[e++].bytes;
      if (sum == bytes) return take(k, e, released);
    }
  }

 private:
  struct Buffer {
    Bytes bytes;
    std::uint32_t span;
  };
  Bytes bytes_of(std::uint32_t i) const { return trace_.comms[trace_.spans[i].comm].bytes; }
  void take(std::size_t from, std::size_t to, std::vector<std::uint32_t>& released) {
    for (std::size_t k = from; k < to; ++k) {
      if (live_[k].span != kNone) released.push_back(live_[k].span);
    }
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(from),
                live_.begin() + static_cast<std::ptrdiff_t>(to));
  }
  const Trace& trace_;
  std::map<Bytes, std::vector<std::uint32_t>> by_bytes_;  // all-gathers by S, by start
  std::set<std::uint32_t> claimed_;
  std::deque<Buffer> live_;
};

}  // namespace

std::vector<ParamEvent> param_events(const Trace& trace, const TraceRank& rank,
                                     const std::vector<std::uint32_t>& spans) {
  std::vector<ParamEvent> out;
  if (trace.meta.stage != 3) return out;
  std::vector<std::uint32_t> gathers;
  for (std::uint32_t i : spans) {
    const Span& s = trace.spans[i];
    if (s.comm == kNone || s.comm >= trace.comms.size()) continue;
    if (trace.comms[s.comm].kind != CollectiveKind::AllGather) continue;
    gathers.push_back(i);
    out.push_back(
        {ParamEvent::Kind::Gather, s.start_ns + s.dur_ns, trace.comms[s.comm].bytes, i, 0, {}});
  }
  GatheredBuffers buffers(trace, gathers);
  constexpr auto kGathered = static_cast<std::size_t>(BufferCategory::GatheredParam);
  const std::vector<MemorySample>& m = rank.memory;
  Bytes prev = 0;  // gathered bytes after the previous sample
  for (std::size_t i = 0; i < m.size();) {
    // Each sample is the state after one ledger event; the drops of the samples at one ns add up
    // (a free followed by an allocation in the same instant still shows the free).
    // A module's parameters are allocated, and freed, in one instant (one sample each): the
    // buffers are matched per instant, the frees (of the module that ran) before the allocations
    // (of the next one).
    Bytes freed = 0, risen = 0;
    std::size_t j = i;
    for (; j < m.size() && m[j].t == m[i].t; ++j) {
      const Bytes now = m[j].by_category[kGathered];
      if (now < prev) freed += prev - now;
      if (now > prev) risen += now - prev;
      prev = now;
    }
    std::vector<std::uint32_t> released;
    if (freed > 0) buffers.drop(freed, released);
    if (risen > 0) buffers.rise(m[i].t, risen);
    if (freed > 0) {
      out.push_back({ParamEvent::Kind::Release, m[i].t, freed, kNone, prev, std::move(released)});
    }
    i = j;
  }
  std::stable_sort(out.begin(), out.end(), [](const ParamEvent& a, const ParamEvent& b) {
    return a.t != b.t ? a.t < b.t : a.kind < b.kind;
  });
  return out;
}

}  // namespace zerosim::view
