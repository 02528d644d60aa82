// Gemma, Gemma2, Qwen3, Phi-3 and the mixture-of-experts families (Mixtral, Qwen2-MoE): tensor
// names and shapes as the transformers modeling files declare them, exact counts of the real
// checkpoints (zoo files carry their config.json values and Hub URL), top-k FLOPs and activation
// widths, the stage 3 leaf marking, and every new config error. Small counts are worked out by
// hand in each test's comment.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hf_config_testlib.h"
#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using hftest::load_error;
using hftest::load_ok;
using hftest::module;
using hftest::Shape;

const ParamTensor* find(const ModelDesc& m, const std::string& name) {
  for (const auto& p : m.params)
    if (p.name == name) return &p;
  return nullptr;
}

TEST(HfFamilies, MixtralEightBySevenIsExactWithTopTwoCompute) {
  auto r = load_zoo_model("mistralai/Mixtral-8x7B-v0.1");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const ModelDesc& m = r.value();
  // Per layer: attention 41,943,040 + router 4096*8 + 8 experts * 3*4096*14336 + 2 norms 8192
  // = 1,451,270,144; 32 layers + untied embedding and head 2*32000*4096 + norm 4096.
  EXPECT_EQ(m.num_parameters(), 46702792704u);
  const auto* gate = find(m, "model.layers.0.block_sparse_moe.gate.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->shape, (Shape{8, 4096}));
  const auto* w2 = find(m, "model.layers.31.block_sparse_moe.experts.7.w2.weight");
  ASSERT_NE(w2, nullptr);
  EXPECT_EQ(w2->shape, (Shape{4096, 14336}));
  EXPECT_EQ(find(m, "model.layers.0.mlp.gate_proj.weight"), nullptr);  // no dense MLP
  // Forward FLOPs per token of a block: 2 x (attention 41,943,040 + router 32,768 + two experts
  // 2 * 176,160,768) = 788,594,688, not the 2.86 GFLOPs of all eight experts.
  ASSERT_GE(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[1].name, "model.layers.0");
  EXPECT_DOUBLE_EQ(m.layers[1].fwd_flops_per_token, 788594688.0);
  ASSERT_TRUE(m.arch.has_value());
  EXPECT_EQ(m.arch->experts, 8u);
  EXPECT_EQ(m.arch->experts_per_token, 2u);
  EXPECT_EQ(m.arch->ffn, 2u * 14336u);  // what one token's activations pass through
  const auto* block = module(m, "model.layers.0.block_sparse_moe");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->type, "MixtralSparseMoeBlock");
  EXPECT_TRUE(block->z3_leaf);
  const auto* expert = module(m, "model.layers.0.block_sparse_moe.experts.3");
  ASSERT_NE(expert, nullptr);
  EXPECT_EQ(expert->type, "MixtralBlockSparseTop2MLP");
  EXPECT_FALSE(expert->z3_leaf);
  EXPECT_EQ(m.grad_order.size(), m.params.size());
}

TEST(HfFamilies, MixtralWasRefusedAsMistralBefore) {
  // The same config with model_type mistral is a dense model a sixth of the size.
  const std::string body = R"("vocab_size": 32000, "hidden_size": 4096,
      "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2})";
  EXPECT_EQ(load_ok(R"({"model_type": "mixtral", )" + body).num_parameters(), 46702792704u);
  EXPECT_EQ(load_ok(R"({"model_type": "mistral", )" + body).num_parameters(), 7241732096u);
}

TEST(HfFamilies, Qwen2MoeSharedExpertSparseStepAndDenseLayers) {
  // h 16, 2 heads of 8, ffn 32 (dense), 4 experts of 8 (top-2), shared expert 24, vocab 10,
  // 3 layers, decoder_sparse_step 1, mlp_only_layers [1].
  // Attention with q/k/v biases: 3*(16*16+16) + 16*16 = 1072; norms 32.
  // MoE MLP: router 64 + 4 * 3*16*8 (1536) + shared 3*16*24 (1152) + shared gate 16 = 2768.
  // Dense MLP: 3*16*32 = 1536. Layers 0 and 2 MoE: 2*(1072+32+2768) + (1072+32+1536) = 10384;
  // embedding 160 + head 160 + norm 16 = 10720.
  ModelDesc m = load_ok(R"({"model_type": "qwen2_moe", "vocab_size": 10, "hidden_size": 16,
      "intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 2,
      "num_key_value_heads": 2, "num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 8, "shared_expert_intermediate_size": 24,
      "mlp_only_layers": [1]})");
  EXPECT_EQ(m.num_parameters(), 10720u);
  EXPECT_NE(find(m, "model.layers.0.mlp.shared_expert_gate.weight"), nullptr);
  EXPECT_NE(find(m, "model.layers.0.mlp.experts.3.down_proj.weight"), nullptr);
  EXPECT_NE(find(m, "model.layers.1.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(find(m, "model.layers.1.mlp.gate.weight"), nullptr);
  EXPECT_EQ(m.arch->ffn, 2u * 8u + 24u);
  // Block 0 FLOPs/token: 2 x (attention 1024 + router 64 + 2 experts 768 + shared 1152 + 16).
  EXPECT_DOUBLE_EQ(m.layers[1].fwd_flops_per_token, 2.0 * (1024 + 64 + 768 + 1152 + 16));
  EXPECT_TRUE(module(m, "model.layers.0.mlp")->z3_leaf);
  EXPECT_FALSE(module(m, "model.layers.1.mlp")->z3_leaf);
  // decoder_sparse_step 2: only layer 1 (the second) is sparse.
  ModelDesc step = load_ok(R"({"model_type": "qwen2_moe", "vocab_size": 10, "hidden_size": 16,
      "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
      "num_key_value_heads": 2, "num_experts": 4, "moe_intermediate_size": 8,
      "decoder_sparse_step": 2})");
  EXPECT_EQ(find(step, "model.layers.0.mlp.gate.weight"), nullptr);
  EXPECT_NE(find(step, "model.layers.1.mlp.gate.weight"), nullptr);
}

TEST(HfFamilies, Qwen15MoeIsExact) {
  auto r = load_zoo_model("Qwen/Qwen1.5-MoE-A2.7B");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r->num_parameters(), 14315784192u);
  EXPECT_EQ(r->arch->experts, 60u);
  EXPECT_EQ(r->arch->ffn, 4u * 1408u + 5632u);
}

TEST(HfFamilies, GemmaTiesItsHeadAndGemma2HasFourNorms) {
  auto g = load_zoo_model("google/gemma-7b");
  ASSERT_TRUE(g.ok()) << g.diagnostics().to_string();
  EXPECT_EQ(g->num_parameters(), 8537680896u);
  EXPECT_EQ(find(g.value(), "lm_head.weight"), nullptr);  // tied to model.embed_tokens
  EXPECT_EQ(find(g.value(), "model.layers.0.self_attn.q_proj.weight")->shape, (Shape{4096, 3072}));
  EXPECT_EQ(module(g.value(), "model.layers.0.mlp.act_fn")->type, "PytorchGELUTanh");
  auto g2 = load_zoo_model("google/gemma-2-9b");
  ASSERT_TRUE(g2.ok()) << g2.diagnostics().to_string();
  EXPECT_EQ(g2->num_parameters(), 9241705984u);
  EXPECT_NE(find(g2.value(), "model.layers.41.pre_feedforward_layernorm.weight"), nullptr);
  EXPECT_NE(find(g2.value(), "model.layers.41.post_feedforward_layernorm.weight"), nullptr);
  // Gemma2-2B from its config.json values (google/gemma-2-2b): 2,614,341,888 (keras-hub
  // gemma2_2b_en preset).
  ModelDesc small = load_ok(R"({"model_type": "gemma2", "vocab_size": 256000,
      "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256})");
  EXPECT_EQ(small.num_parameters(), 2614341888u);
  // An explicit untied Gemma declares lm_head.
  ModelDesc untied = load_ok(R"({"model_type": "gemma", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
      "head_dim": 8, "tie_word_embeddings": false})");
  EXPECT_NE(find(untied, "lm_head.weight"), nullptr);
}

TEST(HfFamilies, Qwen3HasPerHeadQkNorms) {
  auto r = load_zoo_model("Qwen/Qwen3-8B");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r->num_parameters(), 8190735360u);
  const auto* qn = find(r.value(), "model.layers.0.self_attn.q_norm.weight");
  ASSERT_NE(qn, nullptr);
  EXPECT_EQ(qn->shape, (Shape{128}));
  // Qwen3-0.6B (Qwen/Qwen3-0.6B config.json): tied, 596,049,920 from the shapes (card: 0.6B).
  ModelDesc small = load_ok(R"({"model_type": "qwen3", "vocab_size": 151936,
      "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
      "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
      "tie_word_embeddings": true})");
  EXPECT_EQ(small.num_parameters(), 596049920u);
}

TEST(HfFamilies, Phi3FusesQkvAndGateUp) {
  auto r = load_zoo_model("microsoft/Phi-3-mini-4k-instruct");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r->num_parameters(), 3821079552u);
  EXPECT_EQ(r->params[1].name, "model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(r->params[2].name, "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(r->params[2].shape, (Shape{9216, 3072}));
  EXPECT_EQ(find(r.value(), "model.layers.0.mlp.gate_up_proj.weight")->shape, (Shape{16384, 3072}));
  EXPECT_TRUE(r->arch->gated_mlp);
  // GQA variant (Phi-3-small-like widths): qkv rows (4 + 2*2) * 4 = 32.
  ModelDesc gqa = load_ok(R"({"model_type": "phi3", "vocab_size": 10, "hidden_size": 16,
      "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4,
      "num_key_value_heads": 2})");
  EXPECT_EQ(find(gqa, "model.layers.0.self_attn.qkv_proj.weight")->shape, (Shape{32, 16}));
}

TEST(HfFamilies, Starcoder2HasBiasedLayerNormsAndAPlainMlp) {
  // h 16, 2 heads of 8, 1 kv head, ffn 32, vocab 10, one layer, tied (PretrainedConfig default):
  // q 16*16+16 = 272, k/v 16*8+8 = 136 each, o 272; c_fc 16*32+32 = 544, c_proj 32*16+16 = 528;
  // two LayerNorms 64 -> 1952; embedding 160 + final LayerNorm 32 = 2144.
  ModelDesc m = load_ok(R"({"model_type": "starcoder2", "vocab_size": 10, "hidden_size": 16,
      "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
      "num_key_value_heads": 1})");
  EXPECT_EQ(m.num_parameters(), 2144u);
  EXPECT_NE(find(m, "model.layers.0.mlp.c_fc.bias"), nullptr);
  EXPECT_NE(find(m, "model.layers.0.input_layernorm.bias"), nullptr);
  EXPECT_NE(find(m, "model.norm.bias"), nullptr);
  EXPECT_EQ(find(m, "lm_head.weight"), nullptr);
  EXPECT_FALSE(m.arch->gated_mlp);
  EXPECT_EQ(module(m, "model.layers.0.input_layernorm")->type, "LayerNorm");
  // use_bias false drops every Linear bias and the LayerNorm biases stay (nn.LayerNorm default).
  ModelDesc nobias = load_ok(R"({"model_type": "starcoder2", "vocab_size": 10,
      "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
      "num_attention_heads": 2, "num_key_value_heads": 1, "use_bias": false})");
  EXPECT_EQ(nobias.num_parameters(), 2144u - (16 + 8 + 8 + 16 + 32 + 16));
  // bigcode/starcoder2-7b's config.json shapes: 7,173,923,840 worked out from the shapes.
  ModelDesc big = load_ok(R"({"model_type": "starcoder2", "vocab_size": 49152,
      "hidden_size": 4608, "intermediate_size": 18432, "num_hidden_layers": 32,
      "num_attention_heads": 36, "num_key_value_heads": 4, "use_bias": true})");
  EXPECT_EQ(big.num_parameters(), 7173923840u);
}

TEST(HfFamilies, BertIsItsMaskedLmWithATiedDecoder) {
  auto r = load_zoo_model("google-bert/bert-base-uncased");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const ModelDesc& m = r.value();
  // AutoModelForMaskedLM.from_pretrained("bert-base-uncased").num_parameters() = 109,514,298.
  EXPECT_EQ(m.num_parameters(), 109514298u);
  EXPECT_EQ(m.params[3].name, "bert.embeddings.LayerNorm.weight");
  EXPECT_EQ(m.params[2].shape, (Shape{2, 768}));  // token_type_embeddings
  // The head's own bias comes before its transform; the decoder adds no tensor (tied).
  const auto bias = std::find_if(m.params.begin(), m.params.end(), [](const ParamTensor& p) {
    return p.name == "cls.predictions.bias";
  });
  ASSERT_NE(bias, m.params.end());
  EXPECT_EQ((bias + 1)->name, "cls.predictions.transform.dense.weight");
  EXPECT_EQ(find(m, "cls.predictions.decoder.weight"), nullptr);
  EXPECT_EQ(find(m, "bert.pooler.dense.weight"), nullptr);  // BertForMaskedLM has no pooler
  EXPECT_TRUE(m.arch->dropout);
  EXPECT_EQ(m.grad_order.size(), m.params.size());
  // prajjwal1/bert-tiny (h 128, 2 layers, 2 heads, ffn 512): 4,416,698 as AutoModelForMaskedLM.
  ModelDesc tiny = load_ok(R"({"model_type": "bert", "hidden_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512})");
  EXPECT_EQ(tiny.num_parameters(), 4416698u);
  EXPECT_EQ(load_error(R"({"model_type": "bert", "position_embedding_type": "relative_key"})"),
            "c.json: /position_embedding_type: position_embedding_type \"relative_key\" is not "
            "supported (its distance_embedding is not built); expected \"absolute\"\n");
}

TEST(HfFamilies, RobertaIsBertUnderItsOwnNames) {
  auto r = load_zoo_model("FacebookAI/roberta-base");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const ModelDesc& m = r.value();
  // The Hub's safetensors F32 total for roberta-base: 124,697,433.
  EXPECT_EQ(m.num_parameters(), 124697433u);
  EXPECT_EQ(m.params[1].shape, (Shape{514, 768}));  // position rows incl. the padding offset
  EXPECT_EQ(m.params[2].shape, (Shape{1, 768}));    // one token type
  const auto bias = std::find_if(m.params.begin(), m.params.end(),
                                 [](const ParamTensor& p) { return p.name == "lm_head.bias"; });
  ASSERT_NE(bias, m.params.end());
  EXPECT_EQ((bias + 1)->name, "lm_head.dense.weight");
  EXPECT_EQ(module(m, "roberta.encoder.layer.0")->type, "RobertaLayer");
  EXPECT_EQ(module(m, "lm_head")->type, "RobertaLMHead");
}

TEST(HfFamilies, ConfigErrorsNameTheKey) {
  const std::string moe = R"({"model_type": "mixtral", "vocab_size": 10, "hidden_size": 16,
      "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
      "num_key_value_heads": 2, )";
  EXPECT_EQ(
      load_error(moe + R"("num_local_experts": 2, "num_experts_per_tok": 3})"),
      "c.json: /num_experts_per_tok: num_experts_per_tok (3) exceeds the number of experts (2)\n");
  EXPECT_NE(
      load_error(moe + R"("num_local_experts": "eight"})").find("c.json: /num_local_experts:"),
      std::string::npos);
  const std::string qm = R"({"model_type": "qwen2_moe", "vocab_size": 10, "hidden_size": 16,
      "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
      "num_key_value_heads": 2, )";
  EXPECT_NE(load_error(qm + R"("mlp_only_layers": [5]})").find("c.json: /mlp_only_layers/0:"),
            std::string::npos);
  EXPECT_NE(load_error(qm + R"("mlp_only_layers": "all"})").find("c.json: /mlp_only_layers:"),
            std::string::npos);
  EXPECT_NE(load_error(qm + R"("decoder_sparse_step": 0})").find("/decoder_sparse_step"),
            std::string::npos);
  const auto unknown = load_error(R"({"model_type": "qwen3_moe"})");
  EXPECT_NE(unknown.find("supported: llama, mistral, qwen2, qwen3, gemma, gemma2, phi3"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("mixtral, qwen2_moe, starcoder2, bert, roberta"), std::string::npos)
      << unknown;
}

}  // namespace
}  // namespace zerosim
