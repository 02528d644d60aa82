// T5 (encoder-decoder, T5ForConditionalGeneration): exact counts of t5-small/base and flan-t5
// (zoo and --hf-config text), the shared embedding counted once, the relative position bias in
// the first block of each stack only, no biases, the module tree of a tiny replica, FLOPs with
// cross-attention, activations (target length = source length = the sequence length), LoRA's
// default q,v targets against peft's printout, plans at every stage, and the config errors.
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
using hftest::Shape;
using hftest::shape_of;
using hftest::zoo;

// d_model 8, 2 heads of d_kv 4, d_ff 16, one block per stack, vocab 10, tied, ReLU, dropout 0.1.
// shared 80; encoder block: q, k, v, o 4*64 = 256, relative bias 32*2 = 64, 2 norms 16, wi and wo
// 2*128 = 256 -> 592, final norm 8; decoder block: + cross-attention 256 and its norm 8 -> 856,
// final norm 8. Total 80 + 600 + 864 = 1544.
const char* kTiny = R"({"model_type": "t5", "vocab_size": 10, "d_model": 8, "d_kv": 4,
    "d_ff": 16, "num_layers": 1, "num_heads": 2})";

TEST(HfT5, SmallAndBaseAreExactWithTheSharedEmbeddingOnce) {
  const ModelDesc small = zoo("google-t5/t5-small");
  // shared 32128*512 = 16,449,536; encoder block 4*512*512 + 2*512*2048 + 2*512 = 3,146,752 (x6)
  // + bias 32*8 + final 512; decoder block + cross-attention 1,048,576 + 512 = 4,195,840 (x6)
  // + 256 + 512; tied head: 60,506,624 (T5ForConditionalGeneration.num_parameters()).
  EXPECT_EQ(small.num_parameters(), 60506624u);
  EXPECT_EQ(small.params[0].name, "shared.weight");
  EXPECT_EQ(index_of(small, "encoder.embed_tokens.weight"), -1);
  EXPECT_EQ(index_of(small, "lm_head.weight"), -1);  // tied to shared.weight
  EXPECT_EQ(shape_of(small, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
            (Shape{32, 8}));
  EXPECT_EQ(index_of(small, "encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight"),
            -1);
  EXPECT_NE(index_of(small, "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
            -1);
  EXPECT_EQ(shape_of(small, "decoder.block.5.layer.1.EncDecAttention.k.weight"), (Shape{512, 512}));
  EXPECT_EQ(shape_of(small, "decoder.block.5.layer.2.DenseReluDense.wi.weight"),
            (Shape{2048, 512}));
  EXPECT_EQ(shape_of(small, "encoder.block.0.layer.0.layer_norm.weight"), (Shape{512}));
  for (const auto& p : small.params)  // no Linear or norm carries a bias
    EXPECT_EQ(p.name.substr(p.name.size() - 7), ".weight") << p.name;
  // The relative bias table is declared after o (T5Attention.__init__), the stack's final norm
  // after its blocks, the whole encoder before the decoder.
  EXPECT_EQ(index_of(small, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
            index_of(small, "encoder.block.0.layer.0.SelfAttention.o.weight") + 1);
  EXPECT_EQ(index_of(small, "decoder.block.0.layer.0.SelfAttention.q.weight"),
            index_of(small, "encoder.final_layer_norm.weight") + 1);
  EXPECT_EQ(small.params.back().name, "decoder.final_layer_norm.weight");
  ASSERT_TRUE(small.arch.has_value());
  EXPECT_EQ(small.arch->layers, 12u);
  EXPECT_EQ(small.arch->cross_attention_layers, 6u);
  EXPECT_TRUE(small.arch->dropout);
  EXPECT_FALSE(small.arch->gated_mlp);
  EXPECT_EQ(small.grad_order.size(), small.params.size());
  // Layers: embeddings, 6 encoder blocks, encoder norm, 6 decoder blocks, decoder norm, head.
  ASSERT_EQ(small.layers.size(), 16u);
  EXPECT_EQ(small.layers[1].name, "encoder.block.0");
  EXPECT_DOUBLE_EQ(small.layers[1].fwd_flops_per_token, 2.0 * (4 * 262144.0 + 2 * 1048576.0));
  EXPECT_DOUBLE_EQ(small.layers[1].attn_flops_per_token_per_ctx, 4.0 * 8 * 64);
  EXPECT_EQ(small.layers[8].name, "decoder.block.0");
  EXPECT_DOUBLE_EQ(small.layers[8].fwd_flops_per_token, 2.0 * (8 * 262144.0 + 2 * 1048576.0));
  EXPECT_DOUBLE_EQ(small.layers[8].attn_flops_per_token_per_ctx, 2 * 4.0 * 8 * 64);
  // t5-base: the same shapes at d_model 768, d_ff 3072, 12 heads and blocks: 222,903,552.
  EXPECT_EQ(zoo("t5-base").num_parameters(), 222903552u);
}

TEST(HfT5, FlanT5IsGatedAndUntied) {
  const ModelDesc base = zoo("google/flan-t5-base");
  // shared and lm_head 2*32128*768; encoder block 4*768^2 + 3*768*2048 + 2*768 (x12) + 384 + 768;
  // decoder block + 768^2*4 + 768 (x12) + 384 + 768: 247,577,856.
  EXPECT_EQ(base.num_parameters(), 247577856u);
  EXPECT_EQ(shape_of(base, "lm_head.weight"), (Shape{32128, 768}));
  EXPECT_EQ(shape_of(base, "encoder.block.0.layer.1.DenseReluDense.wi_0.weight"),
            (Shape{2048, 768}));
  EXPECT_EQ(index_of(base, "encoder.block.0.layer.1.DenseReluDense.wi.weight"), -1);
  EXPECT_TRUE(base.arch->gated_mlp);
  // google/flan-t5-small's config.json (d_model 512, 6 heads of 64, d_ff 1024, 8 + 8 blocks):
  // 76,961,152.
  EXPECT_EQ(load_ok(R"({"model_type": "t5", "d_ff": 1024, "d_kv": 64, "d_model": 512,
      "feed_forward_proj": "gated-gelu", "num_decoder_layers": 8, "num_heads": 6,
      "num_layers": 8, "tie_word_embeddings": false, "vocab_size": 32128})")
                .num_parameters(),
            76961152u);
}

TEST(HfT5, LoraQueryValueMatchesPeftOnFlanT5Xxl) {
  // google/flan-t5-xxl's config.json; peft's print_trainable_parameters() for r=16 on q and v
  // (P. Schmid, "Efficient Large Language Model training with LoRA and Hugging Face", 2023):
  // "trainable params: 18874368 || all params: 11154206720".
  const ModelDesc xxl = load_ok(R"({"model_type": "t5", "d_ff": 10240, "d_kv": 64,
      "d_model": 4096, "feed_forward_proj": "gated-gelu", "num_decoder_layers": 24,
      "num_heads": 64, "num_layers": 24, "tie_word_embeddings": false, "vocab_size": 32128})");
  EXPECT_EQ(xxl.num_parameters(), 11135332352u);
  LoraSpec s;
  s.rank = 16;  // no targets: peft's default for t5 is q, v
  auto r = apply_lora(xxl, s, DType::BFloat16, "test");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r->num_parameters(), 11154206720u);
  EXPECT_EQ(r->num_parameters() - xxl.num_parameters(), 18874368u);
}

TEST(HfT5, TinyReplicaHasTransformersNamesInForwardOrder) {
  const ModelDesc m = load_ok(kTiny);
  EXPECT_EQ(m.num_parameters(), 1544u);
  const std::string a = "encoder.block.0.layer.0", f = "encoder.block.0.layer.1";
  const std::string d = "decoder.block.0.layer.";
  const std::vector<std::string> want = {
      "T5ForConditionalGeneration:",
      "Embedding:shared",
      "T5Stack:encoder",
      "Dropout:encoder.dropout",
      "ModuleList:encoder.block",
      "T5Block:encoder.block.0",
      "ModuleList:encoder.block.0.layer",
      "T5LayerSelfAttention:" + a,
      "T5LayerNorm:" + a + ".layer_norm",
      "T5Attention:" + a + ".SelfAttention",
      "Linear:" + a + ".SelfAttention.q",
      "Linear:" + a + ".SelfAttention.k",
      "Linear:" + a + ".SelfAttention.v",
      "Embedding:" + a + ".SelfAttention.relative_attention_bias",
      "Linear:" + a + ".SelfAttention.o",
      "Dropout:" + a + ".dropout",
      "T5LayerFF:" + f,
      "T5LayerNorm:" + f + ".layer_norm",
      "T5DenseActDense:" + f + ".DenseReluDense",
      "Linear:" + f + ".DenseReluDense.wi",
      "ReLU:" + f + ".DenseReluDense.act",
      "Dropout:" + f + ".DenseReluDense.dropout",
      "Linear:" + f + ".DenseReluDense.wo",
      "Dropout:" + f + ".dropout",
      "T5LayerNorm:encoder.final_layer_norm",
      "T5Stack:decoder",
      "Dropout:decoder.dropout",
      "ModuleList:decoder.block",
      "T5Block:decoder.block.0",
      "ModuleList:decoder.block.0.layer",
      "T5LayerSelfAttention:" + d + "0",
      "T5LayerNorm:" + d + "0.layer_norm",
      "T5Attention:" + d + "0.SelfAttention",
      "Linear:" + d + "0.SelfAttention.q",
      "Linear:" + d + "0.SelfAttention.k",
      "Linear:" + d + "0.SelfAttention.v",
      "Embedding:" + d + "0.SelfAttention.relative_attention_bias",
      "Linear:" + d + "0.SelfAttention.o",
      "Dropout:" + d + "0.dropout",
      "T5LayerCrossAttention:" + d + "1",
      "T5LayerNorm:" + d + "1.layer_norm",
      "T5Attention:" + d + "1.EncDecAttention",
      "Linear:" + d + "1.EncDecAttention.q",
      "Linear:" + d + "1.EncDecAttention.k",
      "Linear:" + d + "1.EncDecAttention.v",
      "Linear:" + d + "1.EncDecAttention.o",
      "Dropout:" + d + "1.dropout",
      "T5LayerFF:" + d + "2",
      "T5LayerNorm:" + d + "2.layer_norm",
      "T5DenseActDense:" + d + "2.DenseReluDense",
      "Linear:" + d + "2.DenseReluDense.wi",
      "ReLU:" + d + "2.DenseReluDense.act",
      "Dropout:" + d + "2.DenseReluDense.dropout",
      "Linear:" + d + "2.DenseReluDense.wo",
      "Dropout:" + d + "2.dropout",
      "T5LayerNorm:decoder.final_layer_norm",
      "Linear:lm_head",
  };
  std::vector<std::string> got;
  for (const auto& n : m.modules) got.push_back(n.type + ":" + n.name);
  EXPECT_EQ(got, want);
  // The tied head holds the shared embedding (a direct param of both modules).
  EXPECT_EQ(m.modules.back().param_ids, (std::vector<std::uint32_t>{0}));
  // gated-gelu: wi_0, its NewGELUActivation, wi_1.
  std::string gated = kTiny;
  gated.insert(1, R"("feed_forward_proj": "gated-gelu", )");
  const ModelDesc g = load_ok(gated);
  EXPECT_EQ(g.num_parameters(), 1544u + 2 * 128);
  bool gelu = false;
  for (const auto& n : g.modules)
    gelu = gelu || (n.name == f + ".DenseReluDense.act" && n.type == "NewGELUActivation");
  EXPECT_TRUE(gelu);
}

TEST(HfT5, ActivationsCountTheCrossAttentionAndTheInnerDropout) {
  const ModelDesc m = load_ok(kTiny);
  TrainingSettings t;
  t.micro_batch = 1;
  t.seq_len = 1;
  t.flash_attention = false;
  // e = 2, s = b = 1, h = q = kv = 8, a = 2, f = 16, dropout. Attention sub-block: LN and
  // projection inputs 32, Q and K 32, V and o input 32, residual mask 8, softmax 4, its mask and
  // dropout output 3*2 = 6 -> 114. Block: + LN2 and MLP inputs 32, MLP 2e*f = 64, mask 8, the
  // activation's dropout mask and output 3*16 = 48 -> 266. Two blocks 532 + the decoder's
  // cross-attention 114; outside: 32 + embedding mask 8 + logits 6*10 = 100 -> 746.
  EXPECT_EQ(activation_bytes(m, t, DType::BFloat16), 746u);
  t.activation_checkpointing = true;
  // Block inputs 2 * 16 + one decoder block's recompute 266 + 114, outside 100.
  EXPECT_EQ(activation_bytes(m, t, DType::BFloat16), 32u + 380u + 100u);
}

TEST(HfT5, PlansAtEveryStage) { expect_plans_at_every_stage(zoo("t5-small"), 512); }

TEST(HfT5, ConfigErrorsNameTheKey) {
  EXPECT_EQ(load_error(R"({"model_type": "t5", "feed_forward_proj": "fancy-gelu"})"),
            "c.json: /feed_forward_proj: feed_forward_proj \"fancy-gelu\" is not a valid "
            "activation; expected \"ACT\" or \"gated-ACT\" (T5Config raises)\n");
  EXPECT_EQ(load_error(R"({"model_type": "t5", "feed_forward_proj": "gated-swish"})"),
            "c.json: /feed_forward_proj: feed_forward_proj activation \"swish\" is not "
            "supported; expected relu, gelu, gelu_new, gelu_pytorch_tanh or silu\n");
  EXPECT_NE(load_error(R"({"model_type": "t5", "feed_forward_proj": 3})")
                .find("c.json: /feed_forward_proj:"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model_type": "t5", "num_decoder_layers": 0})")
                .find("c.json: /num_decoder_layers:"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model_type": "t5", "d_model": 8, "hidden_size": 16})").find("disagree"),
            std::string::npos);
}

}  // namespace
}  // namespace zerosim
