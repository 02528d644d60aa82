// DeepSeek-V2 and DeepSeek-V3 as DeepseekV2ForCausalLM / DeepseekV3ForCausalLM (transformers
// models/deepseek_v2/modular_deepseek_v2.py and models/deepseek_v3/modeling_deepseek_v3.py as
// released in 2025 with one nn.Module per expert; transformers v5 fuses each layer's experts into
// 3-D gate_up_proj/down_proj tensors of the same element count). See transformer_builder.cc for
// the conventions.
//
// Declaration order of a decoder layer: self_attn, mlp, input_layernorm, post_attention_layernorm
// (DeepseekV2DecoderLayer re-assigns LlamaDecoderLayer's self_attn and mlp, which keeps their
// places). Multi-head latent attention (DeepseekV*Attention.__init__): q_proj [heads*(nope+rope),
// h] when q_lora_rank is None (DeepSeek-V2-Lite), else q_a_proj [q_lora, h] (bias when
// attention_bias), q_a_layernorm [q_lora], q_b_proj [heads*(nope+rope), q_lora]; then
// kv_a_proj_with_mqa [kv_lora + rope, h] (bias when attention_bias), kv_a_layernorm [kv_lora],
// kv_b_proj [heads*(nope+v), kv_lora], o_proj [h, heads*v] (bias when attention_bias). Layers
// below first_k_dense_replace have a dense MLP of intermediate_size; the others the MoE, which
// declares `experts` (n_routed_experts MLPs of moe_intermediate_size), `gate` (the router:
// DeepseekV2MoEGate / DeepseekV3TopkRouter, each a bare `weight` [experts, h]) and
// `shared_experts` (one MLP of moe_intermediate_size * n_shared_experts). V3's router also
// registers e_score_correction_bias [experts] with register_buffer, so num_parameters() does not
// count it (the checkpoint stores it: 58 x 256 = 14,848 elements for DeepSeek-V3). V3's
// multi-token-prediction layer (num_nextn_predict_layers, checkpoint layer 61) is not built by
// transformers (_keys_to_ignore_on_load_unexpected = model.layers.61.*), nor here.
//
// Forward: the MoE runs the router, the experts that received tokens (every expert, for any
// real batch), then the shared experts; attention calls q_a_proj, q_a_layernorm, q_b_proj (or
// q_proj), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, the attention kernel and o_proj.
// FLOPs per token: every projection once, the router, num_experts_per_tok routed experts and the
// shared experts; scores and context 2 x heads x ((nope + rope) + v) per context token.
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

std::string cls(const TransformerSpec& s) {
  return s.model_type == "deepseek_v3" ? "DeepseekV3" : "DeepseekV2";
}

struct Mlp {
  ModuleParams gate, up, down;
  ModuleParams use() const { return concat({gate, up, down}); }
};

Mlp declare_mlp(const TransformerSpec& s, ModelBuilder& b, const std::string& p,
                std::uint64_t width) {
  Mlp m;
  m.gate = b.linear(p + ".gate_proj", s.hidden, width, s.mlp_bias);
  m.up = b.linear(p + ".up_proj", s.hidden, width, s.mlp_bias);
  m.down = b.linear(p + ".down_proj", width, s.hidden, s.mlp_bias);
  return m;
}

void trace_mlp(const TransformerSpec& s, ModuleTracer& t, const std::string& p, const Mlp& m) {
  t.enter(p, cls(s) + "MLP");
  t.leaf(p + ".gate_proj", "Linear", m.gate);
  t.leaf(p + ".act_fn", "SiLU");
  t.leaf(p + ".up_proj", "Linear", m.up);
  t.leaf(p + ".down_proj", "Linear", m.down);
  t.leave();
}

struct Attention {
  ModuleParams q, q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b, o;
  ModuleParams use() const { return concat({q, q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b, o}); }
};

Attention declare_attention(const TransformerSpec& s, ModelBuilder& b, const std::string& p) {
  Attention a;
  const auto q_out = b.mul(s.heads, s.head_dim);
  const bool bias = s.qkv_bias;
  if (s.q_lora_rank == 0) {
    a.q = b.linear(p + ".q_proj", s.hidden, q_out, false);
  } else {
    a.q_a = b.linear(p + ".q_a_proj", s.hidden, s.q_lora_rank, bias);
    a.q_a_norm = b.norm(p + ".q_a_layernorm", s.q_lora_rank, false);
    a.q_b = b.linear(p + ".q_b_proj", s.q_lora_rank, q_out, false);
  }
  a.kv_a = b.linear(p + ".kv_a_proj_with_mqa", s.hidden, s.kv_lora_rank + s.qk_rope_dim, bias);
  a.kv_a_norm = b.norm(p + ".kv_a_layernorm", s.kv_lora_rank, false);
  const auto nope = s.head_dim - s.qk_rope_dim;
  a.kv_b = b.linear(p + ".kv_b_proj", s.kv_lora_rank, b.mul(s.heads, nope + s.v_head_dim), false);
  a.o = b.linear(p + ".o_proj", b.mul(s.heads, s.v_head_dim), s.hidden, s.o_bias);
  return a;
}

void trace_attention(const TransformerSpec& s, ModuleTracer& t, const std::string& p,
                     const Attention& a) {
  const std::string norm = cls(s) + "RMSNorm";
  t.enter(p, cls(s) + "Attention");
  if (s.q_lora_rank == 0) {
    t.leaf(p + ".q_proj", "Linear", a.q);
  } else {
    t.leaf(p + ".q_a_proj", "Linear", a.q_a);
    t.leaf(p + ".q_a_layernorm", norm, a.q_a_norm);
    t.leaf(p + ".q_b_proj", "Linear", a.q_b);
  }
  t.leaf(p + ".kv_a_proj_with_mqa", "Linear", a.kv_a);
  t.leaf(p + ".kv_a_layernorm", norm, a.kv_a_norm);
  t.leaf(p + ".kv_b_proj", "Linear", a.kv_b);
  t.leaf(p + ".o_proj", "Linear", a.o);
  t.leave();
}

struct Moe {
  std::vector<Mlp> experts;
  ModuleParams router;
  Mlp shared;
  ModuleParams use;  ///< in forward order, matmul_elems = what one token multiplies by
};

Moe declare_moe(const TransformerSpec& s, ModelBuilder& b, const std::string& p) {
  Moe m;
  for (std::uint64_t e = 0; e < s.experts && !b.failed(); ++e)
    m.experts.push_back(declare_mlp(s, b, p + ".experts." + std::to_string(e), s.expert_ffn));
  m.router = ModuleParams{{b.param(p + ".gate.weight", {s.experts, s.hidden})},
                          b.mul(s.experts, s.hidden)};
  if (s.shared_expert_ffn > 0)
    m.shared = declare_mlp(s, b, p + ".shared_experts", s.shared_expert_ffn);
  std::vector<std::uint32_t> ids = m.router.ids;
  for (const auto& e : m.experts) {
    const auto u = e.use();
    ids.insert(ids.end(), u.ids.begin(), u.ids.end());
  }
  const auto shared = m.shared.use();
  ids.insert(ids.end(), shared.ids.begin(), shared.ids.end());
  m.use.ids = std::move(ids);
  const Elements per_expert = m.experts.empty() ? 0 : m.experts.front().use().matmul_elems;
  m.use.matmul_elems =
      m.router.matmul_elems + b.mul(s.experts_per_token, per_expert) + shared.matmul_elems;
  return m;
}

void trace_moe(const TransformerSpec& s, ModuleTracer& t, const std::string& p, const Moe& m) {
  const std::string c = cls(s);
  t.enter(p, c + "MoE");
  t.mark_z3_leaf();
  t.leaf(p + ".gate", c == "DeepseekV3" ? "DeepseekV3TopkRouter" : "DeepseekV2MoEGate", m.router);
  t.open(p + ".experts", "ModuleList");
  for (std::size_t e = 0; e < m.experts.size(); ++e)
    trace_mlp(s, t, p + ".experts." + std::to_string(e), m.experts[e]);
  t.close();
  if (s.shared_expert_ffn > 0) trace_mlp(s, t, p + ".shared_experts", m.shared);
  t.leave();
}

void deepseek_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = "model.layers." + std::to_string(i);
  const std::string norm = cls(s) + "RMSNorm";
  const auto attn = declare_attention(s, b, p + ".self_attn");
  const bool moe = is_moe_layer(s, i);
  Moe experts;
  Mlp dense;
  if (moe)
    experts = declare_moe(s, b, p + ".mlp");
  else
    dense = declare_mlp(s, b, p + ".mlp", s.ffn);
  auto ln1 = b.norm(p + ".input_layernorm", s.hidden, false);
  auto ln2 = b.norm(p + ".post_attention_layernorm", s.hidden, false);
  // QK^T over nope + rope per head, AV over v_head_dim per head, 2 FLOPs per multiply-add.
  const double ctx =
      2.0 * static_cast<double>(s.heads) * static_cast<double>(s.head_dim + s.v_head_dim);
  t.set_layer(b.layer(p, LayerKind::Block,
                      concat({ln1, attn.use(), ln2, moe ? experts.use : dense.use()}), ctx));
  t.enter(p, cls(s) + "DecoderLayer");
  t.leaf(p + ".input_layernorm", norm, ln1);
  trace_attention(s, t, p + ".self_attn", attn);
  t.leaf(p + ".post_attention_layernorm", norm, ln2);
  if (moe)
    trace_moe(s, t, p + ".mlp", experts);
  else
    trace_mlp(s, t, p + ".mlp", dense);
  t.leave();
}

}  // namespace

// DeepseekV*ForCausalLM -> model (embed_tokens, layers, norm, rotary_emb), then lm_head; forward
// computes the rotary table once (no_grad) before the layers, as LlamaModel does.
void build_deepseek(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  const auto emb = open_llama_layout(s, b, t, cls(s));
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) deepseek_block(s, b, t, i);
  close_base_model(s, b, t, "model.norm", cls(s) + "RMSNorm", false);
  trace_head(t, "lm_head", add_head(s, b, emb, "lm_head", s.hidden, false, {}));
}

}  // namespace zerosim
