// Module layouts of GPT-2, GPT-J and GPT-NeoX (see transformer_builder.cc for the conventions).
//
// GPT-2 (modeling_gpt2.py): Conv1D weights stored [in, out]; with the default sdpa attention the
// attention dropout is a probability handed to the kernel, so attn.attn_dropout is hooked but never
// called (eager attention calls it). GPT-J (modeling_gptj.py): eager attention only, so
// attn.attn_dropout runs; attention and MLP both read ln_1's output (parallel residual). GPT-NeoX
// (modular_gpt_neox.py): rotary tables computed once in GPTNeoXModel; input_layernorm runs as the
// attention call's argument, before the attention module's pre-forward hook.
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

void gpt2_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = "transformer.h." + std::to_string(i);
  auto ln1 = b.norm(p + ".ln_1", s.hidden, true);
  auto c_attn = b.conv1d(p + ".attn.c_attn", s.hidden, b.mul(3, s.hidden));
  auto c_proj = b.conv1d(p + ".attn.c_proj", s.hidden, s.hidden);
  auto ln2 = b.norm(p + ".ln_2", s.hidden, true);
  auto c_fc = b.conv1d(p + ".mlp.c_fc", s.hidden, s.ffn);
  auto m_proj = b.conv1d(p + ".mlp.c_proj", s.ffn, s.hidden);
  t.set_layer(b.layer(p, LayerKind::Block, concat({ln1, c_attn, c_proj, ln2, c_fc, m_proj}),
                      attn_flops_per_ctx(s)));
  t.enter(p, "GPT2Block");
  t.leaf(p + ".ln_1", "LayerNorm", ln1);
  t.enter(p + ".attn", "GPT2Attention");
  t.leaf(p + ".attn.c_attn", "Conv1D", c_attn);
  t.leaf(p + ".attn.c_proj", "Conv1D", c_proj);
  t.leaf(p + ".attn.resid_dropout", "Dropout");
  t.unused(p + ".attn.attn_dropout", "Dropout");
  t.leave();
  t.leaf(p + ".ln_2", "LayerNorm", ln2);
  t.enter(p + ".mlp", "GPT2MLP");
  t.leaf(p + ".mlp.c_fc", "Conv1D", c_fc);
  t.leaf(p + ".mlp.act", "NewGELUActivation");  // activation_function "gelu_new"
  t.leaf(p + ".mlp.c_proj", "Conv1D", m_proj);
  t.leaf(p + ".mlp.dropout", "Dropout");
  t.leave();
  t.leave();
}

void gptj_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = "transformer.h." + std::to_string(i);
  auto ln1 = b.norm(p + ".ln_1", s.hidden, true);
  // GPTJAttention registers k, v, q, out (in that order); forward computes q, k, v.
  auto k = b.linear(p + ".attn.k_proj", s.hidden, s.hidden, false);
  auto v = b.linear(p + ".attn.v_proj", s.hidden, s.hidden, false);
  auto q = b.linear(p + ".attn.q_proj", s.hidden, s.hidden, false);
  auto out = b.linear(p + ".attn.out_proj", s.hidden, s.hidden, false);
  auto fc_in = b.linear(p + ".mlp.fc_in", s.hidden, s.ffn, true);
  auto fc_out = b.linear(p + ".mlp.fc_out", s.ffn, s.hidden, true);
  t.set_layer(b.layer(p, LayerKind::Block, concat({ln1, q, k, v, out, fc_in, fc_out}),
                      attn_flops_per_ctx(s)));
  t.enter(p, "GPTJBlock");
  t.leaf(p + ".ln_1", "LayerNorm", ln1);
  t.enter(p + ".attn", "GPTJAttention");
  t.leaf(p + ".attn.q_proj", "Linear", q);
  t.leaf(p + ".attn.k_proj", "Linear", k);
  t.leaf(p + ".attn.v_proj", "Linear", v);
  t.leaf(p + ".attn.attn_dropout", "Dropout");
  t.leaf(p + ".attn.out_proj", "Linear", out);
  t.leaf(p + ".attn.resid_dropout", "Dropout");
  t.leave();
  t.enter(p + ".mlp", "GPTJMLP");
  t.leaf(p + ".mlp.fc_in", "Linear", fc_in);
  t.leaf(p + ".mlp.act", "NewGELUActivation");
  t.leaf(p + ".mlp.fc_out", "Linear", fc_out);
  t.leaf(p + ".mlp.dropout", "Dropout");
  t.leave();
  t.leave();
}

void neox_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = "gpt_neox.layers." + std::to_string(i);
  auto ln_in = b.norm(p + ".input_layernorm", s.hidden, true);
  auto ln_post = b.norm(p + ".post_attention_layernorm", s.hidden, true);
  auto qkv = b.linear(p + ".attention.query_key_value", s.hidden, b.mul(3, s.hidden), s.qkv_bias);
  auto dense = b.linear(p + ".attention.dense", s.hidden, s.hidden, s.o_bias);
  auto up = b.linear(p + ".mlp.dense_h_to_4h", s.hidden, s.ffn, true);
  auto down = b.linear(p + ".mlp.dense_4h_to_h", s.ffn, s.hidden, true);
  t.set_layer(b.layer(p, LayerKind::Block, concat({ln_in, qkv, dense, ln_post, up, down}),
                      attn_flops_per_ctx(s)));
  // Same call order with and without use_parallel_residual.
  t.enter(p, "GPTNeoXLayer");
  t.leaf(p + ".input_layernorm", "LayerNorm", ln_in);
  t.enter(p + ".attention", "GPTNeoXAttention");
  t.leaf(p + ".attention.query_key_value", "Linear", qkv);
  t.leaf(p + ".attention.dense", "Linear", dense);
  t.leave();
  t.leaf(p + ".post_attention_dropout", "Dropout");
  t.leaf(p + ".post_attention_layernorm", "LayerNorm", ln_post);
  t.enter(p + ".mlp", "GPTNeoXMLP");
  t.leaf(p + ".mlp.dense_h_to_4h", "Linear", up);
  t.leaf(p + ".mlp.act", "GELUActivation");  // hidden_act "gelu"
  t.leaf(p + ".mlp.dense_4h_to_h", "Linear", down);
  t.leave();
  t.leaf(p + ".post_mlp_dropout", "Dropout");
  t.leave();
}

}  // namespace

// GPT2LMHeadModel -> GPT2Model: wte, wpe, drop, h, ln_f; then lm_head (tied to wte).
void build_gpt2(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  t.enter("", "GPT2LMHeadModel", {}, ModuleGrad::OutputOnly);
  t.enter("transformer", "GPT2Model", {}, ModuleGrad::OutputOnly);
  auto wte = b.embedding("transformer.wte", s.vocab, s.hidden);
  auto wpe = b.embedding("transformer.wpe", s.positions, s.hidden);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, concat({wte, wpe})));
  t.leaf("transformer.wte", "Embedding", wte, ModuleGrad::OutputOnly);
  t.leaf("transformer.wpe", "Embedding", wpe, ModuleGrad::OutputOnly);
  t.leaf("transformer.drop", "Dropout");
  t.set_layer(kNoLayer);
  t.open("transformer.h", "ModuleList");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) gpt2_block(s, b, t, i);
  close_base_model(s, b, t, "transformer.ln_f", "LayerNorm", true);
  trace_head(t, "lm_head", add_head(s, b, wte, "lm_head", s.hidden, false, {}));
}

// GPTJForCausalLM -> GPTJModel: wte, drop, h, ln_f; then lm_head (untied, with bias).
void build_gptj(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  t.enter("", "GPTJForCausalLM", {}, ModuleGrad::OutputOnly);
  t.enter("transformer", "GPTJModel", {}, ModuleGrad::OutputOnly);
  auto wte = b.embedding("transformer.wte", s.vocab, s.hidden);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, wte));
  t.leaf("transformer.wte", "Embedding", wte, ModuleGrad::OutputOnly);
  t.leaf("transformer.drop", "Dropout");
  t.set_layer(kNoLayer);
  t.open("transformer.h", "ModuleList");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) gptj_block(s, b, t, i);
  close_base_model(s, b, t, "transformer.ln_f", "LayerNorm", true);
  trace_head(t, "lm_head", add_head(s, b, wte, "lm_head", s.hidden, true, {}));
}

// GPTNeoXForCausalLM -> GPTNeoXModel: embed_in, emb_dropout, rotary_emb, layers, final_layer_norm;
// then embed_out.
void build_gpt_neox(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  t.enter("", "GPTNeoXForCausalLM", {}, ModuleGrad::OutputOnly);
  t.enter("gpt_neox", "GPTNeoXModel", {}, ModuleGrad::OutputOnly);
  auto emb = b.embedding("gpt_neox.embed_in", s.vocab, s.hidden);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, emb));
  t.leaf("gpt_neox.embed_in", "Embedding", emb, ModuleGrad::OutputOnly);
  t.leaf("gpt_neox.emb_dropout", "Dropout");
  t.leaf("gpt_neox.rotary_emb", "GPTNeoXRotaryEmbedding", {}, ModuleGrad::None);
  t.set_layer(kNoLayer);
  t.open("gpt_neox.layers", "ModuleList");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) neox_block(s, b, t, i);
  close_base_model(s, b, t, "gpt_neox.final_layer_norm", "LayerNorm", true);
  trace_head(t, "embed_out", add_head(s, b, emb, "embed_out", s.hidden, false, {}));
}

}  // namespace zerosim
