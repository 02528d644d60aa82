// config.json readers of the Llama-layout families added after the original nine: Gemma and
// Gemma2, Qwen3, Phi-3, Starcoder2, BERT, and the mixture-of-experts Mixtral and Qwen2-MoE.
// Defaults are the configuration classes' (transformers models/<family>/configuration_<family>.py,
// v4.49 to v4.53); a key that changes a tensor's shape is read, validated and honoured, never
// ignored.
#include <string>

#include "config/hf_config_fields.h"

namespace zerosim::hf {

void read_llama_core(Fields& f, TransformerSpec& s, std::uint64_t kv_default,
                     std::uint64_t head_dim_default, bool tie_default, std::uint64_t ctx_default) {
  s.vocab = f.dim({"vocab_size"}, std::nullopt);
  s.hidden = f.dim({"hidden_size"}, std::nullopt);
  s.ffn = f.dim({"intermediate_size"}, std::nullopt);
  s.layers = f.dim({"num_hidden_layers"}, std::nullopt, 1, kMaxLayers);
  s.heads = f.dim({"num_attention_heads"}, std::nullopt);
  s.kv_heads = f.dim({"num_key_value_heads"}, kv_default == 0 ? s.heads : kv_default);
  s.head_dim = f.dim({"head_dim"}, head_dim_default);
  if (s.head_dim == 0)
    s.head_dim = split_heads(f, s.hidden, s.heads, "hidden_size", "num_attention_heads");
  if (f.ok() && s.heads % s.kv_heads != 0)
    f.error("num_attention_heads (" + std::to_string(s.heads) +
            ") is not a multiple of num_key_value_heads (" + std::to_string(s.kv_heads) + ")");
  s.tie_embeddings = f.flag("tie_word_embeddings", tie_default);
  s.max_seq = f.dim({"max_position_embeddings"}, ctx_default, 1, kMaxPositions);
  s.dropout = f.dropout({"attention_dropout"}, 0.0);
}

// GemmaConfig / Gemma2Config: head_dim 256, tied embeddings, num_key_value_heads 16 (Gemma) or 4
// (Gemma2), 8192 positions; attention_bias (default false) on q/k/v/o. Gemma2's decoder layer
// adds pre_/post_feedforward_layernorm.
void read_gemma(Fields& f, TransformerSpec& s) {
  const bool gemma2 = s.model_type == "gemma2";
  s.family = ArchFamily::Llama;
  read_llama_core(f, s, gemma2 ? 4 : 16, 256, true, 8192);
  s.qkv_bias = s.o_bias = f.flag("attention_bias", false);
  s.sandwich_norms = gemma2;
}

// Qwen3Config: head_dim 128, num_key_value_heads 32, untied, 32768 positions, attention_bias
// false; Qwen3Attention adds q_norm/k_norm over head_dim.
void read_qwen3(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Llama;
  read_llama_core(f, s, 32, 128, false, 32768);
  s.qkv_bias = s.o_bias = f.flag("attention_bias", false);
  s.qk_norm = true;
}

// Starcoder2Config: num_key_value_heads 2, 4096 positions, use_bias true (every Linear and the
// LayerNorms' affine bias); tie_word_embeddings is PretrainedConfig's default, true.
// residual_dropout and embedding_dropout (default 0) are F.dropout calls, not modules.
void read_starcoder2(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Llama;
  read_llama_core(f, s, 2, 0, true, 4096);
  s.qkv_bias = s.o_bias = s.mlp_bias = f.flag("use_bias", true);
  s.layer_norm = s.plain_mlp = true;
  s.dropout = s.dropout || f.dropout({"residual_dropout", "embedding_dropout"}, 0.0);
}

// BertConfig: every shape key has a default (vocab 30522, hidden 768, 12 layers and heads,
// intermediate 3072, 512 positions, type_vocab_size 2), hidden/attention dropout 0.1, tied
// decoder (PretrainedConfig). Only absolute position embeddings are supported: the relative
// kinds add distance_embedding tensors zerosim does not build.
// RobertaConfig: BertConfig's defaults except vocab 50265 and type_vocab_size 1 as configs set
// them; roberta-base's config.json gives max_position_embeddings 514 (2 padding-offset rows).
void read_bert(Fields& f, TransformerSpec& s) {
  const bool roberta = s.model_type == "roberta";
  s.family = ArchFamily::Bert;
  s.vocab = f.dim({"vocab_size"}, std::uint64_t{roberta ? 50265u : 30522u});
  s.hidden = f.dim({"hidden_size"}, std::uint64_t{768});
  s.layers = f.dim({"num_hidden_layers"}, std::uint64_t{12}, 1, kMaxLayers);
  s.heads = s.kv_heads = f.dim({"num_attention_heads"}, std::uint64_t{12});
  s.ffn = f.dim({"intermediate_size"}, std::uint64_t{3072});
  s.head_dim = split_heads(f, s.hidden, s.heads, "hidden_size", "num_attention_heads");
  s.max_seq = s.positions = f.dim({"max_position_embeddings"}, std::uint64_t{512});
  s.type_vocab = f.dim({"type_vocab_size"}, std::uint64_t{2});
  s.tie_embeddings = f.flag("tie_word_embeddings", true);
  s.dropout = f.dropout({"hidden_dropout_prob", "attention_probs_dropout_prob"}, 0.1);
  f.position_kind("position_embedding_type");
}

// Reads num_experts_per_tok against the expert count (top-k of E needs 1 <= k <= E).
void read_top_k(Fields& f, TransformerSpec& s, std::uint64_t k_default) {
  s.experts_per_token = f.dim({"num_experts_per_tok"}, k_default);
  if (f.ok() && s.experts_per_token > s.experts)
    f.error("num_experts_per_tok (" + std::to_string(s.experts_per_token) +
                ") exceeds the number of experts (" + std::to_string(s.experts) + ")",
            "num_experts_per_tok");
}

// MixtralConfig: num_local_experts 8, num_experts_per_tok 2, num_key_value_heads 8, untied,
// 4096 * 32 positions; every layer is sparse and intermediate_size is each expert's width.
void read_mixtral(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Llama;
  read_llama_core(f, s, 8, 0, false, std::uint64_t{4096} * 32);
  s.experts = f.dim({"num_local_experts"}, std::uint64_t{8}, 1, 4096);
  read_top_k(f, s, 2);
  s.expert_ffn = s.ffn;
}

// Qwen2MoeConfig: 60 experts of moe_intermediate_size 1408, top-4, a shared expert of
// shared_expert_intermediate_size 5632, decoder_sparse_step 1, mlp_only_layers [] (dense layers of
// intermediate_size); num_key_value_heads 16, untied; q/k/v carry a bias (Qwen2MoeAttention).
void read_qwen2_moe(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Llama;
  read_llama_core(f, s, 16, 0, false, 32768);
  s.qkv_bias = true;
  s.experts = f.dim({"num_experts"}, std::uint64_t{60}, 1, 4096);
  read_top_k(f, s, 4);
  s.expert_ffn = f.dim({"moe_intermediate_size"}, std::uint64_t{1408});
  s.shared_expert_ffn = f.dim({"shared_expert_intermediate_size"}, std::uint64_t{5632}, 0);
  s.sparse_step = f.dim({"decoder_sparse_step"}, std::uint64_t{1}, 1, kMaxLayers);
  s.dense_layers = f.index_list("mlp_only_layers", s.layers);
}

// Phi3Config: num_key_value_heads None -> heads, untied, 4096 positions; resid_pdrop, embd_pdrop
// and attention_dropout default 0.
void read_phi3(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Phi3;
  read_llama_core(f, s, 0, 0, false, 4096);
  s.dropout = s.dropout || f.dropout({"resid_pdrop", "embd_pdrop"}, 0.0);
}

}  // namespace zerosim::hf
