// ModelDesc: a model as zerosim sees it — named parameter tensors in declaration order
// (as model.named_parameters() lists them, shared/tied tensors once) plus a layer structure in
// forward order, which gives per-layer compute and the gradient-ready order.
//
// Every loader (zoo, Hugging Face config.json, param list, raw count) produces this one type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/units.h"

namespace zerosim {

/// One parameter tensor, as model.named_parameters() reports it.
struct ParamTensor {
  std::string name;                 ///< "model.layers.0.self_attn.q_proj.weight"
  std::vector<std::uint64_t> shape; ///< torch shape; empty for a scalar
  Elements numel = 0;               ///< product of shape (1 for a scalar)
  bool trainable = true;            ///< requires_grad
};

enum class LayerKind { Embedding, Block, Norm, Head, Other };

/// One forward unit (an embedding, a transformer block, the final norm, the LM head, ...).
/// A tied weight appears in the param_ids of every layer that uses it (e.g. GPT-2's wte is used by
/// the embedding and by the head).
struct Layer {
  std::string name;
  LayerKind kind = LayerKind::Other;
  std::vector<std::uint32_t> param_ids;  ///< indices into ModelDesc::params, use order
  double fwd_flops_per_token = 0;        ///< forward FLOPs per token, excluding attention's s^2 term
  double attn_flops_per_token_per_ctx = 0;  ///< forward attention FLOPs per token per context token
};

/// Transformer hyper-parameters, when the model is a (decoder) transformer. Drives the activation
/// formulas (Korthikanti et al. 2022) and the Hugging Face "auto" bucket sizes.
struct ArchInfo {
  std::string family;          ///< "llama", "gpt2", ... (the model_type)
  std::uint64_t hidden = 0;    ///< h
  std::uint64_t layers = 0;    ///< L
  std::uint64_t heads = 0;     ///< a
  std::uint64_t kv_heads = 0;  ///< GQA key/value heads (== heads for MHA)
  std::uint64_t ffn = 0;       ///< MLP inner size
  std::uint64_t vocab = 0;     ///< V (embedding rows)
  std::uint64_t max_seq = 0;   ///< maximum positions (context length)
  bool gated_mlp = false;      ///< SwiGLU/GeGLU: three MLP matrices
  bool tied_embeddings = false;
  bool dropout = true;         ///< stores dropout masks: true when the config sets any dropout
                               ///< probability > 0 (GPT-2/3, OPT); false for Llama-style models and
                               ///< for BLOOM/Falcon/GPT-J/GPT-NeoX, whose released configs use 0.0
  std::uint64_t head_dim = 0;  ///< per-head width (h / a unless the config sets head_dim)
};

struct ModelDesc {
  std::string name;    ///< "llama2-7b", a file name, or "synthetic-13e9"
  std::string source;  ///< where the numbers come from (paper, HF config URL, file path)
  std::vector<ParamTensor> params;          ///< declaration order
  std::vector<Layer> layers;                ///< forward order; may be empty for a param list
  std::vector<std::uint32_t> grad_order;    ///< param ids in gradient-ready order (backward)
  bool grad_order_recorded = false;         ///< true when grad_order came from a real run
  std::optional<ArchInfo> arch;

  /// Total elements over params (what HF's model.num_parameters() reports; tied counted once).
  Elements num_parameters() const;
  /// Elements of trainable params.
  Elements num_trainable() const;
  /// Largest single tensor.
  Elements largest_param() const;
  /// DeepSpeed's "largest layer": max over modules of the sum of the module's direct params, where a
  /// module is the param name without its last ".component" (§8.2 model_to_params).
  Elements largest_module_params() const;
};

/// Builds the gradient-ready order from the layer structure: backward visits layers in reverse
/// forward order and, inside a layer, params in reverse use order; a param used by several layers
/// (tied weights) becomes ready at its last use in backward, i.e. its earliest forward use.
/// Params used by no layer come last, in reverse declaration order. Frozen params
/// (trainable == false) get no gradient and are left out. O(params + layer uses).
std::vector<std::uint32_t> derive_grad_order(const ModelDesc& m);

}  // namespace zerosim
