// ModelDesc queries and the derived gradient-ready order (model_desc.h).
#include "zerosim/model_desc.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using Ids = std::vector<std::uint32_t>;

ModelDesc hand_built() {
  ModelDesc m;
  m.params = {{"x.a.weight", {3, 4}, 12, true}, {"x.a.bias", {4}, 4, true},
              {"y.weight", {20}, 20, true},     {"frozen", {7}, 7, false},
              {"unused.weight", {2}, 2, true},  {"scalar", {}, 1, true}};
  // Layer 1 uses a.weight then a.bias; layer 2 uses y then reuses a.weight (a tied weight).
  m.layers = {{"l1", LayerKind::Embedding, {0, 1, 3}, 0, 0}, {"l2", LayerKind::Head, {2, 0}, 0, 0}};
  return m;
}

TEST(ModelDesc, CountsAndLargestModule) {
  ModelDesc m = hand_built();
  EXPECT_EQ(m.num_parameters(), 46u);
  EXPECT_EQ(m.num_trainable(), 39u);
  EXPECT_EQ(m.largest_param(), 20u);
  // Modules by name prefix: "x.a" = 12 + 4, "y" = 20, "frozen" and "scalar" sit in the root (8).
  EXPECT_EQ(m.largest_module_params(), 20u);
  m.params[1].numel = 9;  // x.a now 21 > y
  EXPECT_EQ(m.largest_module_params(), 21u);
}

TEST(ModelDesc, GradOrderReversesFirstUseTiedWeightLastFrozenLeftOut) {
  // First forward uses: a.weight(0), a.bias(1), frozen(3), y(2); a.weight's reuse in l2 does not
  // move it. Reversed: y, [frozen dropped], a.bias, a.weight; then unused params in reverse
  // declaration order: scalar(5), unused(4).
  EXPECT_EQ(derive_grad_order(hand_built()), (Ids{2, 1, 0, 5, 4}));
}

TEST(ModelDesc, GradOrderWithoutLayersIsReverseDeclaration) {
  ModelDesc m = hand_built();
  m.layers.clear();
  EXPECT_EQ(derive_grad_order(m), (Ids{5, 4, 2, 1, 0}));
}

TEST(ModelDesc, Gpt2GradOrderLastBlockFirstTiedEmbeddingLast) {
  auto r = load_hf_config_file(std::string(ZEROSIM_TEST_DATA_DIR) + "/hf/gpt2.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const ModelDesc& m = r.value();
  ASSERT_EQ(m.grad_order.size(), m.params.size());
  auto name = [&](std::size_t i) { return m.params[m.grad_order[i]].name; };
  // A LayerNorm readies its weight first, a Conv1D its bias (recorded with torch 1.13:
  // tests/data/recordings/grad_order/gpt2.json, grad_order_fixture_test.cc).
  EXPECT_EQ(name(0), "transformer.ln_f.weight");
  EXPECT_EQ(name(1), "transformer.ln_f.bias");
  EXPECT_EQ(name(2), "transformer.h.11.mlp.c_proj.bias");
  EXPECT_EQ(name(3), "transformer.h.11.mlp.c_proj.weight");
  EXPECT_EQ(name(13), "transformer.h.11.ln_1.bias");
  EXPECT_EQ(name(14), "transformer.h.10.mlp.c_proj.bias");
  EXPECT_EQ(name(146), "transformer.wpe.weight");
  // The head reuses wte first in backward, but its gradient is complete only after the embedding.
  EXPECT_EQ(name(147), "transformer.wte.weight");
  EXPECT_FALSE(m.grad_order_recorded);
}

TEST(ModelDesc, UntiedLlamaGradOrderStartsAtTheHead) {
  auto r = load_hf_config_file(std::string(ZEROSIM_TEST_DATA_DIR) + "/hf/llama-2-7b-hf.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const ModelDesc& m = r.value();
  auto name = [&](std::size_t i) { return m.params[m.grad_order[i]].name; };
  EXPECT_EQ(name(0), "lm_head.weight");
  EXPECT_EQ(name(1), "model.norm.weight");
  EXPECT_EQ(name(2), "model.layers.31.mlp.down_proj.weight");
  EXPECT_EQ(name(9), "model.layers.31.self_attn.q_proj.weight");
  EXPECT_EQ(name(10), "model.layers.31.input_layernorm.weight");
  EXPECT_EQ(name(m.grad_order.size() - 1), "model.embed_tokens.weight");
}

}  // namespace
}  // namespace zerosim
