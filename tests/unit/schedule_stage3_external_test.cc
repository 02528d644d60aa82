// Stage 3 fetch sets from a param list's module section (version 2) and from modules inferred from
// param names (issue #14), and z3 leaf modules (issue #11): deepspeed_zero.md §7.2 (external
// params are gathered and released with the module whose forward reads them; a leaf fetches all
// its descendants' params and hooks none of its children), G17's coalesced all-gather shapes, the
// recorded tiny job (tests/recorder/tiny_job.py: a root that reads its embedding's and head's
// weights directly), Mixtral with and without leaf modules, and the loader's one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_testlib.h"
#include "schedule/stage3_internal.h"
#include "schedule_stage3_test_util.h"
#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using namespace s3test;  // NOLINT
using Names = std::vector<std::string>;

ModelDesc load(const std::string& text) {
  auto r = load_param_list_text(text, "p.json");
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

std::string load_error(const std::string& text) {
  auto r = load_param_list_text(text, "p.json");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.diagnostics().to_string();
}

// Fetch set (param names) of the walk module with this name.
Names fetch_set(const ModelDesc& m, const schedule::s3::Walk& w, const std::string& module) {
  Names out;
  for (const auto& mod : w.modules)
    if (mod.name == module)
      for (auto p : mod.params) out.push_back(m.params[p].name);
  return out;
}

// Modules in the order their forward FETCH events fire.
Names forward_fetches(const schedule::s3::Walk& w) {
  Names out;
  for (const auto& ev : w.events)
    if (ev.kind == schedule::s3::HookKind::Fetch && !ev.backward)
      out.push_back(w.modules[ev.index].name);
  return out;
}

std::vector<std::string> calls_of(const ModelDesc& m) {
  std::vector<std::string> calls;
  for (const auto& c : m.module_calls)
    calls.push_back((c.begin ? "+" : "-") + m.modules[c.module].name);
  return calls;
}

std::function<bool(const Op&)> gathers_of_step(std::uint32_t step) {
  return [step](const Op& o) {
    return o.collective == CollectiveKind::AllGather && o.step == step &&
           (o.phase == Phase::Forward || o.phase == Phase::Backward);
  };
}

DsConfig nothing_persistent() {
  DsConfig ds = stage3_config();
  ds.zero.param_persistence_threshold = 0;
  return ds;
}

// §7.2 / G17 with an external param: module `inner` holds [10, 7] and its forward reads
// `other.w` [2] directly; `other` is never called, so its hooks never fire.
const char* kExternal = R"({"version": 2,
  "params": [["inner.a", [10]], ["inner.b", [7]], ["other.w", [2]]],
  "modules": [{"name": "", "type": "Top", "params": []},
              {"name": "inner", "type": "Inner", "params": ["inner.a", "inner.b"]},
              {"name": "other", "type": "Linear", "params": ["other.w"]}],
  "forward": [{"module": ""},
              {"module": "inner", "params": ["inner.a", "other.w", "inner.b"]}]})";

TEST(ScheduleStage3External, ExternalParamIsGatheredWithTheReadingModule) {
  const ModelDesc m = load(kExternal);
  ASSERT_EQ(m.modules.size(), 3u);
  EXPECT_EQ(m.modules[1].external_ids, (std::vector<std::uint32_t>{2}));
  EXPECT_FALSE(m.modules[2].called);
  EXPECT_FALSE(m.modules_inferred);
  // Nothing persistent: the external param joins inner's coalesced all-gather, G17's AG(in 6,
  // out 24) for [10, 7, 2] at W = 4, in the recording iteration and once the trace is complete.
  const DsConfig ds = nothing_persistent();
  const std::vector<bool> none(m.params.size(), false);
  auto w = schedule::s3::build_walk(m, false, none);
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  EXPECT_EQ(fetch_set(m, w.value(), "inner"), (Names{"inner.a", "inner.b", "other.w"}));
  EXPECT_EQ(fetch_set(m, w.value(), "other"), (Names{"other.w"}));
  EXPECT_EQ(forward_fetches(w.value()), (Names{"(root) Top", "inner"}));
  EXPECT_NE(w->mapping.find("the 1 external params registered"), std::string::npos) << w->mapping;
  const Schedule s = build(m, ds, 4, 2);
  const auto F = Phase::Forward, B = Phase::Backward;
  EXPECT_EQ(colls(s, gathers_of_step(0)), (std::vector<Coll>{ag(6, 24, F), ag(6, 24, B)}));
  // Step 2 (trace complete, max_reuse_distance 1e9): fetched once in forward, kept for backward.
  EXPECT_EQ(colls(s, gathers_of_step(1)), (std::vector<Coll>{ag(6, 24, F, 1)}));
}

TEST(ScheduleStage3External, PersistentExternalParamIsNotRegistered) {
  // Default persistence threshold (1e5): every param is persistent and AVAILABLE when read, so
  // reading other.w registers nothing (ZeROOrderedDict.__getitem__ acts on NOT_AVAILABLE only);
  // the recording iteration gathers inner's own [10, 7]: AG(in 3 + 2, out 20).
  const ModelDesc m = load(kExternal);
  const Schedule s = build(m, stage3_config(), 4, 1);
  const auto F = Phase::Forward, B = Phase::Backward;
  EXPECT_EQ(colls(s, gathers_of_step(0)), (std::vector<Coll>{ag(5, 20, F), ag(5, 20, B)}));
}

// The recorder's tiny job: params.rank0.json and the "modules"/"forward" keys of modules.rank0.json
// as one version 2 param list.
std::string recorded_tiny() {
  const std::string dir = clitest::data("recordings/tiny_gloo_2ranks/");
  auto params = nlohmann::json::parse(clitest::read_all(dir + "params.rank0.json"));
  const auto modules = nlohmann::json::parse(clitest::read_all(dir + "modules.rank0.json"));
  params["version"] = 2;
  params["modules"] = modules.at("modules");
  params["forward"] = modules.at("forward");
  return params.dump();
}

TEST(ScheduleStage3External, RecordedRootReadsItsEmbeddingAndHeadWeights) {
  const ModelDesc m = load(recorded_tiny());
  const std::vector<bool> none(m.params.size(), false);
  auto w = schedule::s3::build_walk(m, false, none);
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  // tiny_job.py's Tiny.forward: F.embedding(ids, self.emb.weight), the blocks, then
  // F.linear(h, self.head.weight, self.head.bias) * self.frozen.sum(): the root fetches its own
  // `frozen` with the three external params, emb and head never run their own hooks.
  EXPECT_EQ(fetch_set(m, w.value(), "(root) Tiny"),
            (Names{"frozen", "emb.weight", "head.weight", "head.bias"}));
  EXPECT_EQ(forward_fetches(w.value()),
            (Names{"(root) Tiny", "blocks.0", "blocks.0.fc", "blocks.0.ln", "blocks.1",
                   "blocks.1.fc", "blocks.1.ln"}));
  // Hand-derived at W = 2, fp16, nothing persistent (c = ceil(n / 2)): root {3, 128, 128, 16} ->
  // Σc = 2 + 64 + 64 + 8 = 138, AG(138, 276); fc {64, 8} -> 36, AG(36, 72); ln {8, 8} -> 8,
  // AG(8, 16). Backward pre-hooks fire in reverse post-forward order: root, blocks.1.ln,
  // blocks.1.fc, blocks.0.ln, blocks.0.fc (as the recording's "backward" lists them).
  const Schedule s = build(m, nothing_persistent(), 2, 1);
  const auto F = Phase::Forward, B = Phase::Backward;
  const std::vector<Coll> want = {ag(138, 276, F), ag(36, 72, F),   ag(8, 16, F), ag(36, 72, F),
                                  ag(8, 16, F),    ag(138, 276, B), ag(8, 16, B), ag(36, 72, B),
                                  ag(8, 16, B),    ag(36, 72, B)};
  EXPECT_EQ(colls(s, gathers_of_step(0)), want);
}

TEST(ScheduleStage3External, WithoutAModuleSectionModulesAreInferredFromNames) {
  // The same params as a version 1 list: modules from the names, one coalesced gather per module
  // (a Linear's weight and bias together) instead of one per param.
  auto j = nlohmann::json::parse(recorded_tiny());
  j.erase("modules");
  j.erase("forward");
  j["version"] = 1;
  const ModelDesc m = load(j.dump());
  EXPECT_TRUE(m.modules_inferred);
  Names names;
  for (const auto& node : m.modules) names.push_back(node.name);
  EXPECT_EQ(names, (Names{"", "emb", "blocks", "blocks.0", "blocks.0.fc", "blocks.0.ln", "blocks.1",
                          "blocks.1.fc", "blocks.1.ln", "head"}));
  auto w = schedule::s3::build_walk(m, false);
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  EXPECT_EQ(w->mapping.rfind("hooked modules: inferred from the param names, an inference", 0), 0u)
      << w->mapping;
  const Schedule s = build(m, nothing_persistent(), 2, 1);
  const auto F = Phase::Forward;
  EXPECT_EQ(colls(s,
                  [](const Op& o) {
                    return o.collective == CollectiveKind::AllGather && o.phase == Phase::Forward;
                  }),
            (std::vector<Coll>{ag(2, 4, F), ag(64, 128, F), ag(36, 72, F), ag(8, 16, F),
                               ag(36, 72, F), ag(8, 16, F), ag(72, 144, F)}));
  bool noted = false;
  for (const auto& n : s.meta.notes) noted = noted || n.find("an inference") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(ScheduleStage3External, InferenceEdgeCases) {
  const ModelDesc m =
      load(R"({"params": [["w", [2]], ["a.b.c", [3]], ["x.w", [1]], ["a.d", [4]], [".z", [1]]]})");
  Names names;
  for (const auto& node : m.modules) names.push_back(node.name);
  EXPECT_EQ(names, (Names{"", "a", "a.b", "x"}));
  EXPECT_EQ(m.modules[0].param_ids, (std::vector<std::uint32_t>{0, 4}));  // "w" and ".z"
  EXPECT_EQ(m.modules[1].param_ids, (std::vector<std::uint32_t>{3}));     // a.d
  // Depth-first in declaration order: a's children (a.b) run inside a, before x.
  EXPECT_EQ(calls_of(m), (Names{"+", "+a", "+a.b", "-a.b", "-a", "+x", "-x", "-"}));
}

TEST(ScheduleStage3External, RecordedCallEndsPlaceThePostForwardHooks) {
  // `a` calls its sibling `b` (a shared module): only the recorder's "inner" counts say so;
  // without them a call ends when a call outside its subtree begins.
  const std::string head = R"({"version": 2, "params": [["a.w", [2]], ["b.w", [2]]],
    "modules": [{"name": ""}, {"name": "a", "params": ["a.w"]}, {"name": "b", "params": ["b.w"]}],
    )";
  EXPECT_EQ(calls_of(load(head + R"("forward": [{"module": "", "inner": 2},
            {"module": "a", "inner": 1}, {"module": "b", "inner": 0}]})")),
            (Names{"+", "+a", "+b", "-b", "-a", "-"}));
  EXPECT_EQ(
      calls_of(load(head + R"("forward": [{"module": ""}, {"module": "a"}, {"module": "b"}]})")),
      (Names{"+", "+a", "-a", "+b", "-b", "-"}));
  EXPECT_NE(load_error(head + R"("forward": [{"module": ""}, {"module": "a", "inner": 5},
            {"module": "b"}]})")
                .find("p.json: /forward/1/inner:"),
            std::string::npos);
  EXPECT_EQ(
      load_error(head + R"("forward": [{"module": "", "inner": 1}, {"module": "a", "inner": 1},
            {"module": "b"}]})"),
      "p.json: /forward/1/inner: call ends after the call of \"\" that it runs in (its calls "
      "end at /forward/1)\n");
}

TEST(ScheduleStage3External, ModuleSectionErrorsNameTheFileAndPointer) {
  const std::string head = R"({"version": 2, "params": [["a.w", [2]], ["b.w", [2]]], )";
  const std::string tree =
      R"("modules": [{"name": ""}, {"name": "a", "params": ["a.w"]}, {"name": "b", "params": ["b.w"]}])";
  EXPECT_EQ(load_error(R"({"params": [["a.w", [2]]], "modules": [], "forward": []})"),
            "p.json: /version: a module section (\"modules\", \"forward\") needs \"version\": 2, "
            "got 1\n");
  EXPECT_NE(load_error(R"({"version": 3, "params": [["a.w", [2]]]})").find("p.json: /version:"),
            std::string::npos);
  EXPECT_EQ(load_error(head + tree + R"(, "forward": [{"module": ""}, {"module": "a"},
            {"module": "a"}]})"),
            "p.json: /forward/2/module: module \"a\" is called twice (first at /forward/1); one "
            "call per module per forward\n");
  EXPECT_EQ(
      load_error(head +
                 R"("modules": [{"name": ""}, {"name": "a"}, {"name": "a"}], "forward": []})"),
      "p.json: /modules/2/name: duplicate module \"a\" (first at /modules/1)\n");
  EXPECT_EQ(load_error(head + R"("modules": [{"name": "", "params": ["a.x"]}], "forward": []})"),
            "p.json: /modules/0/params/0: unknown parameter \"a.x\" (did you mean \"a.w\"?)\n");
  EXPECT_EQ(load_error(head + tree + R"(, "forward": [{"module": ""}, {"module": "c"}]})"),
            "p.json: /forward/1/module: unknown module \"c\" (not in \"modules\")\n");
  EXPECT_EQ(load_error(head + tree + R"(, "forward": [{"module": "a"}]})"),
            "p.json: /forward/0/module: expected the root module's call first\n");
  EXPECT_EQ(
      load_error(head + tree +
                 R"(, "forward": [{"module": ""}, {"module": "a", "external": ["a.w"]}]})"),
      "p.json: /forward/1/external: parameter \"a.w\" is a direct param of module \"a\", not an "
      "external one\n");
  EXPECT_EQ(
      load_error(head + R"("modules": [{"name": "a"}], "forward": []})"),
      "p.json: /modules/0/name: expected the root module (\"name\": \"\") first, got \"a\"\n");
  EXPECT_EQ(load_error(head + tree + "}"),
            "p.json: /forward: missing required key: \"modules\" needs the forward calls\n");
  EXPECT_EQ(load_error(head + R"("modules": [{"name": ""}], "forward": [{"module": "", "x": 1}]})"),
            "p.json: /forward/0/x: unknown key \"x\"\n");
}

// A listed module's parent is looked up prefix by prefix (time length x depth: 20 names of 30000
// levels took 1.4 s); module names have the parameter names' bounds.
TEST(ScheduleStage3External, ModuleNamesBeyond4096BytesOr64LevelsAreRefused) {
  std::string deep;
  for (int i = 0; i < 64; ++i) deep += "a.";
  const auto with = [](const std::string& name) {
    return R"({"version": 2, "params": [["w", [2]]], "modules": [{"name": ""}, {"name": ")" + name +
           R"("}], "forward": []})";
  };
  EXPECT_EQ(load_error(with(deep + "b")),
            "p.json: /modules/1/name: expected a module name of at most 64 dot-separated levels, "
            "got 65\n");
  EXPECT_EQ(load_error(with(std::string(4097, 'm'))),
            "p.json: /modules/1/name: expected a module name of at most 4096 bytes, got 4097 "
            "bytes\n");
}

const char* kTinyMixtral = R"({"model_type": "mixtral", "vocab_size": 10, "hidden_size": 16,
  "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
  "num_key_value_heads": 2, "num_local_experts": 2, "num_experts_per_tok": 1})";

TEST(ScheduleStage3External, MixtralWithAndWithoutLeafModules) {
  auto r = load_hf_config_text(kTinyMixtral, "config.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  ModelDesc m = r.value();
  const std::string block = "model.layers.0.block_sparse_moe";
  const Names all = {block + ".gate.weight",         block + ".experts.0.w1.weight",
                     block + ".experts.0.w2.weight", block + ".experts.0.w3.weight",
                     block + ".experts.1.w1.weight", block + ".experts.1.w2.weight",
                     block + ".experts.1.w3.weight"};
  // Leaf (the zoo's default, as LLaMA-Factory's add_z3_leaf_module sets it): the block fetches
  // the router and every expert at its pre-forward; no expert module is hooked.
  {
    auto w = schedule::s3::build_walk(m, false);
    ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
    EXPECT_EQ(fetch_set(m, w.value(), block), all);
    const Names f = forward_fetches(w.value());
    EXPECT_EQ(std::count(f.begin(), f.end(), block + ".experts.0.w1"), 0);
    EXPECT_EQ(std::count(f.begin(), f.end(), block), 1);
    // W = 4: gate [2, 16] -> c 8, each expert matrix (128 elements) -> 32: one AG(in 200, out
    // 800) per MoE layer in the recording iteration's forward.
    const Schedule s = build(m, nothing_persistent(), 4, 1);
    const auto fwd = colls(s, [](const Op& o) {
      return o.collective == CollectiveKind::AllGather && o.phase == Phase::Forward;
    });
    EXPECT_EQ(std::count(fwd.begin(), fwd.end(), ag(200, 800, Phase::Forward)), 2);
    EXPECT_EQ(std::count(fwd.begin(), fwd.end(), ag(32, 128, Phase::Forward)), 0);
  }
  // Without leaf modules every expert Linear is its own hooked module (each expert is assumed
  // to receive tokens on every rank; see models/README.md for what DeepSpeed does otherwise).
  ASSERT_FALSE(set_z3_leaf_modules(m, "none").has_errors());
  {
    auto w = schedule::s3::build_walk(m, false);
    ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
    EXPECT_TRUE(fetch_set(m, w.value(), block).empty());
    EXPECT_EQ(fetch_set(m, w.value(), block + ".experts.1.w3"),
              (Names{block + ".experts.1.w3.weight"}));
    const Schedule s = build(m, nothing_persistent(), 4, 1);
    const auto fwd = colls(s, [](const Op& o) {
      return o.collective == CollectiveKind::AllGather && o.phase == Phase::Forward;
    });
    EXPECT_EQ(std::count(fwd.begin(), fwd.end(), ag(200, 800, Phase::Forward)), 0);
    // 2 layers x 2 experts x 3 matrices, each AG(32, 128).
    EXPECT_EQ(std::count(fwd.begin(), fwd.end(), ag(32, 128, Phase::Forward)), 12);
  }
  // Back by class name, fully qualified as DeepSpeed also accepts it.
  ASSERT_FALSE(
      set_z3_leaf_modules(m, "transformers.models.mixtral.modeling_mixtral.MixtralSparseMoeBlock")
          .has_errors());
  auto w = schedule::s3::build_walk(m, false);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(fetch_set(m, w.value(), block), all);
}

TEST(ScheduleStage3External, LeafModuleFlagRefusesGarbage) {
  auto r = load_hf_config_text(kTinyMixtral, "config.json");
  ASSERT_TRUE(r.ok());
  ModelDesc m = r.value();
  EXPECT_EQ(set_z3_leaf_modules(m, "MixtralSparseMoeBlok").to_string(),
            "--z3-leaf-modules: no module of class \"MixtralSparseMoeBlok\" in config.json (did "
            "you mean \"MixtralSparseMoeBlock\"?)\n");
  EXPECT_EQ(set_z3_leaf_modules(m, "").to_string(),
            "--z3-leaf-modules: expected a comma-separated list of module class names (or none), "
            "got \"\"\n");
  EXPECT_TRUE(set_z3_leaf_modules(m, "MixtralSparseMoeBlock,").has_errors());
  // A refused value leaves the marks as they were.
  std::size_t leaves = 0;
  for (const auto& node : m.modules) leaves += node.z3_leaf ? 1 : 0;
  EXPECT_EQ(leaves, 2u);
  clitest::expect_one_line_error("plan --model llama2-7b --gpus 8 --z3-leaf-modules Nope",
                                 "--z3-leaf-modules: no module of class \"Nope\"");
}

}  // namespace
}  // namespace zerosim
