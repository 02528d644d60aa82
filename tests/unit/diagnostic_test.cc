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

// Text echoed from the input never splits the line nor reaches the terminal raw (issue #12).
TEST(Diagnostic, EchoedTextIsEscapedAndCut) {
  EXPECT_EQ(quote(std::string("a\nb\x1b[31m\"\\", 10) + std::string(1, '\0')),
            "\"a\\nb\\u001b[31m\\\"\\\\\\u0000\"");
  EXPECT_EQ(quote(std::string(130, 'k')), "\"" + std::string(120, 'k') + "\u2026(130 bytes)\"");
  Diagnostic d{Severity::Error, "f\n.json", "/a\nb", "unknown key \x1b", "hint\r"};
  EXPECT_EQ(d.to_string(), "f\\n.json: /a\\nb: unknown key \\u001b (hint\\r)");
  // A cut never splits a UTF-8 character: "é" is 2 bytes, 119 + 2 > 120.
  EXPECT_EQ(quote(std::string(119, 'x') + "\xc3\xa9" + "yy"),
            "\"" + std::string(119, 'x') + "\u2026(123 bytes)\"");
}

TEST(JsonReader, RefusesNulDeepNestingAndHugeNumbers) {
  auto first = [](const std::string& text) {
    Diagnostics d;
    EXPECT_FALSE(json::parse(text, "x.json", d).has_value()) << text;
    return d.items().empty() ? std::string() : d.items()[0].to_string();
  };
  EXPECT_EQ(first(std::string("{}\n \0 garbage", 13)),
            "x.json: invalid JSON at line 2, column 2: a NUL byte (JSON text cannot contain one)");
  EXPECT_EQ(first(std::string(257, '[') + std::string(257, ']')),
            "x.json: invalid JSON at line 1, column 257: expected at most 256 levels of nested "
            "arrays and objects, got more");
  EXPECT_EQ(first("{\"a\": -1e309}"),
            "x.json: invalid JSON at line 1, column 12: expected a number within the range of a "
            "double (|x| < 1.8e308), got -1e309");
  Diagnostics ok;
  EXPECT_TRUE(json::parse(std::string(256, '[') + "\"[[{\"" + std::string(256, ']'), "x", ok));
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
