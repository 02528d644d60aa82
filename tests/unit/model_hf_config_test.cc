// Hugging Face config.json import: one real Hub config per supported model_type (tests/data/hf)
// must give exactly the parameter count transformers' *ForCausalLM.num_parameters() reports, with
// the names, shapes and declaration order of named_parameters().
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using Shape = std::vector<std::uint64_t>;

ModelDesc load_hf_test_config(const std::string& file) {
  auto r = load_hf_config_file(std::string(ZEROSIM_TEST_DATA_DIR) + "/hf/" + file);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

long find_param(const ModelDesc& m, const std::string& name) {
  for (std::size_t i = 0; i < m.params.size(); ++i)
    if (m.params[i].name == name) return static_cast<long>(i);
  return -1;
}

Shape shape_of(const ModelDesc& m, const std::string& name) {
  long i = find_param(m, name);
  return i < 0 ? Shape{} : m.params[static_cast<std::size_t>(i)].shape;
}

TEST(HfConfig, Llama2_7bExactLayoutAndCount) {
  ModelDesc m = load_hf_test_config("llama-2-7b-hf.json");
  EXPECT_EQ(m.num_parameters(), 6738415616u);
  EXPECT_EQ(m.name, "meta-llama/Llama-2-7b-hf");
  ASSERT_EQ(m.params.size(), 1u + 32u * 9u + 1u + 1u);
  EXPECT_EQ(m.params[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(m.params[0].shape, (Shape{32000, 4096}));
  const char* block0[] = {
      "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
      "self_attn.o_proj.weight", "mlp.gate_proj.weight",    "mlp.up_proj.weight",
      "mlp.down_proj.weight",    "input_layernorm.weight",  "post_attention_layernorm.weight"};
  for (std::size_t i = 0; i < 9; ++i)
    EXPECT_EQ(m.params[1 + i].name, std::string("model.layers.0.") + block0[i]);
  EXPECT_EQ(shape_of(m, "model.layers.31.mlp.down_proj.weight"), (Shape{4096, 11008}));
  EXPECT_EQ(m.params[m.params.size() - 2].name, "model.norm.weight");
  EXPECT_EQ(m.params.back().name, "lm_head.weight");
  EXPECT_EQ(m.params.back().shape, (Shape{32000, 4096}));
  ASSERT_TRUE(m.arch.has_value());
  EXPECT_EQ(m.arch->family, "llama");
  EXPECT_EQ(m.arch->kv_heads, 32u);
  EXPECT_EQ(m.arch->max_seq, 4096u);
  EXPECT_TRUE(m.arch->gated_mlp);
  EXPECT_FALSE(m.arch->tied_embeddings);
  EXPECT_FALSE(m.arch->dropout);
}

TEST(HfConfig, LayersAndFlopsFollowForwardOrder) {
  ModelDesc m = load_hf_test_config("llama-2-7b-hf.json");
  ASSERT_EQ(m.layers.size(), 1u + 32u + 1u + 1u);
  EXPECT_EQ(m.layers[0].kind, LayerKind::Embedding);
  EXPECT_EQ(m.layers[0].fwd_flops_per_token, 0.0);
  const Layer& b0 = m.layers[1];
  EXPECT_EQ(b0.name, "model.layers.0");
  EXPECT_EQ(b0.kind, LayerKind::Block);
  // Use order: input_layernorm, q, k, v, o, post_attention_layernorm, gate, up, down.
  EXPECT_EQ(b0.param_ids, (std::vector<std::uint32_t>{8, 1, 2, 3, 4, 9, 5, 6, 7}));
  EXPECT_EQ(b0.fwd_flops_per_token, 2.0 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008));
  EXPECT_EQ(b0.attn_flops_per_token_per_ctx, 4.0 * 4096);
  EXPECT_EQ(m.layers[33].kind, LayerKind::Norm);
  EXPECT_EQ(m.layers[34].kind, LayerKind::Head);
  EXPECT_EQ(m.layers[34].fwd_flops_per_token, 2.0 * 4096 * 32000);
}

TEST(HfConfig, Llama3_8bGqaShrinksKeyValueProjections) {
  ModelDesc m = load_hf_test_config("meta-llama-3-8b.json");
  EXPECT_EQ(m.num_parameters(), 8030261248u);
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.q_proj.weight"), (Shape{4096, 4096}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.k_proj.weight"), (Shape{1024, 4096}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.v_proj.weight"), (Shape{1024, 4096}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.o_proj.weight"), (Shape{4096, 4096}));
  EXPECT_EQ(m.arch->kv_heads, 8u);
  EXPECT_EQ(m.arch->head_dim, 128u);
  // Attention FLOPs per context token do not shrink with GQA: every query head still attends.
  EXPECT_EQ(m.layers[1].attn_flops_per_token_per_ctx, 4.0 * 32 * 128);
}

TEST(HfConfig, Mistral7b) {
  ModelDesc m = load_hf_test_config("mistral-7b-v0.1.json");
  EXPECT_EQ(m.num_parameters(), 7241732096u);
  EXPECT_EQ(shape_of(m, "model.layers.31.self_attn.k_proj.weight"), (Shape{1024, 4096}));
  EXPECT_EQ(m.arch->family, "mistral");
  EXPECT_EQ(m.arch->max_seq, 32768u);
}

TEST(HfConfig, Qwen2_7bHasQkvBiasesButNoOutputBias) {
  ModelDesc m = load_hf_test_config("qwen2-7b.json");
  EXPECT_EQ(m.num_parameters(), 7615616512u);
  EXPECT_EQ(m.params.size(), 1u + 28u * 12u + 1u + 1u);
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.q_proj.bias"), (Shape{3584}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.k_proj.bias"), (Shape{512}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.v_proj.bias"), (Shape{512}));
  EXPECT_EQ(find_param(m, "model.layers.0.self_attn.o_proj.bias"), -1);
  EXPECT_EQ(m.params[2].name, "model.layers.0.self_attn.q_proj.bias");
}

TEST(HfConfig, Gpt2TiedHeadCountedOnce) {
  ModelDesc m = load_hf_test_config("gpt2.json");
  EXPECT_EQ(m.num_parameters(), 124439808u);
  EXPECT_EQ(m.params.size(), 2u + 12u * 12u + 2u);
  EXPECT_EQ(find_param(m, "lm_head.weight"), -1);
  EXPECT_EQ(m.params[0].name, "transformer.wte.weight");
  EXPECT_EQ(m.params[1].name, "transformer.wpe.weight");
  EXPECT_EQ(m.params[1].shape, (Shape{1024, 768}));
  // Conv1D stores [in, out].
  EXPECT_EQ(shape_of(m, "transformer.h.0.attn.c_attn.weight"), (Shape{768, 2304}));
  EXPECT_EQ(shape_of(m, "transformer.h.0.mlp.c_proj.weight"), (Shape{3072, 768}));
  EXPECT_EQ(m.params.back().name, "transformer.ln_f.bias");
  ASSERT_EQ(m.layers.back().kind, LayerKind::Head);
  EXPECT_EQ(m.layers.back().param_ids, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(m.layers.back().fwd_flops_per_token, 2.0 * 768 * 50257);
  EXPECT_TRUE(m.arch->tied_embeddings);
  EXPECT_TRUE(m.arch->dropout);
  EXPECT_EQ(m.arch->max_seq, 1024u);
}

TEST(HfConfig, GptNeox20b) {
  ModelDesc m = load_hf_test_config("gpt-neox-20b.json");
  EXPECT_EQ(m.num_parameters(), 20554567680u);
  EXPECT_EQ(m.params[1].name, "gpt_neox.layers.0.input_layernorm.weight");
  EXPECT_EQ(m.params[3].name, "gpt_neox.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(m.params[5].name, "gpt_neox.layers.0.attention.query_key_value.weight");
  EXPECT_EQ(m.params[5].shape, (Shape{18432, 6144}));
  EXPECT_EQ(m.params.back().name, "embed_out.weight");
  EXPECT_EQ(m.params.back().shape, (Shape{50432, 6144}));
}

TEST(HfConfig, GptjHasHeadBiasAndKvqDeclarationOrder) {
  ModelDesc m = load_hf_test_config("gpt-j-6b.json");
  EXPECT_EQ(m.num_parameters(), 6050882784u);
  EXPECT_EQ(m.params[3].name, "transformer.h.0.attn.k_proj.weight");
  EXPECT_EQ(m.params[4].name, "transformer.h.0.attn.v_proj.weight");
  EXPECT_EQ(m.params[5].name, "transformer.h.0.attn.q_proj.weight");
  EXPECT_EQ(find_param(m, "transformer.h.0.attn.q_proj.bias"), -1);
  EXPECT_EQ(m.params.back().name, "lm_head.bias");
  EXPECT_EQ(m.params.back().shape, (Shape{50400}));
  EXPECT_FALSE(m.arch->dropout);
}

TEST(HfConfig, Opt125mPositionsHaveTwoOffsetRows) {
  ModelDesc m = load_hf_test_config("opt-125m.json");
  EXPECT_EQ(m.num_parameters(), 125239296u);
  EXPECT_EQ(shape_of(m, "model.decoder.embed_positions.weight"), (Shape{2050, 768}));
  EXPECT_EQ(m.params[2].name, "model.decoder.final_layer_norm.weight");
  EXPECT_EQ(m.params[4].name, "model.decoder.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(find_param(m, "lm_head.weight"), -1);
}

TEST(HfConfig, Opt350mProjectsAndHasNoFinalNorm) {
  ModelDesc m = load_hf_test_config("opt-350m.json");
  EXPECT_EQ(m.num_parameters(), 331196416u);
  EXPECT_EQ(m.params[0].shape, (Shape{50272, 512}));
  EXPECT_EQ(m.params[2].name, "model.decoder.project_out.weight");
  EXPECT_EQ(m.params[2].shape, (Shape{512, 1024}));
  EXPECT_EQ(m.params[3].name, "model.decoder.project_in.weight");
  EXPECT_EQ(m.params[3].shape, (Shape{1024, 512}));
  EXPECT_EQ(find_param(m, "model.decoder.final_layer_norm.weight"), -1);
  // Post-norm blocks: the attention runs before self_attn_layer_norm.
  EXPECT_EQ(m.params[m.layers[1].param_ids[0]].name,
            "model.decoder.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(m.layers.back().param_ids, (std::vector<std::uint32_t>{2, 0}));
  EXPECT_EQ(m.layers.back().fwd_flops_per_token, 2.0 * (1024 * 512 + 512 * 50272));
}

TEST(HfConfig, Bloom560m) {
  ModelDesc m = load_hf_test_config("bloom-560m.json");
  EXPECT_EQ(m.num_parameters(), 559214592u);
  EXPECT_EQ(m.params[1].name, "transformer.word_embeddings_layernorm.weight");
  EXPECT_EQ(shape_of(m, "transformer.h.0.self_attention.query_key_value.weight"),
            (Shape{3072, 1024}));
  EXPECT_EQ(shape_of(m, "transformer.h.23.mlp.dense_h_to_4h.bias"), (Shape{4096}));
  EXPECT_EQ(find_param(m, "lm_head.weight"), -1);
}

TEST(HfConfig, Falcon7bMultiQuery) {
  ModelDesc m = load_hf_test_config("falcon-7b.json");
  EXPECT_EQ(m.num_parameters(), 6921720704u);
  EXPECT_EQ(m.params[1].name, "transformer.h.0.self_attention.query_key_value.weight");
  EXPECT_EQ(m.params[1].shape, (Shape{4544 + 2 * 64, 4544}));
  EXPECT_EQ(m.params[5].name, "transformer.h.0.input_layernorm.weight");
  EXPECT_EQ(find_param(m, "transformer.h.0.self_attention.dense.bias"), -1);
  EXPECT_EQ(m.arch->kv_heads, 1u);
}

}  // namespace
}  // namespace zerosim
