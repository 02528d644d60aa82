// ModelDesc: a model as zerosim sees it — named parameter tensors in declaration order
// (as model.named_parameters() lists them, shared/tied tensors once) plus a layer structure in
// forward order, which gives per-layer compute and the gradient-ready order.
//
// Every loader (zoo, Hugging Face config.json, param list, raw count) produces this one type.
// Transformer builders also record the nn.Module tree and the order in which its forward hooks
// fire, which is what DeepSpeed stage 3 fetches and releases parameters by.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/units.h"

namespace zerosim {

/// One parameter tensor, as model.named_parameters() reports it.
struct ParamTensor {
  std::string name;                  ///< "model.layers.0.self_attn.q_proj.weight"
  std::vector<std::uint64_t> shape;  ///< torch shape; empty for a scalar
  Elements numel = 0;                ///< product of shape (1 for a scalar)
  bool trainable = true;             ///< requires_grad
  /// A frozen base weight held by bitsandbytes (QLoRA, sim/src/model/lora_quantize.cc): 4 (NF4,
  /// Params4bit) or 8 (LLM.int8, Int8Params); 0 for a plain LP tensor. For a quantized weight
  /// `shape`/`numel` describe its packed storage counted in LP elements (what
  /// bnb_4bit_quant_storage = the LP dtype makes named_parameters() report), so every byte count
  /// that multiplies numel by the LP size stays exact; `logical_numel`/`logical_rows` are the
  /// weight's elements and rows before quantization (what peft's print_trainable_parameters
  /// counts).
  std::uint8_t quant_bits = 0;
  Elements logical_numel = 0;
  std::uint64_t logical_rows = 0;
};

enum class LayerKind { Embedding, Block, Norm, Head, Other };

/// One forward unit (an embedding, a transformer block, the final norm, the LM head, ...).
/// A tied weight appears in the param_ids of every layer that uses it (e.g. GPT-2's wte is used by
/// the embedding and by the head).
struct Layer {
  std::string name;
  LayerKind kind = LayerKind::Other;
  std::vector<std::uint32_t> param_ids;  ///< indices into ModelDesc::params, use order
  double fwd_flops_per_token = 0;  ///< forward FLOPs per token, excluding attention's s^2 term
  double attn_flops_per_token_per_ctx = 0;  ///< forward attention FLOPs per token per context token
  /// The weight-gradient GEMMs of the layer's frozen weights, per token: autograd computes no
  /// gradient for a weight with requires_grad = False, so backward skips them (2 x numel each,
  /// times the share of tokens a routed expert sees). Backward = 2 x forward minus this.
  double frozen_weight_grad_flops_per_token = 0;
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
  /// Mixture of experts: routed experts per MoE layer (0 = dense) and how many each token uses.
  /// `ffn` is then the MLP width one token passes through (top-k x expert width + shared expert),
  /// which is what the activation formulas need; the parameters hold every expert.
  std::uint64_t experts = 0;
  std::uint64_t experts_per_token = 0;
  /// Attention shapes beyond one head_dim (0 / false: not used). DeepSeek's multi-head latent
  /// attention: values and the attention output are v_head_dim per head (head_dim is the query/key
  /// width), and attn_extra LP elements per token per block hold its latent intermediates.
  std::uint64_t v_head_dim = 0;
  std::uint64_t attn_extra = 0;
  /// Encoder-decoder (T5): the last cross_attention_layers of `layers` are decoder blocks with a
  /// second (cross-)attention over the encoder output; the source and target lengths are both the
  /// sequence length. mlp_inner_dropout: the MLP drops out its activation output (T5DenseActDense).
  std::uint64_t cross_attention_layers = 0;
  bool mlp_inner_dropout = false;
  /// LoRA adapters' own stored activations, elements per token (sim/src/model/lora.cc): the
  /// rank-r output of each lora_A (lora_B's saved input) in LP, and with lora_dropout > 0 each
  /// adapter's dropout output (LP, lora_A's saved input) and mask (1 byte), over the input width.
  /// `*_blocks` sums every transformer block, `*_block_max` is the largest block (what one block's
  /// recompute holds under checkpointing), `*_outside` the adapters outside the blocks.
  struct AdapterActivations {
    std::uint64_t lp_blocks = 0, mask_blocks = 0;
    std::uint64_t lp_block_max = 0, mask_block_max = 0;
    std::uint64_t lp_outside = 0, mask_outside = 0;
  } adapters;
};

/// "No module" / "no layer" in the module tree (the root's parent, a container above the layers).
inline constexpr std::uint32_t kNoModule = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint32_t kNoLayer = std::numeric_limits<std::uint32_t>::max();

/// Which of a module's backward hooks fire (DeepSpeed parameter_offload.py: the pre-backward hook
/// wraps the module's outputs, the post-backward hook its inputs, in autograd Functions).
enum class ModuleGrad : std::uint8_t {
  Both,        ///< an output feeds the loss and every input that requires grad receives one
  OutputOnly,  ///< no input requires grad (token ids, position ids): post-backward never fires
  None,        ///< no output requires grad (rotary tables built under no_grad): neither fires
};

/// One nn.Module of the model, as named_modules() names it.
struct ModuleNode {
  std::string name;                      ///< "" for the root, "model.layers.0.self_attn.q_proj"
  std::string type;                      ///< class name: "LlamaForCausalLM", "Linear", "SiLU", ...
  std::uint32_t parent = kNoModule;      ///< index into ModelDesc::modules; kNoModule for the root
  std::uint32_t depth = 0;               ///< 0 for the root, parent's depth + 1 otherwise
  std::vector<std::uint32_t> param_ids;  ///< direct params (parameters(recurse=False)), in
                                         ///< declaration order; a tied weight is a direct param
                                         ///< of every module holding it (wte and lm_head)
  std::uint32_t layer = kNoLayer;      ///< Layer whose compute the module belongs to; kNoLayer for
                                       ///< the root and containers spanning several layers
  ModuleGrad grad = ModuleGrad::Both;  ///< which backward hooks fire
  bool called = true;  ///< false for modules whose forward never runs (nn.ModuleList, a dropout
                       ///< the fused attention kernel replaces): hooked, but they never fire
  /// A mixture-of-experts block that fine-tuning recipes mark with DeepSpeed's
  /// set_z3_leaf_modules (deepspeed/utils/z3_leaf_module.py; LLaMA-Factory's add_z3_leaf_module
  /// does it for Mixtral and Qwen2-MoE): stage 3 then gathers the whole block at its pre-forward
  /// and hooks none of its children, so ranks that route tokens to different experts still issue
  /// the same collectives. The stage 3 walk fetches a leaf with every descendant's params
  /// (stage3_walk.cc); `set_z3_leaf_modules` (model_loader.h) sets or clears it by class name.
  bool z3_leaf = false;
  /// Params the module's forward reads without holding them (a parent's F.linear(x,
  /// self.fc.weight)), as a recording lists them: DeepSpeed registers each as an external param of
  /// the innermost hooked module whose forward runs (parameter_offload.py ZeROOrderedDict
  /// __getitem__, register_external_parameter) and from then on gathers and releases it with that
  /// module's own params. Ascending, none of them in param_ids.
  std::vector<std::uint32_t> external_ids;
};

/// One forward hook event: the module's pre-forward (`begin`) or post-forward hook. A module's
/// post-forward fires after its children's.
struct ModuleCall {
  std::uint32_t module = kNoModule;  ///< index into ModelDesc::modules
  bool begin = true;
  bool operator==(const ModuleCall&) const = default;
};

struct ModelDesc {
  std::string name;    ///< "llama2-7b", a file name, or "synthetic-13e9"
  std::string source;  ///< where the numbers come from (paper, HF config URL, file path)
  std::vector<ParamTensor> params;        ///< declaration order
  std::vector<Layer> layers;              ///< forward order; may be empty for a param list
  std::vector<std::uint32_t> grad_order;  ///< param ids in gradient-ready order (backward)
  bool grad_order_recorded = false;       ///< true when grad_order came from a real run
  std::optional<ArchInfo> arch;
  /// The nn.Module tree in pre-forward order, so a parent precedes its children. A module that
  /// never runs is listed where its builder declares it: a container (ModuleList) right before its
  /// first child, an unused leaf after its parent's called children. Empty when the model's
  /// structure is unknown (param lists, hand-built models).
  std::vector<ModuleNode> modules;
  /// One forward pass as hook events: begin/end pairs, properly nested, each called module once.
  std::vector<ModuleCall> module_calls;
  /// True when `modules` was inferred from parameter names (a param list without a module
  /// section: `blocks.0.ln1.weight` belongs to module `blocks.0.ln1`, every module called in
  /// declaration order) rather than built or recorded; the stage 3 notes say so.
  bool modules_inferred = false;

  /// Total elements over params (what HF's model.num_parameters() reports; tied counted once).
  Elements num_parameters() const;
  /// Elements of trainable params.
  Elements num_trainable() const;
  /// Parameters as peft's print_trainable_parameters and HF's num_parameters() count them: a
  /// quantized weight by its logical elements, not its packed storage. Equals num_parameters()
  /// for a model without quantized weights.
  Elements num_logical_parameters() const;
  /// Largest single tensor.
  Elements largest_param() const;
  /// DeepSpeed's "largest layer": max over modules of the sum of the module's direct params, where
  /// a module is the param name without its last ".component" (§8.2 model_to_params).
  Elements largest_module_params() const;
};

/// Builds the gradient-ready order from the layer structure: backward visits layers in reverse
/// forward order and, inside a layer, params in reverse use order; a param used by several layers
/// (tied weights) becomes ready at its last use in backward, i.e. its earliest forward use.
/// Params used by no layer come last, in reverse declaration order. Frozen params
/// (trainable == false) get no gradient and are left out. O(params + layer uses).
std::vector<std::uint32_t> derive_grad_order(const ModelDesc& m);

/// A shape as messages print it: "[4096, 11008]".
std::string shape_text(const std::vector<std::uint64_t>& shape);

}  // namespace zerosim
