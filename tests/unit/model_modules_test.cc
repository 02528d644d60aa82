// The nn.Module tree every transformer builder records (ModelDesc::modules, module_calls): exact
// pre-forward order and call events for Llama and GPT-2 blocks as their transformers modeling
// files run them, the per-family block orders, tree invariants, direct-param assignment (every
// param held once, a tied weight by both modules that use it), the Layer each module belongs to,
// which backward hooks fire, and the synthetic remainder tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using Names = std::vector<std::string>;

ModelDesc hf(const std::string& text) {
  auto r = load_hf_config_text(text, "config.json");
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

ModelDesc hf_file(const std::string& file) {
  auto r = load_hf_config_file(std::string(ZEROSIM_TEST_DATA_DIR) + "/hf/" + file);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

// A 2-layer Llama with MHA and untied head.
const char* kTinyLlama = R"({"model_type": "llama", "vocab_size": 32, "hidden_size": 8,
  "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2})";
const char* kTinyGpt2 = R"({"model_type": "gpt2", "vocab_size": 16, "n_embd": 8, "n_layer": 1,
  "n_head": 2, "n_positions": 8})";

std::uint32_t find_module(const ModelDesc& m, const std::string& name) {
  for (std::uint32_t i = 0; i < m.modules.size(); ++i)
    if (m.modules[i].name == name) return i;
  ADD_FAILURE() << "no module " << name;
  return 0;
}

std::uint32_t find_param(const ModelDesc& m, const std::string& name) {
  for (std::uint32_t i = 0; i < m.params.size(); ++i)
    if (m.params[i].name == name) return i;
  ADD_FAILURE() << "no param " << name;
  return 0;
}

Names module_names(const ModelDesc& m) {
  Names out;
  for (const auto& node : m.modules) out.push_back(node.name);
  return out;
}

// Hook events of the modules under `prefix` as "+suffix" (pre-forward) / "-suffix" (post-forward).
Names calls_under(const ModelDesc& m, const std::string& prefix) {
  Names out;
  for (const auto& c : m.module_calls) {
    const std::string& name = m.modules[c.module].name;
    if (name.rfind(prefix, 0) != 0) continue;
    out.push_back((c.begin ? "+" : "-") + name.substr(prefix.size()));
  }
  return out;
}

// Pre-forward order of the called modules under `prefix`, relative names.
Names preforward_under(const ModelDesc& m, const std::string& prefix) {
  Names out;
  for (const auto& s : calls_under(m, prefix))
    if (s[0] == '+') out.push_back(s.substr(1));
  return out;
}

Names with_prefix(const std::string& p, const Names& suffixes) {
  Names out;
  for (const auto& s : suffixes) out.push_back(p + s);
  return out;
}

TEST(ModelModules, LlamaTreeInPreForwardOrder) {
  const ModelDesc m = hf(kTinyLlama);
  const Names block = {"",
                       ".input_layernorm",
                       ".self_attn",
                       ".self_attn.q_proj",
                       ".self_attn.k_proj",
                       ".self_attn.v_proj",
                       ".self_attn.o_proj",
                       ".post_attention_layernorm",
                       ".mlp",
                       ".mlp.gate_proj",
                       ".mlp.act_fn",
                       ".mlp.up_proj",
                       ".mlp.down_proj"};
  Names want = {"", "model", "model.embed_tokens", "model.rotary_emb", "model.layers"};
  for (const auto& n : with_prefix("model.layers.0", block)) want.push_back(n);
  for (const auto& n : with_prefix("model.layers.1", block)) want.push_back(n);
  want.push_back("model.norm");
  want.push_back("lm_head");
  EXPECT_EQ(module_names(m), want);

  const Names types = {"LlamaForCausalLM", "LlamaModel",
                       "Embedding",        "LlamaRotaryEmbedding",
                       "ModuleList",       "LlamaDecoderLayer",
                       "LlamaRMSNorm",     "LlamaAttention",
                       "Linear",           "Linear",
                       "Linear",           "Linear",
                       "LlamaRMSNorm",     "LlamaMLP",
                       "Linear",           "SiLU",
                       "Linear",           "Linear"};
  for (std::size_t i = 0; i < types.size(); ++i) EXPECT_EQ(m.modules[i].type, types[i]) << i;
  EXPECT_EQ(m.modules.back().type, "Linear");
  const std::vector<std::uint32_t> depth = {0, 1, 2, 2, 2, 3, 4, 4, 5, 5, 5, 5, 4, 4, 5, 5, 5, 5};
  for (std::size_t i = 0; i < depth.size(); ++i) EXPECT_EQ(m.modules[i].depth, depth[i]) << i;
  EXPECT_EQ(m.modules[find_module(m, "lm_head")].depth, 1u);
  EXPECT_EQ(m.modules[find_module(m, "model.layers.1")].parent, find_module(m, "model.layers"));
}

TEST(ModelModules, LlamaCallEventsNestChildrenInsideParents) {
  const ModelDesc m = hf(kTinyLlama);
  // down_proj(act_fn(gate_proj(x)) * up_proj(x)) runs gate_proj, act_fn, up_proj, down_proj.
  EXPECT_EQ(calls_under(m, "model.layers.0"), (Names{"+",
                                                     "+.input_layernorm",
                                                     "-.input_layernorm",
                                                     "+.self_attn",
                                                     "+.self_attn.q_proj",
                                                     "-.self_attn.q_proj",
                                                     "+.self_attn.k_proj",
                                                     "-.self_attn.k_proj",
                                                     "+.self_attn.v_proj",
                                                     "-.self_attn.v_proj",
                                                     "+.self_attn.o_proj",
                                                     "-.self_attn.o_proj",
                                                     "-.self_attn",
                                                     "+.post_attention_layernorm",
                                                     "-.post_attention_layernorm",
                                                     "+.mlp",
                                                     "+.mlp.gate_proj",
                                                     "-.mlp.gate_proj",
                                                     "+.mlp.act_fn",
                                                     "-.mlp.act_fn",
                                                     "+.mlp.up_proj",
                                                     "-.mlp.up_proj",
                                                     "+.mlp.down_proj",
                                                     "-.mlp.down_proj",
                                                     "-.mlp",
                                                     "-"}));
  // Outside the blocks: the root and LlamaModel bracket everything, rotary_emb runs once before
  // the layers, lm_head runs in the root after LlamaModel returns. ModuleList never runs.
  Names outer;
  for (const auto& c : m.module_calls) {
    const std::string& n = m.modules[c.module].name;
    if (n.rfind("model.layers.", 0) == 0) continue;
    outer.push_back((c.begin ? "+" : "-") + n);
  }
  EXPECT_EQ(outer, (Names{"+", "+model", "+model.embed_tokens", "-model.embed_tokens",
                          "+model.rotary_emb", "-model.rotary_emb", "+model.norm", "-model.norm",
                          "-model", "+lm_head", "-lm_head", "-"}));
  EXPECT_FALSE(m.modules[find_module(m, "model.layers")].called);
}

TEST(ModelModules, LlamaLayersAndBackwardHooks) {
  const ModelDesc m = hf(kTinyLlama);
  ASSERT_EQ(m.layers.size(), 5u);  // embeddings, 2 blocks, norm, head
  EXPECT_EQ(m.modules[find_module(m, "")].layer, kNoLayer);
  EXPECT_EQ(m.modules[find_module(m, "model")].layer, kNoLayer);
  EXPECT_EQ(m.modules[find_module(m, "model.layers")].layer, kNoLayer);
  EXPECT_EQ(m.modules[find_module(m, "model.embed_tokens")].layer, 0u);
  EXPECT_EQ(m.modules[find_module(m, "model.rotary_emb")].layer, 0u);
  EXPECT_EQ(m.modules[find_module(m, "model.layers.0")].layer, 1u);
  EXPECT_EQ(m.modules[find_module(m, "model.layers.0.mlp.act_fn")].layer, 1u);
  EXPECT_EQ(m.modules[find_module(m, "model.layers.1.self_attn.q_proj")].layer, 2u);
  EXPECT_EQ(m.modules[find_module(m, "model.norm")].layer, 3u);
  EXPECT_EQ(m.modules[find_module(m, "lm_head")].layer, 4u);
  // Token ids need no grad: the root, LlamaModel and the embedding never see post-backward.
  EXPECT_EQ(m.modules[find_module(m, "")].grad, ModuleGrad::OutputOnly);
  EXPECT_EQ(m.modules[find_module(m, "model")].grad, ModuleGrad::OutputOnly);
  EXPECT_EQ(m.modules[find_module(m, "model.embed_tokens")].grad, ModuleGrad::OutputOnly);
  // cos/sin are built under no_grad from a buffer, and the hidden state passed in only gives
  // dtype and device: neither backward hook fires.
  EXPECT_EQ(m.modules[find_module(m, "model.rotary_emb")].grad, ModuleGrad::None);
  EXPECT_EQ(m.modules[find_module(m, "model.layers.1.mlp.act_fn")].grad, ModuleGrad::Both);
  EXPECT_EQ(m.modules[find_module(m, "lm_head")].grad, ModuleGrad::Both);
}

TEST(ModelModules, Gpt2BlockOrderWithSdpaAttention) {
  const ModelDesc m = hf(kTinyGpt2);
  EXPECT_EQ(module_names(m), (Names{"",
                                    "transformer",
                                    "transformer.wte",
                                    "transformer.wpe",
                                    "transformer.drop",
                                    "transformer.h",
                                    "transformer.h.0",
                                    "transformer.h.0.ln_1",
                                    "transformer.h.0.attn",
                                    "transformer.h.0.attn.c_attn",
                                    "transformer.h.0.attn.c_proj",
                                    "transformer.h.0.attn.resid_dropout",
                                    "transformer.h.0.attn.attn_dropout",
                                    "transformer.h.0.ln_2",
                                    "transformer.h.0.mlp",
                                    "transformer.h.0.mlp.c_fc",
                                    "transformer.h.0.mlp.act",
                                    "transformer.h.0.mlp.c_proj",
                                    "transformer.h.0.mlp.dropout",
                                    "transformer.ln_f",
                                    "lm_head"}));
  EXPECT_EQ(calls_under(m, "transformer.h.0"), (Names{"+",
                                                      "+.ln_1",
                                                      "-.ln_1",
                                                      "+.attn",
                                                      "+.attn.c_attn",
                                                      "-.attn.c_attn",
                                                      "+.attn.c_proj",
                                                      "-.attn.c_proj",
                                                      "+.attn.resid_dropout",
                                                      "-.attn.resid_dropout",
                                                      "-.attn",
                                                      "+.ln_2",
                                                      "-.ln_2",
                                                      "+.mlp",
                                                      "+.mlp.c_fc",
                                                      "-.mlp.c_fc",
                                                      "+.mlp.act",
                                                      "-.mlp.act",
                                                      "+.mlp.c_proj",
                                                      "-.mlp.c_proj",
                                                      "+.mlp.dropout",
                                                      "-.mlp.dropout",
                                                      "-.mlp",
                                                      "-"}));
  // sdpa takes the dropout probability: the attn_dropout module is hooked but never called.
  const auto& attn_dropout = m.modules[find_module(m, "transformer.h.0.attn.attn_dropout")];
  EXPECT_FALSE(attn_dropout.called);
  EXPECT_EQ(attn_dropout.type, "Dropout");
  EXPECT_EQ(m.modules[find_module(m, "transformer.h.0.mlp.act")].type, "NewGELUActivation");
  EXPECT_EQ(m.modules[find_module(m, "transformer.h.0.attn.c_attn")].type, "Conv1D");
  EXPECT_EQ(preforward_under(m, "transformer.w"), (Names{"te", "pe"}));
  EXPECT_EQ(m.modules[find_module(m, "transformer.wpe")].grad, ModuleGrad::OutputOnly);
  EXPECT_EQ(m.modules[find_module(m, "transformer.drop")].grad, ModuleGrad::Both);
  EXPECT_EQ(m.modules[find_module(m, "transformer.drop")].layer, 0u);
}

TEST(ModelModules, BlockCallOrderOfTheOtherFamilies) {
  // GPT-J: eager attention calls attn_dropout; MLP reads ln_1's output too.
  EXPECT_EQ(preforward_under(hf_file("gpt-j-6b.json"), "transformer.h.0."),
            (Names{"ln_1", "attn", "attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.attn_dropout",
                   "attn.out_proj", "attn.resid_dropout", "mlp", "mlp.fc_in", "mlp.act",
                   "mlp.fc_out", "mlp.dropout"}));
  // GPT-NeoX: input_layernorm is evaluated as the attention call's argument.
  EXPECT_EQ(preforward_under(hf_file("gpt-neox-20b.json"), "gpt_neox.layers.0."),
            (Names{"input_layernorm", "attention", "attention.query_key_value", "attention.dense",
                   "post_attention_dropout", "post_attention_layernorm", "mlp", "mlp.dense_h_to_4h",
                   "mlp.act", "mlp.dense_4h_to_h", "post_mlp_dropout"}));
  EXPECT_EQ(preforward_under(hf_file("gpt-neox-20b.json"), "gpt_neox.e"),
            (Names{"mbed_in", "mb_dropout"}));
  EXPECT_EQ(
      preforward_under(hf_file("bloom-560m.json"), "transformer.h.0."),
      (Names{"input_layernorm", "self_attention", "self_attention.query_key_value",
             "self_attention.attention_dropout", "self_attention.dense", "post_attention_layernorm",
             "mlp", "mlp.dense_h_to_4h", "mlp.gelu_impl", "mlp.dense_4h_to_h"}));
  // Falcon-7B: parallel attention, one norm; rotary attention never calls attention_dropout.
  const ModelDesc falcon = hf_file("falcon-7b.json");
  EXPECT_EQ(
      preforward_under(falcon, "transformer.h.0."),
      (Names{"input_layernorm", "self_attention", "self_attention.query_key_value",
             "self_attention.dense", "mlp", "mlp.dense_h_to_4h", "mlp.act", "mlp.dense_4h_to_h"}));
  EXPECT_FALSE(
      falcon.modules[find_module(falcon, "transformer.h.0.self_attention.attention_dropout")]
          .called);
  EXPECT_EQ(preforward_under(falcon, "transformer.")[0], "word_embeddings");
  EXPECT_EQ(preforward_under(falcon, "transformer.")[1], "rotary_emb");
  // OPT-125m pre-norm block, q before k and v although k, v, q are registered first.
  EXPECT_EQ(preforward_under(hf_file("opt-125m.json"), "model.decoder.layers.0."),
            (Names{"self_attn_layer_norm", "self_attn", "self_attn.q_proj", "self_attn.k_proj",
                   "self_attn.v_proj", "self_attn.out_proj", "final_layer_norm", "fc1",
                   "activation_fn", "fc2"}));
}

TEST(ModelModules, OptForCausalLmCallsTheDecoderDirectly) {
  const ModelDesc m = hf_file("opt-350m.json");  // post-norm, project_in/out, no final norm
  const auto model = find_module(m, "model");
  const auto decoder = find_module(m, "model.decoder");
  EXPECT_EQ(m.modules[model].type, "OPTModel");
  EXPECT_FALSE(m.modules[model].called);
  EXPECT_EQ(m.modules[decoder].parent, model);
  EXPECT_TRUE(m.modules[decoder].called);
  EXPECT_EQ(m.module_calls[1], (ModuleCall{decoder, true}));
  EXPECT_EQ(preforward_under(m, "model.decoder.layers.0."),
            (Names{"self_attn", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                   "self_attn.out_proj", "self_attn_layer_norm", "fc1", "activation_fn", "fc2",
                   "final_layer_norm"}));
  // project_out runs inside the decoder but belongs to the head Layer, with lm_head.
  const auto head_layer = m.modules[find_module(m, "lm_head")].layer;
  EXPECT_EQ(m.layers[head_layer].kind, LayerKind::Head);
  EXPECT_EQ(m.modules[find_module(m, "model.decoder.project_out")].layer, head_layer);
  EXPECT_EQ(m.modules[find_module(m, "model.decoder.project_in")].layer, 0u);
  EXPECT_EQ(m.modules[find_module(m, "model.decoder.embed_positions")].type,
            "OPTLearnedPositionalEmbedding");
  Names tail;  // the last hook events
  for (std::size_t i = m.module_calls.size() - 7; i < m.module_calls.size(); ++i)
    tail.push_back((m.module_calls[i].begin ? "+" : "-") +
                   m.modules[m.module_calls[i].module].name);
  EXPECT_EQ(tail,
            (Names{"-model.decoder.layers.23", "+model.decoder.project_out",
                   "-model.decoder.project_out", "-model.decoder", "+lm_head", "-lm_head", "-"}));
}

// Structural invariants and param ownership, for one model.
void check_tree(const ModelDesc& m) {
  SCOPED_TRACE(m.name);
  ASSERT_FALSE(m.modules.empty());
  EXPECT_EQ(m.modules[0].parent, kNoModule);
  EXPECT_EQ(m.modules[0].name, "");
  for (std::uint32_t i = 1; i < m.modules.size(); ++i) {
    const auto& node = m.modules[i];
    ASSERT_LT(node.parent, i) << node.name;
    const auto& parent = m.modules[node.parent];
    EXPECT_EQ(node.depth, parent.depth + 1) << node.name;
    const std::string prefix = parent.name.empty() ? "" : parent.name + ".";
    EXPECT_EQ(node.name.rfind(prefix, 0), 0u) << node.name;
    EXPECT_EQ(node.name.find('.', prefix.size()), std::string::npos) << node.name;
  }
  // Properly nested events, every called module exactly once, uncalled ones never.
  std::vector<std::uint32_t> open;
  std::vector<int> begins(m.modules.size(), 0);
  for (const auto& c : m.module_calls) {
    if (c.begin) {
      auto caller = m.modules[c.module].parent;  // nearest ancestor whose forward runs
      while (caller != kNoModule && !m.modules[caller].called) caller = m.modules[caller].parent;
      if (open.empty())
        EXPECT_EQ(c.module, 0u);
      else
        EXPECT_EQ(caller, open.back()) << m.modules[c.module].name;
      open.push_back(c.module);
      ++begins[c.module];
    } else {
      ASSERT_FALSE(open.empty());
      EXPECT_EQ(open.back(), c.module);
      open.pop_back();
    }
  }
  EXPECT_TRUE(open.empty());
  for (std::uint32_t i = 0; i < m.modules.size(); ++i)
    EXPECT_EQ(begins[i], m.modules[i].called ? 1 : 0) << m.modules[i].name;
  // Pre-forward order: called modules appear in `modules` in the order their pre-hooks fire.
  std::uint32_t last = 0;
  for (const auto& c : m.module_calls)
    if (c.begin) {
      EXPECT_GE(c.module, last);
      last = c.module;
    }
  // Every param is a direct param of the module its name says; a tied weight also of the head.
  std::map<std::uint32_t, Names> holders;
  for (const auto& node : m.modules)
    for (auto p : node.param_ids) holders[p].push_back(node.name);
  for (std::uint32_t p = 0; p < m.params.size(); ++p) {
    const std::string& name = m.params[p].name;
    const std::string owner = name.substr(0, name.rfind('.'));
    ASSERT_FALSE(holders[p].empty()) << name;
    EXPECT_EQ(holders[p][0], owner) << name;
    if (holders[p].size() > 1) {
      ASSERT_TRUE(m.arch && m.arch->tied_embeddings) << name;
      // BertForMaskedLM's decoder shares the word embedding and the head's own bias.
      const std::string head = m.arch->family == "bert"      ? "cls.predictions.decoder"
                               : m.arch->family == "roberta" ? "lm_head.decoder"
                                                             : "lm_head";
      EXPECT_EQ(holders[p], (Names{owner, head}));
    }
  }
  // A Layer's params are exactly its modules' direct params.
  for (std::uint32_t l = 0; l < m.layers.size(); ++l) {
    std::set<std::uint32_t> of_modules,
        of_layer(m.layers[l].param_ids.begin(), m.layers[l].param_ids.end());
    for (const auto& node : m.modules)
      if (node.layer == l) of_modules.insert(node.param_ids.begin(), node.param_ids.end());
    EXPECT_EQ(of_modules, of_layer) << m.layers[l].name;
  }
}

TEST(ModelModules, EveryShippedConfigHasAConsistentTree) {
  for (const char* f : {"bloom-560m.json", "falcon-7b.json", "gpt-j-6b.json", "gpt-neox-20b.json",
                        "gpt2.json", "llama-2-7b-hf.json", "meta-llama-3-8b.json",
                        "mistral-7b-v0.1.json", "opt-125m.json", "opt-350m.json", "qwen2-7b.json"})
    check_tree(hf_file(f));
  check_tree(hf(kTinyLlama));
  check_tree(hf(kTinyGpt2));
}

TEST(ModelModules, EveryZooModelHasAConsistentTree) {
  for (const auto& entry : list_zoo()) {
    auto m = load_zoo_model(entry.name);
    ASSERT_TRUE(m.ok()) << m.diagnostics().to_string();
    check_tree(m.value());
  }
}

TEST(ModelModules, TiedWeightIsADirectParamOfBothModules) {
  const ModelDesc m = hf(kTinyGpt2);
  const auto wte = find_param(m, "transformer.wte.weight");
  EXPECT_EQ(m.modules[find_module(m, "transformer.wte")].param_ids,
            (std::vector<std::uint32_t>{wte}));
  EXPECT_EQ(m.modules[find_module(m, "lm_head")].param_ids, (std::vector<std::uint32_t>{wte}));
  // named_parameters() lists it once; an untied Llama head owns its own weight.
  EXPECT_EQ(std::count_if(m.params.begin(), m.params.end(),
                          [](const ParamTensor& p) { return p.name == "lm_head.weight"; }),
            0);
  const ModelDesc llama = hf(kTinyLlama);
  EXPECT_EQ(llama.modules[find_module(llama, "lm_head")].param_ids,
            (std::vector<std::uint32_t>{find_param(llama, "lm_head.weight")}));
  EXPECT_EQ(
      llama.modules[find_module(llama, "model.layers.0.self_attn.q_proj")].param_ids,
      (std::vector<std::uint32_t>{find_param(llama, "model.layers.0.self_attn.q_proj.weight")}));
}

TEST(ModelModules, LinearWithBiasHoldsWeightThenBias) {
  const ModelDesc m = hf_file("qwen2-7b.json");  // q/k/v with bias, o_proj without
  EXPECT_EQ(m.modules[find_module(m, "model.layers.3.self_attn.k_proj")].param_ids,
            (std::vector<std::uint32_t>{find_param(m, "model.layers.3.self_attn.k_proj.weight"),
                                        find_param(m, "model.layers.3.self_attn.k_proj.bias")}));
  EXPECT_EQ(m.modules[find_module(m, "model.layers.3.self_attn.o_proj")].param_ids.size(), 1u);
  EXPECT_EQ(m.modules[find_module(m, "model.layers.3")].type, "Qwen2DecoderLayer");
  EXPECT_EQ(m.modules[find_module(m, "model.norm")].type, "Qwen2RMSNorm");
}

TEST(ModelModules, SyntheticRemainderBelongsToTheBaseModel) {
  auto r = synthetic_model(13e9);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const ModelDesc& m = r.value();
  ASSERT_EQ(m.params.back().name, "transformer.remainder");
  const auto remainder = static_cast<std::uint32_t>(m.params.size() - 1);
  EXPECT_EQ(m.modules[find_module(m, "transformer")].param_ids,
            (std::vector<std::uint32_t>{remainder}));
  // Tiny counts are one tensor without a module tree (stage 3 falls back to its Layer).
  auto tiny = synthetic_model(1000);
  ASSERT_TRUE(tiny.ok());
  EXPECT_TRUE(tiny->modules.empty());
  EXPECT_TRUE(tiny->module_calls.empty());
}

TEST(ModelModules, ParamListsInferTheirModuleTreeFromNames) {
  // Without a module section the tree is inferred (schedule_stage3_external_test.cc has more).
  auto r = load_param_list_text(R"({"params": [["a.weight", [4]], ["b.weight", [2]]]})", "p.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_TRUE(r->modules_inferred);
  ASSERT_EQ(r->modules.size(), 3u);
  EXPECT_EQ(r->modules[1].name, "a");
  EXPECT_EQ(r->modules[2].param_ids, (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(r->module_calls.size(), 6u);
}

}  // namespace
}  // namespace zerosim
