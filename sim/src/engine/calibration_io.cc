// The calibration file (calibration.h): its JSON, its table, its reader and how it is applied.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "base/json_reader.h"
#include "zerosim/calibration.h"
#include "zerosim/version.h"

namespace zerosim {
namespace {

using ojson = nlohmann::ordered_json;

std::string g4(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}

ojson param_json(const FittedParam& p, const char* unit) {
  ojson j;
  j["value"] = p.value ? ojson(*p.value) : ojson(nullptr);
  j["unit"] = unit;
  j["basis"] = p.basis;
  j["residual"] = p.residual;
  return j;
}

// What the default is when a value is not fitted.
const HostCosts kDefaults{};

}  // namespace

void write_calibration_json(const Calibration& c, std::ostream& out) {
  ojson j;
  j["format"] = kCalibrationFormat;
  j["version"] = kCalibrationVersion;
  j["zerosim_version"] = kZerosimVersion;
  j["gpu"] = c.gpu;
  ojson sources = ojson::array();
  for (const auto& s : c.sources)
    sources.push_back({{"path", s.path},
                       {"digest", s.digest},
                       {"clock", s.clock},
                       {"model", s.model},
                       {"stage", s.stage},
                       {"world", s.world},
                       {"hidden", s.hidden}});
  j["sources"] = sources;
  ojson compute;
  compute["kind"] = c.curve ? "curve" : "size_class";
  if (c.curve) {
    compute["e_max"] = param_json(c.e_max, "fraction of the dense rate");
    compute["h_half"] = param_json(c.h_half, "hidden size");
  } else {
    compute["hidden"] = c.hidden;
    compute["efficiency"] = param_json(c.efficiency, "fraction of the dense rate");
  }
  j["compute"] = compute;
  j["host"] = {
      {"kernel_launch_us", param_json(c.kernel_launch_us, "us per kernel")},
      {"stage3_hooks_us", param_json(c.stage3_hooks_us, "us per module (fetch + release)")},
      {"collective_launch_us", param_json(c.collective_launch_us, "us per collective")}};
  ojson coll = ojson::array();
  for (const FittedCollective& f : c.collectives)
    coll.push_back({{"kind", std::string(collective_name(f.kind))},
                    {"alpha_us", f.fit.alpha_us},
                    {"busbw_gbps", f.fit.busbw_gbps},
                    {"ranks", f.fit.ranks},
                    {"calls", f.calls},
                    {"sizes", f.fit.rows},
                    {"min_bytes", f.min_bytes},
                    {"max_bytes", f.max_bytes},
                    {"residual", f.fit.max_rel_residual},
                    {"basis", f.basis}});
  j["collectives"] = coll;
  out << j.dump(2) << "\n";
}

void write_calibration_table(const Calibration& c, std::ostream& out) {
  out << "zerosim calibrate: " << c.gpu << ", " << c.sources.size() << " measured trace"
      << (c.sources.size() == 1 ? "" : "s") << "\n\n";
  std::vector<std::vector<std::string>> rows = {{"parameter", "value", "residual", "basis"}};
  const auto add = [&](const std::string& name, const FittedParam& p, const std::string& unit,
                       double def) {
    rows.push_back({name, p.value ? g4(*p.value) + " " + unit : "default " + g4(def) + " " + unit,
                    p.value ? g4(100 * p.residual) + " %" : "-", p.basis});
  };
  if (c.curve) {
    add("compute e_max", c.e_max, "of dense", 0);
    add("compute h_half", c.h_half, "hidden", 0);
  } else {
    add("compute efficiency at hidden " + std::to_string(c.hidden), c.efficiency, "of dense", 0);
  }
  add("kernel launch", c.kernel_launch_us, "us", kDefaults.kernel_launch_us);
  add("stage-3 fetch + release hooks", c.stage3_hooks_us, "us/module",
      kDefaults.stage3_fetch_hook_us + kDefaults.stage3_release_hook_us);
  add("collective launch", c.collective_launch_us, "us", kDefaults.collective_launch_us);
  for (const FittedCollective& f : c.collectives) {
    const std::string name(collective_name(f.kind));
    const std::string range =
        std::to_string(f.min_bytes) + "-" + std::to_string(f.max_bytes) + " B";
    rows.push_back({name + " alpha", g4(f.fit.alpha_us) + " us",
                    g4(100 * f.fit.max_rel_residual) + " %", f.basis});
    std::string bw = name;
    bw += " busBw (";
    bw += range;
    bw += ")";
    rows.push_back(
        {bw, g4(f.fit.busbw_gbps) + " GB/s", g4(100 * f.fit.max_rel_residual) + " %", "same fit"});
  }
  std::vector<std::size_t> w(3, 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < 3; ++i) w[i] = std::max(w[i], r[i].size());
  for (const auto& r : rows) {
    out << "  ";
    for (std::size_t i = 0; i < 3; ++i) out << r[i] << std::string(w[i] - r[i].size() + 2, ' ');
    out << r[3] << "\n";
  }
  out << "\nresidual: the largest relative difference between the fit and its data points\n";
}

namespace {

FittedParam read_param(json::JsonReader& parent, std::string_view key, double lo, double hi) {
  FittedParam p;
  auto r = parent.child(key);
  if (!r) {
    parent.error("expected key " + quote(std::string(key)));
    return p;
  }
  if (!r->expect_object()) return p;
  if (r->has("value") && !r->value().at("value").is_null())
    p.value = r->get_number("value", lo, hi);
  if (r->has("value"))
    r->mark_used("value");
  else
    r->error("expected key \"value\" (a number, or null: not fitted)");
  r->get_string("unit");
  p.basis = r->get_string("basis").value_or("");
  p.residual = r->get_number("residual", 0, 1e6).value_or(0);
  r->reject_unknown({"value", "unit", "basis", "residual"});
  return p;
}

}  // namespace

Result<Calibration> read_calibration_text(const std::string& text, const std::string& source) {
  Diagnostics d;
  auto doc = json::parse(text, source, d);
  if (!doc) return d;
  json::JsonReader r(*doc, source, "", d);
  if (!r.expect_object()) return d;
  const auto format = r.get_string("format");
  if (format != std::string(kCalibrationFormat)) {
    r.error("expected \"format\": \"" + std::string(kCalibrationFormat) + "\" (a file of zerosim " +
                "calibrate -o), got " +
                (r.has("format") ? json::describe(doc->at("format")) : std::string("none")),
            "format");
    return d;
  }
  const auto version = r.get_int("version", -1000000, 1000000);
  if (d.has_errors()) return d;
  if (version != kCalibrationVersion) {
    r.error("expected version " + std::to_string(kCalibrationVersion) + ", got " +
                (version ? std::to_string(*version) : std::string("none")) +
                " (recalibrate with this zerosim)",
            "version");
    return d;
  }
  Calibration c;
  r.get_string("zerosim_version");
  c.gpu = r.get_string("gpu").value_or("");
  if (c.gpu.empty()) r.error("expected a GPU catalog name", "gpu");
  if (auto s = r.child("sources")) {
    if (auto items = s->elements())
      for (auto& e : *items) {
        if (!e.expect_object()) continue;
        Calibration::Source src;
        src.path = e.get_string("path").value_or("");
        src.digest = e.get_string("digest").value_or("");
        src.clock = e.get_string("clock").value_or("");
        src.model = e.get_string("model").value_or("");
        src.stage = static_cast<int>(e.get_int("stage", 0, 3).value_or(0));
        src.world =
            static_cast<std::uint32_t>(e.get_uint("world", 0, kMaxCollectiveRanks).value_or(0));
        src.hidden = e.get_uint("hidden", 0, 1u << 30).value_or(0);
        e.reject_unknown({"path", "digest", "clock", "model", "stage", "world", "hidden"});
        c.sources.push_back(std::move(src));
      }
  } else {
    r.error("expected key \"sources\" (the traces it was fitted to)");
  }
  if (auto comp = r.child("compute"); comp && comp->expect_object()) {
    const auto kind = comp->get_enum("kind", {"curve", "size_class"});
    c.curve = kind == std::string("curve");
    if (c.curve) {
      c.e_max = read_param(*comp, "e_max", 1e-6, 1.0);
      c.h_half = read_param(*comp, "h_half", 0, 1e9);
      comp->reject_unknown({"kind", "e_max", "h_half"});
    } else {
      // The hidden size the efficiency was measured at: 0 (or none) was read as a flat curve, a
      // meaning calibrate never writes (a hostile-input pass: 524 -> 673 ms for one step).
      if (!comp->has("hidden")) comp->error("expected key \"hidden\" (the GEMM size measured)");
      c.hidden = comp->get_uint("hidden", 1, 1u << 30).value_or(0);
      c.efficiency = read_param(*comp, "efficiency", 1e-6, 1.0);
      comp->reject_unknown({"kind", "hidden", "efficiency"});
    }
  } else if (!r.has("compute")) {
    r.error("expected key \"compute\"");
  }
  if (auto host = r.child("host"); host && host->expect_object()) {
    c.kernel_launch_us = read_param(*host, "kernel_launch_us", 0, 1e6);
    c.stage3_hooks_us = read_param(*host, "stage3_hooks_us", 0, 1e6);
    c.collective_launch_us = read_param(*host, "collective_launch_us", 0, 1e6);
    host->reject_unknown({"kernel_launch_us", "stage3_hooks_us", "collective_launch_us"});
  } else if (!r.has("host")) {
    r.error("expected key \"host\"");
  }
  if (auto coll = r.child("collectives")) {
    if (auto items = coll->elements())
      for (auto& e : *items) {
        if (!e.expect_object()) continue;
        FittedCollective f;
        const auto kind = e.get_string("kind");
        const auto k = kind ? parse_collective(*kind) : std::nullopt;
        if (!k) {
          e.error("expected a collective kind (all_reduce, all_gather_into_tensor, ...), got " +
                      (kind ? quote(*kind) : std::string("none")),
                  "kind");
          continue;
        }
        // A kind twice: the last entry won without a word (a hostile-input pass).
        if (std::any_of(c.collectives.begin(), c.collectives.end(),
                        [&](const FittedCollective& x) { return x.kind == *k; })) {
          e.error("expected each collective kind once, got " + quote(*kind) + " again", "kind");
          continue;
        }
        f.kind = *k;
        f.fit.alpha_us = e.get_number("alpha_us", 0, 1e9).value_or(0);
        f.fit.busbw_gbps = e.get_number("busbw_gbps", 1e-9, 1e9).value_or(0);
        f.fit.ranks =
            static_cast<std::uint32_t>(e.get_uint("ranks", 0, kMaxCollectiveRanks).value_or(0));
        f.calls = e.get_uint("calls", 0, ~0ULL).value_or(0);
        f.fit.rows = static_cast<std::uint32_t>(e.get_uint("sizes", 0, 1u << 31).value_or(0));
        f.min_bytes = e.get_uint("min_bytes", 0, ~0ULL).value_or(0);
        f.max_bytes = e.get_uint("max_bytes", 0, ~0ULL).value_or(0);
        f.fit.max_rel_residual = e.get_number("residual", 0, 1e6).value_or(0);
        f.basis = e.get_string("basis").value_or("");
        if (!e.has("busbw_gbps")) e.error("expected key \"busbw_gbps\"");
        e.reject_unknown({"kind", "alpha_us", "busbw_gbps", "ranks", "calls", "sizes", "min_bytes",
                          "max_bytes", "residual", "basis"});
        c.collectives.push_back(std::move(f));
      }
  } else {
    r.error("expected key \"collectives\"");
  }
  r.reject_unknown(
      {"format", "version", "zerosim_version", "gpu", "sources", "compute", "host", "collectives"});
  if (d.has_errors()) return d;
  c.path = source;
  return Result<Calibration>(std::move(c), d);
}

Result<Calibration> read_calibration_file(const std::string& path) {
  Diagnostics d;
  std::string text;
  if (!json::read_file(path, text, d)) return d;
  return read_calibration_text(text, path);
}

std::string calibration_note(const Calibration& c) {
  std::string fitted = c.curve ? "compute curve" : c.efficiency.value ? "compute efficiency" : "";
  const auto add = [&](const FittedParam& p, const char* what) {
    if (p.value) fitted += (fitted.empty() ? "" : ", ") + std::string(what);
  };
  add(c.kernel_launch_us, "kernel launch");
  add(c.stage3_hooks_us, "stage-3 hooks");
  add(c.collective_launch_us, "collective launch");
  for (const FittedCollective& f : c.collectives)
    fitted += (fitted.empty() ? "" : ", ") + std::string(collective_name(f.kind));
  return "time model calibrated: " + c.path + " (fitted on " + c.gpu + " from " +
         std::to_string(c.sources.size()) + " measured trace" + (c.sources.size() == 1 ? "" : "s") +
         ": " + fitted + "; the rest default)";
}

std::vector<std::string> calibration_scope_warnings(const Calibration& c, std::uint64_t world,
                                                    std::uint64_t gpus_per_node) {
  std::vector<std::string> out;
  const std::string file = c.path.empty() ? std::string("the calibration") : c.path;
  const bool run_spans_nodes = gpus_per_node > 0 && world > gpus_per_node;
  for (const FittedCollective& f : c.collectives) {
    const std::uint64_t n = f.fit.ranks;
    if (n == 0 || gpus_per_node == 0) continue;
    const bool fit_within_node = n <= gpus_per_node;
    if (fit_within_node == !run_spans_nodes) continue;
    const std::string kind(collective_name(f.kind));
    std::string line = file;
    line += ": " + kind;
    line += " was fitted on " + std::to_string(n);
    line += fit_within_node ? " ranks within one node" : " ranks across nodes";
    line += ", this run is " + std::to_string(world);
    line += run_spans_nodes ? " GPUs over " + std::to_string(world / gpus_per_node) + " nodes"
                            : std::string(" GPUs in one node");
    line += ": its " + kind;
    line += " is timed at the fitted bus bandwidth all the same";
    out.push_back(std::move(line));
  }
  return out;
}

Diagnostics apply_calibration(const Calibration& c, const GpuSpec& gpu, EngineOptions& o) {
  Diagnostics d;
  const std::string file = c.path.empty() ? std::string("calibration") : c.path;
  if (c.gpu != gpu.name) {
    d.error("--calibration", "",
            file + " was fitted on " + quote(c.gpu) + ", this run is on " + quote(gpu.name) +
                ": expected a calibration of the run's GPU (calibrate on it, or drop "
                "--calibration)");
    return d;
  }
  const std::string tag = "calibrated: " + file;
  if (c.curve && c.e_max.value && c.h_half.value) {
    o.calibrated_compute = CalibratedCompute{
        *c.e_max.value, *c.h_half.value,
        tag + " (e_max " + g4(*c.e_max.value) + ", h_half " + g4(*c.h_half.value) + ")"};
  } else if (!c.curve && c.efficiency.value) {
    // One GEMM size measured: the default curve's shape (h_half) through the measured point.
    const auto def = efficiency_curve(gpu.generation);
    const double h_half = def && c.hidden > 0 ? def->h_half : 0;
    const double h = static_cast<double>(c.hidden);
    const double e_max =
        c.hidden > 0 ? *c.efficiency.value * (h + h_half) / h : *c.efficiency.value;
    if (e_max > 1)
      d.warning("--calibration", "",
                file + ": the efficiency " + g4(*c.efficiency.value) + " at hidden " +
                    std::to_string(c.hidden) +
                    " extrapolates above the dense rate at large hidden "
                    "sizes; capped at 1");
    o.calibrated_compute =
        CalibratedCompute{std::min(e_max, 1.0), h_half,
                          tag + " (efficiency " + g4(*c.efficiency.value) + " at hidden " +
                              std::to_string(c.hidden) + "; default h_half " + g4(h_half) + ")"};
  }
  std::string host;
  const auto note = [&](const char* what) {
    host += (host.empty() ? "" : ", ") + std::string(what);
  };
  if (c.kernel_launch_us.value) {
    o.host.kernel_launch_us = *c.kernel_launch_us.value;
    note("kernel launch");
  }
  if (c.stage3_hooks_us.value) {
    // The split between the pre- and post-hooks does not change a step's time (both run on the
    // host before the op's kernels); the defaults' 2:1 keeps the notes readable.
    const double total = kDefaults.stage3_fetch_hook_us + kDefaults.stage3_release_hook_us;
    o.host.stage3_fetch_hook_us = *c.stage3_hooks_us.value * kDefaults.stage3_fetch_hook_us / total;
    o.host.stage3_release_hook_us = *c.stage3_hooks_us.value - o.host.stage3_fetch_hook_us;
    note("stage-3 hooks");
  }
  if (c.collective_launch_us.value) {
    o.host.collective_launch_us = *c.collective_launch_us.value;
    note("collective launch");
  }
  if (!host.empty())
    o.host.calibrated = tag + " (" + host + "; the others " +
                        (o.host.given ? std::string("given") : std::string("default")) + ")";
  for (const FittedCollective& f : c.collectives) {
    CalibratedCollective x = f.fit;
    x.source = tag + " (" + std::to_string(f.min_bytes) + "-" + std::to_string(f.max_bytes) + " B)";
    o.calibration.set(f.kind, std::move(x));
  }
  return d;
}

}  // namespace zerosim
