// Scenario resolution for the commands that build a schedule. Flags mirror `zerosim plan`; with a
// scenario file, a model/cluster/training flag overrides that one value of the scenario and the
// command says so (scenario_overrides.h).
#include "run_inputs.h"

#include <utility>

#include "cluster_flags.h"
#include "inputs.h"
#include "lora_flags.h"
#include "scenario_overrides.h"
#include "zerosim/lora.h"
#include "zerosim/work_limit.h"

namespace zerosim::cli {

std::vector<FlagSpec> run_flags() {
  std::vector<FlagSpec> f = {{"--scenario", "FILE",
                              "a scenario file (scenarios/*.json); a model/cluster/training flag "
                              "given with it overrides that one value"}};
  for (auto& m : model_cluster_flags()) f.push_back(m);
  f.push_back({"--world-size", "N", "data-parallel ranks (same as --gpus)"});
  f.push_back({"--stage", "S", "ZeRO stage 0..3 when no --ds-config gives one"});
  f.push_back({"--steps", "K",
               "optimizer steps to run, step 0 first; default 2: a warm-up step, then the steady "
               "step reported (or the scenario's)"});
  f.push_back({"--deepspeed-version", "V", "DeepSpeed behaviour: edaa722 (default) or 0.14.4"});
  f.push_back({"--mode", "MODE", "deepspeed|paper schedule; default deepspeed"});
  f.push_back({"--zero-init", "",
               "stage 3: the model is built under deepspeed.zero.Init (HF Trainer does this)"});
  f.push_back({"--overflow-steps", "LIST",
               "steps whose fp16/bf16 overflow check fails, e.g. 0 (or 0,1 with --steps 3): "
               "step() skips the update; the last step must update"});
  return f;
}

namespace {

Result<Scenario> scenario_from_flags(const ParsedArgs& a, std::string& links_basis) {
  ParsedArgs plan_args = a;
  if (a.has("--world-size")) {
    if (a.has("--gpus"))
      return fail<Scenario>("--world-size", "", "give --world-size or --gpus, not both");
    plan_args.values["--gpus"] = *a.get("--world-size");
  }
  auto in = load_inputs(plan_args);
  if (!in.ok()) return Result<Scenario>(in.diagnostics());
  links_basis = in->links_basis;
  Scenario s;
  s.name = in->model.name;
  s.source = "flags";
  s.model = std::move(in->model);
  s.ds = in->ds;
  s.cluster = in->cluster;
  s.training = in->training;
  Diagnostics d = in.diagnostics();
  if (a.has("--stage")) {
    auto st = parse_uint("--stage", *a.get("--stage"), 0, 3);
    if (!st.ok()) return Result<Scenario>(st.diagnostics());
    if (in->ds_config_given && static_cast<int>(st.value()) != s.ds.zero.stage)
      return fail<Scenario>("--stage", "",
                            "conflicts with the ds_config's zero_optimization.stage = " +
                                std::to_string(s.ds.zero.stage) + " (got " + *a.get("--stage") +
                                ")");
    if (!in->ds_config_given) {
      s.ds = default_ds_config(static_cast<int>(st.value()), s.ds.lp_dtype(), in->ds.version);
      s.ds.micro_batch = in->ds.micro_batch;
      s.ds.grad_accum_steps = in->ds.grad_accum_steps;
      s.ds.train_batch_size = in->ds.train_batch_size;
    }
  } else if (!in->ds_config_given) {
    return fail<Scenario>(
        "zerosim", "",
        a.has("--trainer-config")
            ? "which ZeRO stage? the trainer config names no ds_config (its deepspeed: key); give "
              "--stage 0..3 or --ds-config FILE"
            : "which ZeRO stage? give --stage 0..3, --ds-config FILE or --scenario FILE");
  }
  // A trainer config's stage 3 model is built under zero.Init (inputs.h); paper accounting has no
  // init phase.
  const bool paper = a.has("--mode") && *a.get("--mode") == "paper";
  if (in->trainer_zero_init && s.ds.zero.stage == 3 && !paper && !a.has("--zero-init")) {
    s.training.zero_init = true;
    s.ds.notes.push_back(in->trainer_zero_init_note);
  }
  return Result<Scenario>(std::move(s), d);
}

}  // namespace

Result<ResolvedRun> resolve_run(const ParsedArgs& a) {
  Diagnostics d;
  std::string links;
  Result<Scenario> sc = Scenario{};
  if (a.has("--scenario")) {
    sc = load_scenario_with_overrides(a);
  } else {
    sc = scenario_from_flags(a, links);
  }
  d.append(sc.diagnostics());
  if (!sc.ok()) return Result<ResolvedRun>(d);
  ResolvedRun run;
  run.scenario = std::move(sc.value());
  Scenario& s = run.scenario;
  // The cluster link flags describe the machine, not the experiment: they apply to a scenario too.
  if (a.has("--scenario")) links = apply_cluster_link_flags(a, s.cluster, d);
  if (d.has_errors()) return Result<ResolvedRun>(d);
  run.links_basis = links;
  if (a.has("--steps")) {
    auto k = parse_uint("--steps", *a.get("--steps"), 1, 10000);
    if (!k.ok()) return Result<ResolvedRun>(k.diagnostics());
    s.steps = static_cast<std::uint32_t>(k.value());
  }
  if (a.has("--deepspeed-version")) {
    auto v = parse_deepspeed_version_flag(*a.get("--deepspeed-version"));
    if (!v.ok()) return Result<ResolvedRun>(v.diagnostics());
    s.version = v.value();
  }
  if (a.has("--overflow-steps")) {
    auto list = parse_uint_list("--overflow-steps", *a.get("--overflow-steps"), 0, 9999);
    if (!list.ok()) return Result<ResolvedRun>(list.diagnostics());
    s.overflow_steps = list.value();
    if (const std::string why = overflow_steps_problem(s.overflow_steps, s.steps); !why.empty())
      return fail<ResolvedRun>("--overflow-steps", "", why);
  }
  if (a.has("--mode")) {
    auto m = parse_choice("--mode", *a.get("--mode"), {"deepspeed", "paper"});
    if (!m.ok()) return Result<ResolvedRun>(m.diagnostics());
    s.mode = m.value() == "paper" ? Accounting::Paper : Accounting::DeepSpeed;
  }
  if (a.has("--zero-init")) {
    if (const std::string why = zero_init_problem(s.ds.zero.stage, s.mode); !why.empty())
      return fail<ResolvedRun>("--zero-init", "", why);
    s.training.zero_init = true;
  }
  if (const std::string why =
          quantized_base_problem(s.model, s.ds.zero.stage, s.training.zero_init);
      !why.empty())
    return fail<ResolvedRun>(
        s.training.zero_init && a.has("--zero-init") ? "--zero-init" : base_quantization_source(a),
        "", why);
  // Before anything is built: a schedule's size is steps x micro-steps x tensors (work_limit.h),
  // whether the counts came from flags, a scenario or a ds_config's train_batch_size.
  if (!check_schedule_work(s.steps, s.ds.grad_accum_steps, s.model.params.size(),
                           a.has("--scenario") ? *a.get("--scenario") : "zerosim", d))
    return Result<ResolvedRun>(d);
  return Result<ResolvedRun>(std::move(run), d);
}

Result<BuiltRun> build_run(const ParsedArgs& a) {
  Result<ResolvedRun> resolved = resolve_run(a);
  if (!resolved.ok()) return Result<BuiltRun>(resolved.diagnostics());
  Diagnostics d = resolved.diagnostics();
  BuiltRun run;
  run.scenario = std::move(resolved.value().scenario);
  run.links_basis = std::move(resolved.value().links_basis);
  const Scenario& s = run.scenario;
  auto plan = plan_partition(
      s.model, partition_options(s.ds, static_cast<std::uint32_t>(s.cluster.world_size())));
  d.append(plan.diagnostics());
  if (!plan.ok()) return Result<BuiltRun>(d);
  run.plan = std::move(plan.value());
  auto sched = build_schedule(schedule_input(s, run.plan));
  d.append(sched.diagnostics());
  if (!sched.ok()) return Result<BuiltRun>(d);
  run.schedule = std::move(sched.value());
  return Result<BuiltRun>(std::move(run), d);
}

}  // namespace zerosim::cli
