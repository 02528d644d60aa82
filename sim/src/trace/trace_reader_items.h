// Private to the trace reader (trace_reader.cc, trace_reader_items.cc): readers of one span, comm
// record, memory row, counter sample, peak and OOM record, each validating its element and naming
// the pointer in every diagnostic. Keys that only version 2 defines are noted in ItemContext so
// that a version-1 file using them is refused once the version is known.
#pragma once

#include <string>
#include <vector>

#include "base/json_reader.h"
#include "zerosim/trace.h"

namespace zerosim::trace_read {

/// Where the first version-2 key was seen (the reader learns the version after the elements).
struct ItemContext {
  std::string v2_pointer;  ///< pointer of the first v2-only key, "" when none
  void note_v2(json::JsonReader& r, std::string_view key) {
    if (v2_pointer.empty() && r.has(key)) v2_pointer = r.child_pointer(key);
  }
};

/// Fast paths: true when the element is exactly as the writer writes it (known keys, exact types,
/// no v2 key not yet noted); false means "read it again with read_span/read_comm" (s/c reset).
bool read_span_fast(const nlohmann::json& v, Span& s, ItemContext& ctx);
bool read_comm_fast(const nlohmann::json& v, CommRecord& c, ItemContext& ctx);
void read_span(json::JsonReader& item, Span& s, ItemContext& ctx);
void read_comm(json::JsonReader& item, CommRecord& c, ItemContext& ctx);
/// A memory row [t_ns, total, per category...]; `prev_t` is the previous row's time.
void read_sample(json::JsonReader& row, MemorySample& s, SimTime prev_t);
/// A counter sample [t_ns, value]; `prev_t` is the previous sample's time.
void read_counter_sample(json::JsonReader& row, CounterSample& s, SimTime prev_t);
/// {"device": {...}, "steady": {...}, "host_bytes": N}.
void read_peaks(json::JsonReader& r, RankPeaks& p);
/// {"t_ns", "role", "buffer", "category", "bytes", "live_bytes", "capacity"}.
void read_oom(json::JsonReader& r, OomEvent& o);

}  // namespace zerosim::trace_read
