// Module layouts of OPT, BLOOM and Falcon (see transformer_builder.cc for the conventions).
//
// OPT (modeling_opt.py, OPTDecoder.__init__): embed_tokens, embed_positions (max positions + 2,
// OPTLearnedPositionalEmbedding's offset), project_out, project_in, final_layer_norm, layers.
// OPTForCausalLM.forward calls self.model.decoder directly, so OPTModel's hooks never fire.
// BLOOM (modeling_bloom.py): word_embeddings, word_embeddings_layernorm, h, ln_f; the MLP is
// always 4h wide; eager attention calls self_attention.attention_dropout. Falcon
// (modeling_falcon.py): a block declares attention, MLP, then its norms; rotary tables are computed
// once in FalconModel; with rotary (not ALiBi) attention, attention_dropout is never called.
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

void build_opt_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t,
                     const std::string& p) {
  // OPTAttention registers k, v, q, out; forward computes q, k, v.
  auto k = b.linear(p + ".self_attn.k_proj", s.hidden, s.hidden, s.qkv_bias);
  auto v = b.linear(p + ".self_attn.v_proj", s.hidden, s.hidden, s.qkv_bias);
  auto q = b.linear(p + ".self_attn.q_proj", s.hidden, s.hidden, s.qkv_bias);
  auto out = b.linear(p + ".self_attn.out_proj", s.hidden, s.hidden, s.o_bias);
  auto attn_ln = b.norm(p + ".self_attn_layer_norm", s.hidden, true, s.opt_norm_affine);
  auto fc1 = b.linear(p + ".fc1", s.hidden, s.ffn, s.mlp_bias);
  auto fc2 = b.linear(p + ".fc2", s.ffn, s.hidden, s.mlp_bias);
  auto mlp_ln = b.norm(p + ".final_layer_norm", s.hidden, true, s.opt_norm_affine);
  // do_layer_norm_before = false (OPT-350m) applies each norm after its residual add.
  const bool pre = s.opt_pre_norm;
  auto use = pre ? concat({attn_ln, q, k, v, out, mlp_ln, fc1, fc2})
                 : concat({q, k, v, out, attn_ln, fc1, fc2, mlp_ln});
  t.set_layer(b.layer(p, LayerKind::Block, use, attn_flops_per_ctx(s)));
  t.enter(p, "OPTDecoderLayer");
  if (pre) t.leaf(p + ".self_attn_layer_norm", "LayerNorm", attn_ln);
  t.enter(p + ".self_attn", "OPTAttention");
  t.leaf(p + ".self_attn.q_proj", "Linear", q);
  t.leaf(p + ".self_attn.k_proj", "Linear", k);
  t.leaf(p + ".self_attn.v_proj", "Linear", v);
  t.leaf(p + ".self_attn.out_proj", "Linear", out);
  t.leave();
  t.leaf(p + (pre ? ".final_layer_norm" : ".self_attn_layer_norm"), "LayerNorm",
         pre ? mlp_ln : attn_ln);
  t.leaf(p + ".fc1", "Linear", fc1);
  t.leaf(p + ".activation_fn", "ReLU");  // activation_function "relu"
  t.leaf(p + ".fc2", "Linear", fc2);
  if (!pre) t.leaf(p + ".final_layer_norm", "LayerNorm", mlp_ln);
  t.leave();
}

void bloom_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = "transformer.h." + std::to_string(i);
  auto ln_in = b.norm(p + ".input_layernorm", s.hidden, true);
  auto qkv = b.linear(p + ".self_attention.query_key_value", s.hidden, b.mul(3, s.hidden), true);
  auto dense = b.linear(p + ".self_attention.dense", s.hidden, s.hidden, true);
  auto ln_post = b.norm(p + ".post_attention_layernorm", s.hidden, true);
  auto up = b.linear(p + ".mlp.dense_h_to_4h", s.hidden, s.ffn, true);
  auto down = b.linear(p + ".mlp.dense_4h_to_h", s.ffn, s.hidden, true);
  t.set_layer(b.layer(p, LayerKind::Block, concat({ln_in, qkv, dense, ln_post, up, down}),
                      attn_flops_per_ctx(s)));
  t.enter(p, "BloomBlock");
  t.leaf(p + ".input_layernorm", "LayerNorm", ln_in);
  t.enter(p + ".self_attention", "BloomAttention");
  t.leaf(p + ".self_attention.query_key_value", "Linear", qkv);
  t.leaf(p + ".self_attention.attention_dropout", "Dropout");
  t.leaf(p + ".self_attention.dense", "Linear", dense);
  t.leave();
  t.leaf(p + ".post_attention_layernorm", "LayerNorm", ln_post);
  t.enter(p + ".mlp", "BloomMLP");
  t.leaf(p + ".mlp.dense_h_to_4h", "Linear", up);
  t.leaf(p + ".mlp.gelu_impl", "BloomGelu");
  t.leaf(p + ".mlp.dense_4h_to_h", "Linear", down);
  t.leave();
  t.leave();
}

void falcon_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = "transformer.h." + std::to_string(i);
  auto qkv =
      b.linear(p + ".self_attention.query_key_value", s.hidden, s.falcon_qkv_out, s.falcon_bias);
  auto dense = b.linear(p + ".self_attention.dense", s.hidden, s.hidden, s.falcon_bias);
  auto up = b.linear(p + ".mlp.dense_h_to_4h", s.hidden, s.ffn, s.falcon_bias);
  auto down = b.linear(p + ".mlp.dense_4h_to_h", s.ffn, s.hidden, s.falcon_bias);
  ModuleParams ln_a, ln_b;  // the norm(s) before attention / before the MLP, in call order
  std::string name_a, name_b;
  ModuleParams use;
  if (s.falcon_norms == FalconNorms::PostAndInput) {
    auto ln_post = b.norm(p + ".post_attention_layernorm", s.hidden, true);
    auto ln_in = b.norm(p + ".input_layernorm", s.hidden, true);
    use = concat({ln_in, qkv, dense, ln_post, up, down});
    ln_a = ln_in;
    ln_b = ln_post;
    name_a = p + ".input_layernorm";
    name_b = p + ".post_attention_layernorm";
  } else if (s.falcon_norms == FalconNorms::AttnAndMlp) {
    ln_a = b.norm(p + ".ln_attn", s.hidden, true);
    ln_b = b.norm(p + ".ln_mlp", s.hidden, true);
    use = concat({ln_a, ln_b, qkv, dense, up, down});
    name_a = p + ".ln_attn";
    name_b = p + ".ln_mlp";
  } else {
    ln_a = b.norm(p + ".input_layernorm", s.hidden, true);
    use = concat({ln_a, qkv, dense, up, down});
    name_a = p + ".input_layernorm";
  }
  t.set_layer(b.layer(p, LayerKind::Block, use, attn_flops_per_ctx(s)));
  t.enter(p, "FalconDecoderLayer");
  t.leaf(name_a, "LayerNorm", ln_a);
  // ln_mlp runs right after ln_attn; post_attention_layernorm after the attention.
  if (s.falcon_norms == FalconNorms::AttnAndMlp) t.leaf(name_b, "LayerNorm", ln_b);
  t.enter(p + ".self_attention", "FalconAttention");
  t.leaf(p + ".self_attention.query_key_value", "FalconLinear", qkv);
  t.leaf(p + ".self_attention.dense", "FalconLinear", dense);
  t.unused(p + ".self_attention.attention_dropout", "Dropout");
  t.leave();
  if (s.falcon_norms == FalconNorms::PostAndInput) t.leaf(name_b, "LayerNorm", ln_b);
  t.enter(p + ".mlp", "FalconMLP");
  t.leaf(p + ".mlp.dense_h_to_4h", "FalconLinear", up);
  t.leaf(p + ".mlp.act", "GELUActivation");  // activation "gelu"
  t.leaf(p + ".mlp.dense_4h_to_h", "FalconLinear", down);
  t.leave();
  t.leave();
}

}  // namespace

void build_opt(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  const std::string d = "model.decoder";
  const bool project = s.word_embed_proj_dim != s.hidden;
  auto tokens = b.embedding(d + ".embed_tokens", s.vocab, s.word_embed_proj_dim);
  auto positions = b.embedding(d + ".embed_positions", s.positions, s.hidden);
  ModuleParams project_out, project_in, final_norm;
  if (project) {
    project_out = b.linear(d + ".project_out", s.hidden, s.word_embed_proj_dim, false);
    project_in = b.linear(d + ".project_in", s.word_embed_proj_dim, s.hidden, false);
  }
  if (s.opt_final_norm)
    final_norm = b.norm(d + ".final_layer_norm", s.hidden, true, s.opt_norm_affine);
  t.enter("", "OPTForCausalLM", {}, ModuleGrad::OutputOnly);
  t.open("model", "OPTModel");
  t.enter(d, "OPTDecoder", {}, ModuleGrad::OutputOnly);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, concat({tokens, positions, project_in})));
  t.leaf(d + ".embed_tokens", "Embedding", tokens, ModuleGrad::OutputOnly);
  t.leaf(d + ".embed_positions", "OPTLearnedPositionalEmbedding", positions,
         ModuleGrad::OutputOnly);
  if (project) t.leaf(d + ".project_in", "Linear", project_in);
  t.set_layer(kNoLayer);
  t.open(d + ".layers", "ModuleList");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i)
    build_opt_block(s, b, t, d + ".layers." + std::to_string(i));
  t.set_layer(kNoLayer);
  t.close();
  if (s.opt_final_norm) {
    t.set_layer(b.layer(d + ".final_layer_norm", LayerKind::Norm, final_norm));
    t.leaf(d + ".final_layer_norm", "LayerNorm", final_norm);
  }
  const auto head = add_head(s, b, tokens, "lm_head", s.word_embed_proj_dim, false, project_out);
  t.set_layer(head.layer);
  if (project) t.leaf(d + ".project_out", "Linear", project_out);
  t.set_layer(kNoLayer);
  t.leave();
  t.close();
  trace_head(t, "lm_head", head);
}

void build_bloom(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  t.enter("", "BloomForCausalLM", {}, ModuleGrad::OutputOnly);
  t.enter("transformer", "BloomModel", {}, ModuleGrad::OutputOnly);
  auto emb = b.embedding("transformer.word_embeddings", s.vocab, s.hidden);
  auto emb_ln = b.norm("transformer.word_embeddings_layernorm", s.hidden, true);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, concat({emb, emb_ln})));
  t.leaf("transformer.word_embeddings", "Embedding", emb, ModuleGrad::OutputOnly);
  t.leaf("transformer.word_embeddings_layernorm", "LayerNorm", emb_ln);
  t.set_layer(kNoLayer);
  t.open("transformer.h", "ModuleList");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) bloom_block(s, b, t, i);
  close_base_model(s, b, t, "transformer.ln_f", "LayerNorm", true);
  trace_head(t, "lm_head", add_head(s, b, emb, "lm_head", s.hidden, false, {}));
}

void build_falcon(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  t.enter("", "FalconForCausalLM", {}, ModuleGrad::OutputOnly);
  t.enter("transformer", "FalconModel", {}, ModuleGrad::OutputOnly);
  auto emb = b.embedding("transformer.word_embeddings", s.vocab, s.hidden);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, emb));
  t.leaf("transformer.word_embeddings", "Embedding", emb, ModuleGrad::OutputOnly);
  t.leaf("transformer.rotary_emb", "FalconRotaryEmbedding", {}, ModuleGrad::None);
  t.set_layer(kNoLayer);
  t.open("transformer.h", "ModuleList");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) falcon_block(s, b, t, i);
  close_base_model(s, b, t, "transformer.ln_f", "LayerNorm", true);
  trace_head(t, "lm_head", add_head(s, b, emb, "lm_head", s.hidden, false, {}));
}

}  // namespace zerosim
