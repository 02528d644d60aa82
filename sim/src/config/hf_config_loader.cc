// Hugging Face config.json import: reads the fields each supported model_type's configuration
// class uses to size its modules, with transformers' aliases (attribute_map: n_embd/hidden_size,
// n_layer/num_hidden_layers, ...) and defaults, then builds the exact parameter list.
//
// Widths and the vocabulary are limited to 2^24 and layers to 4096 so that no shape product can
// silently overflow; the builder additionally refuses models above 1e15 parameters.
#include "config/hf_config_loader.h"

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <vector>

#include "config/hf_config_fields.h"
#include "zerosim/model_loader.h"

namespace zerosim {

namespace {

using hf::Fields;
using hf::kMaxDim;
using hf::kMaxLayers;
using hf::kMaxPositions;
using hf::split_heads;

const std::vector<std::string>& supported_types() {
  static const std::vector<std::string> kTypes = {
      "llama",     "mistral",    "qwen2", "qwen3",   "gemma",       "gemma2",      "phi3",
      "gpt2",      "gpt_neox",   "gptj",  "opt",     "bloom",       "falcon",      "mixtral",
      "qwen2_moe", "starcoder2", "bert",  "roberta", "deepseek_v2", "deepseek_v3", "t5"};
  return kTypes;
}

std::string type_list() {
  std::string s;
  for (const auto& t : supported_types()) s += (s.empty() ? "" : ", ") + t;
  return s;
}

void read_llama(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Llama;
  s.vocab = f.dim({"vocab_size"}, std::nullopt);
  s.hidden = f.dim({"hidden_size"}, std::nullopt);
  s.ffn = f.dim({"intermediate_size"}, std::nullopt);
  s.layers = f.dim({"num_hidden_layers"}, std::nullopt, 1, kMaxLayers);
  s.heads = f.dim({"num_attention_heads"}, std::nullopt);
  // Config-class defaults: LlamaConfig None -> heads, MistralConfig 8, Qwen2Config 32.
  std::uint64_t kv_default = s.model_type == "mistral" ? 8 : s.model_type == "qwen2" ? 32 : s.heads;
  s.kv_heads = f.dim({"num_key_value_heads"}, kv_default);
  s.head_dim = f.dim({"head_dim"}, std::uint64_t{0});
  if (s.head_dim == 0)
    s.head_dim = split_heads(f, s.hidden, s.heads, "hidden_size", "num_attention_heads");
  if (f.ok() && s.heads % s.kv_heads != 0)
    f.error("num_attention_heads (" + std::to_string(s.heads) +
            ") is not a multiple of num_key_value_heads (" + std::to_string(s.kv_heads) + ")");
  s.tie_embeddings = f.flag("tie_word_embeddings", false);
  if (s.model_type == "llama") {
    s.qkv_bias = s.o_bias = f.flag("attention_bias", false);
    s.mlp_bias = f.flag("mlp_bias", false);
  } else if (s.model_type == "qwen2") {
    s.qkv_bias = true;  // Qwen2Attention: q/k/v bias=True, o_proj bias=False, fixed in code
  }
  std::uint64_t ctx = s.model_type == "llama" ? 2048 : s.model_type == "mistral" ? 131072 : 32768;
  s.max_seq = f.dim({"max_position_embeddings"}, ctx, 1, kMaxPositions);
  s.dropout = f.dropout({"attention_dropout"}, 0.0);
}

void read_gpt2_like(Fields& f, TransformerSpec& s) {
  const bool gpt2 = s.model_type == "gpt2";
  s.family = gpt2 ? ArchFamily::Gpt2 : ArchFamily::Gptj;
  s.vocab = f.dim({"vocab_size"}, std::nullopt);
  s.hidden = f.dim({"n_embd", "hidden_size"}, std::nullopt);
  s.layers = f.dim({"n_layer", "num_hidden_layers"}, std::nullopt, 1, kMaxLayers);
  s.heads = s.kv_heads = f.dim({"n_head", "num_attention_heads"}, std::nullopt);
  s.max_seq = f.dim({"n_positions", "max_position_embeddings"}, std::nullopt, 1, kMaxDim);
  s.positions = gpt2 ? s.max_seq : 0;  // GPT-J uses rotary embeddings, no position table
  s.ffn = f.dim({"n_inner"}, 4 * s.hidden);
  s.head_dim = split_heads(f, s.hidden, s.heads, "n_embd", "n_head");
  s.tie_embeddings = f.flag("tie_word_embeddings", gpt2);
  s.dropout = f.dropout({"resid_pdrop", "embd_pdrop", "attn_pdrop"}, gpt2 ? 0.1 : 0.0);
  if (gpt2 && f.flag("add_cross_attention", false))
    f.error("add_cross_attention: true (encoder-decoder GPT-2) is not supported");
  if (!gpt2) f.dim({"rotary_dim"}, std::uint64_t{0});  // validated; RoPE adds no parameters
}

void read_gpt_neox(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::GptNeox;
  s.vocab = f.dim({"vocab_size"}, std::nullopt);
  s.hidden = f.dim({"hidden_size"}, std::nullopt);
  s.ffn = f.dim({"intermediate_size"}, std::nullopt);
  s.layers = f.dim({"num_hidden_layers"}, std::nullopt, 1, kMaxLayers);
  s.heads = s.kv_heads = f.dim({"num_attention_heads"}, std::nullopt);
  s.head_dim = split_heads(f, s.hidden, s.heads, "hidden_size", "num_attention_heads");
  s.max_seq = f.dim({"max_position_embeddings"}, std::uint64_t{2048}, 1, kMaxPositions);
  s.tie_embeddings = f.flag("tie_word_embeddings", false);
  s.qkv_bias = s.o_bias = f.flag("attention_bias", true);
  f.flag("use_parallel_residual", true);  // validated; changes the dataflow, not the parameters
  s.dropout = f.dropout({"hidden_dropout", "attention_dropout"}, 0.0);
}

void read_opt(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Opt;
  s.vocab = f.dim({"vocab_size"}, std::nullopt);
  s.hidden = f.dim({"hidden_size"}, std::nullopt);
  s.ffn = f.dim({"ffn_dim"}, std::nullopt);
  s.layers = f.dim({"num_hidden_layers"}, std::nullopt, 1, kMaxLayers);
  s.heads = s.kv_heads = f.dim({"num_attention_heads"}, std::nullopt);
  s.head_dim = split_heads(f, s.hidden, s.heads, "hidden_size", "num_attention_heads");
  s.max_seq = f.dim({"max_position_embeddings"}, std::uint64_t{2048}, 1, kMaxDim);
  s.positions = s.max_seq + 2;  // OPTLearnedPositionalEmbedding keeps 2 offset rows
  s.word_embed_proj_dim = f.dim({"word_embed_proj_dim"}, s.hidden);
  s.opt_pre_norm = f.flag("do_layer_norm_before", true);
  s.opt_final_norm = s.opt_pre_norm && !f.flag("_remove_final_layer_norm", false);
  s.qkv_bias = s.o_bias = s.mlp_bias = f.flag("enable_bias", true);
  s.opt_norm_affine = f.flag("layer_norm_elementwise_affine", true);
  s.tie_embeddings = f.flag("tie_word_embeddings", true);
  s.dropout = f.dropout({"dropout"}, 0.1) || f.dropout({"attention_dropout"}, 0.0);
}

void read_bloom(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Bloom;
  s.vocab = f.dim({"vocab_size"}, std::nullopt);
  s.hidden = f.dim({"n_embed", "hidden_size"}, std::nullopt);  // BloomConfig prefers n_embed
  s.layers = f.dim({"n_layer", "num_hidden_layers"}, std::nullopt, 1, kMaxLayers);
  s.heads = s.kv_heads = f.dim({"n_head", "num_attention_heads"}, std::nullopt);
  s.head_dim = split_heads(f, s.hidden, s.heads, "hidden_size", "n_head");
  s.ffn = 4 * s.hidden;  // BloomMLP is always 4h wide (n_inner is ignored)
  // ALiBi has no position table; BLOOM was trained on 2048-token sequences.
  s.max_seq = f.dim({"seq_length"}, std::uint64_t{2048}, 1, kMaxPositions);
  s.tie_embeddings = f.flag("tie_word_embeddings", true);
  s.dropout = f.dropout({"hidden_dropout", "attention_dropout"}, 0.0);
}

void read_falcon(Fields& f, TransformerSpec& s) {
  s.family = ArchFamily::Falcon;
  s.vocab = f.dim({"vocab_size"}, std::nullopt);
  s.hidden = f.dim({"hidden_size"}, std::nullopt);
  s.layers = f.dim({"num_hidden_layers", "n_layer"}, std::nullopt, 1, kMaxLayers);
  s.heads = f.dim({"num_attention_heads", "n_head"}, std::nullopt);
  const auto kv = f.dim({"num_kv_heads", "n_head_kv"}, s.heads);
  const bool new_arch = f.flag("new_decoder_architecture", false);
  const bool multi_query = f.flag("multi_query", true);
  const bool parallel = f.flag("parallel_attn", true);
  auto num_ln = f.dim({"num_ln_in_parallel_attn"}, std::uint64_t{0}, 1, 2);
  if (num_ln == 0 && new_arch) num_ln = 2;
  s.falcon_bias = f.flag("bias", false);
  s.ffn = f.dim({"ffn_hidden_size"}, 4 * s.hidden);
  s.head_dim = split_heads(f, s.hidden, s.heads, "hidden_size", "num_attention_heads");
  // FalconAttention: fused qkv width per variant; grouped kv heads only in the new architecture.
  if (new_arch) {
    s.kv_heads = kv;
    s.falcon_qkv_out = (2 * kv + s.heads) * s.head_dim;
  } else if (multi_query) {
    s.kv_heads = 1;
    s.falcon_qkv_out = s.hidden + 2 * s.head_dim;
  } else {
    s.kv_heads = s.heads;
    s.falcon_qkv_out = 3 * s.hidden;
  }
  s.falcon_norms = !parallel     ? FalconNorms::PostAndInput
                   : num_ln == 2 ? FalconNorms::AttnAndMlp
                                 : FalconNorms::InputOnly;
  s.max_seq = f.dim({"max_position_embeddings"}, std::uint64_t{2048}, 1, kMaxPositions);
  s.tie_embeddings = f.flag("tie_word_embeddings", true);
  s.dropout = f.dropout({"hidden_dropout", "attention_dropout"}, 0.0);
}

}  // namespace

std::optional<TransformerSpec> read_hf_config(json::JsonReader& r) {
  if (!r.expect_object()) return std::nullopt;
  if (!r.has("model_type")) {
    r.error("missing required key \"model_type\" (supported: " + type_list() + ")");
    return std::nullopt;
  }
  auto type = r.get_string("model_type");
  if (!type) return std::nullopt;
  const auto& types = supported_types();
  if (std::find(types.begin(), types.end(), *type) == types.end()) {
    auto m = closest_match(*type, types);
    r.error("unsupported model_type " + quote(*type) + "; supported: " + type_list(), "model_type",
            m.empty() ? "" : "did you mean " + quote(m) + "?");
    return std::nullopt;
  }
  TransformerSpec s;
  s.model_type = *type;
  Fields f(r);
  if (*type == "llama" || *type == "mistral" || *type == "qwen2")
    read_llama(f, s);
  else if (*type == "gpt2" || *type == "gptj")
    read_gpt2_like(f, s);
  else if (*type == "gpt_neox")
    read_gpt_neox(f, s);
  else if (*type == "opt")
    read_opt(f, s);
  else if (*type == "bloom")
    read_bloom(f, s);
  else if (*type == "gemma" || *type == "gemma2")
    hf::read_gemma(f, s);
  else if (*type == "qwen3")
    hf::read_qwen3(f, s);
  else if (*type == "mixtral")
    hf::read_mixtral(f, s);
  else if (*type == "qwen2_moe")
    hf::read_qwen2_moe(f, s);
  else if (*type == "phi3")
    hf::read_phi3(f, s);
  else if (*type == "starcoder2")
    hf::read_starcoder2(f, s);
  else if (*type == "bert" || *type == "roberta")
    hf::read_bert(f, s);
  else if (*type == "deepseek_v2" || *type == "deepseek_v3")
    hf::read_deepseek(f, s);
  else if (*type == "t5")
    hf::read_t5(f, s);
  else
    read_falcon(f, s);
  if (!f.ok()) return std::nullopt;
  return s;
}

Result<ModelDesc> model_from_hf_config(json::JsonReader& r, const std::string& fallback_name) {
  auto spec = read_hf_config(r);
  if (!spec) return Result<ModelDesc>(r.diags());
  std::string name = fallback_name;
  if (r.has("_name_or_path") && r.value().at("_name_or_path").is_string()) {
    auto n = r.value().at("_name_or_path").get<std::string>();
    if (!n.empty()) name = n;
  }
  auto m = build_transformer(*spec, name, r.source());
  if (!m.ok()) {
    Diagnostics d = r.diags();
    d.append(m.diagnostics());
    return Result<ModelDesc>(std::move(d));
  }
  return m;
}

Result<ModelDesc> load_hf_config_text(const std::string& text, const std::string& source) {
  Diagnostics diags;
  auto j = json::parse(text, source, diags);
  if (!j) return Result<ModelDesc>(std::move(diags));
  json::JsonReader root(*j, source, "", diags);
  return model_from_hf_config(root, source);
}

Result<ModelDesc> load_hf_config_file(const std::string& path) {
  Diagnostics diags;
  std::string text;
  // A model directory (what save_pretrained writes, a Hub snapshot) holds DIR/config.json.
  std::error_code ec;
  const std::string file = std::filesystem::is_directory(path, ec)
                               ? (std::filesystem::path(path) / "config.json").string()
                               : path;
  if (file != path && !std::filesystem::exists(file, ec))
    return fail<ModelDesc>(path, "", "a directory without a config.json");
  if (!json::read_file(file, text, diags)) return Result<ModelDesc>(std::move(diags));
  return load_hf_config_text(text, file);
}

}  // namespace zerosim
