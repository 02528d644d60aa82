// DeepSeek-V2 and DeepSeek-V3 (multi-head latent attention, shared-expert MoE): exact counts of
// the real checkpoints (zoo files carry their config.json values and Hub URL), tensor names,
// shapes and declaration order as transformers' modeling files declare them, the module tree of a
// tiny replica, top-k FLOPs, MLA activations, LoRA targets, plans at every stage, and every new
// config error. Small counts are worked out by hand in each test's comment.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hf_config_testlib.h"
#include "zerosim/lora.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_loader.h"
#include "zerosim/planner.h"

namespace zerosim {
namespace {

using hftest::expect_plans_at_every_stage;
using hftest::index_of;
using hftest::load_error;
using hftest::load_ok;
using hftest::module;
using hftest::Shape;
using hftest::shape_of;
using hftest::zoo;

// h 8, 2 heads, q_lora 4, kv_lora 4, nope 2 + rope 2, v 2, dense ffn 16, 2 experts of 4 (top-1),
// 1 shared expert, layer 0 dense, 2 layers, vocab 10.
// Attention: q_a 8*4 = 32, q_a_layernorm 4, q_b 4*(2*4) = 32, kv_a 8*(4+2) = 48, kv_a_layernorm 4,
// kv_b 4*(2*(2+2)) = 32, o (2*2)*8 = 32 -> 184; two norms 16.
// Dense MLP 3*8*16 = 384; MoE: experts 2 * 3*8*4 = 192, router 2*8 = 16, shared 3*8*4 = 96 -> 304.
// Layers 584 + 504; embedding 80 + head 80 + norm 8 -> 1256.
const char* kTinyV3 = R"({"model_type": "deepseek_v3", "vocab_size": 10, "hidden_size": 8,
    "intermediate_size": 16, "moe_intermediate_size": 4, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 4, "kv_lora_rank": 4,
    "qk_nope_head_dim": 2, "qk_rope_head_dim": 2, "v_head_dim": 2, "n_routed_experts": 2,
    "n_shared_experts": 1, "num_experts_per_tok": 1, "first_k_dense_replace": 1,
    "n_group": 1, "topk_group": 1, "num_nextn_predict_layers": 1})";

TEST(HfDeepseek, V2LiteIsExactWithOneQProjAndADenseFirstLayer) {
  const ModelDesc m = zoo("deepseek-ai/DeepSeek-V2-Lite");
  // Attention: q_proj 2048*3072 + kv_a 2048*576 + kv_a_layernorm 512 + kv_b 512*4096 + o
  // 2048*2048 = 13,763,072; norms 4096. Layer 0 dense 3*2048*10944 = 67,239,936; layers 1-26:
  // 64 experts * 3*2048*1408 + router 64*2048 + shared 3*2048*2816 = 571,080,704. Untied
  // embedding and head 2*102400*2048 + norm 2048: 15,706,484,224 (the Hub's safetensors total).
  EXPECT_EQ(m.num_parameters(), 15706484224u);
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.q_proj.weight"), (Shape{3072, 2048}));
  EXPECT_EQ(index_of(m, "model.layers.0.self_attn.q_a_proj.weight"), -1);  // q_lora_rank null
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight"), (Shape{576, 2048}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.kv_a_layernorm.weight"), (Shape{512}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.kv_b_proj.weight"), (Shape{4096, 512}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.o_proj.weight"), (Shape{2048, 2048}));
  EXPECT_EQ(shape_of(m, "model.layers.0.mlp.gate_proj.weight"), (Shape{10944, 2048}));
  EXPECT_EQ(index_of(m, "model.layers.0.mlp.gate.weight"), -1);
  EXPECT_EQ(shape_of(m, "model.layers.1.mlp.gate.weight"), (Shape{64, 2048}));
  EXPECT_EQ(shape_of(m, "model.layers.26.mlp.experts.63.down_proj.weight"), (Shape{2048, 1408}));
  EXPECT_EQ(shape_of(m, "model.layers.1.mlp.shared_experts.up_proj.weight"), (Shape{2816, 2048}));
  // DeepseekV2MoE declares experts, then gate, then shared_experts; the layer's norms come last.
  EXPECT_EQ(index_of(m, "model.layers.1.mlp.gate.weight"),
            index_of(m, "model.layers.1.mlp.experts.63.down_proj.weight") + 1);
  EXPECT_EQ(index_of(m, "model.layers.1.input_layernorm.weight"),
            index_of(m, "model.layers.1.mlp.shared_experts.down_proj.weight") + 1);
  EXPECT_EQ(module(m, "model.layers.1.mlp")->type, "DeepseekV2MoE");
  EXPECT_TRUE(module(m, "model.layers.1.mlp")->z3_leaf);
  EXPECT_EQ(module(m, "model.layers.1.mlp.gate")->type, "DeepseekV2MoEGate");
  EXPECT_EQ(module(m, "model.layers.0.mlp")->type, "DeepseekV2MLP");
  EXPECT_FALSE(module(m, "model.layers.0.mlp")->z3_leaf);
  // FLOPs per token: dense block 2 * (attention 13,762,560 + 67,239,936); MoE block 2 *
  // (13,762,560 + router 131,072 + 6 experts * 8,650,752 + shared 17,301,504).
  ASSERT_GE(m.layers.size(), 3u);
  EXPECT_DOUBLE_EQ(m.layers[1].fwd_flops_per_token, 2.0 * (13762560.0 + 67239936.0));
  EXPECT_DOUBLE_EQ(m.layers[2].fwd_flops_per_token,
                   2.0 * (13762560.0 + 131072.0 + 6 * 8650752.0 + 17301504.0));
  // Scores over nope + rope = 192 per head, context over v = 128: 2 * 16 * 320.
  EXPECT_DOUBLE_EQ(m.layers[2].attn_flops_per_token_per_ctx, 10240.0);
  ASSERT_TRUE(m.arch.has_value());
  EXPECT_EQ(m.arch->experts, 64u);
  EXPECT_EQ(m.arch->experts_per_token, 6u);
  EXPECT_EQ(m.arch->ffn, 6u * 1408u + 2u * 1408u);
  EXPECT_EQ(m.arch->head_dim, 192u);
  EXPECT_TRUE(m.arch->gated_mlp);
  EXPECT_EQ(m.arch->v_head_dim, 128u);
  EXPECT_EQ(m.arch->attn_extra, 576u + 512u);  // kv_a output and kv_a_layernorm output
  EXPECT_EQ(m.grad_order.size(), m.params.size());
}

TEST(HfDeepseek, V3IsExactWithoutTheRouterBiasBufferAndTheMtpLayer) {
  const ModelDesc m = zoo("deepseek-v3");
  // Attention: q_a 7168*1536 + 1536 + q_b 1536*24576 + kv_a 7168*576 + 512 + kv_b 512*32768 + o
  // 16384*7168 = 187,107,328; norms 14,336. Layers 0-2 dense 3*7168*18432 = 396,361,728; layers
  // 3-60: 256 experts * 44,040,192 + router 256*7168 + shared 44,040,192 = 11,320,164,352.
  // Embedding and head 2*129280*7168 + norm 7168: 671,026,404,352.
  EXPECT_EQ(m.num_parameters(), 671026404352u);
  // The checkpoint's main-model count adds DeepseekV3TopkRouter's e_score_correction_bias, a
  // buffer in transformers (register_buffer), in 58 MoE layers of 256 experts.
  EXPECT_EQ(m.num_parameters() + 58u * 256u, 671026419200u);
  for (const auto& p : m.params)
    ASSERT_EQ(p.name.find("e_score_correction_bias"), std::string::npos) << p.name;
  EXPECT_EQ(index_of(m, "model.layers.60.input_layernorm.weight") >= 0, true);
  EXPECT_EQ(index_of(m, "model.layers.61.input_layernorm.weight"), -1);  // MTP layer: not built
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.q_a_proj.weight"), (Shape{1536, 7168}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.q_a_layernorm.weight"), (Shape{1536}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.q_b_proj.weight"), (Shape{24576, 1536}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.kv_b_proj.weight"), (Shape{32768, 512}));
  EXPECT_EQ(shape_of(m, "model.layers.0.self_attn.o_proj.weight"), (Shape{7168, 16384}));
  EXPECT_EQ(index_of(m, "model.layers.2.mlp.gate.weight"), -1);  // first_k_dense_replace 3
  EXPECT_EQ(shape_of(m, "model.layers.3.mlp.gate.weight"), (Shape{256, 7168}));
  EXPECT_EQ(shape_of(m, "model.layers.3.mlp.shared_experts.gate_proj.weight"), (Shape{2048, 7168}));
  EXPECT_EQ(module(m, "model.layers.3.mlp.gate")->type, "DeepseekV3TopkRouter");
  EXPECT_EQ(module(m, "model.layers.3.mlp")->type, "DeepseekV3MoE");
  EXPECT_EQ(m.arch->ffn, 8u * 2048u + 2048u);
  EXPECT_EQ(m.arch->attn_extra, 2u * 1536u + 576u + 512u);
}

TEST(HfDeepseek, TinyReplicaHasTransformersNamesInForwardOrder) {
  const ModelDesc m = load_ok(kTinyV3);
  EXPECT_EQ(m.num_parameters(), 1256u);
  // What tests/recorder/zoo_replicas.py records for this config (modeling_deepseek_v3.py's
  // module names; the experts' hooks fire because every expert gets a token in a real batch).
  const std::vector<std::string> want = {
      "DeepseekV3ForCausalLM:",
      "DeepseekV3Model:model",
      "Embedding:model.embed_tokens",
      "DeepseekV3RotaryEmbedding:model.rotary_emb",
      "ModuleList:model.layers",
      "DeepseekV3DecoderLayer:model.layers.0",
      "DeepseekV3RMSNorm:model.layers.0.input_layernorm",
      "DeepseekV3Attention:model.layers.0.self_attn",
      "Linear:model.layers.0.self_attn.q_a_proj",
      "DeepseekV3RMSNorm:model.layers.0.self_attn.q_a_layernorm",
      "Linear:model.layers.0.self_attn.q_b_proj",
      "Linear:model.layers.0.self_attn.kv_a_proj_with_mqa",
      "DeepseekV3RMSNorm:model.layers.0.self_attn.kv_a_layernorm",
      "Linear:model.layers.0.self_attn.kv_b_proj",
      "Linear:model.layers.0.self_attn.o_proj",
      "DeepseekV3RMSNorm:model.layers.0.post_attention_layernorm",
      "DeepseekV3MLP:model.layers.0.mlp",
      "Linear:model.layers.0.mlp.gate_proj",
      "SiLU:model.layers.0.mlp.act_fn",
      "Linear:model.layers.0.mlp.up_proj",
      "Linear:model.layers.0.mlp.down_proj",
      "DeepseekV3DecoderLayer:model.layers.1",
      "DeepseekV3RMSNorm:model.layers.1.input_layernorm",
      "DeepseekV3Attention:model.layers.1.self_attn",
      "Linear:model.layers.1.self_attn.q_a_proj",
      "DeepseekV3RMSNorm:model.layers.1.self_attn.q_a_layernorm",
      "Linear:model.layers.1.self_attn.q_b_proj",
      "Linear:model.layers.1.self_attn.kv_a_proj_with_mqa",
      "DeepseekV3RMSNorm:model.layers.1.self_attn.kv_a_layernorm",
      "Linear:model.layers.1.self_attn.kv_b_proj",
      "Linear:model.layers.1.self_attn.o_proj",
      "DeepseekV3RMSNorm:model.layers.1.post_attention_layernorm",
      "DeepseekV3MoE:model.layers.1.mlp",
      "DeepseekV3TopkRouter:model.layers.1.mlp.gate",
      "ModuleList:model.layers.1.mlp.experts",
      "DeepseekV3MLP:model.layers.1.mlp.experts.0",
      "Linear:model.layers.1.mlp.experts.0.gate_proj",
      "SiLU:model.layers.1.mlp.experts.0.act_fn",
      "Linear:model.layers.1.mlp.experts.0.up_proj",
      "Linear:model.layers.1.mlp.experts.0.down_proj",
      "DeepseekV3MLP:model.layers.1.mlp.experts.1",
      "Linear:model.layers.1.mlp.experts.1.gate_proj",
      "SiLU:model.layers.1.mlp.experts.1.act_fn",
      "Linear:model.layers.1.mlp.experts.1.up_proj",
      "Linear:model.layers.1.mlp.experts.1.down_proj",
      "DeepseekV3MLP:model.layers.1.mlp.shared_experts",
      "Linear:model.layers.1.mlp.shared_experts.gate_proj",
      "SiLU:model.layers.1.mlp.shared_experts.act_fn",
      "Linear:model.layers.1.mlp.shared_experts.up_proj",
      "Linear:model.layers.1.mlp.shared_experts.down_proj",
      "DeepseekV3RMSNorm:model.norm",
      "Linear:lm_head",
  };
  std::vector<std::string> got;
  for (const auto& n : m.modules) got.push_back(n.type + ":" + n.name);
  EXPECT_EQ(got, want);
  // Declaration order inside the attention (named_parameters()).
  EXPECT_EQ(m.params[1].name, "model.layers.0.self_attn.q_a_proj.weight");
  EXPECT_EQ(m.params[2].name, "model.layers.0.self_attn.q_a_layernorm.weight");
  EXPECT_EQ(m.params[3].name, "model.layers.0.self_attn.q_b_proj.weight");
  EXPECT_EQ(m.params[4].name, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight");
  EXPECT_EQ(m.params[7].name, "model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(m.params[8].name, "model.layers.0.mlp.gate_proj.weight");
  // attention_bias adds q_a_proj, kv_a_proj_with_mqa and o_proj biases: 4 + 6 + 8 per layer.
  std::string biased = kTinyV3;
  biased.insert(1, R"("attention_bias": true, )");
  EXPECT_EQ(load_ok(biased).num_parameters(), 1256u + 2 * 18);
}

TEST(HfDeepseek, MlaActivationsAreWorkedOutByHand) {
  const ModelDesc m = load_ok(kTinyV3);
  TrainingSettings t;
  t.micro_batch = 1;
  t.seq_len = 1;
  t.flash_attention = false;
  // e = 2, s = b = 1. Attention: LN1 and projection input 2e*8 = 32; Q and K 2*(8 + 8) = 32;
  // V and the o_proj input 2*(4 + 4) = 16; latents 2*(2*4 + 6 + 4) = 36; softmax 2*2 = 4 -> 120.
  // Block: + LN2 and MLP input 32 + gated MLP 4e * (top-1 expert 4 + shared 4) = 64 -> 216.
  // Two blocks 432; outside: final norm and head inputs 32 + logits (2 + 4) * 10 = 60 -> 524.
  EXPECT_EQ(activation_bytes(m, t, DType::BFloat16), 524u);
}

TEST(HfDeepseek, LoraTargetsTheLatentProjections) {
  const ModelDesc v3 = load_ok(kTinyV3);
  LoraSpec s;
  s.rank = 2;
  s.targets = {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"};
  auto r = apply_lora(v3, s, DType::BFloat16, "test");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  // Per layer r * (in + out): q_a 2*(8+4) + q_b 2*(4+8) + kv_a 2*(8+6) + kv_b 2*(4+8) + o
  // 2*(4+8) = 124; two layers 248.
  EXPECT_EQ(r->num_parameters() - v3.num_parameters(), 248u);
  // DeepSeek-V2-Lite has no q_a_proj: q_proj and kv_a_proj_with_mqa resolve there.
  const ModelDesc lite = zoo("deepseek-v2-lite");
  s.targets = {"q_proj", "kv_a_proj_with_mqa"};
  s.rank = 8;
  auto l = apply_lora(lite, s, DType::BFloat16, "test");
  ASSERT_TRUE(l.ok()) << l.diagnostics().to_string();
  // 27 layers * 8 * ((2048 + 3072) + (2048 + 576)) = 1,672,704.
  EXPECT_EQ(l->num_parameters() - lite.num_parameters(), 1672704u);
  s.targets = {"q_a_proj"};
  EXPECT_FALSE(apply_lora(lite, s, DType::BFloat16, "test").ok());
}

TEST(HfDeepseek, PlansAtEveryStage) { expect_plans_at_every_stage(load_ok(kTinyV3), 64); }

TEST(HfDeepseek, ConfigErrorsNameTheKey) {
  const std::string v2 = R"({"model_type": "deepseek_v2", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 16, "moe_intermediate_size": 4, "num_hidden_layers": 2,
      "num_attention_heads": 2, "q_lora_rank": null, "kv_lora_rank": 4, "qk_nope_head_dim": 2,
      "qk_rope_head_dim": 2, "v_head_dim": 2, "n_routed_experts": 2, )";
  EXPECT_EQ(load_error(v2 + R"("n_shared_experts": 1})"),
            "c.json: /: missing required key \"num_experts_per_tok\"\n");
  EXPECT_EQ(load_ok(v2 + R"("n_shared_experts": 1, "num_experts_per_tok": 1})").num_parameters(),
            // q_proj 8*8 instead of q_a/q_a_layernorm/q_b (32 + 4 + 32): 1256 - 2 * 4, V2 layer 0
            // is MoE too (first_k_dense_replace 0): 2 * (304 - 384).
            1256u - 2u * 4u - 80u);
  EXPECT_EQ(load_error(v2 + R"("num_experts_per_tok": 1, "n_shared_experts": null})"),
            "c.json: /n_shared_experts: n_shared_experts null is not supported "
            "(DeepseekV2MoE/DeepseekV3MoE always run shared_experts); expected an integer >= 1\n");
  EXPECT_NE(load_error(v2 + R"("num_experts_per_tok": 3, "n_shared_experts": 1})")
                .find("/num_experts_per_tok: num_experts_per_tok (3) exceeds the number of "
                      "routed experts (2)"),
            std::string::npos);
  EXPECT_NE(load_error(v2 + R"("num_experts_per_tok": 1, "moe_layer_freq": 2})")
                .find("c.json: /moe_layer_freq: moe_layer_freq 2 is not supported"),
            std::string::npos);
  EXPECT_NE(load_error(v2 + R"("num_experts_per_tok": 1, "num_key_value_heads": 1})")
                .find("c.json: /num_key_value_heads: num_key_value_heads (1) must equal"),
            std::string::npos);
  EXPECT_NE(load_error(v2 + R"("num_experts_per_tok": 1, "q_lora_rank": "big"})")
                .find("c.json: /q_lora_rank:"),
            std::string::npos);
  EXPECT_NE(load_error(v2 + R"("num_experts_per_tok": 1, "kv_lora_rank": 0})")
                .find("c.json: /kv_lora_rank:"),
            std::string::npos);
}

}  // namespace
}  // namespace zerosim
