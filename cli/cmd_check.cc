// `zerosim check`: compares a predicted with a measured run (trace_compare.h). Either side may be
// a zerosim trace or a collective log (JSON lines), and the measured side a recording directory
// (tools/zerosim_record); with a log or a recording on either side only the collective sequences
// are compared. Exit codes: 0 agree within tolerance, 1 invalid input (unreadable file,
// traces of different schedules), 2 drift beyond tolerance.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>

#include "args.h"
#include "commands.h"
#include "zerosim/calibration.h"
#include "zerosim/input_file.h"
#include "zerosim/recording.h"
#include "zerosim/trace.h"
#include "zerosim/trace_compare.h"

namespace zerosim::cli {

namespace {
std::vector<FlagSpec> check_flags() {
  return {
      {"--predicted", "FILE",
       "the prediction: a zerosim trace (simulate --trace) or a collective "
       "log (schedule --collectives-out)"},
      {"--measured", "FILE",
       "the measurement: a zerosim trace (validate --output), a collective "
       "log (validate --collectives-out), or a recording directory "
       "(python -m zerosim_record -o DIR)"},
      {"--memory-tolerance", "X", "relative peak-memory difference allowed; default 0 (bytes)"},
      {"--bytes-tolerance", "Y", "relative traffic (nccl-tests S) difference allowed; default 0"},
      {"--time-tolerance", "Z", "relative time difference allowed; default: time not judged"},
      {"--calibration", "FILE",
       "the calibration the prediction was simulated with (simulate --calibration FILE): refused "
       "when the prediction did not use it or the traces' GPU is another"},
      {"--format", "FMT", "table|json; default table"},
  };
}
constexpr const char* kSummary =
    "Compares a predicted with a measured run: the collective sequence of every rank (the first\n"
    "difference with context), peak memory per rank and category, bytes per collective kind, and\n"
    "time with --time-tolerance. Exit 0: within tolerance; 1: invalid input or files of different\n"
    "schedules; 2: drift beyond tolerance.";

struct Side {
  std::string path;
  bool is_trace = false;
  bool is_recording = false;  ///< a directory written by tools/zerosim_record
  std::uint32_t recorded_world = 0;
  std::uint64_t other_collectives = 0;
  bool recorded_memory = false;  ///< the recording holds torch.cuda counters
  std::string device;            ///< the recording's device
  Trace trace;
  std::vector<LoggedCollective> log;
};

// A zerosim trace names its format ("zerosim-trace"), which no collective log line contains;
// anything else is read as a collective log.
Result<Side> load(const std::string& path, bool measured) {
  Side side;
  side.path = path;
  std::error_code ec;
  if (measured && std::filesystem::is_directory(path, ec)) {
    auto rec = read_recording(path);
    if (!rec.ok()) return rec.diagnostics();
    side.is_recording = true;
    side.recorded_world = rec->world;
    side.other_collectives = rec->other_collectives;
    side.recorded_memory = !rec->memory.empty();
    side.device = rec->device;
    side.log = std::move(rec.value().log);
    return side;
  }
  Diagnostics d;
  std::string text;
  if (!read_input_file(path, text, d)) return d;
  if (text.find("\"zerosim-trace\"") != std::string::npos) {
    auto t = read_trace_json(text, path);
    if (!t.ok()) return t.diagnostics();
    side.is_trace = true;
    side.trace = std::move(t.value());
    return side;
  }
  auto log = read_collective_log(text, path);
  if (!log.ok()) return log.diagnostics();
  side.log = std::move(log.value());
  return side;
}

std::uint32_t world_of(const Side& s) {
  if (s.is_trace) return s.trace.meta.world;
  if (s.is_recording) return s.recorded_world;
  std::uint32_t w = 0;
  for (const LoggedCollective& c : s.log)
    if (c.rank != kAllRanks) w = std::max(w, c.rank + 1);
  return w;
}

// --calibration: the prediction must have been simulated with it (its notes name it), and both
// traces must be of the calibration's GPU.
bool calibration_matches(const Calibration& cal, const Side& p, const Side& m, std::ostream& err) {
  for (const Side* s : {&p, &m})
    if (s->is_trace && s->trace.meta.gpu != cal.gpu) {
      err << "--calibration: " << cal.path << " was fitted on " << quote(cal.gpu) << ", " << s->path
          << " ran on " << quote(s->trace.meta.gpu)
          << ": expected a calibration of the traces' GPU\n";
      return false;
    }
  if (!p.is_trace) {
    err << "--calibration: expected a predicted trace (simulate --calibration FILE --trace), got "
           "a collective log, which carries no time model: "
        << p.path << "\n";
    return false;
  }
  for (const std::string& n : p.trace.meta.notes)
    if (n.find("calibrated: " + cal.path) != std::string::npos) return true;
  err << "--calibration: expected " << p.path << " to be simulated with --calibration " << cal.path
      << ", got a prediction whose notes name no such calibration (rerun simulate with it)\n";
  return false;
}

}  // namespace

std::string check_help() { return format_help("check", kSummary, check_flags()); }

int run_check(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  const auto specs = check_flags();
  auto args = parse_args(argv, specs, "check");
  if (!args.ok()) {
    report(args.diagnostics(), err);
    return kExitInvalidInput;
  }
  if (args->help) {
    out << check_help();
    return kExitOk;
  }
  Diagnostics d;
  for (const char* f : {"--predicted", "--measured"})
    if (!args->has(f)) d.error("zerosim check", f, "expected a file, got none");
  Tolerances tol;
  const auto tolerance = [&](const char* flag, double& out_value) {
    if (auto v = args->get(flag)) {
      auto x = parse_number(flag, *v, 0, 1e6);
      d.append(x.diagnostics());
      if (x.ok()) out_value = x.value();
    }
  };
  tolerance("--memory-tolerance", tol.memory);
  tolerance("--bytes-tolerance", tol.bytes);
  if (args->has("--time-tolerance")) {
    double t = 0;
    tolerance("--time-tolerance", t);
    tol.time = t;
  }
  auto fmt = parse_choice("--format", args->get("--format").value_or("table"), {"table", "json"});
  d.append(fmt.diagnostics());
  if (report(d, err)) return kExitInvalidInput;
  auto p = load(*args->get("--predicted"), false);
  auto m = load(*args->get("--measured"), true);
  bool bad = report(p.diagnostics(), err);
  bad = report(m.diagnostics(), err) || bad;
  if (bad) return kExitInvalidInput;

  std::optional<std::string> calibrated;
  if (auto f = args->get("--calibration")) {
    auto cal = read_calibration_file(*f);
    if (report(cal.diagnostics(), err)) return kExitInvalidInput;
    if (!calibration_matches(cal.value(), p.value(), m.value(), err)) return kExitInvalidInput;
    calibrated = calibration_note(cal.value());
  }
  Comparison c;
  if (p->is_trace && m->is_trace) {
    auto r = compare_traces(p->trace, p->path, m->trace, m->path, tol);
    if (report(r.diagnostics(), err)) return kExitInvalidInput;
    c = std::move(r.value());
  } else {
    const std::uint32_t pw = world_of(p.value()), mw = world_of(m.value());
    if (p->is_trace && mw > pw) {
      err << m->path << ": expected ranks below the prediction's world size " << pw << ", got rank "
          << mw - 1 << ": not the same schedule\n";
      return kExitInvalidInput;
    }
    if (m->is_recording && pw != mw) {
      err << m->path << ": expected a recording of " << pw << " ranks (the prediction's world "
          << "size), got " << mw << ": not the same job\n";
      return kExitInvalidInput;
    }
    auto pl = p->is_trace ? collectives_of(p->trace) : p->log;
    const auto ml = m->is_trace ? collectives_of(m->trace) : m->log;
    if (m->is_recording) pl = as_recorded_phases(std::move(pl));
    c.sequence = compare_sequences(pl, ml, std::max(pw, mw));
    c.sequence_only = true;
    c.notes.push_back("a collective log carries no memory or time: only the sequences compared");
    if (m->is_recording) {
      for (std::string& n : recorded_phase_notes(m->other_collectives))
        c.notes.push_back(std::move(n));
      c.notes.push_back(m->recorded_memory
                            ? "the recorded memory per phase is compared by `zerosim validate "
                              "--recording DIR`, which builds the memory estimate from the "
                              "recording's own inputs"
                            : "no device memory recorded (device " + m->device + ")");
    }
  }
  if (calibrated) c.notes.push_back(*calibrated);
  if (fmt.value() == "json")
    write_comparison_json(c, out);
  else
    write_comparison_table(c, out);
  return c.passed() ? kExitOk : kExitInfeasible;
}

}  // namespace zerosim::cli
