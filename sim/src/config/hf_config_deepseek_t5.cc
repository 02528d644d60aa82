// config.json readers of DeepSeek-V2/V3 (multi-head latent attention, shared-expert MoE) and T5
// (encoder-decoder). Defaults are the configuration classes' (transformers
// models/deepseek_v2/modular_deepseek_v2.py, deepseek_v3/configuration_deepseek_v3.py,
// t5/configuration_t5.py); a key that changes a tensor's shape is read, validated and honoured,
// and one transformers itself ignores while DeepSeek's own code honours it is refused.
#include <string>
#include <vector>

#include "config/hf_config_fields.h"

namespace zerosim::hf {

// DeepseekV2Config (LlamaConfig's sizes: vocab 32000, hidden 4096, intermediate 11008, 32 layers
// and heads, 2048 positions; kv_lora_rank 512, q_lora_rank 1536, qk_nope/rope 128/64, v 128,
// 64 routed experts of 1407, 2 shared, num_experts_per_tok None, first_k_dense_replace 0) and
// DeepseekV3Config (DeepSeek-V3's own sizes, 4096 positions). Both untied, attention_bias false;
// V2's MLPs honour mlp_bias, V3's have no bias. num_local_experts is V3's attribute_map alias.
void read_deepseek(Fields& f, TransformerSpec& s) {
  const bool v3 = s.model_type == "deepseek_v3";
  s.family = ArchFamily::Deepseek;
  s.vocab = f.dim({"vocab_size"}, std::uint64_t{v3 ? 129280u : 32000u});
  s.hidden = f.dim({"hidden_size"}, std::uint64_t{v3 ? 7168u : 4096u});
  s.ffn = f.dim({"intermediate_size"}, std::uint64_t{v3 ? 18432u : 11008u});
  s.layers = f.dim({"num_hidden_layers"}, std::uint64_t{v3 ? 61u : 32u}, 1, kMaxLayers);
  s.heads = f.dim({"num_attention_heads"}, std::uint64_t{v3 ? 128u : 32u});
  s.kv_heads = f.dim({"num_key_value_heads"}, s.heads);
  if (f.ok() && s.kv_heads != s.heads)
    f.error("num_key_value_heads (" + std::to_string(s.kv_heads) +
                ") must equal num_attention_heads (" + std::to_string(s.heads) +
                "): kv_b_proj already makes one key and value per query head, and transformers' "
                "repeat_kv would break the shapes",
            "num_key_value_heads");
  s.q_lora_rank = f.dim_or_null("q_lora_rank", 1536);
  s.kv_lora_rank = f.dim({"kv_lora_rank"}, std::uint64_t{512});
  const auto nope = f.dim({"qk_nope_head_dim"}, std::uint64_t{128});
  s.qk_rope_dim = f.dim({"qk_rope_head_dim"}, std::uint64_t{64});
  s.head_dim = nope + s.qk_rope_dim;
  s.v_head_dim = f.dim({"v_head_dim"}, std::uint64_t{128});
  s.qkv_bias = s.o_bias = f.flag("attention_bias", false);
  s.mlp_bias = !v3 && f.flag("mlp_bias", false);
  s.tie_embeddings = f.flag("tie_word_embeddings", false);
  s.max_seq =
      f.dim({"max_position_embeddings"}, std::uint64_t{v3 ? 4096u : 2048u}, 1, kMaxPositions);
  s.dropout = f.dropout({"attention_dropout"}, 0.0);
  s.experts =
      f.dim({"n_routed_experts", "num_local_experts"}, std::uint64_t{v3 ? 256u : 64u}, 1, 4096);
  // None would leave V2 without shared_experts, which its forward still calls, and breaks V3's
  // constructor: refused rather than defaulted.
  const auto shared = f.dim_or_null("n_shared_experts", v3 ? 1 : 2, 1, 64);
  if (f.ok() && shared == 0)
    f.error(
        "n_shared_experts null is not supported (DeepseekV2MoE/DeepseekV3MoE always run "
        "shared_experts); expected an integer >= 1",
        "n_shared_experts");
  if (v3)
    s.experts_per_token = f.dim({"num_experts_per_tok"}, std::uint64_t{8});
  else
    s.experts_per_token = f.dim({"num_experts_per_tok"}, std::nullopt);
  if (f.ok() && s.experts_per_token > s.experts)
    f.error("num_experts_per_tok (" + std::to_string(s.experts_per_token) +
                ") exceeds the number of routed experts (" + std::to_string(s.experts) + ")",
            "num_experts_per_tok");
  s.expert_ffn = f.dim({"moe_intermediate_size"}, std::uint64_t{v3 ? 2048u : 1407u});
  s.shared_expert_ffn = s.expert_ffn * shared;  // <= 2^24 * 64: no overflow
  const auto first_dense =
      f.dim({"first_k_dense_replace"}, std::uint64_t{v3 ? 3u : 0u}, 0, kMaxLayers);
  for (std::uint64_t i = 0; i < first_dense && i < s.layers; ++i) s.dense_layers.push_back(i);
  // DeepSeek's remote modeling code makes layer i sparse when i >= first_k_dense_replace and
  // i % moe_layer_freq == 0; transformers' DeepseekV2/V3DecoderLayer ignores moe_layer_freq.
  // Every released config sets 1, where both agree; any other value is refused.
  const auto freq = f.dim({"moe_layer_freq"}, std::uint64_t{1}, 1, kMaxLayers);
  if (f.ok() && freq != 1)
    f.error("moe_layer_freq " + std::to_string(freq) +
                " is not supported: transformers ignores it (every layer from "
                "first_k_dense_replace on is MoE) while DeepSeek's own code honours it; expected 1",
            "moe_layer_freq");
  // DeepSeek-V3's multi-token-prediction layers: transformers builds none (it drops checkpoint
  // layer 61 on load), so they add no parameter; the value is only validated.
  f.dim({"num_nextn_predict_layers"}, std::uint64_t{0}, 0, kMaxLayers);
}

namespace {

// ACT2FN's module class for the activations T5 checkpoints use.
std::string activation_class(const std::string& act) {
  if (act == "relu") return "ReLU";
  if (act == "gelu_new") return "NewGELUActivation";
  if (act == "gelu") return "GELUActivation";
  if (act == "silu") return "SiLU";
  if (act == "gelu_pytorch_tanh") return "PytorchGELUTanh";
  return "";
}

}  // namespace

// T5Config: vocab 32128, d_model 512, d_kv 64, d_ff 2048, 6 layers, num_decoder_layers None (=
// num_layers), 8 heads, 32 relative buckets, dropout_rate 0.1, feed_forward_proj "relu", tied
// embeddings (PretrainedConfig; flan-t5 and t5 v1.1 set false). attribute_map: hidden_size,
// num_attention_heads, num_hidden_layers, head_dim. T5 has no position limit (relative buckets);
// the t5 v1.0 configs' n_positions (512) is the context length recorded when present.
void read_t5(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::T5;
  s.vocab = f.dim({"vocab_size"}, std::uint64_t{32128});
  s.hidden = f.dim({"d_model", "hidden_size"}, std::uint64_t{512});
  s.head_dim = f.dim({"d_kv", "head_dim"}, std::uint64_t{64});
  s.ffn = f.dim({"d_ff"}, std::uint64_t{2048});
  s.layers = f.dim({"num_layers", "num_hidden_layers"}, std::uint64_t{6}, 1, kMaxLayers);
  s.decoder_layers = f.dim({"num_decoder_layers"}, s.layers, 1, kMaxLayers);
  s.heads = s.kv_heads = f.dim({"num_heads", "num_attention_heads"}, std::uint64_t{8});
  s.relative_buckets = f.dim({"relative_attention_num_buckets"}, std::uint64_t{32});
  f.dim({"relative_attention_max_distance"}, std::uint64_t{128});  // validated; no parameter
  s.max_seq = f.dim({"n_positions"}, std::uint64_t{512}, 1, kMaxPositions);
  s.dropout = f.dropout({"dropout_rate"}, 0.1);
  s.tie_embeddings = f.flag("tie_word_embeddings", true);
  // T5Config.__init__: "gated-ACT" or "ACT"; "gated-gelu" means gelu_new.
  const std::string proj = f.text("feed_forward_proj", "relu");
  std::vector<std::string> parts;
  std::string::size_type start = 0;
  for (;;) {
    const auto dash = proj.find('-', start);
    parts.push_back(proj.substr(start, dash == std::string::npos ? dash : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  if (parts.size() > 2 || (parts.size() == 2 && parts[0] != "gated")) {
    f.error("feed_forward_proj " + quote(proj) +
                " is not a valid activation; expected \"ACT\" or \"gated-ACT\" (T5Config raises)",
            "feed_forward_proj");
    return;
  }
  s.gated_ffn = parts.size() == 2;
  const std::string act = proj == "gated-gelu" ? "gelu_new" : parts.back();
  s.act_class = activation_class(act);
  if (f.ok() && s.act_class.empty())
    f.error("feed_forward_proj activation " + quote(act) +
                " is not supported; expected relu, gelu, gelu_new, gelu_pytorch_tanh or silu",
            "feed_forward_proj");
}

}  // namespace zerosim::hf
