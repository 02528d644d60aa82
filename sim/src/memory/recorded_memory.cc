// compare_phase_memory and its table (zerosim/recorded_memory.h).
#include "zerosim/recorded_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>

namespace zerosim {
namespace {

constexpr const char* kCategories[] = {"allocated", "max_allocated", "reserved",
                                       "outside_allocator"};

struct Predicted {
  Bytes persistent = 0;   ///< tensors resident across phases (overhead and host excluded)
  Bytes activations = 0;  ///< one micro-batch's stored activations
  Bytes peak = 0;         ///< the peak phase's tensors
  Bytes in_pool = 0;      ///< overhead terms inside the caching allocator's pool
  Bytes outside = 0;      ///< overhead terms outside it
};

Bytes add(Bytes a, Bytes b) { return b > std::numeric_limits<Bytes>::max() - a ? a : a + b; }

Predicted predicted_of(const MemoryReport& r, const OverheadParams& o) {
  Predicted p;
  for (const auto& it : r.items)
    if (it.phase == "persistent" && it.layer != "overhead" && it.layer != "host")
      p.persistent = add(p.persistent, it.bytes);
  for (const auto* list : {&r.items, &r.off_peak_items})
    for (const auto& it : *list)
      if (it.layer == "activations") p.activations = add(p.activations, it.bytes);
  p.peak = r.total() - r.overhead;
  p.outside = std::min(r.overhead, add(o.cuda_context, o.nccl_buffers));
  p.in_pool = r.overhead - p.outside;
  return p;
}

double relative(Bytes measured, Bytes predicted) {
  if (predicted == 0) return measured == 0 ? 0 : std::numeric_limits<double>::infinity();
  return (static_cast<double>(measured) - static_cast<double>(predicted)) /
         static_cast<double>(predicted);
}

std::string mib(Bytes b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

bool PhaseMemoryCheck::passed() const {
  return std::all_of(verdicts.begin(), verdicts.end(),
                     [](const PhaseMemoryVerdict& v) { return v.within; });
}

std::string relative_error_text(Bytes measured, Bytes predicted) {
  const double e = relative(measured, predicted);
  if (!std::isfinite(e)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", e * 100);
  return buf;
}

PhaseMemoryCheck compare_phase_memory(const Recording& rec, const MemoryReport& predicted,
                                      const OverheadParams& overheads, double tolerance) {
  PhaseMemoryCheck c;
  c.device = rec.device;
  c.tolerance = tolerance;
  c.recorded = !rec.memory.empty();
  if (!c.recorded) return c;
  for (const auto& m : rec.memory) c.step = std::max(c.step, m.step);
  const Predicted p = predicted_of(predicted, overheads);
  auto row = [&](const RecordedMemory& m, const char* category, const char* as, Bytes measured,
                 Bytes want) {
    PhaseMemoryRow r{m.rank, m.event, category, as, measured, want, true};
    const double e = relative(measured, want);
    r.within = std::isfinite(e) && std::fabs(e) <= tolerance;
    c.rows.push_back(std::move(r));
  };
  for (std::uint32_t rank = 0; rank < rec.world; ++rank) {
    const RecordedMemory* last = nullptr;
    for (const auto& m : rec.memory) {
      if (m.rank != rank || m.step != c.step) continue;
      const bool live = m.event == "forward_end" || m.event == "backward_begin";
      row(m, "allocated", live ? "persistent tensors + activations" : "persistent tensors",
          m.allocated, live ? add(p.persistent, p.activations) : p.persistent);
      last = &m;
    }
    if (last == nullptr) continue;
    row(*last, "max_allocated", "peak-phase tensors", last->max_allocated, p.peak);
    row(*last, "reserved", "peak-phase tensors + in-pool overhead", last->reserved,
        add(p.peak, p.in_pool));
    const Bytes used =
        last->device_total > last->device_free ? last->device_total - last->device_free : 0;
    row(*last, "outside_allocator", "CUDA context + NCCL buffers",
        used > last->reserved ? used - last->reserved : 0, p.outside);
  }
  for (const char* cat : kCategories) {
    PhaseMemoryVerdict v;
    v.category = cat;
    for (const auto& r : c.rows) {
      if (r.category != cat) continue;
      ++v.rows;
      v.worst_error = std::max(v.worst_error, std::fabs(relative(r.measured, r.predicted)));
      v.within = v.within && r.within;
    }
    if (v.rows > 0) c.verdicts.push_back(std::move(v));
  }
  return c;
}

void write_phase_memory_table(const PhaseMemoryCheck& c, std::ostream& out) {
  if (!c.recorded) {
    out << "memory per phase: no device memory recorded (device " +
               (c.device.empty() ? std::string("unknown") : c.device) +
               "; the recorder samples torch.cuda counters only)\n";
    return;
  }
  out << "memory per phase (step " << c.step << ", tolerance " << c.tolerance * 100 << "%):\n";
  for (const auto& r : c.rows) {
    char line[320];
    std::snprintf(line, sizeof line,
                  "  rank %u %-15s %-18s measured %14s  predicted %14s  %9s  %s%s\n", r.rank,
                  r.event.c_str(), r.category.c_str(), mib(r.measured).c_str(),
                  mib(r.predicted).c_str(), relative_error_text(r.measured, r.predicted).c_str(),
                  r.predicted_as.c_str(), r.within ? "" : "  DIFFERS");
    out << line;
  }
  for (const auto& v : c.verdicts) {
    char line[160];
    if (std::isfinite(v.worst_error))
      std::snprintf(line, sizeof line, "  %-18s %s (worst error %.2f%% over %llu rows)\n",
                    v.category.c_str(), v.within ? "within" : "DIFFERS", v.worst_error * 100,
                    static_cast<unsigned long long>(v.rows));
    else
      std::snprintf(line, sizeof line,
                    "  %-18s DIFFERS (predicted 0 bytes, measured more; %llu rows)\n",
                    v.category.c_str(), static_cast<unsigned long long>(v.rows));
    out << line;
  }
}

}  // namespace zerosim
