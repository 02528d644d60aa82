// JSON output of a plan: the stable machine interface ("format": "zerosim-plan", "version": 1).
// Keys are written in a fixed order (ordered_json) so equal inputs give byte-identical files.
// Every byte count is an exact integer; README.md documents each field.
#include <nlohmann/json.hpp>

#include "report/plan_speed_report.h"
#include "zerosim/plan_report.h"
#include "zerosim/saturating.h"

namespace zerosim {
namespace {

using ojson = nlohmann::ordered_json;

ojson row_json(const PlanRow& r, const PlanRequest& req, bool verbose) {
  ojson j;
  j["stage"] = r.stage;
  j["offload"] = std::string(offload_name(r.offload));
  j["optimizer"] = r.optimizer;
  j["model_states_bytes"] = r.memory.model_states();
  j["params_bytes"] = r.memory.params;
  j["grads_bytes"] = r.memory.grads;
  j["optimizer_states_bytes"] = r.memory.optimizer_states;
  j["buffers_bytes"] = r.memory.buffers;
  j["activations_bytes"] = r.memory.activations;
  j["overhead_bytes"] = r.memory.overhead;
  j["total_bytes"] = r.memory.total();
  j["peak_phase"] = r.memory.peak_phase;
  j["host_bytes"] = r.memory.host_bytes;
  j["host_bytes_per_node"] = host_per_node(r.memory.host_bytes, req.cluster);
  j["fits"] = r.fits;
  j["fits_gpu"] = r.gpu_fits;
  j["fits_host"] = req.cpu_memory_per_node ? ojson(r.host_fits) : ojson(nullptr);
  j["headroom_bytes"] = r.headroom_bytes;
  j["max_micro_batch"] = r.max_micro_batch;
  j["min_gpus"] = r.min_gpus ? ojson(*r.min_gpus) : ojson(nullptr);
  j["comm_bytes_per_step"] = r.comm_bytes_per_step;
  j["simulated"] = r.simulated;
  if (r.simulated) {
    j["steady_total_bytes"] = r.steady_total_bytes;
    j["init_bytes_sent"] = r.init_bytes_sent;
    j["first_step_ns"] = r.first_step_ns;
    j["steady_step_ns"] = r.steady_step_ns;
  }
  // DeepSpeed's formula saturates past 2^64 - 1 bytes (the CPU side of zero2 offload is
  // P x 4N x 1.5: 10^15 parameters at 4096 GPUs): null then, never 18446744073709551615.
  auto exact = [](Bytes b) { return b == kBytesOverflow ? ojson(nullptr) : ojson(b); };
  if (r.ds_estimate)
    j["deepspeed_estimator"] = {{"gpu_bytes", exact(r.ds_estimate->gpu)},
                                {"cpu_bytes", exact(r.ds_estimate->cpu)}};
  else
    j["deepspeed_estimator"] = nullptr;
  j["matches_ds_config"] = r.matches_ds_config;
  j["speed"] = report::row_speed_json(r.speed);
  j["speed_checkpointed"] = report::row_speed_json(r.speed_checkpointed);
  auto skip = [](SpeedSkip k) {
    const char* name = speed_skip_name(k);
    return name ? nlohmann::ordered_json(name) : nlohmann::ordered_json(nullptr);
  };
  j["speed_skipped"] = skip(r.speed_skip);
  j["speed_checkpointed_skipped"] = skip(r.speed_checkpointed_skip);
  if (verbose) {
    ojson items = ojson::array();
    for (const auto& it : r.memory.items)
      items.push_back({{"layer", it.layer}, {"name", it.name}, {"bytes", it.bytes}});
    j["items"] = items;
  }
  return j;
}

}  // namespace

void write_plan_json(const PlanResult& p, std::ostream& out, bool verbose) {
  const auto& r = p.request;
  ojson j;
  j["format"] = "zerosim-plan";
  j["version"] = 1;
  // The behaviour the rows simulate: the pinned commit's, or a release's (no commit then).
  if (r.version == DeepSpeedVersion::Edaa722)
    j["deepspeed_commit"] = kDeepSpeedCommit;
  else
    j["deepspeed_commit"] = nullptr;
  j["deepspeed_version"] = std::string(deepspeed_version_name(r.version));
  j["accounting"] = r.mode == Accounting::DeepSpeed ? "deepspeed" : "paper";
  j["model"] = {{"name", r.model.name},
                {"parameters", r.model.num_logical_parameters()},
                {"trainable_parameters", r.model.num_trainable()},
                {"tensors", r.model.params.size()},
                {"source", r.model.source}};
  j["cluster"] = {{"gpu", r.cluster.gpu.name},
                  {"gpu_memory_bytes", r.cluster.gpu.memory_bytes},
                  {"nodes", r.cluster.nodes},
                  {"gpus_per_node", r.cluster.gpus_per_node},
                  {"world_size", r.cluster.world_size()},
                  {"gpu_source", r.cluster.gpu.source == "flags" ? "flags" : "catalog"},
                  {"gpu_description", r.cluster.gpu.description},
                  {"cpu_memory_per_node_bytes",
                   r.cpu_memory_per_node ? ojson(*r.cpu_memory_per_node) : ojson(nullptr)}};
  j["training"] = {{"precision", r.base.fp16   ? "fp16"
                                 : r.base.bf16 ? "bf16"
                                               : "fp32"},
                   {"micro_batch", r.training.micro_batch},
                   {"seq_len", r.training.seq_len},
                   {"gradient_accumulation_steps", r.base.grad_accum_steps},
                   {"activation_checkpointing", r.training.activation_checkpointing},
                   {"flash_attention", r.training.flash_attention}};
  ojson rows = ojson::array();
  for (const auto& row : p.rows) rows.push_back(row_json(row, r, verbose));
  j["rows"] = rows;
  if (p.recommended) {
    const auto& rec = p.rows[*p.recommended];
    const auto& speed = p.recommend_checkpointing ? rec.speed_checkpointed : rec.speed;
    j["recommendation"] = {
        {"stage", rec.stage},
        {"offload", std::string(offload_name(rec.offload))},
        {"activation_checkpointing",
         p.recommend_checkpointing || p.request.training.activation_checkpointing},
        {"micro_batch", speed ? ojson(speed->micro_batch) : ojson(nullptr)},
        {"reason", p.recommendation}};
  } else {
    j["recommendation"] = {{"stage", nullptr},
                           {"offload", nullptr},
                           {"activation_checkpointing", nullptr},
                           {"micro_batch", nullptr},
                           {"reason", p.recommendation}};
  }
  j["time_model"] = report::time_model_json(p);
  j["warnings"] = r.base.warnings;
  j["notes"] = p.notes;
  if (!p.sweep.empty()) {
    ojson sw = ojson::array();
    for (const auto& c : p.sweep)
      sw.push_back({{"gpus", c.gpus},
                    {"stage", c.stage},
                    {"offload", std::string(offload_name(c.offload))},
                    {"total_bytes", c.total_bytes},
                    {"total_is_floor", c.at_least},
                    {"fits", c.fits},
                    {"max_micro_batch", c.max_micro_batch}});
    j["sweep"] = sw;
  }
  if (verbose) j["not_modelled_keys"] = r.base.not_modelled;
  out << j.dump(2) << "\n";
}

}  // namespace zerosim
