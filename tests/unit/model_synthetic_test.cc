// synthetic_model (`--params N`): exactly N parameters, the GPT-3 Table 2.1 shape rule, and the
// one-line rejection of counts that are not whole numbers in 1..1e15.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

ModelDesc make(double p) {
  auto r = synthetic_model(p);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

Elements remainder_of(const ModelDesc& m) {
  return m.params.back().name == "transformer.remainder" ? m.params.back().numel : 0;
}

TEST(SyntheticModel, ThirteenBillionUsesThe13BRowWithItsWidth) {
  ModelDesc m = make(13e9);
  EXPECT_EQ(m.num_parameters(), 13000000000u);
  EXPECT_EQ(m.name, "synthetic-13e9");
  ASSERT_TRUE(m.arch.has_value());
  EXPECT_EQ(m.arch->layers, 40u);
  EXPECT_EQ(m.arch->hidden, 5120u);
  EXPECT_EQ(m.arch->heads, 40u);
  EXPECT_EQ(m.arch->vocab, 50257u);
  EXPECT_EQ(m.arch->max_seq, 2048u);
  // 40 blocks of 12h^2 + 13h plus (50257 + 2048 + 2)h = 12853386240; the rest is the remainder.
  EXPECT_EQ(remainder_of(m), 146613760u);
  // The remainder belongs to the embedding layer, so its gradient comes last with the embeddings.
  EXPECT_EQ(m.params[m.grad_order.back()].name, "transformer.wte.weight");
  EXPECT_EQ(m.params[m.grad_order[m.grad_order.size() - 2]].name, "transformer.wpe.weight");
  EXPECT_EQ(m.params[m.grad_order[m.grad_order.size() - 3]].name, "transformer.remainder");
}

TEST(SyntheticModel, OneHundredTwentyFiveMillionDropsALayerOfTheSmallRow) {
  ModelDesc m = make(125e6);
  EXPECT_EQ(m.num_parameters(), 125000000u);
  EXPECT_EQ(m.arch->layers, 11u);
  EXPECT_EQ(m.arch->hidden, 768u);
  EXPECT_EQ(remainder_of(m), 6861632u);
}

TEST(SyntheticModel, OneMillionNarrowsTheSmallRow) {
  // Too small for one 768-wide block: keep 12 layers and 12 heads, widest h (multiple of 12) = 12.
  ModelDesc m = make(1e6);
  EXPECT_EQ(m.num_parameters(), 1000000u);
  EXPECT_EQ(m.arch->layers, 12u);
  EXPECT_EQ(m.arch->hidden, 12u);
  EXPECT_EQ(remainder_of(m), 349708u);
}

TEST(SyntheticModel, OneQuadrillionWidensThe175BRow) {
  ModelDesc m = make(1e15);
  EXPECT_EQ(m.num_parameters(), 1000000000000000u);
  EXPECT_EQ(m.arch->layers, 96u);
  EXPECT_EQ(m.arch->heads, 96u);
  EXPECT_EQ(m.arch->hidden, 931584u);
  EXPECT_EQ(remainder_of(m), 188350106368u);
  EXPECT_EQ(m.name, "synthetic-1e15");
}

TEST(SyntheticModel, SmallestShapesAndTheSingleTensorFallback) {
  ModelDesc exact = make(650292);  // N(12 layers, h = 12): no remainder
  EXPECT_EQ(exact.num_parameters(), 650292u);
  EXPECT_EQ(remainder_of(exact), 0u);
  ModelDesc one = make(1);
  ASSERT_EQ(one.params.size(), 1u);
  EXPECT_EQ(one.params[0].name, "synthetic.weight");
  EXPECT_EQ(one.num_parameters(), 1u);
  EXPECT_FALSE(one.arch.has_value());
  EXPECT_EQ(one.grad_order, (std::vector<std::uint32_t>{0}));
}

TEST(SyntheticModel, RejectsCountsThatAreNotWholeNumbersInRange) {
  const std::string prefix = "--params: expected a whole number of parameters from 1 to 1e15, got ";
  for (auto [value, text] : {std::pair<double, const char*>{0, "0"},
                             {-1, "-1"},
                             {1.5, "1.5"},
                             {1e16, "1e+16"},
                             {NAN, "nan"},
                             {INFINITY, "inf"}}) {
    auto r = synthetic_model(value, "--params");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.diagnostics().to_string(), prefix + text + "\n");
  }
}

}  // namespace
}  // namespace zerosim
