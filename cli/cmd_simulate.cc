// `zerosim simulate`: runs the schedule (built from a scenario or the model flags, or read from a
// schedule file with --schedule) through the discrete-event engine and prints the report
// (simulate_report.h); writes the zerosim trace, the summary JSON and a Chrome/Perfetto trace on
// request.

#include <optional>

#include "args.h"
#include "cluster_flags.h"
#include "commands.h"
#include "inputs.h"
#include "output_file.h"
#include "run_inputs.h"
#include "zerosim/calibration.h"
#include "zerosim/engine.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/schedule_digest.h"
#include "zerosim/schedule_io.h"
#include "zerosim/simulate_report.h"
#include "zerosim/time_model.h"
#include "zerosim/trace.h"

namespace zerosim::cli {

namespace {
std::vector<FlagSpec> simulate_flags() {
  auto f = run_flags();
  f.push_back({"--schedule", "FILE",
               "simulate a schedule file (zerosim schedule --output) instead of building one; "
               "with --gpu only"});
  f.push_back({"--trace", "FILE", "write zerosim's trace JSON (\"zerosim-trace\" version 1)"});
  f.push_back({"--summary", "FILE", "write the summary JSON (\"zerosim-summary\" version 1)"});
  f.push_back({"--chrome-trace", "FILE",
               "write a Chrome Trace Event file for Perfetto / chrome://tracing"});
  f.push_back({"--nccl-tests", "FILE",
               "calibrate collectives from nccl-tests output (all_reduce_perf, ...)"});
  f.push_back({"--efficiency", "X",
               "fraction of the GPU's dense rate compute achieves; default: the GPU generation's "
               "measured curve at the model's hidden size (docs/time_model.md)"});
  f.push_back({"--calibration", "FILE",
               "apply a calibration (zerosim calibrate -o FILE) fitted on this GPU: its compute "
               "efficiency, host costs and collectives replace the defaults (and --nccl-tests)"});
  f.push_back({"--format", "FMT", "table|json summary on stdout; default table"});
  return f;
}
constexpr const char* kSummary =
    "Replays one or more training steps event by event (gradient hooks, IPG buckets, collectives,\n"
    "optimizer step, parameter gathers) and predicts step time, exposed communication, traffic "
    "and\n"
    "memory over time per rank.";

// What to simulate: the schedule and the GPU it runs on.
struct Target {
  Schedule schedule;
  GpuSpec gpu;
  GemmShape gemm;           ///< zeros for a schedule file (it carries no model shape)
  std::string links_basis;  ///< what the cluster link flags replaced
};

// --schedule FILE: a schedule written by `zerosim schedule --output` (or edited by hand). Its meta
// fixes the model, the cluster shape (world, nodes, GPUs per node) and the DeepSpeed config, so of
// the run flags only --gpu applies (default as for the other inputs); any other is refused.
Result<Target> target_from_schedule_file(const ParsedArgs& a) {
  const auto links = cluster_link_flags();
  const auto is_link_flag = [&](const std::string& name) {
    for (const FlagSpec& l : links)
      if (l.name == name) return true;
    return false;
  };
  for (const FlagSpec& f : run_flags())
    if (f.name != "--gpu" && !is_link_flag(f.name) && a.has(f.name))
      return fail<Target>(
          f.name, "",
          "cannot be combined with --schedule (the schedule file fixes the model, cluster, "
          "DeepSpeed config and steps; only --gpu and the cluster link flags apply)");
  auto gpu = find_gpu(a.get("--gpu").value_or(kDefaultGpu), "--gpu");
  if (!gpu.ok()) return Result<Target>(gpu.diagnostics());
  auto s = read_schedule_file(*a.get("--schedule"));
  if (!s.ok()) return Result<Target>(s.diagnostics());
  Cluster c;
  c.gpu = gpu.value();
  c.nodes = s->meta.nodes;
  c.gpus_per_node = s->meta.gpus_per_node;
  Diagnostics d = s.diagnostics();
  std::string basis = apply_cluster_link_flags(a, c, d);
  if (d.has_errors()) return Result<Target>(d);
  return Result<Target>(Target{std::move(s.value()), c.gpu, {}, std::move(basis)}, d);
}

// Otherwise: the scenario file or the model/cluster flags, partitioned and built.
Result<Target> target_from_run_flags(const ParsedArgs& a) {
  auto run = build_run(a);
  if (!run.ok()) return Result<Target>(run.diagnostics());
  GpuSpec gpu = run->scenario.cluster.gpu;
  const GemmShape gemm = gemm_shape(run->scenario.model, run->scenario.training);
  return Result<Target>(
      Target{std::move(run->schedule), std::move(gpu), gemm, std::move(run->links_basis)},
      run.diagnostics());
}

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
  std::optional<Calibration> calibration;
  if (auto c = args->get("--calibration")) {
    auto cal = read_calibration_file(*c);
    d.append(cal.diagnostics());
    if (cal.ok()) calibration = std::move(cal.value());
  }
  if (!check_outputs(args.value(), specs, {"--trace", "--summary", "--chrome-trace"}, err))
    return kExitInvalidInput;
  if (report(d, err)) return kExitInvalidInput;
  opts.record_trace = args->has("--trace") || args->has("--chrome-trace");
  auto target = args->has("--schedule") ? target_from_schedule_file(args.value())
                                        : target_from_run_flags(args.value());
  if (report(target.diagnostics(), err)) return kExitInvalidInput;
  opts.gemm = target->gemm;
  opts.links_basis = target->links_basis;
  if (calibration && report(apply_calibration(*calibration, target->gpu, opts), err))
    return kExitInvalidInput;
  if (calibration)
    for (const std::string& w : calibration_scope_warnings(
             *calibration, target->schedule.meta.world, target->schedule.meta.gpus_per_node))
      err << "warning: " << w << "\n";
  auto sim = simulate(target->schedule, target->gpu, opts);
  if (report(sim.diagnostics(), err)) return kExitInvalidInput;
  auto& r = sim.value();
  // The trace names the schedule it ran, so `zerosim check` compares only runs of one schedule.
  if (opts.record_trace) r.trace.meta.schedule_digest = schedule_digest(target->schedule);
  const StepSpeed speed = step_speed(r.summary, target->schedule, target->gpu, target->gemm);
  // Replaced together: a failed summary leaves the trace as it was (output_file.h OutputBatch).
  OutputBatch outputs(err);
  if (auto p = args->get("--trace"))
    outputs.add("--trace", *p, [&](std::ostream& o) {
      write_trace_json(r.trace, o);
      return true;
    });
  if (auto p = args->get("--chrome-trace"))
    outputs.add("--chrome-trace", *p, [&](std::ostream& o) {
      write_chrome_trace(r.trace, o);
      return true;
    });
  if (auto p = args->get("--summary"))
    outputs.add("--summary", *p, [&](std::ostream& o) {
      write_summary_json(r.summary, o, &speed);
      return true;
    });
  if (!outputs.commit()) return kExitInvalidInput;
  write_simulate_report(r.summary, target->schedule,
                        fmt.value() == "json" ? OutputFormat::Json : OutputFormat::Table, out,
                        &speed);
  return r.summary.oom ? kExitInfeasible : kExitOk;
}

}  // namespace zerosim::cli
