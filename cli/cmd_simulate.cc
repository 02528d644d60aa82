// `zerosim simulate`: runs the schedule through the discrete-event engine and prints the summary
// (step time, compute, exposed communication, traffic per collective kind, peak memory per rank
// role); writes the zerosim trace, the summary JSON and a Chrome/Perfetto trace on request.
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "output_file.h"
#include "run_inputs.h"
#include "zerosim/engine.h"
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

std::string ms(SimTime ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
  return b;
}

void print_summary(const Summary& s, const Schedule& sched, bool zero_init, std::ostream& out) {
  const auto& m = s.meta;
  out << "zerosim simulate: " << m.model << ", stage " << m.stage << " (" << m.optimizer << "), "
      << m.world << " x " << m.gpu << " (" << m.nodes << " node" << (m.nodes == 1 ? "" : "s")
      << " x " << m.gpus_per_node << "), " << m.steps << " step" << (m.steps == 1 ? "" : "s")
      << " x " << m.grad_accum << " micro-step" << (m.grad_accum == 1 ? "" : "s") << "; DeepSpeed "
      << m.deepspeed_version << ", " << m.mode << " mode\n\n";
  out << "time (simulated):\n";
  out << "  init (flatten, broadcast)  " << ms(s.init_ns) << "\n";
  for (const auto& st : s.steps)
    out << "  step " << st.step << "  " << ms(st.end_ns - st.start_ns) << "  (compute "
        << ms(st.compute_ns) << ", exposed communication " << ms(st.exposed_comm_ns)
        << ", exposed offload " << ms(st.exposed_offload_ns) << ")\n";
  out << "\ntraffic per rank over the run (ring algorithms, nccl-tests conventions):\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s %8s %16s %16s %12s\n", "collective", "calls",
                "sent (GiB)", "received (GiB)", "time");
  out << line;
  for (const auto& c : s.comm) {
    std::snprintf(line, sizeof line, "  %-24s %8llu %16.3f %16.3f %12s\n",
                  std::string(collective_name(c.kind)).c_str(),
                  static_cast<unsigned long long>(c.calls),
                  static_cast<double>(c.bytes_sent) / kGiB,
                  static_cast<double>(c.bytes_received) / kGiB, ms(c.time_ns).c_str());
    out << line;
  }
  out << "\npeak device memory per rank role (whole run; steady state = the last step):\n";
  std::size_t shown = 0;
  for (const auto& p : s.peaks) {
    if (shown == 8 && p.role != s.peak_role) continue;
    ++shown;
    out << "  role " << p.role << " (rank " << p.rank << ", " << p.rank_count << " rank"
        << (p.rank_count == 1 ? "" : "s") << "): peak " << format_gib(p.device.bytes) << ", steady "
        << format_gib(p.steady.bytes) << ":";
    for (std::size_t c = 0; c < p.steady.by_category.size(); ++c)
      if (p.steady.by_category[c])
        out << " " << category_name(static_cast<BufferCategory>(c)) << " "
            << format_gib(p.steady.by_category[c]);
    out << (p.role == s.peak_role ? "  <- largest" : "") << "\n";
  }
  if (s.peaks.size() > shown)
    out << "  ... " << s.peaks.size() - shown << " more roles (see --summary)\n";
  if (s.oom)
    out << "\nOUT OF MEMORY at " << ms(s.oom->t) << " on rank " << s.oom_rank << " (" << s.oom_ranks
        << " ranks): allocating " << s.oom->buffer_name << " (" << format_gib(s.oom->bytes)
        << ") with " << format_gib(s.oom->live_bytes) << " live of " << format_gib(s.oom->capacity)
        << "\n";
  if (s.oom && s.oom->buffer_name == kStage3WholeModelBuffer && !zero_init)
    out << "hint: the OOM is at initialization: without zero.Init every GPU holds the whole model "
           "before "
           "partitioning. If the model is built under deepspeed.zero.Init (HF Trainer does so for "
           "stage 3), "
           "pass --zero-init or set \"training\": {\"zero_init\": true}\n";
  out << "\n"
      << sched.ops.size() << " ops simulated; memory is what the schedule allocates (model states, "
      << "buffers, activations); `zerosim plan` adds CUDA context, NCCL buffers and "
         "fragmentation\n";
  for (const auto& n : m.notes) out << "note: " << n << "\n";
}
}  // namespace

int run_simulate(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  const auto specs = simulate_flags();
  auto args = parse_args(argv, specs, "simulate");
  if (!args.ok()) {
    report(args.diagnostics(), err);
    return kExitInvalidInput;
  }
  if (args->help) {
    out << format_help("simulate", kSummary, specs);
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
  if (fmt.value() == "json")
    write_summary_json(r.summary, out);
  else
    print_summary(r.summary, run->schedule, run->scenario.training.zero_init, out);
  return r.summary.oom ? kExitInfeasible : kExitOk;
}

}  // namespace zerosim::cli
