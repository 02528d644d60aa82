// The what-if session: see what_if.h.
#include "whatif/what_if.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "zerosim/engine.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule_builder.h"

namespace zerosim::view {

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const GpuSpec& g : gpu_catalog()) names.push_back(g.name);
  return names;
}

Knobs knobs_of(const DsConfig& ds, const Knobs& rest) {
  Knobs k = rest;
  k.stage = ds.zero.stage;
  k.offload_optimizer = ds.zero.offload_optimizer.device == OffloadDevice::Cpu;
  k.offload_param = ds.zero.offload_param.device == OffloadDevice::Cpu;
  k.micro_batch = ds.micro_batch;
  k.grad_accum = ds.grad_accum_steps;
  k.reduce_bucket_size = ds.zero.reduce_bucket_size;
  k.overlap_comm = ds.zero.overlap_comm;
  k.contiguous_gradients = ds.zero.contiguous_gradients;
  k.prefetch_bucket_size = ds.zero.prefetch_bucket_size;
  k.param_persistence_threshold = ds.zero.param_persistence_threshold;
  k.max_live_parameters = ds.zero.max_live_parameters;
  return k;
}

Knobs knobs_of(const Scenario& s) {
  Knobs rest;
  rest.activation_checkpointing = s.training.activation_checkpointing;
  rest.gpu = s.cluster.gpu.name;
  rest.nodes = s.cluster.nodes;
  rest.gpus_per_node = s.cluster.gpus_per_node;
  return knobs_of(s.ds, rest);
}

namespace {

// Decimal digits only, in [lo, hi]; nullopt otherwise.
std::optional<std::uint64_t> to_uint(const std::string& v, std::uint64_t lo, std::uint64_t hi) {
  if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const std::uint64_t n = std::stoull(v);
  if (n < lo || n > hi) return std::nullopt;
  return n;
}

}  // namespace

std::string set_knob(Knobs& k, const std::string& key, const std::string& value) {
  const std::string got = ", got \"" + value + "\"";
  auto boolean = [&](bool& out) -> std::string {
    if (value != "true" && value != "false") return "expected true or false" + got;
    out = value == "true";
    return {};
  };
  auto uint = [&](std::uint64_t& out, std::uint64_t lo, std::uint64_t hi) -> std::string {
    const std::optional<std::uint64_t> n = to_uint(value, lo, hi);
    if (!n) return "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) + got;
    out = *n;
    return {};
  };
  constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 50;
  if (key == "stage") {
    std::uint64_t st = 0;
    std::string e = uint(st, 0, 3);
    if (e.empty()) k.stage = static_cast<int>(st);
    return e;
  }
  if (key == "offload_optimizer") return boolean(k.offload_optimizer);
  if (key == "offload_param") return boolean(k.offload_param);
  if (key == "micro_batch") return uint(k.micro_batch, 1, 1024);
  if (key == "grad_accum") return uint(k.grad_accum, 1, 1024);
  if (key == "activation_checkpointing") return boolean(k.activation_checkpointing);
  if (key == "reduce_bucket_size") return uint(k.reduce_bucket_size, 1, kMaxElements);
  if (key == "overlap_comm") return boolean(k.overlap_comm);
  if (key == "contiguous_gradients") return boolean(k.contiguous_gradients);
  if (key == "prefetch_bucket_size") return uint(k.prefetch_bucket_size, 1, kMaxElements);
  if (key == "param_persistence_threshold") {
    return uint(k.param_persistence_threshold, 0, kMaxElements);
  }
  if (key == "max_live_parameters") return uint(k.max_live_parameters, 1, kMaxElements);
  if (key == "gpu") {
    if (value.empty()) return "expected a GPU catalog name" + got;
    k.gpu = value;  // apply_knobs looks it up and names the catalog's GPUs when it is unknown
    return {};
  }
  if (key == "nodes") return uint(k.nodes, 1, 4096);
  if (key == "gpus_per_node") return uint(k.gpus_per_node, 1, 64);
  return "expected a knob (stage, offload_optimizer, offload_param, micro_batch, grad_accum, "
         "activation_checkpointing, reduce_bucket_size, overlap_comm, contiguous_gradients, "
         "prefetch_bucket_size, param_persistence_threshold, max_live_parameters, gpu, nodes, "
         "gpus_per_node), got \"" +
         key + "\"";
}

std::string ds_config_json(const DsConfig& base, const Knobs& k) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["train_micro_batch_size_per_gpu"] = k.micro_batch;
  j["gradient_accumulation_steps"] = k.grad_accum;
  j["gradient_clipping"] = base.gradient_clipping;
  if (base.fp16) {
    j["fp16"] = {{"enabled", true},
                 {"loss_scale", base.loss_scale},
                 {"initial_scale_power", base.initial_scale_power},
                 {"loss_scale_window", base.loss_scale_window},
                 {"hysteresis", base.hysteresis},
                 {"min_loss_scale", base.min_loss_scale}};
  }
  if (base.bf16) j["bf16"] = {{"enabled", true}};
  // The dtypes decide the wrapper (fp32 accumulation at stage 1 runs BF16_Optimizer): a view of
  // such a scenario showed DeepSpeedZeroOptimizer, and "save" wrote a config without them.
  // DeepSpeed's spellings ("fp32"): communication_data_type takes no other.
  const auto ds_name = [](DType t) {
    return t == DType::Float16 ? "fp16" : t == DType::BFloat16 ? "bf16" : "fp32";
  };
  if (base.grad_accum_dtype)
    j["data_types"] = {{"grad_accum_dtype", ds_name(*base.grad_accum_dtype)}};
  if (base.communication_data_type)
    j["communication_data_type"] = ds_name(*base.communication_data_type);
  if (!base.optimizer_type.empty()) j["optimizer"] = {{"type", base.optimizer_type}};
  const ZeroConfig& z = base.zero;
  ordered_json zo;
  zo["stage"] = k.stage;
  zo["contiguous_gradients"] = k.contiguous_gradients;
  zo["reduce_scatter"] = z.reduce_scatter;
  zo["reduce_bucket_size"] = k.reduce_bucket_size;
  zo["allgather_bucket_size"] = z.allgather_bucket_size;
  zo["overlap_comm"] = k.overlap_comm;
  zo["round_robin_gradients"] = z.round_robin_gradients;
  if (k.offload_optimizer) {
    zo["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", z.offload_optimizer.pin_memory}};
  }
  // DeepSpeed ignores offload_param below stage 3; apply_knobs refuses that combination.
  if (k.offload_param && k.stage == 3) {
    zo["offload_param"] = {{"device", "cpu"}, {"pin_memory", z.offload_param.pin_memory}};
  }
  zo["sub_group_size"] = z.sub_group_size;
  zo["stage3_prefetch_bucket_size"] = k.prefetch_bucket_size;
  zo["stage3_param_persistence_threshold"] = k.param_persistence_threshold;
  zo["stage3_max_live_parameters"] = k.max_live_parameters;
  zo["stage3_max_reuse_distance"] = z.max_reuse_distance;
  j["zero_optimization"] = zo;
  return j.dump(2) + "\n";
}

Result<Scenario> apply_knobs(const Scenario& base, const Knobs& k, const std::string& source) {
  if (k.offload_param && k.stage != 3) {
    return fail<Scenario>(source, "/zero_optimization/offload_param",
                          "expected stage 3 for parameter offload, got stage " +
                              std::to_string(k.stage) + " (DeepSpeed ignores it below stage 3)");
  }
  Scenario s = base;
  Result<GpuSpec> gpu = find_gpu(k.gpu, source + ": gpu");
  if (!gpu.ok()) return Result<Scenario>(gpu.diagnostics());
  s.cluster.gpu = gpu.value();
  s.cluster.nodes = k.nodes;
  s.cluster.gpus_per_node = k.gpus_per_node;
  AutoValues autos;
  autos.version = s.version;  // the scenario's release resolves the knobs' config too
  autos.world_size = s.cluster.world_size();
  if (s.model.arch) autos.hidden_size = s.model.arch->hidden;
  Result<DsConfig> ds = load_ds_config_text(ds_config_json(base.ds, k), source, autos);
  if (!ds.ok()) return Result<Scenario>(ds.diagnostics());
  s.ds = std::move(ds.value());
  s.training.micro_batch = s.ds.micro_batch;
  s.training.activation_checkpointing = k.activation_checkpointing;
  return s;
}

Result<Trace> simulate_scenario(const Scenario& s) {
  const auto world = static_cast<std::uint32_t>(s.cluster.world_size());
  Result<PartitionPlan> plan = plan_partition(s.model, partition_options(s.ds, world));
  if (!plan.ok()) return Result<Trace>(plan.diagnostics());
  ScheduleInput in = schedule_input(s, plan.value());
  in.self_check = std::nullopt;  // simulate() lowers the schedule and checks what it runs
  Result<Schedule> schedule = build_schedule(in);
  if (!schedule.ok()) return Result<Trace>(schedule.diagnostics());
  EngineOptions options;
  options.record_trace = true;
  Result<SimulationResult> r = simulate(schedule.value(), s.cluster.gpu, options);
  if (!r.ok()) return Result<Trace>(r.diagnostics());
  return std::move(r.value().trace);
}

Result<std::unique_ptr<WhatIf>> WhatIf::open(const std::string& scenario_path) {
  Result<Scenario> s = load_scenario_file(scenario_path);
  if (!s.ok()) return Result<std::unique_ptr<WhatIf>>(s.diagnostics());
  return open(std::move(s.value()), scenario_path);
}

Result<std::unique_ptr<WhatIf>> WhatIf::open(Scenario base, const std::string& source) {
  std::unique_ptr<WhatIf> w(new WhatIf());
  w->path_ = source;
  w->base_ = std::move(base);
  w->knobs_ = knobs_of(w->base_);
  // The scenario as the knobs make it (the same config, read back from the knobs' JSON), so the
  // first run and every later one come from one path.
  Result<Scenario> applied = apply_knobs(w->base_, w->knobs_, source);
  if (!applied.ok()) return Result<std::unique_ptr<WhatIf>>(applied.diagnostics());
  w->scenario_ = std::move(applied.value());
  const auto t0 = std::chrono::steady_clock::now();
  Result<Trace> t = simulate_scenario(w->scenario_);
  w->last_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!t.ok()) return Result<std::unique_ptr<WhatIf>>(t.diagnostics());
  w->trace_ = std::move(t.value());
  return Result<std::unique_ptr<WhatIf>>(std::move(w));
}

Diagnostics WhatIf::apply(const Knobs& k) {
  Result<Scenario> s = apply_knobs(base_, k, path_ + " (what-if)");
  if (!s.ok()) return s.diagnostics();
  const auto t0 = std::chrono::steady_clock::now();
  Result<Trace> t = simulate_scenario(s.value());
  if (!t.ok()) return t.diagnostics();
  last_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ghost_ = std::move(trace_);
  ghost_knobs_ = knobs_;
  trace_ = std::move(t.value());
  knobs_ = k;
  scenario_ = std::move(s.value());
  return {};
}

// As the CLI writes its outputs (cli/output_file.h): never onto the scenario being edited, and
// through a temporary file in the same directory renamed over the target once every write and
// the close succeeded, so a failed save leaves an existing file whole. A target that exists and
// is not a regular file (/dev/null, a pipe) is written in place: renaming would replace it.
bool WhatIf::save_ds_config(const std::string& path, std::string& error) const {
  struct stat target {};
  const bool exists = ::stat(path.c_str(), &target) == 0;
  struct stat input {};
  if (exists && ::stat(path_.c_str(), &input) == 0 && input.st_dev == target.st_dev &&
      input.st_ino == target.st_ino) {
    error = path + ": is the scenario being edited (refusing to overwrite it)";
    return false;
  }
  const bool in_place = exists && !S_ISREG(target.st_mode);
  const std::string tmp = in_place ? path : path + ".tmp." + std::to_string(::getpid());
  std::ofstream out(tmp);
  if (!out) {
    error = path + ": cannot open for writing";
    return false;
  }
  out << ds_config_json(base_.ds, knobs_);
  out.close();
  if (!out) {
    if (!in_place) std::remove(tmp.c_str());
    error = path + ": write failed";
    return false;
  }
  if (!in_place && std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot replace it: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace zerosim::view
