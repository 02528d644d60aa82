// Hugging Face config flags that no zoo model exercises (Falcon's new decoder architecture, OPT
// without biases, Llama biases and head_dim, BLOOM's n_embed alias, an untied GPT-2), and every
// config error message. Expected counts are worked out by hand in each test's comment.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hf_config_testlib.h"
#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using hftest::load_error;
using hftest::load_ok;
using hftest::Shape;

TEST(HfConfigVariants, FalconNewDecoderArchitecture) {
  // h 64, 8 heads of 8, 2 kv heads: qkv (2*2 + 8) * 8 = 96 rows. Per block 96*64 + 64*64 +
  // 2*64*256 + ln_attn/ln_mlp 4*64 = 43264; two blocks + embedding 6400 + ln_f 128 = 93056.
  ModelDesc m = load_ok(R"({"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 8,
      "num_kv_heads": 2, "num_hidden_layers": 2, "vocab_size": 100,
      "new_decoder_architecture": true})");
  EXPECT_EQ(m.num_parameters(), 93056u);
  EXPECT_EQ(m.params[1].name, "transformer.h.0.self_attention.query_key_value.weight");
  EXPECT_EQ(m.params[1].shape, (Shape{96, 64}));
  EXPECT_EQ(m.params[5].name, "transformer.h.0.ln_attn.weight");
  EXPECT_EQ(m.params[7].name, "transformer.h.0.ln_mlp.weight");
  EXPECT_EQ(m.arch->kv_heads, 2u);
}

TEST(HfConfigVariants, FalconSequentialWithBias) {
  // qkv 3h: 64*192 + 192 = 12480; dense 4160; MLP 16640 + 16448; two LayerNorms 256 -> 49984;
  // embedding 640 + ln_f 128 = 50752.
  ModelDesc m = load_ok(R"({"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4,
      "num_hidden_layers": 1, "vocab_size": 10, "multi_query": false, "parallel_attn": false,
      "bias": true})");
  EXPECT_EQ(m.num_parameters(), 50752u);
  EXPECT_EQ(m.params[9].name, "transformer.h.0.post_attention_layernorm.weight");
  EXPECT_EQ(m.params[11].name, "transformer.h.0.input_layernorm.weight");
}

TEST(HfConfigVariants, LlamaBiasesHeadDimAndTiedHead) {
  // q 64*128+128, k/v 64*64+64 each, o 128*64+64, gate/up 64*100+100, down 100*64+64, norms 128
  // = 44488; embedding 3200 (tied head) + norm 64 = 47752.
  ModelDesc m = load_ok(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
      "head_dim": 32, "num_key_value_heads": 2, "intermediate_size": 100, "num_hidden_layers": 1,
      "vocab_size": 50, "tie_word_embeddings": true, "attention_bias": true, "mlp_bias": true})");
  EXPECT_EQ(m.num_parameters(), 47752u);
  EXPECT_EQ(m.params[7].name, "model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(m.params[7].shape, (Shape{64, 128}));
  EXPECT_EQ(m.params[8].name, "model.layers.0.self_attn.o_proj.bias");
  EXPECT_EQ(m.layers.back().param_ids, (std::vector<std::uint32_t>{0}));
}

TEST(HfConfigVariants, OptWithoutBiasesOrAffineNorms) {
  // Embedding 10*32 + positions (16+2)*32 + four 32x32 and two 32x64 weights = 9088.
  ModelDesc m = load_ok(R"({"model_type": "opt", "hidden_size": 32, "num_attention_heads": 4,
      "ffn_dim": 64, "num_hidden_layers": 1, "vocab_size": 10, "max_position_embeddings": 16,
      "enable_bias": false, "layer_norm_elementwise_affine": false})");
  EXPECT_EQ(m.num_parameters(), 9088u);
  EXPECT_EQ(m.params.size(), 8u);
}

TEST(HfConfigVariants, BloomNEmbedAlias) {
  // Embedding 640 + its LayerNorm 128 + one block 12*64^2 + 13*64 + ln_f 128 = 50880.
  ModelDesc m = load_ok(R"({"model_type": "bloom", "n_embed": 64, "num_attention_heads": 4,
      "n_layer": 1, "vocab_size": 10})");
  EXPECT_EQ(m.num_parameters(), 50880u);
}

TEST(HfConfigVariants, Gpt2UntiedWithInnerWidth) {
  // wte 320 + wpe 256 + block 7504 (n_inner 48) + ln_f 64 + lm_head 320 = 8464.
  ModelDesc m = load_ok(R"({"model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_layer": 1,
      "n_positions": 8, "vocab_size": 10, "n_inner": 48, "tie_word_embeddings": false})");
  EXPECT_EQ(m.num_parameters(), 8464u);
  EXPECT_EQ(m.params.back().name, "lm_head.weight");
  EXPECT_EQ(m.params.back().shape, (Shape{10, 32}));
}

TEST(HfConfigErrors, UnknownModelTypeListsTheSupportedOnes) {
  EXPECT_EQ(load_error(R"({"model_type": "mamba", "hidden_size": 768})"),
            "c.json: /model_type: unsupported model_type \"mamba\"; supported: llama, mistral, "
            "qwen2, qwen3, gemma, gemma2, phi3, gpt2, gpt_neox, gptj, opt, bloom, falcon, "
            "mixtral, qwen2_moe, starcoder2, bert, roberta, deepseek_v2, deepseek_v3, t5\n");
  EXPECT_EQ(load_error(R"({"model_type": "lama"})"),
            "c.json: /model_type: unsupported model_type \"lama\"; supported: llama, mistral, "
            "qwen2, qwen3, gemma, gemma2, phi3, gpt2, gpt_neox, gptj, opt, bloom, falcon, "
            "mixtral, qwen2_moe, starcoder2, bert, roberta, deepseek_v2, deepseek_v3, t5 (did you "
            "mean \"llama\"?)\n");
  EXPECT_EQ(load_error(R"({"hidden_size": 768})"),
            "c.json: /: missing required key \"model_type\" (supported: llama, mistral, qwen2, "
            "qwen3, gemma, gemma2, phi3, gpt2, gpt_neox, gptj, opt, bloom, falcon, mixtral, "
            "qwen2_moe, starcoder2, bert, roberta, deepseek_v2, deepseek_v3, t5)\n");
}

TEST(HfConfigErrors, MissingAndIllTypedFields) {
  EXPECT_EQ(load_error(R"({"model_type": "llama", "vocab_size": 10, "intermediate_size": 8,
      "num_hidden_layers": 1, "num_attention_heads": 2})"),
            "c.json: /: missing required key \"hidden_size\"\n");
  EXPECT_EQ(load_error(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": "2",
      "num_key_value_heads": 2})"),
            "c.json: /num_attention_heads: expected an integer 1..16777216, got \"2\"\n");
  EXPECT_EQ(load_error(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 8, "num_hidden_layers": 5000, "num_attention_heads": 2})"),
            "c.json: /num_hidden_layers: expected an integer 1..4096, got 5000\n");
  EXPECT_EQ(load_error(R"({"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1,
      "n_positions": 4, "vocab_size": 10, "resid_pdrop": "x"})"),
            "c.json: /resid_pdrop: expected a number in [0, 1], got \"x\"\n");
  EXPECT_EQ(load_error(R"({"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_positions": 4,
      "vocab_size": 10})"),
            "c.json: /: missing required key \"n_embd\" (or \"hidden_size\")\n");
}

TEST(HfConfigErrors, InconsistentShapes) {
  EXPECT_EQ(load_error(R"({"model_type": "gpt2", "n_embd": 768, "hidden_size": 1024, "n_head": 12,
      "n_layer": 1, "n_positions": 4, "vocab_size": 10})"),
            "c.json: /: \"n_embd\" (768) and \"hidden_size\" (1024) disagree\n");
  EXPECT_EQ(load_error(R"({"model_type": "gpt2", "n_embd": 100, "n_head": 3, "n_layer": 1,
      "n_positions": 4, "vocab_size": 10})"),
            "c.json: /: n_embd (100) is not divisible by n_head (3)\n");
  EXPECT_EQ(load_error(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 64,
      "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 32,
      "num_key_value_heads": 5})"),
            "c.json: /: num_attention_heads (32) is not a multiple of num_key_value_heads (5)\n");
  EXPECT_EQ(load_error(R"({"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1,
      "n_positions": 4, "vocab_size": 10, "add_cross_attention": true})"),
            "c.json: /: add_cross_attention: true (encoder-decoder GPT-2) is not supported\n");
}

TEST(HfConfigErrors, TooLargeSyntaxAndFiles) {
  EXPECT_EQ(load_error(R"({"model_type": "llama", "vocab_size": 16777216, "hidden_size": 16777216,
      "intermediate_size": 16777216, "num_hidden_layers": 4096, "num_attention_heads": 1})"),
            "c.json: the model has more than 1e15 parameters (the limit zerosim accepts)\n");
  EXPECT_EQ(load_error("[1]"), "c.json: /: expected an object, got an array\n");
  EXPECT_EQ(load_error("{").rfind("c.json: invalid JSON at line 1, column 2", 0), 0u);
  auto r = load_hf_config_file("/nonexistent/config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().to_string(),
            "/nonexistent/config.json: cannot read file: No such file or directory\n");
}

}  // namespace
}  // namespace zerosim
