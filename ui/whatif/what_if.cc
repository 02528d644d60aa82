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
  // NVMe too: stage 1/2 run it as CPU offload, and the view keeps the scenario's device.
  k.offload_optimizer = ds.zero.offload_optimizer.enabled();
  k.offload_param = ds.zero.offload_param.enabled();
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

namespace {

using nlohmann::ordered_json;

// `key` = `value` where it differs from a default-constructed config's: the rarer keys a scenario
// sets (fp16_master_weights_and_grads, immediate_grad_update, ...) survive a knob change, and a
// config that never set them gets none (a key the scenario's release may not know).
template <typename T>
void put_set(ordered_json& j, const char* key, const T& value, const T& fallback) {
  if (value != fallback) j[key] = value;
}

const char* device_name(OffloadDevice d) {
  return d == OffloadDevice::Nvme ? "nvme" : d == OffloadDevice::Cpu ? "cpu" : "none";
}

// The base's offload block where it had one (its device, nvme_path, buffers), else a CPU one: the
// view's switch turns the scenario's offload on or off, it does not rewrite it.
ordered_json offload_json(const OffloadConfig& o, bool optimizer) {
  const OffloadConfig d = optimizer ? OffloadConfig::optimizer_defaults() : OffloadConfig{};
  ordered_json j;
  j["device"] = o.enabled() ? device_name(o.device) : "cpu";
  if (!o.nvme_path.empty()) j["nvme_path"] = o.nvme_path;
  j["pin_memory"] = o.pin_memory;
  put_set(j, "buffer_count", o.buffer_count, d.buffer_count);
  if (optimizer) {
    put_set(j, "pipeline_read", o.pipeline_read, d.pipeline_read);
    put_set(j, "pipeline_write", o.pipeline_write, d.pipeline_write);
    put_set(j, "fast_init", o.fast_init, d.fast_init);
    put_set(j, "super_offload", o.super_offload, d.super_offload);
    put_set(j, "ratio", o.ratio, d.ratio);
  } else {
    put_set(j, "buffer_size", o.buffer_size, d.buffer_size);
    put_set(j, "max_in_cpu", o.max_in_cpu, d.max_in_cpu);
  }
  return j;
}

void put_precision(ordered_json& j, const DsConfig& base) {
  const DsConfig d;
  if (base.fp16) {
    ordered_json f = {{"enabled", true}};
    put_set(f, "auto_cast", base.fp16_auto_cast, d.fp16_auto_cast);
    f["loss_scale"] = base.loss_scale;
    f["initial_scale_power"] = base.initial_scale_power;
    f["loss_scale_window"] = base.loss_scale_window;
    f["hysteresis"] = base.hysteresis;
    put_set(f, "consecutive_hysteresis", base.consecutive_hysteresis, d.consecutive_hysteresis);
    f["min_loss_scale"] = base.min_loss_scale;
    put_set(f, "fp16_master_weights_and_grads", base.fp16_master_weights_and_gradients,
            d.fp16_master_weights_and_gradients);
    j["fp16"] = f;
  }
  if (base.bf16) {
    ordered_json b = {{"enabled", true}};
    put_set(b, "immediate_grad_update", base.bf16_immediate_grad_update,
            d.bf16_immediate_grad_update);
    put_set(b, "check_grad_overflow", base.bf16_check_grad_overflow, d.bf16_check_grad_overflow);
    put_set(b, "bf16_master_weights_and_grads", base.bf16_master_weights_and_grads,
            d.bf16_master_weights_and_grads);
    put_set(b, "bf16_optimizer_states", base.bf16_optimizer_states, d.bf16_optimizer_states);
    j["bf16"] = b;
  }
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
}

// The gradient reduction's top-level keys (the all-reduce's scaling and op).
void put_reduction(ordered_json& j, const DsConfig& base) {
  const DsConfig d;
  put_set(j, "prescale_gradients", base.prescale_gradients, d.prescale_gradients);
  put_set(j, "gradient_predivide_factor", base.gradient_predivide_factor,
          d.gradient_predivide_factor);
  if (base.gradient_allreduce_op != d.gradient_allreduce_op)
    j["gradient_allreduce_op"] =
        base.gradient_allreduce_op == GradientAllreduceOp::Sum ? "sum" : "mean";
  put_set(j, "managed_gradient_accumulation", base.managed_gradient_accumulation,
          d.managed_gradient_accumulation);
}

ordered_json zero_json(const ZeroConfig& z, const Knobs& k) {
  const ZeroConfig d;
  ordered_json zo;
  zo["stage"] = k.stage;
  zo["contiguous_gradients"] = k.contiguous_gradients;
  zo["reduce_scatter"] = z.reduce_scatter;
  zo["reduce_bucket_size"] = k.reduce_bucket_size;
  zo["allgather_bucket_size"] = z.allgather_bucket_size;
  zo["overlap_comm"] = k.overlap_comm;
  zo["round_robin_gradients"] = z.round_robin_gradients;
  put_set(zo, "use_multi_rank_bucket_allreduce", z.use_multi_rank_bucket_allreduce,
          d.use_multi_rank_bucket_allreduce);
  put_set(zo, "allgather_partitions", z.allgather_partitions, d.allgather_partitions);
  if (k.offload_optimizer) zo["offload_optimizer"] = offload_json(z.offload_optimizer, true);
  // DeepSpeed ignores offload_param below stage 3; apply_knobs refuses that combination.
  if (k.offload_param && k.stage == 3) zo["offload_param"] = offload_json(z.offload_param, false);
  zo["sub_group_size"] = z.sub_group_size;
  zo["stage3_prefetch_bucket_size"] = k.prefetch_bucket_size;
  zo["stage3_param_persistence_threshold"] = k.param_persistence_threshold;
  put_set(zo, "stage3_model_persistence_threshold", z.model_persistence_threshold,
          d.model_persistence_threshold);
  zo["stage3_max_live_parameters"] = k.max_live_parameters;
  zo["stage3_max_reuse_distance"] = z.max_reuse_distance;
  put_set(zo, "stage3_allgather_sequential", z.allgather_sequential, d.allgather_sequential);
  put_set(zo, "stage3_use_all_reduce_for_fetch_params", z.use_all_reduce_for_fetch_params,
          d.use_all_reduce_for_fetch_params);
  put_set(zo, "stage3_module_granularity_threshold", z.module_granularity_threshold,
          d.module_granularity_threshold);
  put_set(zo, "stage3_gather_16bit_weights_on_model_save", z.gather_16bit_weights_on_model_save,
          d.gather_16bit_weights_on_model_save);
  put_set(zo, "ignore_unused_parameters", z.ignore_unused_parameters, d.ignore_unused_parameters);
  put_set(zo, "zero_quantized_weights", z.zero_quantized_weights, d.zero_quantized_weights);
  put_set(zo, "zero_quantized_nontrainable_weights", z.zero_quantized_nontrainable_weights,
          d.zero_quantized_nontrainable_weights);
  put_set(zo, "zero_quantized_gradients", z.zero_quantized_gradients, d.zero_quantized_gradients);
  put_set(zo, "zero_hpz_partition_size", z.zero_hpz_partition_size, d.zero_hpz_partition_size);
  put_set(zo, "mics_shard_size", z.mics_shard_size, d.mics_shard_size);
  return zo;
}

}  // namespace

std::string ds_config_json(const DsConfig& base, const Knobs& k) {
  ordered_json j;
  j["train_micro_batch_size_per_gpu"] = k.micro_batch;
  j["gradient_accumulation_steps"] = k.grad_accum;
  j["gradient_clipping"] = base.gradient_clipping;
  put_precision(j, base);
  put_reduction(j, base);
  if (!base.optimizer_type.empty()) j["optimizer"] = {{"type", base.optimizer_type}};
  j["zero_optimization"] = zero_json(base.zero, k);
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
