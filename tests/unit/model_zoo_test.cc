// The model zoo: exact parameter counts (literals here, not read from the files), lookup rules and
// the loud failure when a file's "parameters" disagrees with the model its hf_config builds.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "config/zoo_loader.h"
#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

// Hugging Face model.num_parameters() of the *ForCausalLM model; GPT-3 rows are derived (GPT-2
// modules with Table 2.1 shapes) and match the paper's rounded sizes.
const std::vector<std::pair<std::string, Elements>> kExpected = {
    {"bert-base-uncased", 109514298u},
    {"bloom-176b", 176247271424u},
    // DeepSeek-V2-Lite: the Hub's safetensors total; DeepSeek-V3: the checkpoint's main-model
    // count (671,026,419,200) less the router's e_score_correction_bias buffers (58 x 256).
    {"deepseek-v2-lite", 15706484224u},
    {"deepseek-v3", 671026404352u},
    {"falcon-7b", 6921720704u},
    {"flan-t5-base", 247577856u},
    // Gemma, Gemma2, Mixtral, Phi-3: keras-hub's presets (gemma_7b_en, gemma2_9b_en,
    // mixtral_8_7b_en, phi3_mini_4k_instruct_en "params"), equal to the Hub's safetensors totals;
    // Qwen3-8B and Qwen1.5-MoE-A2.7B: worked out from the shapes (model cards: 8.2B, 14.3B).
    {"gemma-7b", 8537680896u},
    {"gemma2-9b", 9241705984u},
    {"gpt-j-6b", 6050882784u},
    {"gpt-neox-20b", 20554567680u},
    {"gpt2-large", 774030080u},
    {"gpt2-medium", 354823168u},
    {"gpt2-small", 124439808u},
    {"gpt2-xl", 1557611200u},
    {"gpt3-1.3b", 1315723264u},
    {"gpt3-125m", 125226240u},
    {"gpt3-13b", 12853386240u},
    {"gpt3-175b", 174604259328u},
    {"gpt3-2.7b", 2651553280u},
    {"gpt3-350m", 355871744u},
    {"gpt3-6.7b", 6658404352u},
    {"gpt3-760m", 760300032u},
    {"llama2-13b", 13015864320u},
    {"llama2-70b", 68976648192u},
    {"llama2-7b", 6738415616u},
    {"llama3-70b", 70553706496u},
    {"llama3-8b", 8030261248u},
    {"llama3.1-405b", 405853388800u},
    {"mistral-7b", 7241732096u},
    {"mixtral-8x7b", 46702792704u},
    {"opt-1.3b", 1315758080u},
    {"opt-125m", 125239296u},
    {"opt-13b", 12853473280u},
    {"opt-2.7b", 2651596800u},
    {"opt-30b", 29974540288u},
    {"opt-350m", 331196416u},
    {"opt-6.7b", 6658473984u},
    {"opt-66b", 65719701504u},
    {"phi3-mini-4k", 3821079552u},
    {"pythia-1.4b", 1414647808u},
    {"pythia-12b", 11846072320u},
    {"pythia-160m", 162322944u},
    {"pythia-1b", 1011781632u},
    {"pythia-2.8b", 2775208960u},
    {"pythia-410m", 405334016u},
    {"pythia-6.9b", 6857302016u},
    {"pythia-70m", 70426624u},
    {"qwen1.5-moe-a2.7b", 14315784192u},
    {"qwen2-7b", 7615616512u},
    {"qwen3-8b", 8190735360u},
    {"roberta-base", 124697433u},
    {"t5-base", 222903552u},
    {"t5-small", 60506624u},
};

TEST(ModelZoo, EveryModelHasItsExactParameterCount) {
  for (const auto& [name, count] : kExpected) {
    auto r = load_zoo_model(name);
    ASSERT_TRUE(r.ok()) << name << ": " << r.diagnostics().to_string();
    EXPECT_EQ(r->num_parameters(), count) << name;
    EXPECT_EQ(r->name, name);
    EXPECT_TRUE(r->arch.has_value()) << name;
    EXPECT_EQ(r->grad_order.size(), r->params.size()) << name;
  }
}

TEST(ModelZoo, ListIsSortedAndComplete) {
  auto zoo = list_zoo();
  ASSERT_EQ(zoo.size(), kExpected.size());
  for (std::size_t i = 0; i < zoo.size(); ++i) {
    EXPECT_EQ(zoo[i].name, kExpected[i].first);  // kExpected is in name order
    EXPECT_EQ(zoo[i].parameters, kExpected[i].second);
    EXPECT_FALSE(zoo[i].source.empty());
  }
  EXPECT_EQ(zoo[24].display_name, "Llama-2-7B");
  EXPECT_EQ(zoo[24].source,
            "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json");
}

TEST(ModelZoo, LookupIgnoresCaseAndAcceptsDisplayNamesAndRepoIds) {
  for (const char* n : {"LLAMA2-7B", "Llama-2-7B", "meta-llama/Llama-2-7b-hf"}) {
    auto r = load_zoo_model(n);
    ASSERT_TRUE(r.ok()) << n << ": " << r.diagnostics().to_string();
    EXPECT_EQ(r->name, "llama2-7b");
  }
  auto gpt2 = load_zoo_model("gpt2");
  ASSERT_TRUE(gpt2.ok());
  EXPECT_EQ(gpt2->name, "gpt2-small");
  EXPECT_EQ(gpt2->num_parameters(), 124439808u);
}

// Fine-tuning starts from the chat/instruct releases: each shares its base's config.json sizes
// (same architecture, vocabulary and widths; only generation settings differ), so the repo id
// names the same zoo model.
TEST(ModelZoo, InstructAndChatRepoIdsNameTheirBaseModel) {
  const std::vector<std::pair<std::string, std::string>> ids = {
      {"meta-llama/Llama-2-7b-chat-hf", "llama2-7b"},
      {"meta-llama/Llama-2-13b-chat-hf", "llama2-13b"},
      {"meta-llama/Llama-2-70b-chat-hf", "llama2-70b"},
      {"meta-llama/Meta-Llama-3-8B-Instruct", "llama3-8b"},
      {"meta-llama/Meta-Llama-3-70B-Instruct", "llama3-70b"},
      {"meta-llama/Llama-3.1-405B-Instruct", "llama3.1-405b"},
      {"mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b"},
      {"mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"},
      {"Qwen/Qwen2-7B-Instruct", "qwen2-7b"},
      {"google/gemma-7b-it", "gemma-7b"},
      {"google/gemma-2-9b-it", "gemma2-9b"},
      {"tiiuae/falcon-7b-instruct", "falcon-7b"},
      {"Qwen/Qwen1.5-MoE-A2.7B-Chat", "qwen1.5-moe-a2.7b"}};
  for (const auto& [id, name] : ids) {
    auto r = load_zoo_model(id);
    ASSERT_TRUE(r.ok()) << id << ": " << r.diagnostics().to_string();
    EXPECT_EQ(r->name, name) << id;
  }
  // A later release whose config differs is not an alias (Mistral-7B-Instruct-v0.2: a 32k
  // context, rope_theta 1e6, no sliding window): its config.json goes through --hf-config.
  EXPECT_FALSE(load_zoo_model("mistralai/Mistral-7B-Instruct-v0.2").ok());
}

TEST(ModelZoo, UnknownNameSuggestsAndPointsToTheList) {
  auto r = load_zoo_model("llama2-7");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().to_string(),
            "--model: model \"llama2-7\" is not in the zoo; pass its config.json with --hf-config "
            "(`zerosim models` lists the zoo) (did you mean \"llama2-7b\"?)\n");
  auto far = load_zoo_model("resnet50");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.diagnostics().to_string(),
            "--model: model \"resnet50\" is not in the zoo; pass its config.json with --hf-config "
            "(`zerosim models` lists the zoo)\n");
}

TEST(ModelZoo, NoSuggestionOfADifferentSize) {
  // qwen/qwen2-7b is one edit away from Qwen/Qwen2-72B but a tenth of its size; Mixtral-8x7B is
  // close to Mistral-7B but a mixture of experts. Neither is suggested.
  for (const char* n : {"Qwen/Qwen2-72B", "Qwen2-72B", "mistralai/Mixtral-8x22B-v0.1"}) {
    auto r = load_zoo_model(n);
    ASSERT_FALSE(r.ok()) << n;
    const auto text = r.diagnostics().to_string();
    EXPECT_EQ(text.find("did you mean"), std::string::npos) << text;
    EXPECT_NE(text.find("pass its config.json with --hf-config"), std::string::npos) << text;
  }
  auto typo = load_zoo_model("mixtral-8x7");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.diagnostics().to_string().find("did you mean \"mixtral-8x7b\"?"),
            std::string::npos)
      << typo.diagnostics().to_string();
}

const char* kTinyConfig = R"("hf_config": {"model_type": "gpt2", "n_embd": 32, "n_head": 4,
    "n_layer": 1, "n_positions": 8, "vocab_size": 10, "n_inner": 48})";

std::string tiny_file(const std::string& name, const std::string& params,
                      const std::string& extra = "") {
  return R"({"format": "zerosim-model", "version": 1, "name": ")" + name +
         R"(", "display_name": "Tiny", "source": "test", "parameters": )" + params + ", " + extra +
         kTinyConfig + "}";
}

TEST(ModelZoo, FileWhoseCountDisagreesFailsLoudly) {
  // wte 320 + wpe 256 + block 7504 + ln_f 64, tied head: 8144.
  auto good = load_zoo_file_text("tiny.json", tiny_file("tiny", "8144"));
  ASSERT_TRUE(good.ok()) << good.diagnostics().to_string();
  EXPECT_EQ(good->num_parameters(), 8144u);
  auto bad = load_zoo_file_text("tiny.json", tiny_file("tiny", "8145"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.diagnostics().to_string(),
            "models/zoo/tiny.json: /parameters: the model built from hf_config has 8144 "
            "parameters, the file says 8145\n");
}

TEST(ModelZoo, FileSchemaErrors) {
  auto renamed = load_zoo_file_text("tiny.json", tiny_file("other", "8144"));
  ASSERT_FALSE(renamed.ok());
  EXPECT_EQ(renamed.diagnostics().to_string(),
            "models/zoo/tiny.json: /name: name \"other\" must match the file name \"tiny\"\n");
  auto typo = load_zoo_file_text("tiny.json", tiny_file("tiny", "8144", R"("note": "x", )"));
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.diagnostics().to_string(),
            "models/zoo/tiny.json: /note: unknown key \"note\" (did you mean \"notes\"?)\n");
  auto config_error = load_zoo_file_text(
      "tiny.json", R"({"format": "zerosim-model", "version": 1, "name": "tiny", "display_name": "T",
      "source": "s", "parameters": 1, "hf_config": {"model_type": "gpt2", "n_embd": "big",
      "n_head": 4, "n_layer": 1, "n_positions": 8, "vocab_size": 10}})");
  ASSERT_FALSE(config_error.ok());
  EXPECT_EQ(
      config_error.diagnostics().to_string(),
      "models/zoo/tiny.json: /hf_config/n_embd: expected an integer 1..16777216, got \"big\"\n");
}

}  // namespace
}  // namespace zerosim
