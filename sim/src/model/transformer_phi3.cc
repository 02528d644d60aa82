// Phi-3 (transformers models/phi3/modeling_phi3.py, v4.49 to v4.53; see transformer_builder.cc
// for the conventions). Phi3Attention declares o_proj before the fused qkv_proj
// [heads*head_dim + 2*kv_heads*head_dim, hidden]; Phi3MLP declares the fused gate_up_proj
// [2*ffn, hidden] and down_proj and computes down_proj(up * act(gate)); Phi3DecoderLayer wraps
// each sub-block's output in resid_attn_dropout / resid_mlp_dropout, which forward() calls.
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

void phi3_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = "model.layers." + std::to_string(i);
  const auto q_out = b.mul(s.heads, s.head_dim);
  const auto qkv_out = q_out + b.mul(b.mul(2, s.kv_heads), s.head_dim);
  auto o = b.linear(p + ".self_attn.o_proj", q_out, s.hidden, false);
  auto qkv = b.linear(p + ".self_attn.qkv_proj", s.hidden, qkv_out, false);
  auto gate_up = b.linear(p + ".mlp.gate_up_proj", s.hidden, b.mul(2, s.ffn), false);
  auto down = b.linear(p + ".mlp.down_proj", s.ffn, s.hidden, false);
  auto ln1 = b.norm(p + ".input_layernorm", s.hidden, false);
  auto ln2 = b.norm(p + ".post_attention_layernorm", s.hidden, false);
  t.set_layer(b.layer(p, LayerKind::Block, concat({ln1, qkv, o, ln2, gate_up, down}),
                      attn_flops_per_ctx(s)));
  t.enter(p, "Phi3DecoderLayer");
  t.leaf(p + ".input_layernorm", "Phi3RMSNorm", ln1);
  t.enter(p + ".self_attn", "Phi3Attention");
  t.leaf(p + ".self_attn.qkv_proj", "Linear", qkv);
  t.leaf(p + ".self_attn.o_proj", "Linear", o);
  t.leave();
  t.leaf(p + ".resid_attn_dropout", "Dropout");
  t.leaf(p + ".post_attention_layernorm", "Phi3RMSNorm", ln2);
  t.enter(p + ".mlp", "Phi3MLP");
  t.leaf(p + ".mlp.gate_up_proj", "Linear", gate_up);
  t.leaf(p + ".mlp.activation_fn", "SiLU");
  t.leaf(p + ".mlp.down_proj", "Linear", down);
  t.leave();
  t.leaf(p + ".resid_mlp_dropout", "Dropout");
  t.leave();
}

}  // namespace

// Phi3ForCausalLM -> Phi3Model: embed_tokens, rotary_emb, layers, norm; then lm_head.
void build_phi3(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  const auto emb = open_llama_layout(s, b, t, "Phi3");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) phi3_block(s, b, t, i);
  close_base_model(s, b, t, "model.norm", "Phi3RMSNorm", false);
  trace_head(t, "lm_head", add_head(s, b, emb, "lm_head", s.hidden, false, {}));
}

}  // namespace zerosim
