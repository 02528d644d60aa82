// The frozen base under bitsandbytes (QLoRA): which weights are quantized, their packed storage,
// and the quantization state kept beside them (bitsandbytes 95f9af3, 2026-08).
//
// Which modules: transformers' bitsandbytes integration (integrations/bitsandbytes.py,
// _replace_with_bnb_linear) swaps every nn.Linear and Conv1D for Linear4bit / Linear8bitLt except
// modules_to_not_convert, by default get_keys_to_not_convert(): the output embedding (lm_head)
// and tied weights. Embeddings, norms and biases keep their dtype (Linear4bit's bias stays a
// plain parameter). The adapters are plain Linear modules in LP.
//
// 4-bit storage: quantize_4bit packs two 4-bit codes per byte into a tensor of
// (n + 1) // (2 * quant_storage.itemsize) elements of quant_storage (backends/cuda/ops.py:392);
// with bnb_4bit_quant_storage = the LP dtype (what ZeRO-3 needs) that is numel below, exactly.
// With the default uint8 storage the bytes are (n + 1) // 2, at most 1 byte more per weight.
// Its state (functional.py quantize_4bit, lines 917-958): absmax, one fp32 per 64-element block
// (default blocksize 64; ops.py:390-391: blocks = ceil(n / 64)); with double quantization
// (compress_statistics, Params4bit's default, modules.py:220; QLoRA's
// bnb_4bit_use_double_quant=True) absmax - mean is re-quantized blockwise with blocksize 256
// (functional.py:939-940): uint8 absmax per block, an fp32 absmax per 256 blocks
// (ops.py:309-310), the fp32 offset, and the "dynamic" 256-entry fp32 code cached once per device
// (functional.py:654-656). Each weight's state also holds the NF4 code, a 16-entry fp32 tensor
// (get_4bit_type, functional.py:772-859).
// 8-bit storage: Int8Params keeps the weight as int8 (one byte per element) and SCB, one fp32
// scale per output row (modules.py:743-746; int8_vectorwise_quant, cuda/ops.py:223).
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "model/lora_internal.h"

namespace zerosim {

namespace {

constexpr Bytes kBlock = 64;         // quantize_4bit's default blocksize
constexpr Bytes kNestedBlock = 256;  // double quantization's blocksize
constexpr Bytes kNf4CodeBytes = Bytes{16} * 4;
constexpr Bytes kDynamicMapBytes = Bytes{256} * 4;

}  // namespace

void quantize_base(BaseQuantization q, DType lp, ModelDesc& m) {
  const Bytes e = dtype_size(lp);
  const std::set<std::uint32_t> heads = output_embedding_modules(m);
  std::map<std::uint32_t, int> holders;
  for (const auto& mod : m.modules)
    for (auto p : mod.param_ids) ++holders[p];
  for (std::uint32_t i = 0; i < m.modules.size(); ++i) {
    const ModuleNode& mod = m.modules[i];
    if (!is_linear(mod) || mod.param_ids.empty() || heads.count(i)) continue;
    ParamTensor& w = m.params[mod.param_ids[0]];
    if (w.trainable || w.quant_bits != 0 || w.shape.size() != 2 || holders[mod.param_ids[0]] > 1)
      continue;
    const Elements n = w.numel;
    w.logical_numel = n;
    w.logical_rows = is_conv1d(mod) ? w.shape[1] : w.shape[0];
    if (q == BaseQuantization::Nf4) {
      w.quant_bits = 4;
      w.numel = (n + 1) / (2 * e);
    } else {
      w.quant_bits = 8;
      w.numel = ceil_div(n, e);  // n int8 bytes, counted in LP elements
    }
    w.shape = {w.numel, 1};
  }
}

Bytes quantization_state_bytes(const ModelDesc& m) {
  Bytes total = 0;
  bool nested = false;
  for (const ParamTensor& p : m.params) {
    if (p.quant_bits == 4) {
      const Bytes blocks = ceil_div(p.logical_numel, kBlock);
      // uint8 absmax, fp32 absmax per 256 blocks, fp32 offset, NF4 code.
      total += blocks + 4 * ceil_div(blocks, kNestedBlock) + 4 + kNf4CodeBytes;
      nested = true;
    } else if (p.quant_bits == 8) {
      total += 4 * p.logical_rows;  // SCB
    }
  }
  return nested ? total + kDynamicMapBytes : total;
}

Bytes dequantized_weight_bytes(const ModelDesc& m, DType lp) {
  Elements largest = 0;
  for (const ParamTensor& p : m.params)
    if (p.quant_bits != 0) largest = std::max(largest, p.logical_numel);
  return largest * dtype_size(lp);
}

std::string quantized_base_problem(const ModelDesc& model, int stage, bool zero_init) {
  bool four = false, eight = false;
  for (const auto& p : model.params) {
    four = four || p.quant_bits == 4;
    eight = eight || p.quant_bits == 8;
  }
  if (!four && !eight) return "";
  if (zero_init)
    return "transformers does not build a bitsandbytes-quantized model under "
           "deepspeed.zero.Init (from_pretrained skips zero.Init when quantizing); drop "
           "--zero-init";
  if (eight && stage == 3)
    return "8-bit (LLM.int8) base weights under ZeRO stage 3 are not modelled: Int8Params stay "
           "int8 and carry their scales beside the tensor, which stage 3's partitioning does not "
           "support (QLoRA + ZeRO-3 works with 4-bit and bnb_4bit_quant_storage); use 4bit or "
           "stage 0-2";
  return "";
}

}  // namespace zerosim
