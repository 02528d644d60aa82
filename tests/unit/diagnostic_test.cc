// Diagnostic formatting, Result and the JSON reader's messages.
#include "zerosim/diagnostic.h"

#include <gtest/gtest.h>

#include "base/json_reader.h"

namespace zerosim {
namespace {

TEST(Diagnostic, OneLineWithSourcePointerAndHint) {
  Diagnostic d{Severity::Error, "ds.json", "/zero_optimization/stage",
               "expected an integer 0..3, got \"three\"", ""};
  EXPECT_EQ(d.to_string(),
            "ds.json: /zero_optimization/stage: expected an integer 0..3, got \"three\"");
  d.hint = "did you mean \"stage\"?";
  EXPECT_EQ(
      d.to_string(),
      "ds.json: /zero_optimization/stage: expected an integer 0..3, got \"three\" (did you mean "
      "\"stage\"?)");
}

TEST(Diagnostic, ClosestMatch) {
  EXPECT_EQ(closest_match("stgae", {"stage", "overlap_comm"}), "stage");
  EXPECT_EQ(closest_match("reduce_bucket_sze", {"reduce_bucket_size", "reduce_scatter"}),
            "reduce_bucket_size");
  EXPECT_EQ(closest_match("zzzzzzzz", {"stage", "overlap_comm"}), "");
}

TEST(Result, CarriesErrorsOrValue) {
  Result<int> ok(3);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), 3);
  auto bad = fail<int>("x.json", "/a", "expected an integer, got \"b\"");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.diagnostics().to_string(), "x.json: /a: expected an integer, got \"b\"\n");
}

TEST(JsonReader, SyntaxErrorHasLineAndColumn) {
  Diagnostics d;
  auto j = json::parse("{\n  \"a\": 1,\n  \"b\": ]\n}", "bad.json", d);
  EXPECT_FALSE(j.has_value());
  ASSERT_EQ(d.items().size(), 1u);
  EXPECT_NE(d.items()[0].message.find("line 3"), std::string::npos) << d.to_string();
}

TEST(JsonReader, TypedGettersReportPointerExpectedAndFound) {
  Diagnostics d;
  auto j = json::parse(R"({"zero_optimization": {"stage": "three", "reduce_bucket_size": 5e8,
                           "overlap_comm": 1, "stgae": 2}})",
                       "ds.json", d);
  ASSERT_TRUE(j.has_value());
  json::JsonReader root(*j, "ds.json", "", d);
  auto zero = root.child("zero_optimization");
  ASSERT_TRUE(zero.has_value());
  EXPECT_FALSE(zero->get_int("stage", 0, 3).has_value());
  EXPECT_EQ(zero->get_uint("reduce_bucket_size", 1, UINT64_MAX).value(), 500000000u);
  EXPECT_FALSE(zero->get_bool("overlap_comm").has_value());
  zero->reject_unknown({"stage", "reduce_bucket_size", "overlap_comm"});
  auto text = d.to_string();
  EXPECT_NE(text.find("ds.json: /zero_optimization/stage: expected an integer 0..3, got \"three\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ds.json: /zero_optimization/overlap_comm: expected true or false, got 1"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "ds.json: /zero_optimization/stgae: unknown key \"stgae\" (did you mean \"stage\"?)"),
      std::string::npos)
      << text;
}

TEST(JsonReader, RejectsFractionalIntegers) {
  Diagnostics d;
  auto j = json::parse(R"({"n": 2.5})", "f.json", d);
  json::JsonReader r(*j, "f.json", "", d);
  EXPECT_FALSE(r.get_uint("n", 1, 10).has_value());
  EXPECT_EQ(d.to_string(), "f.json: /n: expected an integer 1..10, got 2.5\n");
}

}  // namespace
}  // namespace zerosim

namespace zerosim {
namespace {
TEST(JsonReader, DuplicateKeysAreRefusedWithTheirPointer) {
  Diagnostics d;
  auto j = json::parse(R"({"zero_optimization": {"stage": 2, "stage": 3}})", "ds.json", d);
  EXPECT_FALSE(j.has_value());
  EXPECT_EQ(
      d.to_string(),
      "ds.json: /zero_optimization/stage: duplicate key: a JSON object names it twice (keep one; "
      "DeepSpeed refuses duplicate keys too)\n");
  Diagnostics d2;
  auto k = json::parse(R"({"params": [["a", [2]], {"x": 1, "x": 2}]})", "p.json", d2);
  EXPECT_FALSE(k.has_value());
  EXPECT_NE(d2.to_string().find("p.json: /params/1/x: duplicate key"), std::string::npos)
      << d2.to_string();
  Diagnostics d3;
  EXPECT_TRUE(
      json::parse(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}]})", "ok.json", d3));
  EXPECT_TRUE(d3.empty());
}
}  // namespace
}  // namespace zerosim
