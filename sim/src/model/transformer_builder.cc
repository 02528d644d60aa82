// build_transformer: one function per transformers modeling file, each declaring parameters in the
// order the module's __init__ registers them (so the list equals named_parameters()) and listing
// each layer's params in the order its forward() uses them (which drives the gradient order).
//
// Sources checked (transformers main, 2024-2025): models/llama/modeling_llama.py (also mistral,
// qwen2), gpt2/modeling_gpt2.py, gptj/modeling_gptj.py, gpt_neox/modular_gpt_neox.py,
// opt/modeling_opt.py, bloom/modeling_bloom.py, falcon/modeling_falcon.py.
// FLOPs: 2 x matmul weight elements per token; attention scores and context add
// 4 x heads x head_dim per context token (QK^T and AV, 2 FLOPs per multiply-add each).
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

double attn_flops_per_ctx(const TransformerSpec& s) {
  return 4.0 * static_cast<double>(s.heads) * static_cast<double>(s.head_dim);
}

void add_head(const TransformerSpec& s, ModelBuilder& b, const ModuleParams& embedding,
              const std::string& name, std::uint64_t in, bool bias, const ModuleParams& before) {
  ModuleParams head;
  if (s.tie_embeddings) {
    head.ids = {embedding.ids.front()};
    head.matmul_elems = b.mul(s.vocab, in);
  } else {
    head = b.linear(name, in, s.vocab, false);
  }
  if (bias) head.ids.push_back(b.param(name + ".bias", {s.vocab}));
  b.layer(name, LayerKind::Head, concat({before, head}));
}

namespace {

void build_llama(const TransformerSpec& s, ModelBuilder& b) {
  auto emb = b.embedding("model.embed_tokens", s.vocab, s.hidden);
  b.layer("embeddings", LayerKind::Embedding, emb);
  const auto q_out = b.mul(s.heads, s.head_dim);
  const auto kv_out = b.mul(s.kv_heads, s.head_dim);
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    auto q = b.linear(p + ".self_attn.q_proj", s.hidden, q_out, s.qkv_bias);
    auto k = b.linear(p + ".self_attn.k_proj", s.hidden, kv_out, s.qkv_bias);
    auto v = b.linear(p + ".self_attn.v_proj", s.hidden, kv_out, s.qkv_bias);
    auto o = b.linear(p + ".self_attn.o_proj", q_out, s.hidden, s.o_bias);
    auto gate = b.linear(p + ".mlp.gate_proj", s.hidden, s.ffn, s.mlp_bias);
    auto up = b.linear(p + ".mlp.up_proj", s.hidden, s.ffn, s.mlp_bias);
    auto down = b.linear(p + ".mlp.down_proj", s.ffn, s.hidden, s.mlp_bias);
    auto ln1 = b.norm(p + ".input_layernorm", s.hidden, false);
    auto ln2 = b.norm(p + ".post_attention_layernorm", s.hidden, false);
    b.layer(p, LayerKind::Block, concat({ln1, q, k, v, o, ln2, gate, up, down}),
            attn_flops_per_ctx(s));
  }
  b.layer("model.norm", LayerKind::Norm, b.norm("model.norm", s.hidden, false));
  add_head(s, b, emb, "lm_head", s.hidden, false, {});
}

void build_gpt2(const TransformerSpec& s, ModelBuilder& b) {
  auto wte = b.embedding("transformer.wte", s.vocab, s.hidden);
  auto wpe = b.embedding("transformer.wpe", s.positions, s.hidden);
  b.layer("embeddings", LayerKind::Embedding, concat({wte, wpe}));
  const auto qkv_out = b.mul(3, s.hidden);
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) {
    const std::string p = "transformer.h." + std::to_string(i);
    auto ln1 = b.norm(p + ".ln_1", s.hidden, true);
    auto c_attn = b.conv1d(p + ".attn.c_attn", s.hidden, qkv_out);
    auto c_proj = b.conv1d(p + ".attn.c_proj", s.hidden, s.hidden);
    auto ln2 = b.norm(p + ".ln_2", s.hidden, true);
    auto c_fc = b.conv1d(p + ".mlp.c_fc", s.hidden, s.ffn);
    auto m_proj = b.conv1d(p + ".mlp.c_proj", s.ffn, s.hidden);
    b.layer(p, LayerKind::Block, concat({ln1, c_attn, c_proj, ln2, c_fc, m_proj}),
            attn_flops_per_ctx(s));
  }
  b.layer("transformer.ln_f", LayerKind::Norm, b.norm("transformer.ln_f", s.hidden, true));
  add_head(s, b, wte, "lm_head", s.hidden, false, {});
}

void build_gptj(const TransformerSpec& s, ModelBuilder& b) {
  auto wte = b.embedding("transformer.wte", s.vocab, s.hidden);
  b.layer("embeddings", LayerKind::Embedding, wte);
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) {
    const std::string p = "transformer.h." + std::to_string(i);
    auto ln1 = b.norm(p + ".ln_1", s.hidden, true);
    // GPTJAttention registers k, v, q, out (in that order); forward computes q, k, v.
    auto k = b.linear(p + ".attn.k_proj", s.hidden, s.hidden, false);
    auto v = b.linear(p + ".attn.v_proj", s.hidden, s.hidden, false);
    auto q = b.linear(p + ".attn.q_proj", s.hidden, s.hidden, false);
    auto out = b.linear(p + ".attn.out_proj", s.hidden, s.hidden, false);
    auto fc_in = b.linear(p + ".mlp.fc_in", s.hidden, s.ffn, true);
    auto fc_out = b.linear(p + ".mlp.fc_out", s.ffn, s.hidden, true);
    b.layer(p, LayerKind::Block, concat({ln1, q, k, v, out, fc_in, fc_out}), attn_flops_per_ctx(s));
  }
  b.layer("transformer.ln_f", LayerKind::Norm, b.norm("transformer.ln_f", s.hidden, true));
  add_head(s, b, wte, "lm_head", s.hidden, true, {});
}

void build_gpt_neox(const TransformerSpec& s, ModelBuilder& b) {
  auto emb = b.embedding("gpt_neox.embed_in", s.vocab, s.hidden);
  b.layer("embeddings", LayerKind::Embedding, emb);
  const auto qkv_out = b.mul(3, s.hidden);
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) {
    const std::string p = "gpt_neox.layers." + std::to_string(i);
    auto ln_in = b.norm(p + ".input_layernorm", s.hidden, true);
    auto ln_post = b.norm(p + ".post_attention_layernorm", s.hidden, true);
    auto qkv = b.linear(p + ".attention.query_key_value", s.hidden, qkv_out, s.qkv_bias);
    auto dense = b.linear(p + ".attention.dense", s.hidden, s.hidden, s.o_bias);
    auto up = b.linear(p + ".mlp.dense_h_to_4h", s.hidden, s.ffn, true);
    auto down = b.linear(p + ".mlp.dense_4h_to_h", s.ffn, s.hidden, true);
    b.layer(p, LayerKind::Block, concat({ln_in, qkv, dense, ln_post, up, down}),
            attn_flops_per_ctx(s));
  }
  b.layer("gpt_neox.final_layer_norm", LayerKind::Norm,
          b.norm("gpt_neox.final_layer_norm", s.hidden, true));
  add_head(s, b, emb, "embed_out", s.hidden, false, {});
}

ArchInfo arch_info(const TransformerSpec& s) {
  ArchInfo a;
  a.family = s.model_type;
  a.hidden = s.hidden;
  a.layers = s.layers;
  a.heads = s.heads;
  a.kv_heads = s.kv_heads;
  a.ffn = s.ffn;
  a.vocab = s.vocab;
  a.max_seq = s.max_seq;
  a.gated_mlp = s.family == ArchFamily::Llama;
  a.tied_embeddings = s.tie_embeddings;
  a.dropout = s.dropout;
  a.head_dim = s.head_dim;
  return a;
}

}  // namespace

Result<ModelDesc> build_transformer(const TransformerSpec& spec, const std::string& name,
                                    const std::string& source) {
  ModelDesc m;
  m.name = name;
  m.source = source;
  ModelBuilder b(m);
  switch (spec.family) {
    case ArchFamily::Llama:
      build_llama(spec, b);
      break;
    case ArchFamily::Gpt2:
      build_gpt2(spec, b);
      break;
    case ArchFamily::Gptj:
      build_gptj(spec, b);
      break;
    case ArchFamily::GptNeox:
      build_gpt_neox(spec, b);
      break;
    case ArchFamily::Opt:
      build_opt(spec, b);
      break;
    case ArchFamily::Bloom:
      build_bloom(spec, b);
      break;
    case ArchFamily::Falcon:
      build_falcon(spec, b);
      break;
  }
  if (b.failed()) return fail<ModelDesc>(source, "", b.error());
  m.arch = arch_info(spec);
  m.grad_order = derive_grad_order(m);
  return m;
}

}  // namespace zerosim
