// --trainer-config for TRL (`trl sft --config`, trl v1.9.0) and the trainers' attention keys. A
// TRL YAML was read as LLaMA-Factory (model_name_or_path is both trainers' key): LoRA rank 8 and
// checkpointing were invented from LLaMA-Factory's defaults while use_peft, gradient_checkpointing
// and max_length were dropped; a TRL JSON was bare TrainingArguments, so a QLoRA job was planned
// as a full fine-tune; and no trainer's attention setting reached the plan (all found by a
// new-user pass). Each test fails on the code before the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "temp_path.h"
#include "unit/cli_testlib.h"
#include "zerosim/trainer_config.h"

namespace zerosim {
namespace {

using clitest::CliRun;
using clitest::run_cli;

std::string first_error(const Result<TrainerConfig>& r) {
  EXPECT_FALSE(r.ok());
  return r.diagnostics().items().empty() ? "" : r.diagnostics().items()[0].to_string();
}

TEST(TrainerConfigTrl, AYamlWithTrlsKeysIsTrlWithTrlsDefaults) {
  auto c = load_trainer_config_text(
      "model_name_or_path: meta-llama/Meta-Llama-3-8B\ndataset_name: trl-lib/Capybara\n"
      "per_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n",
      "sft.yaml");
  ASSERT_TRUE(c.ok()) << c.diagnostics().to_string();
  EXPECT_EQ(c->format, TrainerFormat::Trl);
  EXPECT_FALSE(c->lora);  // not LLaMA-Factory's finetuning_type lora
  trainer_defaults(c.value());
  EXPECT_FALSE(c->lora->value);
  EXPECT_EQ(c->lora->key, "use_peft");
  EXPECT_EQ(c->seq_len->value, 1024u);  // SFTConfig.max_length
  EXPECT_TRUE(c->gradient_checkpointing->value);
  EXPECT_TRUE(c->gradient_checkpointing->from_default);
  EXPECT_EQ(c->precision->value, DType::BFloat16);  // bf16 = not fp16
  EXPECT_FALSE(c->lora_rank);
}

TEST(TrainerConfigTrl, WrittenValuesWin) {
  auto c = load_trainer_config_text(
      "model_name_or_path: m\nuse_peft: true\nlora_r: 32\nlora_target_modules: [q_proj, v_proj]\n"
      "load_in_4bit: true\nmax_length: 8192\ngradient_checkpointing: false\nfp16: false\n"
      "attn_implementation: eager\nuse_dora: true\n",
      "sft.yaml");
  ASSERT_TRUE(c.ok()) << c.diagnostics().to_string();
  EXPECT_EQ(c->format, TrainerFormat::Trl);
  trainer_defaults(c.value());
  EXPECT_TRUE(c->lora->value);
  EXPECT_EQ(c->lora_rank->value, 32u);
  EXPECT_EQ(c->lora_alpha->value, 32.0);  // ModelConfig's default, not peft's 8
  EXPECT_EQ(c->lora_dropout->value, 0.05);
  EXPECT_EQ(c->lora_targets->value, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(c->quantization->value, BaseQuantization::Nf4);
  EXPECT_EQ(c->seq_len->value, 8192u);
  EXPECT_FALSE(c->gradient_checkpointing->value);
  EXPECT_EQ(c->precision->value, DType::BFloat16);  // fp16: false alone is still bf16
  ASSERT_TRUE(c->eager_attention);
  EXPECT_TRUE(c->eager_attention->value);
  ASSERT_EQ(c->not_modelled.size(), 2u);
  // TRL's 4-bit config double-quantizes only with use_bnb_nested_quant.
  EXPECT_EQ(c->not_modelled[0].rfind("use_bnb_nested_quant not true: TRL keeps", 0), 0u);
  EXPECT_EQ(c->not_modelled[1], "use_dora: true");
  EXPECT_EQ(
      first_error(load_trainer_config_text("model_name_or_path: m\nmax_length: ~\n", "s.yaml")),
      "s.yaml:2:1: max_length: expected an integer 1..16777216, got null (TRL then truncates "
      "nothing: the sequence length is the longest sample's; write it)");
}

TEST(TrainerConfigTrl, AJsonWithTrlsKeysIsTrl) {
  auto c = load_trainer_config_text(
      R"({"model_name_or_path": "m", "bf16": true, "use_peft": true, "lora_r": 16,
          "lora_target_modules": "all-linear", "load_in_4bit": true})",
      "args.json");
  ASSERT_TRUE(c.ok()) << c.diagnostics().to_string();
  EXPECT_EQ(c->format, TrainerFormat::Trl);
  EXPECT_TRUE(c->lora->value);
  EXPECT_EQ(c->lora->pointer, "/use_peft");
  EXPECT_EQ(c->quantization->value, BaseQuantization::Nf4);
  // Without a TRL key it is TrainingArguments, whose defaults differ.
  auto plain = load_trainer_config_text(R"({"model_name_or_path": "m"})", "args.json");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->format, TrainerFormat::TrainingArgumentsJson);
  trainer_defaults(plain.value());
  EXPECT_FALSE(plain->gradient_checkpointing->value);
  EXPECT_EQ(plain->precision->value, DType::Float32);
}

// A LLaMA-Factory key keeps a file LLaMA-Factory's, as before.
TEST(TrainerConfigTrl, ALlamaFactoryKeyKeepsTheFileLlamaFactorys) {
  auto c = load_trainer_config_text(
      "model_name_or_path: m\nfinetuning_type: lora\nmax_length: 10\ntemplate: llama3\n",
      "lf.yaml");
  ASSERT_TRUE(c.ok()) << c.diagnostics().to_string();
  EXPECT_EQ(c->format, TrainerFormat::LlamaFactory);
}

TEST(TrainerConfigAttention, EachTrainersKeyGivesTheKind) {
  struct Case {
    const char* text;
    bool eager;
  };
  for (const Case& t :
       {Case{"model_name_or_path: m\nfinetuning_type: lora\nflash_attn: disabled\n", true},
        Case{"model_name_or_path: m\nfinetuning_type: lora\nflash_attn: sdpa\n", false},
        Case{"model_name_or_path: m\nfinetuning_type: lora\nflash_attn: fa2\n", false},
        Case{"base_model: m\nmicro_batch_size: 1\nbatch_size: 1\n"
             "eager_attention: true\n",
             true},
        Case{"base_model: m\nmicro_batch_size: 1\nbatch_size: 1\n"
             "attn_implementation: flash_attention_2\n",
             false},
        // axolotl's priority: eager_attention is the last legacy flag.
        Case{"base_model: m\nmicro_batch_size: 1\nbatch_size: 1\n"
             "flash_attention: true\neager_attention: true\n",
             false},
        Case{"model_name_or_path: m\nattn_implementation: eager\n", true}}) {
    auto c = load_trainer_config_text(t.text, "t.yaml");
    ASSERT_TRUE(c.ok()) << c.diagnostics().to_string() << t.text;
    ASSERT_TRUE(c->eager_attention) << t.text;
    EXPECT_EQ(c->eager_attention->value, t.eager) << t.text;
  }
  const std::string axo = "base_model: m\nmicro_batch_size: 1\nbatch_size: 1\n";
  EXPECT_EQ(first_error(load_trainer_config_text(
                axo + "attn_implementation: sdpa\nflash_attention: true\n", "a.yml")),
            "a.yml:4:22: attn_implementation: attn_implementation cannot be combined with the "
            "legacy flag flash_attention (axolotl refuses it: set only attn_implementation)");
  EXPECT_NE(first_error(load_trainer_config_text(axo + "attn_implementation: flash\n", "a.yml"))
                .find("(axolotl refuses other names), got flash"),
            std::string::npos);
  EXPECT_EQ(first_error(load_trainer_config_text(
                "model_name_or_path: m\nfinetuning_type: lora\nflash_attn: fast\n", "t.yaml")),
            "t.yaml:3:13: flash_attn: expected auto, disabled, sdpa, fa2 or fa3, got fast");
}

TEST(TrainerCliTrl, PlansTheTrlJobAndTheFilesAttention) {
  const std::string dir = testutil::unique_temp_path("trainer_trl");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/sft.yaml")
      << "model_name_or_path: meta-llama/Meta-Llama-3-8B\ndataset_name: trl-lib/Capybara\n"
         "per_device_train_batch_size: 2\ngradient_checkpointing: false\nbf16: true\n"
         "max_length: 2048\nuse_peft: false\n";
  CliRun r = run_cli("plan --trainer-config " + dir + "/sft.yaml --gpus 8 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plan = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(plan.is_discarded()) << r.out.substr(0, 300);
  EXPECT_EQ(plan["model"]["trainable_parameters"], plan["model"]["parameters"])
      << plan["model"].dump();
  EXPECT_EQ(plan["training"]["seq_len"], 2048);
  EXPECT_FALSE(plan["training"]["activation_checkpointing"].get<bool>());
  // LLaMA-Factory's flash_attn: disabled is eager attention: more activations than sdpa.
  const std::string lf =
      "model_name_or_path: meta-llama/Meta-Llama-3-8B\nfinetuning_type: lora\n"
      "cutoff_len: 2048\nper_device_train_batch_size: 1\nbf16: true\n";
  std::ofstream(dir + "/eager.yaml") << lf << "flash_attn: disabled\n";
  std::ofstream(dir + "/sdpa.yaml") << lf << "flash_attn: sdpa\n";
  std::ofstream(dir + "/plain.yaml") << lf;
  auto activations = [&](const std::string& file, const std::string& flags) {
    CliRun p = run_cli("plan --trainer-config " + dir + "/" + file + " --gpus 2 " + flags +
                       " --format json");
    EXPECT_EQ(p.exit_code, 0) << p.err;
    auto j = nlohmann::json::parse(p.out, nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j["rows"][0]["activations_bytes"];
  };
  EXPECT_EQ(plan["training"]["flash_attention"], true);
  EXPECT_EQ(activations("eager.yaml", ""), activations("plain.yaml", "--attention eager"));
  EXPECT_EQ(activations("sdpa.yaml", ""), activations("plain.yaml", ""));
  EXPECT_NE(activations("eager.yaml", ""), activations("sdpa.yaml", ""));
  CliRun conflict = run_cli("plan --trainer-config " + dir + "/eager.yaml --attention flash");
  EXPECT_EQ(conflict.exit_code, 1);
  EXPECT_NE(conflict.err.find("--attention: conflicts with " + dir +
                              "/eager.yaml:6:13 flash_attn (eager attention); change one of them"),
            std::string::npos)
      << conflict.err;
  // LLaMA-Factory without bf16/fp16: an adapter run warns that its fp32 base is an upper bound
  // (LLaMA-Factory keeps it 16-bit); a full fine-tune or --precision does not.
  std::ofstream(dir + "/fp32.yaml") << "model_name_or_path: meta-llama/Meta-Llama-3-8B\n"
                                       "finetuning_type: lora\ncutoff_len: 1024\n";
  std::ofstream(dir + "/full.yaml") << "model_name_or_path: meta-llama/Meta-Llama-3-8B\n"
                                       "finetuning_type: full\ncutoff_len: 1024\n";
  const std::string warning =
      "fp32 training: LLaMA-Factory loads the frozen base in the "
      "checkpoint's 16-bit dtype";
  CliRun fp32 = run_cli("plan --trainer-config " + dir + "/fp32.yaml --gpus 8");
  EXPECT_NE((fp32.out + fp32.err).find(warning), std::string::npos) << fp32.err;
  CliRun flag = run_cli("plan --trainer-config " + dir + "/fp32.yaml --gpus 8 --precision bf16");
  EXPECT_EQ((flag.out + flag.err).find(warning), std::string::npos);
  CliRun full = run_cli("plan --trainer-config " + dir + "/full.yaml --gpus 8");
  EXPECT_EQ((full.out + full.err).find(warning), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zerosim
