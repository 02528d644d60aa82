// Combinations DeepSpeed refuses, each with DeepSpeed's own message.
//
// Where each check lives in DeepSpeed (commit edaa722, files under deepspeed/runtime/):
// config.py (_initialize_params, _do_error_check), zero/config.py (validators), engine.py
// (_do_optimizer_sanity_check, _configure_basic_optimizer, _configure_zero_optimizer),
// zero/stage_1_and_2.py and zero/stage3.py (constructor asserts), base_optimizer.py
// (_configure_master_weights). Checks that depend only on runtime objects (the optimizer's Python
// class, MoE layers, a client optimizer) are not made here. Where DeepSpeed's message includes a
// runtime-only part (the optimizer's type), the message stops before it.
#include <cctype>
#include <string>

#include "config/ds_config_internal.h"

namespace zerosim::dsconfig {
namespace {

constexpr const char* kConfig = "deepspeed/runtime/config.py";
constexpr const char* kZeroConfig = "deepspeed/runtime/zero/config.py";
constexpr const char* kEngine = "deepspeed/runtime/engine.py";
constexpr const char* kStage12 = "deepspeed/runtime/zero/stage_1_and_2.py";
constexpr const char* kStage3 = "deepspeed/runtime/zero/stage3.py";
constexpr const char* kBase = "deepspeed/runtime/base_optimizer.py";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void precision_rules(Loader& ld) {
  const DsConfig& c = ld.cfg;
  const int stage = c.zero.stage;
  if (c.fp16 && c.bf16)
    ld.refuse("/bf16/enabled", "bfloat16 and fp16 modes cannot be simultaneously enabled", kConfig);
  if (ld.facts.amp_enabled && stage > 0)
    ld.refuse(
        "/amp/enabled",
        "Amp and ZeRO are not currently compatible, please use (legacy) fp16 mode which performs "
        "similar to amp opt_mode=O2",
        kEngine);
  if (stage != 0 || ld.facts.amp_enabled || (c.fp16 && c.bf16)) return;
  if (const std::string why = c.stage0_dtype_problem(); !why.empty())
    ld.refuse("/data_types/grad_accum_dtype", why, kEngine);
}

void master_weight_rules(Loader& ld) {
  const DsConfig& c = ld.cfg;
  const int stage = c.zero.stage;
  const char* fp16_mw = "/fp16/fp16_master_weights_and_grads";
  const char* bf16_mw = "/bf16/bf16_master_weights_and_grads";
  if (stage == 0) {
    if (c.fp16_master_weights_and_gradients)
      ld.refuse(fp16_mw,
                "Fp16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3.",
                kConfig);
    if (c.bf16_master_weights_and_grads)
      ld.refuse(bf16_mw,
                "Bf16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3.",
                kConfig);
    if (c.bf16_optimizer_states)
      ld.refuse("/bf16/bf16_optimizer_states",
                "bf16_optimizer_states is only supported with ZeRO Stage 1, 2, or 3.", kConfig);
  }
  if (c.bf16_optimizer_states && !c.bf16_master_weights_and_grads)
    ld.refuse("/bf16/bf16_optimizer_states",
              "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.",
              kConfig);
  const OptimizerPath path = c.optimizer_path();
  if (stage == 0 || path == OptimizerPath::Bf16Optimizer) return;
  if (c.fp16_master_weights_and_gradients && c.bf16_master_weights_and_grads) {
    ld.refuse(fp16_mw,
              "fp16_master_weights_and_gradients and bf16_master_weights_and_gradients are "
              "mutually exclusive.",
              kBase);
    return;
  }
  // The master-weight features need ZeRO-Offload with DeepSpeedCPUAdam (what DeepSpeed builds for
  // optimizer.type Adam/AdamW with offload); bf16 master weights keep that need unless the
  // optimizer states are bf16 too.
  const bool needs = c.fp16_master_weights_and_gradients ||
                     (c.bf16_master_weights_and_grads && !c.bf16_optimizer_states);
  if (!needs) return;
  const bool offload = c.zero.offload_optimizer.enabled();
  const std::string low = lower(c.optimizer_type);
  const bool cpu_adam = c.optimizer_type.empty() || low == "adam" || low == "adamw";
  if (offload && cpu_adam) return;
  const std::string name = stage == 3 ? "ZeRO-3" : stage == 2 ? "ZeRO-2" : "ZeRO-1";
  std::string msg =
      "Master weights feature requires " + name + " Offload with DeepSpeedCPUAdam. Current " +
      (stage == 3 ? "ZeRO-3 Offload:" : "ZeRO-Offload:") + (offload ? "True" : "False");
  if (offload) msg += " optimizer type " + c.optimizer_type;
  ld.refuse(c.fp16_master_weights_and_gradients ? fp16_mw : bf16_mw, msg,
            stage == 3 ? kStage3 : kStage12);
}

void zero_rules(Loader& ld) {
  const DsConfig& c = ld.cfg;
  const ZeroConfig& z = c.zero;
  if (z.offload_optimizer.ratio < 1.0 && z.stage != 3)
    ld.refuse("/zero_optimization/offload_optimizer/ratio",
              "Partial offloading only supported for ZeRO Stage 3.", kZeroConfig);
  if (ld.facts.legacy_stage1 && z.stage > 0)
    ld.refuse("/zero_optimization/legacy_stage1",
              "The deprecated version of ZeRO Stage 1 is not supported in deepspeed >= 0.5.9. "
              "Please downgrade "
              "to a version less than 0.5.9 if you need to use this deprecated version of ZeRO.",
              kEngine);
  if (c.gradient_allreduce_op == GradientAllreduceOp::Sum && z.stage == 3)
    ld.refuse("/gradient_allreduce_op",
              "gradient_allreduce_op='sum' is not supported with ZeRO stage 3", kConfig);
  const OptimizerPath path = c.optimizer_path();
  if (path == OptimizerPath::ZeroStage1And2 && z.allgather_bucket_size % 2 != 0)
    ld.refuse("/zero_optimization/allgather_bucket_size",
              "allgather_bucket_size must be a multiple of nccl_start_alignment_factor, 2",
              kStage12);
  // Reduce-scatter asserts: ZeRO-2 (partition_grads) in stage_1_and_2.py, ZeRO-3 in stage3.py.
  const bool stage2_rs = path == OptimizerPath::ZeroStage1And2 && z.stage == 2 && z.reduce_scatter;
  const bool stage3_rs = z.stage == 3 && z.reduce_scatter;
  if (!stage2_rs && !stage3_rs) return;
  const std::string name = z.stage == 3 ? "ZeRO-3" : "ZeRO-2";
  const char* file = z.stage == 3 ? kStage3 : kStage12;
  if (c.gradient_predivide_factor != 1.0)
    ld.refuse("/gradient_predivide_factor",
              "gradient_predivide_factor != 1.0 is not yet supported with " + name +
                  " with reduce scatter enabled",
              file);
  // Stage 2 only averages (and so only pre-scales) with gradient_allreduce_op "mean".
  const bool averaging = c.gradient_allreduce_op == GradientAllreduceOp::Mean;
  if (c.prescale_gradients && (z.stage == 3 || averaging))
    ld.refuse(
        "/prescale_gradients",
        "pre-scale gradients is not yet supported with " + name + " with reduce scatter enabled",
        file);
}

void optimizer_rules(Loader& ld) {
  const DsConfig& c = ld.cfg;
  if (c.optimizer_type.empty()) return;
  const std::string low = lower(c.optimizer_type);
  const char* ptr = "/optimizer/type";
  if (!is_supported_optimizer(c.optimizer_type)) {
    ld.refuse(ptr, c.optimizer_type + " is not a supported DeepSpeed Optimizer", kEngine);
    return;
  }
  if (ld.facts.optimizer_has_max_grad_norm)
    ld.refuse("/optimizer/params/max_grad_norm",
              "'max_grad_norm' is not supported as an optimizer parameter, please switch to using "
              "the deepspeed "
              "parameter 'gradient_clipping' see: "
              "https://www.deepspeed.ai/docs/config-json/#gradient-clipping "
              "for more details",
              kEngine);
  if ((low == "lamb" || low == "onebitlamb") && c.loss_scale != 0)
    ld.refuse(ptr, "DeepSpeed " + low + " optimizer requires dynamic loss scaling", kEngine);
  if (c.zero.stage > 0) {
    if (low == "onebitadam") ld.refuse(ptr, "1bit-Adam is not compatible with ZeRO", kEngine);
    if (low == "zerooneadam") ld.refuse(ptr, "0/1 Adam is not compatible with ZeRO", kEngine);
    if (low == "onebitlamb") ld.refuse(ptr, "1bit-Lamb is not compatible with ZeRO", kEngine);
    // PR #8141 (merged before edaa722) made Muon work with ZeRO-1/2 reduce_scatter but left
    // optimizer offload unsupported: that path keeps only partition-local gradients, while Muon's
    // Newton-Schulz step needs each parameter's whole gradient matrix. (zerosim's wording.)
    if (low == "muon" && c.zero.offload_optimizer.enabled())
      ld.refuse(
          "/zero_optimization/offload_optimizer/device",
          "the Muon optimizer does not support optimizer offload: the offload path keeps only "
          "partition-local gradients and Muon needs each parameter's whole gradient",
          "DeepSpeed PR #8141");
  }
}

}  // namespace

void apply_rules(Loader& ld) {
  precision_rules(ld);
  master_weight_rules(ld);
  zero_rules(ld);
  optimizer_rules(ld);
}

}  // namespace zerosim::dsconfig
