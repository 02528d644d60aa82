// `zerosim validate`: executes the schedule on a backend (the host backend: ranks as threads) and
// compares what it measured with what the simulator predicts for the same schedule: the collective
// log of every rank, peak memory per rank and category, bytes per collective kind, and (reported,
// not judged) time. Exit 0 when everything agrees, 2 when something differs or the run failed.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "args.h"
#include "cluster_flags.h"
#include "commands.h"
#include "output_file.h"
#include "run_inputs.h"
#include "validate_cuda.h"
#include "validate_recording.h"
#include "zerosim/engine.h"
#include "zerosim/host_backend.h"
#include "zerosim/schedule_digest.h"
#include "zerosim/schedule_io.h"
#include "zerosim/trace.h"

namespace zerosim::cli {

namespace {
std::vector<FlagSpec> validate_flags() {
  auto f = run_flags();
  f.push_back({"--backend", "NAME",
               "host (CPU threads as ranks) or cuda (one GPU per rank: mpirun/torchrun, or "
               "--single-gpu); default host"});
  f.push_back({"--no-data", "",
               "count-only: every op runs, nothing is backed by memory (default: data mode, real "
               "buffers and numerics, when the schedule carries every operand)"});
  f.push_back({"--seed", "N", "data mode: seed of the synthetic gradients and weights; default 1"});
  f.push_back({"--data-memory-cap", "SIZE",
               "data mode: every rank's buffers together at most this (bytes, or e.g. 8GiB), "
               "their caches of released pages included; default 16GiB"});
  f.push_back({"--output", "FILE", "write the measured trace (zerosim trace JSON)"});
  f.push_back({"--chrome-trace", "FILE",
               "write the measured trace as a Chrome Trace Event file for Perfetto / "
               "chrome://tracing (spans, memory and the named counters)"});
  f.push_back({"--collectives-out", "FILE", "write the measured collective log (JSON lines)"});
  f.push_back({"--host-memory-limit", "SIZE",
               "device memory per rank (bytes, or e.g. 1GiB); over it a rank fails"});
  f.push_back({"--stall-timeout", "SECONDS",
               "end the run when a collective waits longer; "
               "default 60"});
  f.push_back({"--format", "FMT", "table|json report on stdout; default table"});
  f.push_back({"--recording", "DIR",
               "predict from a recording's own param list, ds_config and world size (python -m "
               "zerosim_record -o DIR) and compare with it; takes only --format, "
               "--memory-tolerance and --deepspeed-version"});
  f.push_back({"--memory-tolerance", "X",
               "with --recording: relative per-phase memory difference allowed; default 0"});
  for (FlagSpec& c : validate_cuda_flags()) f.push_back(std::move(c));
  return f;
}
constexpr const char* kSummary =
    "Executes the schedule for real on a backend and compares the measured run with the\n"
    "simulator's prediction of the same schedule: the collective log of every rank, peak memory\n"
    "per rank and category, bytes per collective kind, and time (host time is not GPU time).";

std::string lines_of(const std::function<void(std::ostream&)>& write) {
  std::ostringstream s;
  write(s);
  return s.str();
}

// The first line where two logs differ, with the line before it: "" when identical.
std::string first_log_difference(const std::string& p, const std::string& m) {
  std::istringstream ps(p), ms(m);
  std::string pl, ml, prev;
  for (std::uint64_t n = 1;; ++n) {
    const bool pg = static_cast<bool>(std::getline(ps, pl)),
               mg = static_cast<bool>(std::getline(ms, ml));
    if (!pg && !mg) return {};
    if (!pg || !mg || pl != ml)
      return "line " + std::to_string(n) + ":\n    predicted: " + (pg ? pl : "(end)") +
             "\n    measured:  " + (mg ? ml : "(end)") +
             (prev.empty() ? "" : "\n    after:     " + prev);
    prev = pl;
  }
}

struct Verdicts {
  bool log = true, memory = true, bytes = true;
  bool all() const { return log && memory && bytes; }
};

}  // namespace

std::string validate_help() { return format_help("validate", kSummary, validate_flags()); }

int run_validate(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  const auto specs = validate_flags();
  auto args = parse_args(argv, specs, "validate");
  if (!args.ok()) {
    report(args.diagnostics(), err);
    return kExitInvalidInput;
  }
  if (args->help) {
    out << validate_help();
    return kExitOk;
  }
  if (args->has("--recording")) return run_validate_recording(args.value(), out, err);
  Diagnostics d;
  if (args->has("--memory-tolerance"))
    d.error("zerosim validate", "--memory-tolerance",
            "expected --recording for this flag, got none");
  auto backend =
      parse_choice("--backend", args->get("--backend").value_or("host"), {"host", "cuda"});
  d.append(backend.diagnostics());
  const bool on_cuda = backend.ok() && backend.value() == "cuda";
  for (const char* flag :
       {"--no-data", "--host-memory-limit", "--collectives-out", "--chrome-trace"})
    if (on_cuda && args->has(flag))
      d.error("zerosim validate", flag, "expected --backend host for this flag, got cuda");
  for (const char* flag : {"--single-gpu", "--ranks", "--warmup-steps"})
    if (backend.ok() && !on_cuda && args->has(flag))
      d.error("zerosim validate", flag, "expected --backend cuda for this flag, got host");
  auto fmt = parse_choice("--format", args->get("--format").value_or("table"), {"table", "json"});
  d.append(fmt.diagnostics());
  exec::HostOptions ho;
  ho.data = !args->has("--no-data");
  if (auto v = args->get("--host-memory-limit")) {
    auto n = parse_bytes_flag("--host-memory-limit", *v);
    d.append(n.diagnostics());
    if (n.ok()) ho.memory_limit = n.value();
  }
  if (auto v = args->get("--stall-timeout")) {
    auto s = parse_number("--stall-timeout", *v, 0.001, 86400);
    d.append(s.diagnostics());
    if (s.ok())
      ho.stall_timeout = std::chrono::milliseconds(static_cast<long long>(s.value() * 1000));
  }
  if (auto v = args->get("--seed")) {
    auto n = parse_uint("--seed", *v, 0, UINT64_MAX);
    d.append(n.diagnostics());
    if (n.ok()) ho.data_options.seed = n.value();
  }
  if (auto v = args->get("--data-memory-cap")) {
    auto n = parse_bytes_flag("--data-memory-cap", *v);
    d.append(n.diagnostics());
    if (n.ok()) ho.data_options.memory_cap = n.value();
  }
  if (!ho.data && (args->has("--seed") || args->has("--data-memory-cap")))
    d.error("zerosim validate", args->has("--seed") ? "--seed" : "--data-memory-cap",
            "expected data mode for this flag, got --no-data");
  if (!check_outputs(args.value(), specs, {"--output", "--chrome-trace", "--collectives-out"}, err))
    return kExitInvalidInput;
  if (report(d, err)) return kExitInvalidInput;
  if (on_cuda)
    if (const int rc = validate_cuda_precheck(argv, args.value(), err); rc >= 0) return rc;

  auto run = build_run(args.value());
  if (report(run.diagnostics(), err)) return kExitInvalidInput;
  const Schedule& s = run->schedule;
  auto graph = lower_schedule(s);
  if (report(graph.diagnostics(), err)) return kExitInvalidInput;
  EngineOptions eo;
  eo.record_trace = false;
  auto predicted = simulate(s, graph.value(), run->scenario.cluster.gpu, eo);
  if (report(predicted.diagnostics(), err)) return kExitInvalidInput;
  ho.data_options.gradient_clipping = run->scenario.ds.gradient_clipping;
  ho.data_options.overflow_steps = run->scenario.overflow_steps;
  if (on_cuda)
    return run_validate_cuda(args.value(), s, graph.value(), predicted.value(), ho.data_options,
                             out, err);
  if (s.meta.world > exec::kMaxHostRanks) {  // one thread per rank: refused before any starts
    err << "--gpus: expected at most " << exec::kMaxHostRanks
        << " ranks on the host backend (one thread per rank), got " << s.meta.world << "\n";
    return kExitInvalidInput;
  }
  if (ho.data)
    if (auto gap = exec::data_mode_refusal(s, ho)) {  // one line, before anything runs
      Diagnostics refused;
      refused.add(*gap);
      report(refused, err);
      return kExitInvalidInput;
    }
  const char* mode = ho.data ? "data mode" : "count-only";
  err << "validate: " << s.meta.world << " ranks x " << s.ops.size() << " ops on the host backend ("
      << mode << ")...\n";
  auto measured = exec::run_host(s, graph.value(), ho);
  if (!measured.ok()) {
    report(measured.diagnostics(), err);
    err << "validate: the run failed; nothing was compared\n";
    return kExitInfeasible;
  }
  exec::HostRun& m = measured.value();
  m.trace.meta.schedule_digest = schedule_digest(s);
  const SimulationResult& p = predicted.value();

  // 1. The collective log of every rank, as text.
  const std::string plog = lines_of([&](std::ostream& o) { (void)write_collective_log(s, o); });
  const std::string mlog =
      lines_of([&](std::ostream& o) { exec::write_measured_collective_log(s, m, o); });
  Verdicts v;
  const std::string log_diff = first_log_difference(plog, mlog);
  v.log = log_diff.empty();
  // 2. Peak device memory per rank and category against its role's ledger.
  std::uint32_t memory_bad = 0;
  std::string memory_first;
  Bytes max_peak = 0;
  for (const exec::HostRankResult& r : m.ranks) {
    const RoleMemory& rm = p.memory[r.role];
    max_peak = std::max(max_peak, r.memory.device_peak);
    const bool same = rm.device.bytes == r.memory.device_peak &&
                      rm.device.by_category == r.memory.device_peak_by_category &&
                      rm.host.bytes == r.memory.host_peak;
    if (!same && memory_bad++ == 0)
      memory_first = "rank " + std::to_string(r.rank) + " (role " + std::to_string(r.role) +
                     "): predicted " + std::to_string(rm.device.bytes) + " bytes, measured " +
                     std::to_string(r.memory.device_peak);
  }
  v.memory = memory_bad == 0;
  // 3. Bytes per kind: S and calls exactly; sent per rank within the prediction's rounding.
  struct KindRow {
    CollectiveKind kind;
    std::uint64_t calls = 0;
    Bytes predicted_sent = 0, min_sent = UINT64_MAX, max_sent = 0, sum_sent = 0;
    bool ok = true;
  };
  std::vector<KindRow> rows;
  for (const CommKindSummary& c : p.summary.comm) {
    KindRow row{c.kind};
    row.calls = c.calls;
    row.predicted_sent = c.bytes_sent;
    for (const exec::HostRankResult& r : m.ranks) {
      const Bytes sent = r.sent_by_kind[static_cast<std::size_t>(c.kind)];
      row.min_sent = std::min(row.min_sent, sent);
      row.max_sent = std::max(row.max_sent, sent);
      row.sum_sent += sent;
    }
    std::uint64_t measured_calls = 0;
    for (const exec::ExecutedCollective& e : m.ranks[0].collectives)
      measured_calls += s.ops[e.op].collective == c.kind;
    const bool rooted = c.kind == CollectiveKind::Reduce || c.kind == CollectiveKind::Broadcast;
    const std::uint64_t world = m.ranks.size();
    // The prediction is the ring's per-rank average rounded up per call (the busiest rank for
    // reduce/broadcast): mean <= predicted < mean + 1 byte per call.
    row.ok = measured_calls == c.calls &&
             (rooted ? row.max_sent == row.predicted_sent
                     : row.sum_sent <= row.predicted_sent * world &&
                           row.predicted_sent * world <= row.sum_sent + c.calls * world);
    v.bytes = v.bytes && row.ok;
    rows.push_back(row);
  }

  OutputBatch outputs(err);  // replaced together, or none
  if (auto path = args->get("--output"))
    outputs.add("--output", *path, [&](std::ostream& o) {
      write_trace_json(m.trace, o);
      return true;
    });
  if (auto path = args->get("--chrome-trace"))
    outputs.add("--chrome-trace", *path, [&](std::ostream& o) {
      write_chrome_trace(m.trace, o);
      return true;
    });
  if (auto path = args->get("--collectives-out"))
    outputs.add("--collectives-out", *path, [&](std::ostream& o) {
      o << mlog;
      return true;
    });
  if (!outputs.commit()) return kExitInvalidInput;

  SimTime step_ns = 0;
  if (!p.summary.steps.empty())
    step_ns = p.summary.steps.back().end_ns - p.summary.steps.back().start_ns;
  if (fmt.value() == "json") {
    out << "{\"format\": \"zerosim-validate\", \"version\": 1, \"backend\": \"host\", \"mode\": "
           "\""
        << (ho.data ? "data" : "count-only") << "\", \"passed\": " << (v.all() ? "true" : "false")
        << ", \"ranks\": " << m.ranks.size() << ", \"ops\": " << s.ops.size()
        << ",\n \"collective_log\": {\"lines\": " << std::count(mlog.begin(), mlog.end(), '\n')
        << ", \"identical\": " << (v.log ? "true" : "false")
        << "},\n \"memory\": {\"ranks_differing\": " << memory_bad
        << ", \"largest_peak_bytes\": " << max_peak << "},\n \"bytes\": [";
    for (std::size_t i = 0; i < rows.size(); ++i)
      out << (i ? ", " : "") << "{\"kind\": \"" << collective_name(rows[i].kind)
          << "\", \"calls_per_rank\": " << rows[i].calls
          << ", \"predicted_sent_per_rank\": " << rows[i].predicted_sent
          << ", \"measured_sent_min\": " << rows[i].min_sent
          << ", \"measured_sent_max\": " << rows[i].max_sent
          << ", \"within\": " << (rows[i].ok ? "true" : "false") << "}";
    out << "],\n \"predicted_step_ns\": " << step_ns << ", \"host_wall_ns\": " << m.wall_ns
        << "}\n";
  } else {
    out << "zerosim validate: " << s.meta.model << ", stage " << s.meta.stage << ", "
        << s.meta.world << " ranks, " << s.meta.steps << " step(s); host backend, " << mode
        << "\n\n";
    out << "collective log (" << std::count(mlog.begin(), mlog.end(), '\n')
        << " lines, every rank): " << (v.log ? "identical" : "DIFFERS at " + log_diff) << "\n";
    out << "peak device memory per rank and category: "
        << (v.memory ? "equal to the simulator's ledger on all " + std::to_string(m.ranks.size()) +
                           " ranks (largest " + format_size(max_peak) + ")"
                     : "DIFFERS on " + std::to_string(memory_bad) +
                           (memory_bad == 1 ? " rank" : " ranks") + "; first: " + memory_first)
        << "\n\nbytes sent per rank:\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-24s %8s %18s %18s %18s  %s\n", "collective", "calls",
                  "predicted", "measured min", "measured max", "");
    out << line;
    for (const KindRow& r : rows) {
      std::snprintf(line, sizeof line, "  %-24s %8llu %18llu %18llu %18llu  %s\n",
                    std::string(collective_name(r.kind)).c_str(),
                    static_cast<unsigned long long>(r.calls),
                    static_cast<unsigned long long>(r.predicted_sent),
                    static_cast<unsigned long long>(r.min_sent),
                    static_cast<unsigned long long>(r.max_sent), r.ok ? "ok" : "DIFFERS");
      out << line;
    }
    // What "ok" judges, since the columns differ where it passes (a broadcast's predicted S next
    // to a measured minimum of 0: its root sends, the others only receive).
    out << "  ok: the calls match and the predicted per-rank average is at most one byte per "
           "call above the measured mean (broadcast, reduce: the measured maximum, the root's, "
           "equals the prediction)\n";
    std::snprintf(line, sizeof line,
                  "\ntime: predicted step %.3f ms (simulated GPU time); host run %.3f ms wall "
                  "(host time is not GPU time: not compared)\n",
                  static_cast<double>(step_ns) / 1e6, static_cast<double>(m.wall_ns) / 1e6);
    out << line;
    out << "\nverdict: " << (v.all() ? "PASS" : "FAIL") << "\n";
  }
  return v.all() ? kExitOk : kExitInfeasible;
}

}  // namespace zerosim::cli
