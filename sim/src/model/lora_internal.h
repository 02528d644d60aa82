// Pieces of apply_lora (lora.cc) kept in their own files: the peft module tree (lora_tree.cc)
// and the bitsandbytes storage of the frozen base (lora_quantize.cc).
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "zerosim/lora.h"
#include "zerosim/model_desc.h"

namespace zerosim {

/// One adapted module: its index in the base model's tree, its widths, and the ids of its
/// lora_A and lora_B weights in the adapted model.
struct LoraAdapter {
  std::uint32_t module = kNoModule;
  std::uint64_t in = 0, out = 0;
  std::uint32_t a = 0, b = 0;
};

/// Whether peft adapts the module and bitsandbytes quantizes it: an nn.Linear (its subclasses
/// too, as isinstance sees them: Falcon's FalconLinear) or transformers' Conv1D (GPT-2).
bool is_linear(const ModuleNode& n);
/// Conv1D keeps its weight as [in, out], a Linear as [out, in].
inline bool is_conv1d(const ModuleNode& n) { return n.type == "Conv1D"; }

/// The output embedding's Linear modules (lm_head, embed_out: the Head layer's), which peft's
/// "all-linear" and transformers' bitsandbytes integration both leave alone.
std::set<std::uint32_t> output_embedding_modules(const ModelDesc& m);

/// Fills out.modules and out.module_calls: PeftModelForCausalLM > LoraModel > the base tree under
/// "base_model.model", each adapted module a lora.Linear with base_layer, lora_dropout, lora_A and
/// lora_B children. `remap` maps base param ids to out's.
void build_lora_module_tree(const ModelDesc& base, const std::vector<LoraAdapter>& adapters,
                            const std::vector<std::uint32_t>& remap, double dropout,
                            ModelDesc& out);

/// Stores every frozen Linear/Conv1D weight of `m` (but the output embedding's and tied ones) as
/// bitsandbytes does for `q` (ParamTensor::quant_bits); `lp` is the LP dtype the packed storage
/// is counted in.
void quantize_base(BaseQuantization q, DType lp, ModelDesc& m);

}  // namespace zerosim
