// Module layouts of OPT, BLOOM and Falcon (see transformer_builder.cc for the conventions).
//
// OPT (modeling_opt.py, OPTDecoder.__init__): embed_tokens, embed_positions (max positions + 2,
// OPTLearnedPositionalEmbedding's offset), project_out, project_in, final_layer_norm, layers.
// BLOOM (modeling_bloom.py): word_embeddings, word_embeddings_layernorm, h, ln_f; the MLP is
// always 4h wide. Falcon (modeling_falcon.py): a block declares attention, MLP, then its norms.
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

void build_opt_block(const TransformerSpec& s, ModelBuilder& b, const std::string& p) {
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
  auto use = s.opt_pre_norm ? concat({attn_ln, q, k, v, out, mlp_ln, fc1, fc2})
                            : concat({q, k, v, out, attn_ln, fc1, fc2, mlp_ln});
  b.layer(p, LayerKind::Block, use, attn_flops_per_ctx(s));
}

}  // namespace

void build_opt(const TransformerSpec& s, ModelBuilder& b) {
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
  b.layer("embeddings", LayerKind::Embedding, concat({tokens, positions, project_in}));
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i)
    build_opt_block(s, b, d + ".layers." + std::to_string(i));
  if (!final_norm.ids.empty()) b.layer(d + ".final_layer_norm", LayerKind::Norm, final_norm);
  add_head(s, b, tokens, "lm_head", s.word_embed_proj_dim, false, project_out);
}

void build_bloom(const TransformerSpec& s, ModelBuilder& b) {
  auto emb = b.embedding("transformer.word_embeddings", s.vocab, s.hidden);
  auto emb_ln = b.norm("transformer.word_embeddings_layernorm", s.hidden, true);
  b.layer("embeddings", LayerKind::Embedding, concat({emb, emb_ln}));
  const auto qkv_out = b.mul(3, s.hidden);
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) {
    const std::string p = "transformer.h." + std::to_string(i);
    auto ln_in = b.norm(p + ".input_layernorm", s.hidden, true);
    auto qkv = b.linear(p + ".self_attention.query_key_value", s.hidden, qkv_out, true);
    auto dense = b.linear(p + ".self_attention.dense", s.hidden, s.hidden, true);
    auto ln_post = b.norm(p + ".post_attention_layernorm", s.hidden, true);
    auto up = b.linear(p + ".mlp.dense_h_to_4h", s.hidden, s.ffn, true);
    auto down = b.linear(p + ".mlp.dense_4h_to_h", s.ffn, s.hidden, true);
    b.layer(p, LayerKind::Block, concat({ln_in, qkv, dense, ln_post, up, down}),
            attn_flops_per_ctx(s));
  }
  b.layer("transformer.ln_f", LayerKind::Norm, b.norm("transformer.ln_f", s.hidden, true));
  add_head(s, b, emb, "lm_head", s.hidden, false, {});
}

void build_falcon(const TransformerSpec& s, ModelBuilder& b) {
  auto emb = b.embedding("transformer.word_embeddings", s.vocab, s.hidden);
  b.layer("embeddings", LayerKind::Embedding, emb);
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) {
    const std::string p = "transformer.h." + std::to_string(i);
    auto qkv =
        b.linear(p + ".self_attention.query_key_value", s.hidden, s.falcon_qkv_out, s.falcon_bias);
    auto dense = b.linear(p + ".self_attention.dense", s.hidden, s.hidden, s.falcon_bias);
    auto up = b.linear(p + ".mlp.dense_h_to_4h", s.hidden, s.ffn, s.falcon_bias);
    auto down = b.linear(p + ".mlp.dense_4h_to_h", s.ffn, s.hidden, s.falcon_bias);
    ModuleParams use;
    if (s.falcon_norms == FalconNorms::PostAndInput) {
      auto ln_post = b.norm(p + ".post_attention_layernorm", s.hidden, true);
      auto ln_in = b.norm(p + ".input_layernorm", s.hidden, true);
      use = concat({ln_in, qkv, dense, ln_post, up, down});
    } else if (s.falcon_norms == FalconNorms::AttnAndMlp) {
      auto ln_attn = b.norm(p + ".ln_attn", s.hidden, true);
      auto ln_mlp = b.norm(p + ".ln_mlp", s.hidden, true);
      use = concat({ln_attn, ln_mlp, qkv, dense, up, down});
    } else {
      auto ln_in = b.norm(p + ".input_layernorm", s.hidden, true);
      use = concat({ln_in, qkv, dense, up, down});
    }
    b.layer(p, LayerKind::Block, use, attn_flops_per_ctx(s));
  }
  b.layer("transformer.ln_f", LayerKind::Norm, b.norm("transformer.ln_f", s.hidden, true));
  add_head(s, b, emb, "lm_head", s.hidden, false, {});
}

}  // namespace zerosim
