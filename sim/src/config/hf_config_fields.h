// Field access shared by the Hugging Face config.json readers (hf_config_loader.cc for the
// original families, hf_config_families.cc for the Gemma, Qwen3, Phi-3 and mixture-of-experts
// ones). Internal to sim/src/config.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_reader.h"
#include "model/transformer_spec.h"

namespace zerosim::hf {

inline constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 24;
inline constexpr std::uint64_t kMaxLayers = 4096;
inline constexpr std::uint64_t kMaxPositions = std::uint64_t{1} << 32;

// Field access with aliases, null-as-absent (transformers treats None as "use the default") and a
// sticky error flag, so each family reader stays a flat list of fields.
class Fields {
 public:
  explicit Fields(json::JsonReader& r) : r_(r) {}
  bool ok() const { return ok_; }
  void error(const std::string& message, std::string_view key = {}) {
    r_.error(message, key);
    ok_ = false;
  }

  /// An integer in [lo, hi] under the first present alias; `fallback` when absent or null
  /// (nullopt fallback: required).
  std::uint64_t dim(std::initializer_list<const char*> keys, std::optional<std::uint64_t> fallback,
                    std::uint64_t lo = 1, std::uint64_t hi = kMaxDim) {
    std::optional<std::uint64_t> found;
    std::string found_key;
    for (const char* k : keys) {
      if (!present(k)) continue;
      auto v = r_.get_uint(k, lo, hi);
      if (!v) {
        ok_ = false;
        return 0;
      }
      if (found && *found != *v) {
        error("\"" + found_key + "\" (" + std::to_string(*found) + ") and \"" + k + "\" (" +
              std::to_string(*v) + ") disagree");
        return 0;
      }
      found = v;
      found_key = k;
    }
    if (found) return *found;
    if (fallback) return *fallback;
    std::string names;
    for (const char* k : keys) names += names.empty() ? quote(k) : " (or " + quote(k) + ")";
    error("missing required key " + names);
    return 0;
  }

  /// An integer in [lo, hi] under `key` where an explicit null means "none" and reads as 0
  /// (DeepSeek's q_lora_rank: None builds one q_proj); `fallback` when absent.
  std::uint64_t dim_or_null(const char* key, std::uint64_t fallback, std::uint64_t lo = 1,
                            std::uint64_t hi = kMaxDim) {
    if (!r_.has(key)) return fallback;
    r_.mark_used(key);
    if (r_.value().at(key).is_null()) return 0;
    auto v = r_.get_uint(key, lo, hi);
    if (!v) ok_ = false;
    return v.value_or(0);
  }

  /// A string under `key`; `fallback` when absent or null.
  std::string text(const char* key, const std::string& fallback) {
    if (!present(key)) return fallback;
    auto v = r_.get_string(key);
    if (!v) ok_ = false;
    return v.value_or(fallback);
  }

  bool flag(const char* key, bool fallback) {
    if (!present(key)) return fallback;
    auto v = r_.get_bool(key);
    if (!v) ok_ = false;
    return v.value_or(fallback);
  }

  /// True when any of the dropout probabilities (each defaulting to `fallback`) is > 0.
  bool dropout(std::initializer_list<const char*> keys, double fallback) {
    bool any = false;
    for (const char* k : keys) {
      double p = fallback;
      if (present(k)) {
        auto v = r_.get_number(k, 0.0, 1.0);
        if (!v) ok_ = false;
        p = v.value_or(0.0);
      }
      any = any || p > 0.0;
    }
    return any;
  }

  /// A list of layer indices, each below `layers` (Qwen2-MoE's mlp_only_layers); empty when
  /// absent or null.
  std::vector<std::uint64_t> index_list(const char* key, std::uint64_t layers) {
    std::vector<std::uint64_t> out;
    if (!present(key) || layers == 0) return out;
    auto list = r_.child(key);
    auto items = list ? list->elements() : std::nullopt;
    if (!items) {
      ok_ = false;
      return out;
    }
    for (auto& item : *items) {
      auto v = item.as_uint(0, layers - 1);
      if (!v) {
        ok_ = false;
        return {};
      }
      out.push_back(*v);
    }
    return out;
  }

  /// BERT's position_embedding_type: only "absolute" (the default) is built.
  void position_kind(const char* key) {
    if (!present(key)) return;
    auto v = r_.get_string(key);
    if (!v) {
      ok_ = false;
      return;
    }
    if (*v != "absolute")
      error("position_embedding_type " + quote(*v) +
                " is not supported (its distance_embedding is not built); expected \"absolute\"",
            key);
  }

 private:
  bool present(const char* key) {
    if (!r_.has(key)) return false;
    r_.mark_used(key);
    return !r_.value().at(key).is_null();
  }
  json::JsonReader& r_;
  bool ok_ = true;
};

// hidden / heads, as every supported attention class computes it (most raise when it is not exact).
inline std::uint64_t split_heads(Fields& f, std::uint64_t hidden, std::uint64_t heads,
                                 const char* h_key, const char* a_key) {
  if (hidden == 0 || heads == 0) return 0;
  if (hidden % heads != 0) {
    f.error(std::string(h_key) + " (" + std::to_string(hidden) + ") is not divisible by " + a_key +
            " (" + std::to_string(heads) + ")");
    return 0;
  }
  return hidden / heads;
}

/// Llama-layout fields every such family shares (vocab, widths, heads, head_dim, tie,
/// max_position_embeddings, attention_dropout), with the config class's defaults for the
/// key/value heads, head_dim (0: hidden / heads), tie_word_embeddings and the context length.
void read_llama_core(Fields& f, TransformerSpec& s, std::uint64_t kv_default,
                     std::uint64_t head_dim_default, bool tie_default, std::uint64_t ctx_default);

void read_gemma(Fields& f, TransformerSpec& s);       ///< gemma, gemma2
void read_qwen3(Fields& f, TransformerSpec& s);       ///< qwen3
void read_mixtral(Fields& f, TransformerSpec& s);     ///< mixtral
void read_qwen2_moe(Fields& f, TransformerSpec& s);   ///< qwen2_moe
void read_phi3(Fields& f, TransformerSpec& s);        ///< phi3
void read_starcoder2(Fields& f, TransformerSpec& s);  ///< starcoder2
void read_bert(Fields& f, TransformerSpec& s);        ///< bert, roberta
void read_deepseek(Fields& f, TransformerSpec& s);    ///< deepseek_v2, deepseek_v3
void read_t5(Fields& f, TransformerSpec& s);          ///< t5

}  // namespace zerosim::hf
