// Stage 3 with the model's nn.Module tree (deepspeed_zero.md §7.2–7.4, G17/G18, §10 item 7): the
// hook sequence built from ModelDesc::module_calls (forward, mirrored backward, gradients,
// checkpoint recompute, leftover releases), the exact all-gathers of a recording iteration (one per
// module fetch with params, a tied weight fetched by both its modules), the persistence rule after
// the first step, and malformed module trees reported instead of crashing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "schedule/stage3_internal.h"
#include "schedule_stage3_test_util.h"
#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using namespace s3test;  // NOLINT
using Names = std::vector<std::string>;

ModelDesc hf(const std::string& text) {
  auto r = load_hf_config_text(text, "config.json");
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

const char* kTinyLlama = R"({"model_type": "llama", "vocab_size": 32, "hidden_size": 8,
  "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2})";

Names render(const ModelDesc& m, const schedule::s3::Walk& w) {
  using schedule::s3::HookKind;
  Names out;
  for (const auto& ev : w.events) {
    switch (ev.kind) {
      case HookKind::Fetch:
        out.push_back("F " + w.modules[ev.index].name);
        break;
      case HookKind::Release:
        out.push_back("R " + w.modules[ev.index].name);
        break;
      case HookKind::Forward:
        out.push_back("fwd " + m.layers[ev.index].name);
        break;
      case HookKind::Recompute:
        out.push_back("rc " + m.layers[ev.index].name);
        break;
      case HookKind::Backward:
        out.push_back("bwd " + m.layers[ev.index].name);
        break;
      case HookKind::GradReady:
        out.push_back("g " + m.params[ev.index].name);
        break;
    }
  }
  return out;
}

void append(Names& to, const Names& more) { to.insert(to.end(), more.begin(), more.end()); }

// A Llama block's forward hooks; `compute` is "fwd" (forward) or "rc" (checkpoint recompute): one
// compute piece after the FETCH of each module holding params (not the block, self_attn, mlp or
// act_fn).
Names block_forward(const std::string& p, const std::string& compute) {
  const std::string c = compute + " " + p;
  Names out = {"F " + p, "F " + p + ".input_layernorm", c, "R " + p + ".input_layernorm",
               "F " + p + ".self_attn"};
  for (const char* x : {"q_proj", "k_proj", "v_proj", "o_proj"})
    append(out, {"F " + p + ".self_attn." + x, c, "R " + p + ".self_attn." + x});
  append(out, {"R " + p + ".self_attn", "F " + p + ".post_attention_layernorm", c,
               "R " + p + ".post_attention_layernorm", "F " + p + ".mlp"});
  for (const char* x : {"gate_proj", "act_fn", "up_proj", "down_proj"}) {
    append(out, {"F " + p + ".mlp." + x});
    if (std::string(x) != "act_fn") out.push_back(c);
    append(out, {"R " + p + ".mlp." + x});
  }
  append(out, {"R " + p + ".mlp", "R " + p});
  return out;
}

// A Llama block's backward: pre-backward hooks in reverse post-forward order, each module's compute
// piece and gradient right after its fetch, post-backward releases when the subtree is done.
Names block_backward(const std::string& p) {
  const std::string c = "bwd " + p;
  Names out = {"F " + p, "F " + p + ".mlp"};
  for (const char* x : {"down_proj", "up_proj", "act_fn", "gate_proj"}) {
    const std::string mod = p + ".mlp." + x;
    out.push_back("F " + mod);
    if (std::string(x) != "act_fn") append(out, {c, "g " + mod + ".weight"});
    out.push_back("R " + mod);
  }
  append(out, {"R " + p + ".mlp", "F " + p + ".post_attention_layernorm", c,
               "g " + p + ".post_attention_layernorm.weight",
               "R " + p + ".post_attention_layernorm", "F " + p + ".self_attn"});
  for (const char* x : {"o_proj", "v_proj", "k_proj", "q_proj"}) {
    const std::string mod = p + ".self_attn." + x;
    append(out, {"F " + mod, c, "g " + mod + ".weight", "R " + mod});
  }
  append(out, {"R " + p + ".self_attn", "F " + p + ".input_layernorm", c,
               "g " + p + ".input_layernorm.weight", "R " + p + ".input_layernorm", "R " + p});
  return out;
}

TEST(ScheduleStage3Modules, LlamaHookSequence) {
  const ModelDesc m = hf(kTinyLlama);
  auto w = schedule::s3::build_walk(m, false);
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  const std::string root = "(root) LlamaForCausalLM";
  Names want = {"F " + root,
                "F model",
                "F model.embed_tokens",
                "fwd embeddings",
                "R model.embed_tokens",
                "F model.rotary_emb",
                "R model.rotary_emb"};
  append(want, block_forward("model.layers.0", "fwd"));
  append(want, block_forward("model.layers.1", "fwd"));
  append(want, {"F model.norm", "fwd model.norm", "R model.norm", "R model", "F lm_head",
                "fwd lm_head", "R lm_head", "R " + root});
  // Backward: the loss is the root's output, so the root's pre-backward fires first. rotary_emb's
  // outputs need no grad (no backward fetch); the root, LlamaModel and embed_tokens take token
  // ids, so their post-backward never fires: the epilogue's leftover sweep releases them.
  append(want, {"F " + root, "F lm_head", "bwd lm_head", "g lm_head.weight", "R lm_head", "F model",
                "F model.norm", "bwd model.norm", "g model.norm.weight", "R model.norm"});
  append(want, block_backward("model.layers.1"));
  append(want, block_backward("model.layers.0"));
  append(want, {"F model.embed_tokens", "bwd embeddings", "g model.embed_tokens.weight"});
  EXPECT_EQ(render(m, w.value()), want);
  Names leftover;
  for (auto i : w->leftover) leftover.push_back(w->modules[i].name);
  EXPECT_EQ(leftover, (Names{root, "model", "model.embed_tokens"}));
  EXPECT_EQ(w->mapping.rfind("hooked modules: the model's nn.Module tree (33 modules)", 0), 0u);
  // Each pass's pieces of a layer add up to the whole layer, in proportion to param elements:
  // q_proj (8 x 8) holds 64 of layer 0's 2 x 8 + 4 x 64 + 3 x 128 = 656 elements.
  std::map<std::pair<int, std::uint32_t>, double> total;
  for (const auto& ev : w->events)
    if (ev.kind == schedule::s3::HookKind::Forward || ev.kind == schedule::s3::HookKind::Backward) {
      total[{static_cast<int>(ev.kind), ev.index}] += ev.share;
      if (ev.module != kNone && w->modules[ev.module].name == "model.layers.0.self_attn.q_proj") {
        EXPECT_DOUBLE_EQ(ev.share, 64.0 / 656.0);
      }
    }
  EXPECT_EQ(total.size(), 2 * m.layers.size());
  for (const auto& [key, sum] : total) EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(ScheduleStage3Modules, CheckpointedBlocksReplayTheirForwardHooks) {
  const ModelDesc m = hf(kTinyLlama);
  auto w = schedule::s3::build_walk(m, true);
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  const Names ev = render(m, w.value());
  const Names recompute = block_forward("model.layers.1", "rc");
  const Names backward = block_backward("model.layers.1");
  // Right after the norm's backward release: layer 1's forward hooks again, then its backward.
  const auto at = std::find(ev.begin(), ev.end(), "g model.norm.weight");
  ASSERT_NE(at, ev.end());
  ASSERT_EQ(*(at + 1), "R model.norm");
  const auto start = static_cast<std::size_t>(at - ev.begin()) + 2;
  ASSERT_GE(ev.size(), start + recompute.size() + backward.size());
  EXPECT_EQ(Names(ev.begin() + static_cast<long>(start),
                  ev.begin() + static_cast<long>(start + recompute.size())),
            recompute);
  EXPECT_EQ(Names(ev.begin() + static_cast<long>(start + recompute.size()),
                  ev.begin() + static_cast<long>(start + recompute.size() + backward.size())),
            backward);
  // Embeddings, norm and head are not checkpointed.
  EXPECT_EQ(std::count(ev.begin(), ev.end(), "rc embeddings"), 0);
  // One recompute piece per module holding params: 2 norms, q/k/v/o, gate/up/down.
  EXPECT_EQ(std::count(ev.begin(), ev.end(), "rc model.layers.0"), 9);
  EXPECT_EQ(std::count(ev.begin(), ev.end(), "F model.layers.0.self_attn.q_proj"), 3);
}

// Llama-shaped, 2 layers, h = 512: every Linear and the embeddings exceed the 1e5 persistence
// threshold, the RMSNorm weights (512) do not.
const char* kLlama512 = R"({"model_type": "llama", "vocab_size": 1000, "hidden_size": 512,
  "intermediate_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8})";

constexpr std::uint32_t kW = 4;

bool fwd_or_bwd(const Op& o) { return o.phase == Phase::Forward || o.phase == Phase::Backward; }

TEST(ScheduleStage3Modules, RecordingIterationGathersEachModuleFetchAlone) {
  const ModelDesc m = hf(kLlama512);
  const Schedule s = build(m, stage3_config(), kW, 1);
  const auto F = Phase::Forward;
  const auto B = Phase::Backward;
  const Coll emb_f = ag(128000, 512000, F), norm_f = ag(128, 512, F), attn_f = ag(65536, 262144, F),
             mlp_f = ag(131072, 524288, F);
  const Coll emb_b = ag(128000, 512000, B), norm_b = ag(128, 512, B), attn_b = ag(65536, 262144, B),
             mlp_b = ag(131072, 524288, B);
  // Iteration 1 records the trace: one synchronous single-param all-gather per module fetch that
  // has params (persistent norms too: the recording iteration releases them after each use).
  std::vector<Coll> want = {emb_f};
  for (int layer = 0; layer < 2; ++layer)
    want.insert(want.end(), {norm_f, attn_f, attn_f, attn_f, attn_f, norm_f, mlp_f, mlp_f, mlp_f});
  want.insert(want.end(), {norm_f, emb_f /* lm_head.weight [1000, 512] */});
  want.insert(want.end(), {emb_b, norm_b});
  for (int layer = 0; layer < 2; ++layer)  // down, up, gate, post_ln, o, v, k, q, input_ln
    want.insert(want.end(), {mlp_b, mlp_b, mlp_b, norm_b, attn_b, attn_b, attn_b, attn_b, norm_b});
  want.push_back(emb_b);
  EXPECT_EQ(colls(s,
                  [](const Op& o) {
                    return o.collective == CollectiveKind::AllGather && o.step == 0 &&
                           fwd_or_bwd(o);
                  }),
            want);
  EXPECT_EQ(want.size(), 42u);
}

TEST(ScheduleStage3Modules, PersistentNormsAreNeverGatheredAfterTheFirstStep) {
  const ModelDesc m = hf(kLlama512);
  const DsConfig ds = stage3_config();
  const PartitionPlan plan = stage3_plan(m, ds, kW);
  Elements c_nonpersistent = 0;
  std::size_t persistent = 0;
  for (std::uint32_t p = 0; p < m.params.size(); ++p) {
    if (plan.s3[p].persistent) {
      ++persistent;
      EXPECT_EQ(m.params[p].numel, 512u) << m.params[p].name;
    } else {
      c_nonpersistent += plan.s3[p].partition;
    }
  }
  EXPECT_EQ(persistent, 5u);  // 2 x (input, post-attention) + model.norm
  EXPECT_EQ(c_nonpersistent, (2u * 512000u + 2u * (4u * 262144u + 3u * 524288u)) / kW);
  const Schedule s = build(m, ds, kW, 2);
  // step() ends with one synchronous gather per persistent param; they stay resident.
  EXPECT_EQ(colls(s,
                  [](const Op& o) {
                    return o.collective == CollectiveKind::AllGather &&
                           o.phase == Phase::PostStep && o.step == 0;
                  }),
            (std::vector<Coll>(5, ag(128, 512, Phase::PostStep, 0))));
  // Iteration 2 prefetches with the default 1e9 reuse distance: every non-persistent param is
  // gathered exactly once, no persistent one at all.
  Elements gathered = 0;
  for (const Coll& c : colls(s, [](const Op& o) {
         return o.collective == CollectiveKind::AllGather && o.step == 1 && fwd_or_bwd(o);
       }))
    gathered += c.numel;
  EXPECT_EQ(gathered, c_nonpersistent);
}

// GPT-2, one block, W = 2: Conv1D weight + bias are one coalesced gather (§7.5), and the tied wte
// weight is a direct param of both transformer.wte and lm_head, so the recording iteration gathers
// it at each of the four fetches.
TEST(ScheduleStage3Modules, Gpt2TiedWeightIsFetchedByBothModules) {
  const ModelDesc m = hf(R"({"model_type": "gpt2", "vocab_size": 16, "n_embd": 8, "n_layer": 1,
    "n_head": 2, "n_positions": 8})");
  const Schedule s = build(m, stage3_config(), 2);
  Names labels;
  std::vector<std::pair<Elements, Elements>> sizes;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Collective && o.collective == CollectiveKind::AllGather && o.step == 0 &&
        fwd_or_bwd(o)) {
      labels.push_back(o.label);
      sizes.emplace_back(o.numel, o.out_numel);
    }
  const std::string h = "transformer.h.0";
  const std::string wte_f = "fetch fwd transformer.wte: transformer.wte.weight";
  EXPECT_EQ(labels, (Names{wte_f,
                           "fetch fwd transformer.wpe: transformer.wpe.weight",
                           "fetch fwd " + h + ".ln_1: 2 params",
                           "fetch fwd " + h + ".attn.c_attn: 2 params",
                           "fetch fwd " + h + ".attn.c_proj: 2 params",
                           "fetch fwd " + h + ".ln_2: 2 params",
                           "fetch fwd " + h + ".mlp.c_fc: 2 params",
                           "fetch fwd " + h + ".mlp.c_proj: 2 params",
                           "fetch fwd transformer.ln_f: 2 params",
                           "fetch fwd lm_head: transformer.wte.weight",
                           "fetch bwd lm_head: transformer.wte.weight",
                           "fetch bwd transformer.ln_f: 2 params",
                           "fetch bwd " + h + ".mlp.c_proj: 2 params",
                           "fetch bwd " + h + ".mlp.c_fc: 2 params",
                           "fetch bwd " + h + ".ln_2: 2 params",
                           "fetch bwd " + h + ".attn.c_proj: 2 params",
                           "fetch bwd " + h + ".attn.c_attn: 2 params",
                           "fetch bwd " + h + ".ln_1: 2 params",
                           "fetch bwd transformer.wpe: transformer.wpe.weight",
                           "fetch bwd transformer.wte: transformer.wte.weight"}));
  // wte [16, 8] -> c 64; wpe [8, 8] -> 32; LayerNorm 8 + 8 -> 4 + 4; c_attn [8, 24] + 24 -> 96 +
  // 12; attn.c_proj [8, 8] + 8 -> 32 + 4; c_fc [8, 32] + 32 -> 128 + 16; mlp.c_proj [32, 8] + 8 ->
  // 128 + 4.
  using P = std::pair<Elements, Elements>;
  const std::vector<P> fwd = {{64, 128}, {32, 64},   {8, 16},    {108, 216}, {36, 72},
                              {8, 16},   {144, 288}, {132, 264}, {8, 16},    {64, 128}};
  std::vector<P> want = fwd;
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) want.push_back(*it);
  EXPECT_EQ(sizes, want);
}

// Every family's module tree replays in every variant (both DeepSpeed versions, checkpointing,
// two micro-steps): the schedule validates, and the second optimizer step, prefetching with the
// default reuse distance, gathers each non-persistent param once per micro-step (v0.14.4: except
// what is still gathered from the previous micro-step).
TEST(ScheduleStage3Modules, EveryFamilyReplaysInEveryVariant) {
  const std::string dims = R"("vocab_size": 1000, "num_hidden_layers": 2, "num_attention_heads": 8,
    "hidden_size": 512, "n_embd": 512, "n_layer": 2, "n_head": 8)";
  std::vector<ModelDesc> models;
  for (const char* file : {"gpt2.json", "opt-350m.json"}) {
    auto loaded = load_hf_config_file(std::string(ZEROSIM_TEST_DATA_DIR) + "/hf/" + file);
    ASSERT_TRUE(loaded.ok()) << loaded.diagnostics().to_string();
    models.push_back(loaded.value());
  }
  models.push_back(hf(kLlama512));
  models.push_back(hf(R"({"model_type": "gptj", "n_positions": 64, )" + dims + "}"));
  models.push_back(hf(R"({"model_type": "gpt_neox", "intermediate_size": 2048, )" + dims + "}"));
  models.push_back(hf(R"({"model_type": "bloom", )" + dims + "}"));
  models.push_back(
      hf(R"({"model_type": "falcon", "new_decoder_architecture": true, )" + dims + "}"));
  for (const ModelDesc& m : models) {
    const std::string file = m.arch ? m.arch->family : m.name;
    DsConfig ds = stage3_config();
    ds.grad_accum_steps = 2;
    const PartitionPlan plan = stage3_plan(m, ds, kW);
    Elements c_nonpersistent = 0, c_leftover = 0;
    std::vector<bool> in_leftover(m.params.size(), false);
    for (const auto& node : m.modules)  // the embeddings: no post-backward RELEASE
      if (node.called && node.grad == ModuleGrad::OutputOnly)
        for (auto p : node.param_ids) in_leftover[p] = true;
    for (std::uint32_t p = 0; p < m.params.size(); ++p) {
      if (plan.s3[p].persistent) continue;
      c_nonpersistent += plan.s3[p].partition;
      if (in_leftover[p]) c_leftover += plan.s3[p].partition;
    }
    ASSERT_GT(c_leftover, 0u);
    for (auto v : {DeepSpeedVersion::Edaa722, DeepSpeedVersion::V0_14_4})
      for (bool ckpt : {false, true}) {
        SCOPED_TRACE(file + (ckpt ? " checkpointing " : " ") +
                     std::string(deepspeed_version_name(v)));
        TrainingSettings t;
        t.activation_checkpointing = ckpt;
        t.seq_len = 128;
        const Schedule s = build(m, ds, kW, 2, v, t);
        for (std::uint32_t micro = 0; micro < 2; ++micro) {
          Elements gathered = 0;
          for (const Op& o : s.ops)
            if (o.kind == OpKind::Collective && o.collective == CollectiveKind::AllGather &&
                o.step == 1 && o.micro_step == micro && fwd_or_bwd(o))
              gathered += o.numel;
          // v0.14.4 has no leftover sweep: what the embeddings fetched in backward stays gathered
          // until step()'s release-all, so the next micro-step of the same step reuses it (§7.2).
          const bool kept = v == DeepSpeedVersion::V0_14_4 && micro == 1;
          EXPECT_EQ(gathered, c_nonpersistent - (kept ? c_leftover : 0)) << "micro-step " << micro;
        }
      }
  }
}

// A module tree that does not nest, or points outside the model, is reported (source "model").
TEST(ScheduleStage3Modules, MalformedModuleTreesAreReported) {
  const ModelDesc good = hf(kTinyLlama);
  auto message = [](const ModelDesc& m) {
    auto w = schedule::s3::build_walk(m, false);
    return w.ok() ? std::string("ok") : w.diagnostics().to_string();
  };
  EXPECT_EQ(message(good), "ok");

  ModelDesc m = good;
  std::swap(m.module_calls[2], m.module_calls[3]);  // embed_tokens ends before it begins
  EXPECT_EQ(message(m),
            "model: /module_calls/2: expected properly nested begin/end events, one pair per "
            "module\n");
  m = good;
  m.module_calls.pop_back();  // the root never ends
  EXPECT_EQ(message(m),
            "model: /module_calls: expected every begin to have its end, got 1 "
            "modules left open\n");
  m = good;
  m.modules[2].param_ids.push_back(999);
  m.modules[3].layer = 7;
  EXPECT_EQ(message(m),
            "model: /modules/2/param_ids/1: expected an index below " +
                std::to_string(m.params.size()) +
                ", got 999\nmodel: /modules/3/layer: expected an index below 5, got 7\n");
  m = good;
  m.module_calls[5].module = 1000;
  EXPECT_EQ(message(m), "model: /module_calls/5/module: expected an index below " +
                            std::to_string(m.modules.size()) + ", got 1000\n");
  m = good;
  m.modules[4].parent = 9;  // a parent after its child
  EXPECT_EQ(message(m),
            "model: /modules/4/parent: expected an earlier module (none for module 0), "
            "got 9\n");
}

}  // namespace
}  // namespace zerosim
