// `zerosim simulate`: runs the schedule through the discrete-event engine and prints the summary
// (step time, compute, exposed communication, traffic per collective kind, peak memory per rank
// role); writes the zerosim trace, the summary JSON and a Chrome/Perfetto trace on request.

#include "args.h"
#include "commands.h"
#include "output_file.h"
#include "run_inputs.h"
#include "zerosim/engine.h"
#include "zerosim/simulate_report.h"
#include "zerosim/trace.h"

namespace zerosim::cli {

namespace {
std::vector<FlagSpec> simulate_flags() {
  auto f = run_flags();
  f.push_back({"--trace", "FILE", "write zerosim's trace JSON (\"zerosim-trace\" version 1)"});
  f.push_back({"--summary", "FILE", "write the summary JSON (\"zerosim-summary\" version 1)"});
  f.push_back({"--chrome-trace", "FILE",
               "write a Chrome Trace Event file for Perfetto / chrome://tracing"});
  f.push_back({"--nccl-tests", "FILE",
               "calibrate collectives from nccl-tests output (all_reduce_perf, ...)"});
  f.push_back(
      {"--efficiency", "X", "fraction of the GPU's dense rate compute achieves; default 0.5"});
  f.push_back({"--format", "FMT", "table|json summary on stdout; default table"});
  return f;
}
constexpr const char* kSummary =
    "Replays one or more training steps event by event (gradient hooks, IPG buckets, collectives,\n"
    "optimizer step, parameter gathers) and predicts step time, exposed communication, traffic "
    "and\n"
    "memory over time per rank.";

}  // namespace

std::string simulate_help() { return format_help("simulate", kSummary, simulate_flags()); }

int run_simulate(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  const auto specs = simulate_flags();
  auto args = parse_args(argv, specs, "simulate");
  if (!args.ok()) {
    report(args.diagnostics(), err);
    return kExitInvalidInput;
  }
  if (args->help) {
    out << simulate_help();
    return kExitOk;
  }
  Diagnostics d;
  EngineOptions opts;
  if (auto e = args->get("--efficiency")) {
    auto v = parse_number("--efficiency", *e, 1e-6, 1.0);
    if (v.ok())
      opts.compute_efficiency = v.value();
    else
      d.append(v.diagnostics());
  }
  auto fmt = parse_choice("--format", args->get("--format").value_or("table"), {"table", "json"});
  d.append(fmt.diagnostics());
  if (auto n = args->get("--nccl-tests")) {
    auto cal = load_nccl_tests(*n);
    d.append(cal.diagnostics());
    if (cal.ok()) opts.calibration = cal.value();
  }
  for (const char* f : {"--trace", "--summary", "--chrome-trace"})
    if (auto p = args->get(f); p && !can_write(f, *p, err)) return kExitInvalidInput;
  if (report(d, err)) return kExitInvalidInput;
  opts.record_trace = args->has("--trace") || args->has("--chrome-trace");
  auto run = build_run(args.value());
  if (report(run.diagnostics(), err)) return kExitInvalidInput;
  auto sim = simulate(run->schedule, run->scenario.cluster.gpu, opts);
  if (report(sim.diagnostics(), err)) return kExitInvalidInput;
  const auto& r = sim.value();
  if (auto p = args->get("--trace"))
    if (!write_file("--trace", *p, err, [&](std::ostream& o) { write_trace_json(r.trace, o); }))
      return kExitInvalidInput;
  if (auto p = args->get("--chrome-trace"))
    if (!write_file("--chrome-trace", *p, err,
                    [&](std::ostream& o) { write_chrome_trace(r.trace, o); }))
      return kExitInvalidInput;
  if (auto p = args->get("--summary"))
    if (!write_file("--summary", *p, err,
                    [&](std::ostream& o) { write_summary_json(r.summary, o); }))
      return kExitInvalidInput;
  write_simulate_report(r.summary, run->schedule,
                        fmt.value() == "json" ? OutputFormat::Json : OutputFormat::Table, out);
  return r.summary.oom ? kExitInfeasible : kExitOk;
}

}  // namespace zerosim::cli
