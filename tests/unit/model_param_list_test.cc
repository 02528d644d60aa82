// Param-list files (dumped from model.named_parameters()): values, the default gradient order,
// and one exact message per validation rule.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using Ids = std::vector<std::uint32_t>;

std::string error_of(const std::string& text) {
  auto r = load_param_list_text(text, "p.json");
  EXPECT_FALSE(r.ok());
  return r.diagnostics().to_string();
}

TEST(ParamList, ReadsShapesFrozenFlagAndRecordedOrder) {
  auto r = load_param_list_text(R"({"params": [["a", [2, 3]], ["b", []], ["f", [4], false],
      ["z", [0, 8]]], "grad_order": ["b", "z", "a"]})",
                                "p.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const ModelDesc& m = r.value();
  ASSERT_EQ(m.params.size(), 4u);
  EXPECT_EQ(m.params[0].numel, 6u);
  EXPECT_EQ(m.params[1].numel, 1u);  // a scalar
  EXPECT_FALSE(m.params[2].trainable);
  EXPECT_EQ(m.params[3].numel, 0u);  // zero-size dims are allowed
  EXPECT_EQ(m.num_parameters(), 11u);
  EXPECT_EQ(m.num_trainable(), 7u);
  EXPECT_EQ(m.grad_order, (Ids{1, 3, 0}));
  EXPECT_TRUE(m.grad_order_recorded);
  EXPECT_TRUE(m.layers.empty());
  EXPECT_FALSE(m.arch.has_value());
  EXPECT_EQ(m.name, "p.json");
}

TEST(ParamList, WithoutGradOrderTrainableParamsInReverseDeclarationOrder) {
  auto r = load_param_list_text(R"({"format": "zerosim-param-list", "version": 1,
      "params": [["a", [2]], ["f", [3], false], ["b", [4]], ["c", [5], true]]})",
                                "p.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r->grad_order, (Ids{3, 2, 0}));
  EXPECT_FALSE(r->grad_order_recorded);
}

TEST(ParamList, ReadsAFile) {
  auto r = load_param_list_file(std::string(ZEROSIM_TEST_DATA_DIR) + "/param_lists/tiny_mlp.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r->params.size(), 5u);
  EXPECT_EQ(r->num_parameters(), 8u * 16 + 16 + 16 * 4 + 4 + 8 * 16);
  EXPECT_EQ(r->num_trainable(), 8u * 16 + 16 + 16 * 4 + 4);
  EXPECT_EQ(r->grad_order, (Ids{3, 2, 1, 0}));
}

// Three params for the grad_order rules: a, frozen f, c.
const std::string kThree = R"({"params": [["a", [1]], ["f", [1], false], ["c", [1]]], )";

TEST(ParamListErrors, MissingParams) {
  EXPECT_EQ(error_of(R"({"grad_order": []})"), "p.json: /: missing required key \"params\"\n");
}

TEST(ParamListErrors, ParamsNotAnArray) {
  EXPECT_EQ(error_of(R"({"params": {}})"), "p.json: /params: expected an array, got an object\n");
}

TEST(ParamListErrors, EmptyParams) {
  EXPECT_EQ(
      error_of(R"({"params": []})"),
      "p.json: /params: expected at least one [name, [shape...]] entry, got an empty array\n");
}

TEST(ParamListErrors, MalformedEntry) {
  EXPECT_EQ(
      error_of(R"({"params": [["a", [1]], "w"]})"),
      "p.json: /params/1: expected [name, [shape...]] or [name, [shape...], false], got \"w\"\n");
}

TEST(ParamListErrors, UnknownTopLevelKey) {
  EXPECT_EQ(error_of(R"({"params": [["a", [1]]], "grad_ordr": ["a"]})"),
            "p.json: /grad_ordr: unknown key \"grad_ordr\" (did you mean \"grad_order\"?)\n");
}

TEST(ParamListErrors, NameNotAString) {
  EXPECT_EQ(error_of(R"({"params": [[5, [1]]]})"),
            "p.json: /params/0/0: expected a string, got 5\n");
}

TEST(ParamListErrors, EmptyName) {
  EXPECT_EQ(error_of(R"({"params": [["", [1]]]})"),
            "p.json: /params/0/0: expected a non-empty parameter name, got \"\"\n");
}

// The modules inferred from a name hold every ancestor's prefix: one name of 30000 levels took
// 3.7 GB. Real names are < 200 bytes and < 16 levels; the bounds are 4096 bytes and 64 levels.
TEST(ParamListErrors, NameBeyond4096BytesOr64Levels) {
  const auto list = [](const std::string& name) {
    return R"({"params": [[")" + name + R"(", [4]]]})";
  };
  std::string deep;
  for (int i = 0; i < 3000; ++i) deep += "a.";
  EXPECT_EQ(error_of(list(deep + "w")),
            "p.json: /params/0/0: expected a parameter name of at most 4096 bytes, got 6001 "
            "bytes\n");
  std::string levels;
  for (int i = 0; i < 64; ++i) levels += "a.";
  EXPECT_EQ(error_of(list(levels + "w")),
            "p.json: /params/0/0: expected a parameter name of at most 64 dot-separated levels, "
            "got 65\n");
  EXPECT_EQ(error_of(list(std::string(4097, 'x'))),
            "p.json: /params/0/0: expected a parameter name of at most 4096 bytes, got 4097 "
            "bytes\n");
  auto at_bounds = load_param_list_text(list(levels.substr(2) + std::string(3968, 'w')), "p.json");
  ASSERT_TRUE(at_bounds.ok()) << at_bounds.diagnostics().to_string();
  EXPECT_EQ(at_bounds->params[0].name.size(), 4094u);
}

TEST(ParamListErrors, ShapeNotAnArray) {
  EXPECT_EQ(error_of(R"({"params": [["a", 3]]})"),
            "p.json: /params/0/1: expected an array, got 3\n");
}

TEST(ParamListErrors, NegativeDimension) {
  EXPECT_EQ(error_of(R"({"params": [["a", [2, -1]]]})"),
            "p.json: /params/0/1/1: expected an integer 0..1000000000000000, got -1\n");
}

TEST(ParamListErrors, FractionalDimension) {
  EXPECT_EQ(error_of(R"({"params": [["a", [2.5]]]})"),
            "p.json: /params/0/1/0: expected an integer 0..1000000000000000, got 2.5\n");
}

TEST(ParamListErrors, RequiresGradNotABoolean) {
  EXPECT_EQ(error_of(R"({"params": [["a", [1], "no"]]})"),
            "p.json: /params/0/2: expected true or false (requires_grad), got \"no\"\n");
}

TEST(ParamListErrors, DuplicateName) {
  EXPECT_EQ(error_of(R"({"params": [["a", [1]], ["b", [2]], ["a", [3]]]})"),
            "p.json: /params/2/0: duplicate parameter name \"a\" (first at /params/0)\n");
}

TEST(ParamListErrors, ShapeAbove1e15) {
  EXPECT_EQ(error_of(R"({"params": [["a", [1000000000, 1000000000]]]})"),
            "p.json: /params/0/1: shape has more than 1e15 elements\n");
}

TEST(ParamListErrors, ShapeProductOverflows64Bits) {
  EXPECT_EQ(error_of(R"({"params": [["a", [4294967296, 4294967296, 4294967296]]]})"),
            "p.json: /params/0/1: shape has more than 1e15 elements\n");
}

TEST(ParamListErrors, TotalAbove1e15) {
  EXPECT_EQ(error_of(R"({"params": [["a", [600000000000000]], ["b", [600000000000000]]]})"),
            "p.json: /params: the parameters total more than 1e15 elements\n");
}

TEST(ParamListErrors, GradOrderNotAnArray) {
  EXPECT_EQ(error_of(kThree + R"("grad_order": "c"})"),
            "p.json: /grad_order: expected an array, got \"c\"\n");
}

TEST(ParamListErrors, GradOrderEntryNotAString) {
  EXPECT_EQ(error_of(kThree + R"("grad_order": ["c", 1, "a"]})"),
            "p.json: /grad_order/1: expected a string, got 1\n");
}

TEST(ParamListErrors, GradOrderUnknownName) {
  EXPECT_EQ(error_of(kThree + R"("grad_order": ["c", "a", "zzz"]})"),
            "p.json: /grad_order/2: unknown parameter \"zzz\"\n");
}

TEST(ParamListErrors, GradOrderUnknownNameWithHint) {
  EXPECT_EQ(error_of(kThree + R"("grad_order": ["cc", "a", "c"]})"),
            "p.json: /grad_order/0: unknown parameter \"cc\" (did you mean \"c\"?)\n");
}

TEST(ParamListErrors, GradOrderDuplicate) {
  EXPECT_EQ(error_of(kThree + R"("grad_order": ["c", "a", "a"]})"),
            "p.json: /grad_order/2: duplicate parameter \"a\" (already at /grad_order/1)\n");
}

TEST(ParamListErrors, GradOrderMissingTrainable) {
  EXPECT_EQ(error_of(kThree + R"("grad_order": ["a"]})"),
            "p.json: /grad_order: missing 1 trainable parameter: \"c\"\n");
}

TEST(ParamListErrors, GradOrderNamesFrozenParam) {
  EXPECT_EQ(error_of(kThree + R"("grad_order": ["c", "f", "a"]})"),
            "p.json: /grad_order/1: parameter \"f\" is frozen (requires_grad false) and gets no "
            "gradient\n");
}

}  // namespace
}  // namespace zerosim
