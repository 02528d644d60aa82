// LoRA fine-tuning (peft) and a bitsandbytes-quantized frozen base (QLoRA) on a ModelDesc.
//
// apply_lora turns a model into what peft's get_peft_model(model, LoraConfig(...)) gives: every
// targeted Linear wrapped in a lora.Linear holding its base_layer and two trainable adapters
// lora_A (r x in) and lora_B (out x r); every base parameter frozen (requires_grad=False). The
// ZeRO machinery then treats the model as DeepSpeed does (partition_plan.h: frozen params enter no
// flat group and no optimizer partition at stage 0-2, DeepSpeed edaa722 stage_1_and_2.py:381
// keeps only requires_grad params in its groups; stage 3 partitions and gathers every param but
// builds sub-groups of trainable ones only, stage3.py:682-684; only the adapters get gradients and
// optimizer state). With a quantization the frozen Linear
// weights are held as bitsandbytes holds them (packed NF4 or int8, plus quantization constants).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/model_desc.h"
#include "zerosim/units.h"

namespace zerosim {

/// How the frozen base Linear weights are stored (transformers' BitsAndBytesConfig).
enum class BaseQuantization {
  None,  ///< LP (bf16/fp16) like every other tensor
  Nf4,   ///< load_in_4bit, bnb_4bit_quant_type "nf4", bnb_4bit_use_double_quant (QLoRA's recipe)
  Int8,  ///< load_in_8bit (LLM.int8: int8 weight, one fp32 scale per output row)
};

/// peft's LoraConfig fields zerosim needs (peft src/peft/tuners/lora/config.py:613-634 defaults:
/// r = 8, lora_alpha = 8, lora_dropout = 0.0).
struct LoraSpec {
  std::uint64_t rank = 8;
  /// target_modules: module names or name suffixes ("q_proj" matches every
  /// "...self_attn.q_proj"), or the single entry "all-linear" (every Linear/Conv1D but the
  /// output embedding).
  std::vector<std::string> targets;
  double alpha = 8;    ///< scaling = alpha / r: no memory or time effect, kept for the report
  double dropout = 0;  ///< > 0 stores a dropout mask and output per adapter input
  BaseQuantization quantization = BaseQuantization::None;
};

/// The adapted model, or one diagnostic at `source`: a target that matches no module, a target
/// that is not a Linear/Conv1D, a target whose weight is tied to another module, a model without a
/// module tree (param lists), a rank of 0 or above a targeted module's input or output width.
/// `lp` is the 16-bit dtype the quantized storage is counted in.
Result<ModelDesc> apply_lora(const ModelDesc& base, const LoraSpec& spec, DType lp,
                             const std::string& source);

/// GPU bytes bitsandbytes keeps beside the quantized weights on every rank (not parameters, so
/// DeepSpeed never partitions them): NF4 absmax per 64-element block, double-quantized to uint8
/// with an fp32 absmax per 256 blocks, an fp32 offset and the 16-entry NF4 code per weight, and
/// the shared 256-entry dynamic map once; LLM.int8 one fp32 scale per output row. 0 without
/// quantized weights.
Bytes quantization_state_bytes(const ModelDesc& m);

/// The backward of a bitsandbytes matmul dequantizes the weight to the LP dtype for the input
/// gradient (bitsandbytes autograd/_functions.py:384 for 4-bit, :237 for int8): the largest such
/// temporary, in bytes (0 without quantized weights). It lives for one matmul at a time.
Bytes dequantized_weight_bytes(const ModelDesc& m, DType lp);

/// Why a model with a quantized base cannot be run this way ("" when it can): under
/// deepspeed.zero.Init (transformers' from_pretrained builds a quantized model outside it), or
/// 8-bit weights under ZeRO stage 3 (not modelled; QLoRA + ZeRO-3 is documented for 4-bit with
/// bnb_4bit_quant_storage).
std::string quantized_base_problem(const ModelDesc& model, int stage, bool zero_init);

}  // namespace zerosim
