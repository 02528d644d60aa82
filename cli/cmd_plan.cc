// `zerosim plan`: capacity planning without a GPU: every row simulated (row_simulation.h).
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "args.h"
#include "cluster_flags.h"
#include "commands.h"
#include "inputs.h"
#include "lora_flags.h"
#include "output_file.h"
#include "scenario_overrides.h"
#include "zerosim/calibration.h"
#include "zerosim/lora.h"
#include "zerosim/plan_report.h"
#include "zerosim/planner.h"
#include "zerosim/saturating.h"
#include "zerosim/scenario.h"
#include "zerosim/work_limit.h"

namespace zerosim::cli {

namespace {
std::vector<FlagSpec> plan_flags() {
  std::vector<FlagSpec> f = {
      {"--scenario", "FILE",
       "a scenario file (scenarios/*.json); a model/cluster/training flag given with it "
       "overrides that one value (and a note says so)"}};
  for (auto& m : model_cluster_flags()) f.push_back(m);
  f.push_back(
      {"--mode", "MODE", "deepspeed|paper accounting; default deepspeed (or the scenario's)"});
  f.push_back({"--deepspeed-version", "V",
               "DeepSpeed behaviour: edaa722 (default, or the scenario's) or 0.14.4"});
  f.push_back({"--format", "FMT", "table|json|csv|markdown; default table"});
  f.push_back({"--output", "FILE", "write the report to FILE instead of stdout"});
  f.push_back({"--sweep", "", "also list every stage x offload x power-of-two GPU count"});
  f.push_back(
      {"--max-gpus", "N", "largest GPU count searched for 'min GPUs' and --sweep; default 4096"});
  f.push_back({"--zero-init", "",
               "stage 3 rows: the model is built under deepspeed.zero.Init (HF Trainer does this); "
               "without it every GPU first holds the whole model"});
  f.push_back({"--cpu-memory-per-node", "SIZE",
               "host RAM of one node, e.g. 512GiB: a row fits only when its host/node fits too "
               "(the fits column says which side fails); default: the host is not checked"});
  f.push_back({"--calibration", "FILE",
               "time the rows with a calibration (zerosim calibrate -o FILE) fitted on this GPU"});
  f.push_back({"--verbose", "", "itemised memory breakdown and ds_config keys not modelled"});
  return f;
}
constexpr const char* kSummary =
    "What one training step needs per GPU under ZeRO stage 0-3 (and CPU offload variants):\n"
    "model states, runtime buffers, activations and overhead; whether it fits, the largest\n"
    "micro-batch, the smallest GPU count, the traffic per step, DeepSpeed's own estimate and a\n"
    "recommendation. Without a model flag it plans the default scenario: Llama-2-7B on 8 x "
    "H100-SXM-80GB.\n"
    "Exit codes: 0 the plan was made and something fits; 1 invalid input; 2 infeasible: no row\n"
    "fits, or the row of the given ds_config (or scenario) does not fit (the report is printed\n"
    "all the same).";

/// Exit 2 when the plan's answer is "it does not fit": the user's own row (a ds_config or
/// scenario) or every row. One line on `err` says which.
int infeasible_exit(const PlanResult& plan, std::ostream& err) {
  const auto& c = plan.request.cluster;
  const std::string where = std::to_string(c.world_size()) + " x " + c.gpu.name;
  for (const auto& row : plan.rows) {
    if (!row.matches_ds_config || row.fits) continue;
    err << "zerosim plan: infeasible: the ds_config's row (stage " << row.stage << ", offload "
        << offload_name(row.offload) << ") does not fit on " << where << " (";
    if (!row.gpu_fits)
      err << "GPU: "
          << format_gib(row.memory.total() - std::min(row.memory.total(), c.gpu.memory_bytes))
          << " over per GPU" << (row.host_fits ? "" : "; ");
    if (!row.host_fits) {
      const Bytes host = host_per_node(row.memory.host_bytes, c);
      const Bytes cap = plan.request.cpu_memory_per_node.value_or(0);
      err << "host: " << format_gib(host - std::min(host, cap)) << " over per node";
    }
    err << ")\n";
    return kExitInfeasible;
  }
  for (const auto& row : plan.rows)
    if (row.fits) return kExitOk;
  err << "zerosim plan: infeasible: no stage or offload variant fits on " << where << "\n";
  return kExitInfeasible;
}
}  // namespace

std::string plan_help() { return format_help("plan", kSummary, plan_flags()); }

int run_plan(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  const auto specs = plan_flags();
  auto args = parse_args(argv, specs, "plan");
  if (!args.ok()) {
    report(args.diagnostics(), err);
    return kExitInvalidInput;
  }
  if (args->help) {
    out << plan_help();
    return kExitOk;
  }
  Diagnostics d;
  auto mode =
      parse_choice("--mode", args->get("--mode").value_or("deepspeed"), {"deepspeed", "paper"});
  const bool from_scenario = args->has("--scenario");
  auto fmt_name = parse_choice("--format", args->get("--format").value_or("table"),
                               {"table", "json", "csv", "markdown", "md"});
  std::uint64_t max_gpus = 4096;
  if (args->has("--max-gpus")) {
    auto m = parse_uint("--max-gpus", *args->get("--max-gpus"), 1, kMaxGpus);
    if (m.ok())
      max_gpus = m.value();
    else
      d.append(m.diagnostics());
  }
  d.append(mode.diagnostics());
  d.append(fmt_name.diagnostics());
  PlanRequest req;
  bool used_default_model = false;
  bool trainer_zero_init = false;  // inputs.h
  std::string trainer_zero_init_note;
  if (from_scenario) {
    auto sc = load_scenario_with_overrides(args.value());
    d.append(sc.diagnostics());
    if (report(d, err)) return kExitInvalidInput;
    req.model = std::move(sc->model);
    req.cluster = sc->cluster;
    req.base = sc->ds;
    req.ds_config_given = true;  // a scenario always carries its DeepSpeed config
    req.training = sc->training;
    req.mode = sc->mode;
    req.version = sc->version;  // plan ignored it: its rows were edaa722's, simulate's 0.14.4's
    // The cluster link flags describe the machine: they apply to a scenario too (cluster_flags.h).
    Diagnostics links;
    const std::string given = apply_cluster_link_flags(args.value(), req.cluster, links);
    if (report(links, err)) return kExitInvalidInput;
    if (!given.empty()) req.base.notes.push_back("cluster links " + given);
    req.links_basis = given;
    // The report says which scenario values a flag replaced (stderr says it too), so a saved
    // table or JSON cannot be mistaken for the scenario as written.
    for (const auto& n : sc.diagnostics().items())
      if (n.severity == Severity::Note && n.source.rfind("--", 0) == 0)
        req.base.notes.push_back(n.source + " " + n.message);
  } else {
    auto inputs = load_inputs(args.value());
    d.append(inputs.diagnostics());
    if (report(d, err)) return kExitInvalidInput;
    req.model = std::move(inputs->model);
    req.cluster = inputs->cluster;
    req.base = inputs->ds;
    req.ds_config_given = inputs->ds_config_given;
    req.training = inputs->training;
    trainer_zero_init = inputs->trainer_zero_init;
    trainer_zero_init_note = inputs->trainer_zero_init_note;
    used_default_model = inputs->used_default_model;
    // As with a scenario: the report says which link figures the flags replaced, so a saved table
    // or JSON is not read as timed on the catalog's network.
    if (!inputs->links_basis.empty())
      req.base.notes.push_back("cluster links " + inputs->links_basis);
    req.links_basis = inputs->links_basis;
  }
  if (args->has("--mode") || !from_scenario)
    req.mode = mode.value() == "paper" ? Accounting::Paper : Accounting::DeepSpeed;
  if (auto v = args->get("--deepspeed-version")) {
    auto version = parse_deepspeed_version_flag(*v);
    if (report(version.diagnostics(), err)) return kExitInvalidInput;
    req.version = version.value();
  }
  if (auto cpu = args->get("--cpu-memory-per-node")) {
    // 1 PiB: beyond any node, and catches a size given in bytes with a unit.
    auto m = parse_size_flag("--cpu-memory-per-node", *cpu, 1048576);
    if (!m.ok()) {
      report(m.diagnostics(), err);
      return kExitInvalidInput;
    }
    req.cpu_memory_per_node = m.value();
  }
  req.sweep_max_gpus = max_gpus;
  req.full_sweep = args->has("--sweep");
  if (args->has("--zero-init")) {
    if (req.mode != Accounting::DeepSpeed) {
      err << "zerosim plan: --zero-init: expected --mode deepspeed (paper accounting has no init "
             "phase), got --mode paper\n";
      return kExitInvalidInput;
    }
    req.training.zero_init = true;
  } else if (trainer_zero_init && req.mode == Accounting::DeepSpeed) {
    req.training.zero_init = true;  // the stage 3 rows (a trainer config: inputs.h)
    req.base.notes.push_back(trainer_zero_init_note);
  }
  // An 8-bit base is not modelled under stage 3: a ds_config asking for it is refused, and
  // otherwise the stage 3 rows are left out (and a note says so).
  const int stage = req.ds_config_given ? req.base.zero.stage : 0;
  if (const std::string why = quantized_base_problem(req.model, stage, req.training.zero_init);
      !why.empty()) {
    err << "zerosim plan: "
        << (req.training.zero_init && args->has("--zero-init")
                ? "--zero-init"
                : base_quantization_source(args.value()))
        << ": " << why << "\n";
    return kExitInvalidInput;
  }
  if (!quantized_base_problem(req.model, 3, false).empty()) {
    req.max_stage = 2;
    req.base.notes.push_back(
        "8-bit base: no stage 3 rows (Int8Params under ZeRO stage 3 are not modelled)");
  }
  // QLoRA: bitsandbytes' state beside the quantized weights, on every rank (zerosim/lora.h).
  req.overheads.quantization_state = quantization_state_bytes(req.model);
  req.overheads.dequantized_weight = dequantized_weight_bytes(req.model, req.base.lp_dtype());
  // What the rows do with the quantized weights: an 8-bit base has no stage 3 rows (above).
  const bool four_bit = std::any_of(req.model.params.begin(), req.model.params.end(),
                                    [](const ParamTensor& t) { return t.quant_bits == 4; });
  if (req.overheads.quantization_state > 0 && four_bit)
    req.base.notes.push_back(
        "bitsandbytes 4-bit base: transformers' from_pretrained builds it outside "
        "deepspeed.zero.Init, so stage 3 rows start with the whole quantized model on every GPU "
        "(--zero-init is refused); its packed 4-bit weights are partitioned like the 16-bit "
        "params (bnb_4bit_quant_storage = the training dtype, which ZeRO-3 needs); step times "
        "leave out the dequantization (each quantized matmul is timed as a 16-bit one)");
  else if (req.overheads.quantization_state > 0)
    req.base.notes.push_back(
        "bitsandbytes 8-bit base: its int8 weights are frozen and held whole on every GPU by "
        "stages 0-2, beside their per-row scales; step times leave out the int8 matmul's own "
        "cost (each is timed as a 16-bit one)");
  if (auto c = args->get("--calibration")) {
    auto cal = read_calibration_file(*c);
    if (report(cal.diagnostics(), err)) return kExitInvalidInput;
    EngineOptions probe;  // refuses another GPU's calibration before any row is simulated
    if (report(apply_calibration(cal.value(), req.cluster.gpu, probe), err))
      return kExitInvalidInput;
    req.base.notes.push_back(calibration_note(cal.value()));
    for (std::string& w : calibration_scope_warnings(cal.value(), req.cluster.world_size(),
                                                     req.cluster.gpus_per_node))
      req.base.warnings.push_back(std::move(w));
    req.calibration = std::make_shared<const Calibration>(std::move(cal.value()));
  }
  if (!check_outputs(args.value(), specs, {"--output"}, err)) return kExitInvalidInput;
  if (used_default_model)
    err << "note: no model given; planning the default scenario " << req.model.name << " on "
        << req.cluster.world_size() << " x " << req.cluster.gpu.name << "\n";
  // Every row builds its schedule (kDefaultSteps steps): the work limit simulate applies
  // (work_limit.h). A million-tensor param list took 17 GB and minutes here before.
  {
    Diagnostics work;
    if (!check_schedule_work(kDefaultSteps, req.base.grad_accum_steps, req.model.params.size(),
                             "zerosim plan", work)) {
      report(work, err);
      return kExitInvalidInput;
    }
  }
  auto plan = make_plan(req);
  if (report(plan.diagnostics(), err)) return kExitInvalidInput;

  const auto format = *parse_output_format(fmt_name.value());
  const bool verbose = args->has("--verbose");
  if (auto path = args->get("--output")) {
    if (!write_file("--output", *path, err, [&](std::ostream& f) {
          write_plan(plan.value(), format, f, verbose);
          return true;
        }))
      return kExitInvalidInput;
  } else {
    write_plan(plan.value(), format, out, verbose);
  }
  return infeasible_exit(plan.value(), err);
}

}  // namespace zerosim::cli
