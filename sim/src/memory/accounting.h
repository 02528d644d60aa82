// The accountings behind estimate_memory (private to sim/src/memory). Each adds its terms, with the
// spec id in the name and the phase it is alive in, to a ReportBuilder:
//   paper_accounting.cc     — ZeRO paper model states (16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N)
//   deepspeed_accounting.cc — stage 0 (FP16_Optimizer / plain), stage 1/2 (DeepSpeedZeroOptimizer,
//                             with optimizer offload) and BF16_Optimizer (deepspeed_zero.md §3)
//   stage3_accounting.cc    — stage 3 with optimizer / parameter offload (§7.1, §7.8)
#pragma once

#include <cstdint>
#include <string>

#include "memory/report_builder.h"
#include "zerosim/ds_config.h"
#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"

namespace zerosim::memory {

struct AccountingInput {
  const ModelDesc& model;
  const PartitionPlan& plan;  ///< matches ds's stage and `world` (estimate_memory re-plans if not)
  const DsConfig& ds;
  std::uint64_t world = 1;  ///< W, >= 1
};

/// Number of optimizer state tensors per parameter for ds.optimizer_type (Adam family and LAMB: 2;
/// SGD with momentum, Adagrad, Lion, Muon: 1). Unknown or empty types count as Adam (2) and add a
/// note to `rb`.
std::uint64_t optimizer_state_count(const std::string& optimizer_type, ReportBuilder& rb);

/// Largest trainable tensor (elements): the autograd gradient that exists on its own (T1, B6, B7).
Elements largest_trainable_param(const ModelDesc& model);

void add_paper_terms(const AccountingInput& in, ReportBuilder& rb);
void add_stage0_terms(const AccountingInput& in, ReportBuilder& rb);
void add_stage12_terms(const AccountingInput& in, ReportBuilder& rb);
void add_bf16_optimizer_terms(const AccountingInput& in, ReportBuilder& rb);
void add_stage3_terms(const AccountingInput& in, ReportBuilder& rb);

/// "500000000 elements" style count for item names.
std::string elements_text(Elements n);

}  // namespace zerosim::memory
