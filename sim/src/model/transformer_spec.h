// TransformerSpec: the architecture knobs of one decoder-only transformer, in plain C++, and the
// builder that turns them into a ModelDesc whose parameter tensors match Hugging Face's
// `*ForCausalLM.named_parameters()` (names, shapes, declaration order, tied weights once).
//
// The Hugging Face config.json reader (sim/src/config/hf_config_loader.cc) fills a spec; the
// synthetic-model generator fills one too. Nothing here reads JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/model_desc.h"

namespace zerosim {

/// Module layouts, one per transformers modeling file that zerosim reproduces.
enum class ArchFamily {
  Llama,     ///< modeling_llama.py / modeling_mistral.py / modeling_qwen2.py (RMSNorm, SwiGLU, GQA)
  Gpt2,      ///< modeling_gpt2.py (Conv1D weights stored [in, out], learned positions)
  GptNeox,   ///< modeling_gpt_neox.py (fused qkv, two LayerNorms, untied embed_out)
  Gptj,      ///< modeling_gptj.py (k/v/q/out without bias, one LayerNorm, lm_head with bias)
  Opt,       ///< modeling_opt.py (learned positions with offset 2, optional project_in/out)
  Bloom,     ///< modeling_bloom.py (ALiBi, word_embeddings_layernorm, fused qkv)
  Falcon,    ///< modeling_falcon.py (multi-query / new decoder architecture, parallel attention)
  Phi3,      ///< modeling_phi3.py (fused qkv_proj and gate_up_proj, RMSNorm)
  Bert,      ///< modeling_bert.py, BertForMaskedLM (encoder, post-LayerNorm, tied MLM decoder)
  Deepseek,  ///< modeling_deepseek_v2.py / _v3.py (multi-head latent attention, shared experts)
  T5,        ///< modeling_t5.py, T5ForConditionalGeneration (encoder-decoder, relative bias)
};

/// How a Falcon block declares its LayerNorms (FalconDecoderLayer.__init__).
enum class FalconNorms {
  InputOnly,     ///< parallel_attn, one norm: input_layernorm
  PostAndInput,  ///< not parallel_attn: post_attention_layernorm, input_layernorm
  AttnAndMlp,    ///< parallel_attn with num_ln_in_parallel_attn == 2: ln_attn, ln_mlp
};

/// Every dimension is in elements; zero means "not used by this family".
struct TransformerSpec {
  std::string model_type;  ///< config.json model_type ("llama", "mistral", ...)
  ArchFamily family = ArchFamily::Llama;
  std::uint64_t vocab = 0;      ///< embedding rows (vocab_size)
  std::uint64_t hidden = 0;     ///< h
  std::uint64_t layers = 0;     ///< L
  std::uint64_t heads = 0;      ///< query heads a
  std::uint64_t kv_heads = 0;   ///< key/value heads (GQA); == heads for MHA
  std::uint64_t head_dim = 0;   ///< per-head width
  std::uint64_t ffn = 0;        ///< MLP inner width
  std::uint64_t positions = 0;  ///< learned position rows (GPT-2, OPT); 0 = no table
  std::uint64_t max_seq = 0;    ///< context length recorded in ArchInfo
  bool tie_embeddings = false;  ///< head shares the token embedding
  bool dropout = false;         ///< any configured dropout probability > 0
  // Llama family and GPT-NeoX.
  bool qkv_bias = false;  ///< q/k/v (or fused qkv) projections carry a bias
  bool o_bias = false;    ///< output projection carries a bias
  bool mlp_bias = false;  ///< MLP projections carry biases
  // OPT.
  std::uint64_t word_embed_proj_dim = 0;  ///< embedding width; != hidden adds project_in/out
  bool opt_pre_norm = true;               ///< do_layer_norm_before
  bool opt_final_norm = true;             ///< decoder.final_layer_norm exists
  bool opt_norm_affine = true;            ///< layer_norm_elementwise_affine
  // Falcon.
  std::uint64_t falcon_qkv_out = 0;  ///< query_key_value output width
  bool falcon_bias = false;          ///< config.bias
  FalconNorms falcon_norms = FalconNorms::InputOnly;
  // Llama-layout variants: Gemma2's pre/post feed-forward norms, Qwen3's per-head q/k norms.
  bool sandwich_norms = false;   ///< Gemma2DecoderLayer: four RMSNorms per block
  bool qk_norm = false;          ///< Qwen3Attention: q_norm/k_norm RMSNorm(head_dim)
  bool layer_norm = false;       ///< Starcoder2: nn.LayerNorm (weight + bias), not RMSNorm
  bool plain_mlp = false;        ///< Starcoder2MLP: c_fc, act, c_proj (no gate)
  std::uint64_t type_vocab = 0;  ///< BERT token_type_embeddings rows (type_vocab_size)
  // Mixture of experts (Mixtral, Qwen2-MoE): the MLP of a sparse layer is a router `gate`
  // Linear(hidden, experts) and `experts` MLPs of width expert_ffn, of which each token uses
  // experts_per_token; Qwen2-MoE adds an always-used shared expert and its scalar gate.
  std::uint64_t experts = 0;            ///< routed experts per sparse layer; 0 = dense model
  std::uint64_t experts_per_token = 0;  ///< top-k
  std::uint64_t expert_ffn = 0;         ///< each routed expert's MLP inner width
  std::uint64_t shared_expert_ffn = 0;  ///< Qwen2-MoE shared expert width; 0 = none
  std::uint64_t sparse_step = 1;        ///< Qwen2-MoE decoder_sparse_step: every k-th layer is MoE
  std::vector<std::uint64_t> dense_layers;  ///< Qwen2-MoE mlp_only_layers: dense MLP (width ffn)
  // DeepSeek-V2/V3 multi-head latent attention: queries through q_a_proj -> q_a_layernorm ->
  // q_b_proj (or one q_proj when q_lora_rank is None), keys and values through the shared latent
  // kv_a_proj_with_mqa -> kv_a_layernorm -> kv_b_proj. head_dim holds qk_nope + qk_rope.
  // The MoE uses experts / expert_ffn / shared_expert_ffn above and dense_layers for the
  // first_k_dense_replace dense layers.
  std::uint64_t q_lora_rank = 0;   ///< 0: q_lora_rank None (q_proj)
  std::uint64_t kv_lora_rank = 0;  ///< latent width of keys and values
  std::uint64_t qk_rope_dim = 0;   ///< rotary part of each query/key head (shared by all heads)
  std::uint64_t v_head_dim = 0;    ///< value (and attention output) width per head
  // T5: `layers` encoder blocks, decoder_layers decoder blocks, a relative position bias table in
  // the first block of each stack, gated or plain DenseReluDense with activation class act_class.
  std::uint64_t decoder_layers = 0;
  std::uint64_t relative_buckets = 0;  ///< relative_attention_num_buckets
  bool gated_ffn = false;              ///< feed_forward_proj "gated-*": wi_0, wi_1, wo
  std::string act_class;               ///< the activation module's class (ReLU, NewGELUActivation)
};

/// Builds params (declaration order), layers (forward order, FLOPs), ArchInfo and grad_order.
/// Fails with one diagnostic at `source` when a shape overflows 64 bits or the total exceeds
/// kMaxParameters (1e15), before allocating further tensors.
Result<ModelDesc> build_transformer(const TransformerSpec& spec, const std::string& name,
                                    const std::string& source);

}  // namespace zerosim
