// estimate_memory: picks the accounting (paper, or what DeepSpeed really runs for this config),
// makes sure the partition plan matches the stage and world size, adds activations and overheads.
#include "zerosim/memory_model.h"

#include <cstdio>
#include <limits>

#include "memory/accounting.h"
#include "memory/exact_math.h"
#include "memory/report_builder.h"

namespace zerosim {

std::string_view offload_name(OffloadVariant v) {
  switch (v) {
    case OffloadVariant::None:
      return "none";
    case OffloadVariant::OptimizerCpu:
      return "optimizer";
    case OffloadVariant::OptimizerAndParamsCpu:
      return "optimizer+params";
    case OffloadVariant::ParamsCpu:
      return "params";
  }
  return "?";
}

bool offloads_optimizer(OffloadVariant v) {
  return v == OffloadVariant::OptimizerCpu || v == OffloadVariant::OptimizerAndParamsCpu;
}

bool offloads_params(OffloadVariant v) {
  return v == OffloadVariant::ParamsCpu || v == OffloadVariant::OptimizerAndParamsCpu;
}

namespace {

bool plan_matches(const PartitionPlan& plan, const ModelDesc& model, int stage,
                  std::uint64_t world) {
  if (plan.world != world) return false;
  if (stage == 3) return plan.stage == 3 && plan.s3.size() == model.params.size();
  return plan.stage != 3 && !plan.groups.empty();
}

// The plan to use: `plan` when it fits the stage and world size, else a fresh one (noted).
const PartitionPlan* resolve_plan(const ModelDesc& model, const PartitionPlan& plan,
                                  const DsConfig& ds, std::uint64_t world, PartitionPlan& storage,
                                  memory::ReportBuilder& rb) {
  const int stage = ds.zero.stage;
  // Stage 0 needs no layout unless it runs BF16_Optimizer (v0.14.4), partitioned as stage 1.
  if ((stage == 0 && ds.optimizer_path() != OptimizerPath::Bf16Optimizer) ||
      plan_matches(plan, model, stage, world))
    return &plan;
  if (world > kMaxPartitionWorld) {
    rb.note("world size " + std::to_string(world) + " exceeds the partitioner's limit; no layout");
    return nullptr;
  }
  auto r = plan_partition(model, partition_options(ds, static_cast<std::uint32_t>(world)));
  if (!r.ok()) {
    rb.note("could not partition the model for stage " + std::to_string(stage) + ": " +
            r.diagnostics().to_string());
    return nullptr;
  }
  storage = std::move(r.value());
  rb.note("the partition plan passed in was for stage " + std::to_string(plan.stage) + ", world " +
          std::to_string(plan.world) + "; re-planned for stage " + std::to_string(stage) +
          ", world " + std::to_string(world));
  return &storage;
}

std::string activation_label(const ModelDesc& model, const TrainingSettings& t) {
  std::string s = "activations (Korthikanti et al. 2022): b = " + std::to_string(t.micro_batch) +
                  ", s = " + std::to_string(t.seq_len);
  if (model.arch) s += ", L = " + std::to_string(model.arch->layers);
  s += t.flash_attention ? ", flash attention" : ", eager attention";
  if (t.activation_checkpointing) s += ", full checkpointing";
  return s;
}

void add_not_modelled_notes(const DsConfig& ds, memory::ReportBuilder& rb) {
  const ZeroConfig& z = ds.zero;
  if (z.zero_quantized_weights || z.zero_quantized_gradients || z.zero_hpz_partition_size > 1)
    rb.note("ZeRO++ (quantized weights/gradients, hpZ) is not modelled: memory as plain ZeRO-3");
  if (z.mics) rb.note("MiCS is not modelled: memory as plain ZeRO-3");
}

}  // namespace

MemoryReport estimate_memory(const ModelDesc& model, const PartitionPlan& plan, const DsConfig& ds,
                             const Cluster& cluster, const TrainingSettings& t, Accounting mode,
                             const OverheadParams& overheads) {
  memory::ReportBuilder rb;
  std::uint64_t world = cluster.world_size();
  if (world == 0) {
    rb.note("cluster has 0 GPUs: memory computed for 1");
    world = 1;
  }
  const Bytes act = activation_bytes(model, t, ds.lp_dtype());
  if (!model.arch)
    rb.note("no transformer hyper-parameters for this model: activations not counted");
  PartitionPlan storage;
  const PartitionPlan* use =
      mode == Accounting::Paper ? &plan : resolve_plan(model, plan, ds, world, storage, rb);
  if (use != nullptr) {
    const memory::AccountingInput in{model, *use, ds, world};
    if (mode == Accounting::Paper) {
      memory::add_paper_terms(in, rb);
    } else {
      switch (ds.optimizer_path()) {
        case OptimizerPath::Plain:
        case OptimizerPath::Fp16Optimizer:
          memory::add_stage0_terms(in, rb);
          break;
        case OptimizerPath::Bf16Optimizer:
          memory::add_bf16_optimizer_terms(in, rb);
          break;
        case OptimizerPath::ZeroStage1And2:
          memory::add_stage12_terms(in, rb);
          break;
        case OptimizerPath::ZeroStage3:
          memory::add_stage3_terms(in, rb);
          break;
      }
      add_not_modelled_notes(ds, rb);
    }
  }
  rb.during(memory::kBackward, memory::Layer::Activations, activation_label(model, t), act);
  return rb.finish(overheads);
}

}  // namespace zerosim
