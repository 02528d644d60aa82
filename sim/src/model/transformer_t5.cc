// T5 as T5ForConditionalGeneration (transformers models/t5/modeling_t5.py, v4.49 to v4.53; see
// transformer_builder.cc for the conventions). t5-small/base (v1.0: ReLU MLP, tied head) and
// flan-t5 / t5 v1.1 (gated-gelu MLP, untied lm_head) differ only in config values.
//
// Declaration order: `shared` (Embedding [vocab, d_model]); encoder and decoder (T5Stack), whose
// embed_tokens is that same module, so named_parameters() lists shared.weight once; per T5Block
// a ModuleList `layer`: T5LayerSelfAttention (SelfAttention: q, k, v [heads*d_kv, d_model], o
// [d_model, heads*d_kv], all without bias, then relative_attention_bias Embedding [buckets,
// heads] in block 0 of each stack only; layer_norm, T5's RMS-style T5LayerNorm: a weight and no
// bias), in the decoder T5LayerCrossAttention (EncDecAttention: q, k, v, o; layer_norm), then
// T5LayerFF (DenseReluDense: wi, wo or, gated, wi_0, wi_1, wo; layer_norm); each stack ends with
// final_layer_norm; lm_head [vocab, d_model] without bias, tied to shared.weight when
// tie_word_embeddings (then listed once).
//
// Forward (training, labels given): the encoder looks up `shared` and runs its blocks
// (layer_norm, q, k, v, the relative bias table in block 0 only, o; layer_norm, wi(_0), act,
// (wi_1), dropout, wo) and final_layer_norm; the decoder looks up `shared` again for the
// shifted labels and runs self-attention, cross-attention (q on the decoder states, k and v on
// the encoder output) and the MLP; lm_head and the loss run in the root. zerosim traces
// `shared` once, as the root's child called just before the encoder (the real call is the first
// thing T5Stack.forward does, and T5Stack holds no direct parameter, so the stage 3 fetch order
// is the same); the decoder's second lookup of the same module is not a separate hook event
// here (DeepSpeed stage 3 gathers shared.weight again for it: a known gap, models/README.md).
// Source and target lengths are both the sequence length (ArchInfo::cross_attention_layers).
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

struct Attention {
  ModuleParams q, k, v, o, bias;
};

Attention declare_attention(const TransformerSpec& s, ModelBuilder& b, const std::string& p,
                            bool relative_bias) {
  const auto inner = b.mul(s.heads, s.head_dim);
  Attention a;
  a.q = b.linear(p + ".q", s.hidden, inner, false);
  a.k = b.linear(p + ".k", s.hidden, inner, false);
  a.v = b.linear(p + ".v", s.hidden, inner, false);
  a.o = b.linear(p + ".o", inner, s.hidden, false);
  if (relative_bias)
    a.bias = b.embedding(p + ".relative_attention_bias", s.relative_buckets, s.heads);
  return a;
}

// T5LayerSelfAttention / T5LayerCrossAttention: layer_norm, the attention, a residual dropout.
void trace_attention_layer(ModuleTracer& t, const std::string& p, const std::string& cls,
                           const std::string& attn, const Attention& a, const ModuleParams& ln) {
  t.enter(p, cls);
  t.leaf(p + ".layer_norm", "T5LayerNorm", ln);
  const std::string q = p + "." + attn;
  t.enter(q, "T5Attention");
  t.leaf(q + ".q", "Linear", a.q);
  t.leaf(q + ".k", "Linear", a.k);
  t.leaf(q + ".v", "Linear", a.v);
  // compute_bias looks the table up with integer bucket ids: no input receives a gradient.
  if (!a.bias.ids.empty())
    t.leaf(q + ".relative_attention_bias", "Embedding", a.bias, ModuleGrad::OutputOnly);
  t.leaf(q + ".o", "Linear", a.o);
  t.leave();
  t.leaf(p + ".dropout", "Dropout");
  t.leave();
}

struct Ffn {
  ModuleParams wi0, wi1, wo;  ///< plain MLP: wi0 is `wi`, wi1 empty
  ModuleParams use() const { return concat({wi0, wi1, wo}); }
};

Ffn declare_ffn(const TransformerSpec& s, ModelBuilder& b, const std::string& p) {
  Ffn f;
  if (s.gated_ffn) {
    f.wi0 = b.linear(p + ".wi_0", s.hidden, s.ffn, false);
    f.wi1 = b.linear(p + ".wi_1", s.hidden, s.ffn, false);
  } else {
    f.wi0 = b.linear(p + ".wi", s.hidden, s.ffn, false);
  }
  f.wo = b.linear(p + ".wo", s.ffn, s.hidden, false);
  return f;
}

// T5LayerFF: layer_norm, DenseReluDense (wi -> act -> dropout -> wo, or act(wi_0) * wi_1 ->
// dropout -> wo), a residual dropout.
void trace_ffn_layer(const TransformerSpec& s, ModuleTracer& t, const std::string& p, const Ffn& f,
                     const ModuleParams& ln) {
  t.enter(p, "T5LayerFF");
  t.leaf(p + ".layer_norm", "T5LayerNorm", ln);
  const std::string d = p + ".DenseReluDense";
  t.enter(d, s.gated_ffn ? "T5DenseGatedActDense" : "T5DenseActDense");
  t.leaf(d + (s.gated_ffn ? ".wi_0" : ".wi"), "Linear", f.wi0);
  t.leaf(d + ".act", s.act_class);
  if (s.gated_ffn) t.leaf(d + ".wi_1", "Linear", f.wi1);
  t.leaf(d + ".dropout", "Dropout");
  t.leaf(d + ".wo", "Linear", f.wo);
  t.leave();
  t.leaf(p + ".dropout", "Dropout");
  t.leave();
}

void t5_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, const std::string& stack,
              std::uint64_t i, bool decoder) {
  const std::string p = stack + ".block." + std::to_string(i);
  const auto self = declare_attention(s, b, p + ".layer.0.SelfAttention", i == 0);
  const auto ln_self = b.norm(p + ".layer.0.layer_norm", s.hidden, false);
  Attention cross;
  ModuleParams ln_cross;
  if (decoder) {
    cross = declare_attention(s, b, p + ".layer.1.EncDecAttention", false);
    ln_cross = b.norm(p + ".layer.1.layer_norm", s.hidden, false);
  }
  const std::string ff = p + ".layer." + (decoder ? "2" : "1");
  const auto ffn = declare_ffn(s, b, ff + ".DenseReluDense");
  const auto ln_ff = b.norm(ff + ".layer_norm", s.hidden, false);
  auto use = concat({ln_self, self.q, self.k, self.v, self.bias, self.o});
  if (decoder) use = concat({use, ln_cross, cross.q, cross.k, cross.v, cross.o});
  use = concat({use, ln_ff, ffn.use()});
  // Scores and context 4 x heads x d_kv per context token, once more for cross-attention.
  const double ctx = (decoder ? 2.0 : 1.0) * attn_flops_per_ctx(s);
  t.set_layer(b.layer(p, LayerKind::Block, use, ctx));
  t.enter(p, "T5Block");
  t.open(p + ".layer", "ModuleList");
  trace_attention_layer(t, p + ".layer.0", "T5LayerSelfAttention", "SelfAttention", self, ln_self);
  if (decoder)
    trace_attention_layer(t, p + ".layer.1", "T5LayerCrossAttention", "EncDecAttention", cross,
                          ln_cross);
  trace_ffn_layer(s, t, ff, ffn, ln_ff);
  t.close();
  t.leave();
}

// One T5Stack: its blocks and final_layer_norm (a Norm layer). The stack's one `dropout` module
// runs twice, on the embedded tokens and after final_layer_norm; a parameterless module, traced at
// its first call only (the module tree holds each module once).
void t5_stack(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, bool decoder) {
  const std::string name = decoder ? "decoder" : "encoder";
  const std::uint64_t n = decoder ? s.decoder_layers : s.layers;
  // The encoder's input is token ids (post-backward never fires); the decoder also takes the
  // encoder's output, which receives a gradient.
  t.enter(name, "T5Stack", {}, decoder ? ModuleGrad::Both : ModuleGrad::OutputOnly);
  t.leaf(name + ".dropout", "Dropout");  // first call: on the embedded tokens
  t.open(name + ".block", "ModuleList");
  for (std::uint64_t i = 0; i < n && !b.failed(); ++i) t5_block(s, b, t, name, i, decoder);
  close_base_model(s, b, t, name + ".final_layer_norm", "T5LayerNorm", false);
}

}  // namespace

void build_t5(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  t.enter("", "T5ForConditionalGeneration", {}, ModuleGrad::OutputOnly);
  auto shared = b.embedding("shared", s.vocab, s.hidden);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, shared));
  t.leaf("shared", "Embedding", shared, ModuleGrad::OutputOnly);
  t.set_layer(kNoLayer);
  t5_stack(s, b, t, false);
  t5_stack(s, b, t, true);
  trace_head(t, "lm_head", add_head(s, b, shared, "lm_head", s.hidden, false, {}));
}

}  // namespace zerosim
