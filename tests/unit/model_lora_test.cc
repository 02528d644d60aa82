// LoRA and QLoRA (zerosim/lora.h): trainable and total counts against what peft's
// print_trainable_parameters() printed for real checkpoints, the tensors peft declares (names,
// shapes, order, requires_grad), the module tree stage 3 hooks, FLOPs, adapter activations, the
// bitsandbytes storage and state, and every refusal.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hf_config_testlib.h"
#include "schedule/builders.h"
#include "zerosim/lora.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

using hftest::load_ok;
using hftest::Shape;
using hftest::zoo;

ModelDesc lora(const ModelDesc& base, std::uint64_t rank, std::vector<std::string> targets,
               BaseQuantization q = BaseQuantization::None, double dropout = 0) {
  LoraSpec s;
  s.rank = rank;
  s.targets = std::move(targets);
  s.quantization = q;
  s.dropout = dropout;
  auto r = apply_lora(base, s, DType::BFloat16, "test");
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

std::string lora_error(const ModelDesc& base, std::uint64_t rank,
                       std::vector<std::string> targets) {
  LoraSpec s;
  s.rank = rank;
  s.targets = std::move(targets);
  auto r = apply_lora(base, s, DType::BFloat16, "test");
  EXPECT_FALSE(r.ok());
  return r.diagnostics().to_string();
}

const ParamTensor* find(const ModelDesc& m, const std::string& name) {
  for (const auto& p : m.params)
    if (p.name == name) return &p;
  return nullptr;
}

int find_index(const ModelDesc& m, const std::string& name) {
  for (std::size_t i = 0; i < m.params.size(); ++i)
    if (m.params[i].name == name) return static_cast<int>(i);
  return -1;
}

const std::vector<std::string> kAllSeven = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                            "gate_proj", "up_proj", "down_proj"};

// --- Counts peft printed -------------------------------------------------------------------

TEST(Lora, Llama2SevenBRank8QueryValueMatchesPeft) {
  // Llama-2-7B, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]): peft prints
  // "trainable params: 4,194,304 || all params: 6,742,609,920" (the figure issue 11 quotes).
  // 32 layers x 2 modules x 8 x (4096 + 4096).
  const ModelDesc m = lora(zoo("llama2-7b"), 8, {"q_proj", "v_proj"});
  EXPECT_EQ(m.num_trainable(), 4194304u);
  EXPECT_EQ(m.num_logical_parameters(), 6742609920u);
  EXPECT_EQ(m.num_parameters(), 6742609920u);  // no quantization: storage == logical
}

TEST(Lora, Llama3EightBRank16AllLinearMatchesPeft) {
  // Llama-3-8B, r=16, target_modules="all-linear" (every projection, not lm_head): published
  // print_trainable_parameters output "trainable params: 41,943,040 || all params:
  // 8,072,204,288". Per layer 16 x (q 8192 + k 5120 + v 5120 + o 8192 + 3 x 18432) = 1,310,720.
  const ModelDesc m = lora(zoo("llama3-8b"), 16, {"all-linear"});
  EXPECT_EQ(m.num_trainable(), 41943040u);
  EXPECT_EQ(m.num_logical_parameters(), 8072204288u);
  EXPECT_EQ(find(m, "base_model.model.lm_head.lora_A.default.weight"), nullptr);
  // The seven names listed explicitly give the same adapters.
  EXPECT_EQ(lora(zoo("llama3-8b"), 16, kAllSeven).num_trainable(), 41943040u);
}

TEST(Lora, MistralSevenBRank16AllLinearHasLlama3Widths) {
  // Mistral-7B has Llama-3-8B's widths (h 4096, 8 KV heads, ffn 14336, 32 layers), so the same
  // 41,943,040 adapters; all params 7,241,732,096 + 41,943,040.
  const ModelDesc m = lora(zoo("mistral-7b"), 16, {"all-linear"});
  EXPECT_EQ(m.num_trainable(), 41943040u);
  EXPECT_EQ(m.num_logical_parameters(), 7283675136u);
}

TEST(Lora, Qwen2SevenBFourBitRank16AllSevenMatchesPeft) {
  // Qwen2.5-7B-Instruct (Qwen2-7B's architecture), QLoRA 4-bit NF4, r=16 on the seven
  // projections: a published training log prints "trainable params: 40,370,176 || all params:
  // 7,655,986,688" (peft counts a Params4bit by its logical elements). Per layer 16 x (q 7168 +
  // k 4096 + v 4096 + o 7168 + 3 x 22528) = 1,441,792; 28 layers.
  const ModelDesc m = lora(zoo("qwen2-7b"), 16, kAllSeven, BaseQuantization::Nf4);
  EXPECT_EQ(m.num_trainable(), 40370176u);
  EXPECT_EQ(m.num_logical_parameters(), 7655986688u);
  // Storage: the 28 x 233,046,016 Linear weight elements packed to a quarter (bf16 quant
  // storage); the untied 152064 x 3584 embedding and lm_head, norms and biases stay bf16.
  EXPECT_EQ(m.num_parameters(), 7655986688ull - 3 * (28ull * 233046016 / 4));
}

TEST(Lora, OptSixPointSevenBEightBitMatchesPeftNotebook) {
  // peft examples/int8_training/Finetune_opt_bnb_peft.ipynb: facebook/opt-6.7b loaded with
  // load_in_8bit, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]) (cell line 315) prints
  // "trainable params: 8388608 || all params: 6666862592" (line 307).
  const ModelDesc m = lora(zoo("opt-6.7b"), 16, {"q_proj", "v_proj"}, BaseQuantization::Int8);
  EXPECT_EQ(m.num_trainable(), 8388608u);
  EXPECT_EQ(m.num_logical_parameters(), 6666862592u);
}

TEST(Lora, Qwen25ThreeBDefaultTargetsMatchPeftReadme) {
  // peft README.md:47-57: Qwen/Qwen2.5-3B-Instruct, LoraConfig(r=16) with peft's default targets
  // for qwen2 (q_proj, v_proj) prints "trainable params: 3,686,400 || all params:
  // 3,089,625,088". 36 layers x 16 x (q 2048 + 2048, v 2048 + 256). Config values from the Hub.
  const ModelDesc base = load_ok(R"({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
    "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 151936,
    "max_position_embeddings": 32768, "tie_word_embeddings": true, "rms_norm_eps": 1e-06})");
  EXPECT_EQ(base.num_parameters(), 3085938688u);
  const ModelDesc m = lora(base, 16, {});
  EXPECT_EQ(m.num_trainable(), 3686400u);
  EXPECT_EQ(m.num_logical_parameters(), 3089625088u);
}

TEST(Lora, Llama32OneBQueryOnlyMatchesPeftQuicktour) {
  // peft docs/source/quicktour.md:19 and :94: meta-llama/Llama-3.2-1B,
  // LoraConfig(target_modules=["q_proj"], r=8) prints "trainable params: 524,288 || all params:
  // 1,236,338,688". 16 layers x 8 x (2048 + 2048).
  const ModelDesc base = load_ok(R"({"model_type": "llama", "hidden_size": 2048,
    "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": true})");
  const ModelDesc m = lora(base, 8, {"q_proj"});
  EXPECT_EQ(m.num_trainable(), 524288u);
  EXPECT_EQ(m.num_logical_parameters(), 1236338688u);
}

// --- What peft declares ---------------------------------------------------------------------

TEST(Lora, TensorsAreNamedShapedAndOrderedAsPeftDeclaresThem) {
  const ModelDesc m = lora(zoo("llama2-7b"), 8, {"q_proj"});
  const std::string q = "base_model.model.model.layers.0.self_attn.q_proj";
  const int base = find_index(m, q + ".base_layer.weight");
  ASSERT_GE(base, 0);
  ASSERT_LT(base + 2, static_cast<int>(m.params.size()));
  // base_layer first, then lora_A [r, in], lora_B [out, r] (peft layer.py:129-135, 263-264).
  EXPECT_FALSE(m.params[base].trainable);
  EXPECT_EQ(m.params[base + 1].name, q + ".lora_A.default.weight");
  EXPECT_EQ(m.params[base + 1].shape, (Shape{8, 4096}));
  EXPECT_TRUE(m.params[base + 1].trainable);
  EXPECT_EQ(m.params[base + 2].name, q + ".lora_B.default.weight");
  EXPECT_EQ(m.params[base + 2].shape, (Shape{4096, 8}));
  // Untargeted modules keep their names under the peft prefix, frozen.
  const auto* k = find(m, "base_model.model.model.layers.0.self_attn.k_proj.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(k->trainable);
  const auto* emb = find(m, "base_model.model.model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_FALSE(emb->trainable);
  // Only adapters have gradients: 2 per layer, lora_B ready before lora_A in backward.
  ASSERT_EQ(m.grad_order.size(), 64u);
  EXPECT_EQ(m.params[m.grad_order.front()].name,
            "base_model.model.model.layers.31.self_attn.q_proj.lora_B.default.weight");
  for (auto id : m.grad_order) EXPECT_TRUE(m.params[id].trainable);
}

TEST(Lora, ModuleTreeWrapsTargetsAndKeepsHooksNested) {
  const ModelDesc m = lora(zoo("llama2-7b"), 8, {"v_proj"}, BaseQuantization::None, 0.05);
  ASSERT_FALSE(m.modules.empty());
  EXPECT_EQ(m.modules[0].type, "PeftModelForCausalLM");
  std::vector<std::string> under_v;
  const std::string v = "base_model.model.model.layers.3.self_attn.v_proj";
  std::uint32_t v_id = kNoModule;
  for (std::uint32_t i = 0; i < m.modules.size(); ++i) {
    if (m.modules[i].name == v) v_id = i;
    if (v_id != kNoModule && m.modules[i].parent != kNoModule &&
        m.modules[i].name.rfind(v + ".", 0) == 0)
      under_v.push_back(m.modules[i].name + ":" + m.modules[i].type);
  }
  ASSERT_NE(v_id, kNoModule);
  EXPECT_EQ(m.modules[v_id].type, "Linear");
  EXPECT_TRUE(m.modules[v_id].param_ids.empty());
  EXPECT_EQ(under_v,
            (std::vector<std::string>{v + ".base_layer:Linear", v + ".lora_dropout:ModuleDict",
                                      v + ".lora_dropout.default:Dropout", v + ".lora_A:ModuleDict",
                                      v + ".lora_A.default:Linear", v + ".lora_B:ModuleDict",
                                      v + ".lora_B.default:Linear"}));
  // The wrapped HF model's own forward is bypassed (LoraModel calls model.forward).
  for (const auto& n : m.modules) {
    if (n.name == "base_model.model") {
      EXPECT_FALSE(n.called);
    }
  }
  // Events properly nested, each called module once.
  std::vector<std::uint32_t> stack;
  std::vector<int> begun(m.modules.size(), 0);
  for (const auto& c : m.module_calls) {
    ASSERT_LT(c.module, m.modules.size());
    if (c.begin) {
      ++begun[c.module];
      stack.push_back(c.module);
    } else {
      ASSERT_FALSE(stack.empty());
      EXPECT_EQ(stack.back(), c.module);
      stack.pop_back();
    }
  }
  EXPECT_TRUE(stack.empty());
  for (std::uint32_t i = 0; i < m.modules.size(); ++i)
    EXPECT_EQ(begun[i], m.modules[i].called ? 1 : 0) << m.modules[i].name;
}

TEST(Lora, AdaptersAddTheirFlopsAndActivations) {
  const ModelDesc base = zoo("llama2-7b");
  const ModelDesc m = lora(base, 8, {"q_proj", "v_proj"});
  ASSERT_EQ(m.layers.size(), base.layers.size());
  // Block 0: two adapters, each 2 x 8 x (4096 + 4096) FLOPs per token more.
  EXPECT_DOUBLE_EQ(m.layers[1].fwd_flops_per_token - base.layers[1].fwd_flops_per_token,
                   2.0 * 2 * 8 * 8192);
  TrainingSettings t;
  t.seq_len = 1024;
  t.micro_batch = 2;
  const Bytes a0 = activation_bytes(base, t, DType::BFloat16);
  // p = 0: lora_B's rank-8 input per adapter, 64 adapters, 2 bytes, s*b tokens.
  EXPECT_EQ(activation_bytes(m, t, DType::BFloat16) - a0, 2048ull * 64 * 8 * 2);
  // p > 0: plus each adapter's dropout output (LP) and mask (1 byte) over its input width.
  const ModelDesc d = lora(base, 8, {"q_proj", "v_proj"}, BaseQuantization::None, 0.1);
  EXPECT_EQ(activation_bytes(d, t, DType::BFloat16) - a0, 2048ull * 64 * (2 * (8 + 4096) + 4096));
  // Full checkpointing keeps one block's adapters (its recompute).
  t.activation_checkpointing = true;
  EXPECT_EQ(activation_bytes(m, t, DType::BFloat16) - activation_bytes(base, t, DType::BFloat16),
            2048ull * 2 * 8 * 2);
}

TEST(Lora, BackwardSkipsTheFrozenWeightsGradientGemms) {
  const ModelDesc base = zoo("llama2-7b");
  const ModelDesc m = lora(base, 8, {"q_proj", "v_proj"});
  // A Llama-2-7B block's matmul weights, all frozen: q, k, v, o (4096 x 4096 each) and gate, up,
  // down (4096 x 11008 each); each costs 2 x numel FLOPs per token of weight gradient.
  const double frozen = 2.0 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008);
  EXPECT_DOUBLE_EQ(m.layers[1].frozen_weight_grad_flops_per_token, frozen);
  EXPECT_DOUBLE_EQ(base.layers[1].frozen_weight_grad_flops_per_token, 0.0);
  TrainingSettings t;
  t.seq_len = 1024;
  t.micro_batch = 2;
  const double tokens = 2048;
  // Full fine-tuning: backward is twice the forward. LoRA: twice the forward (input gradients of
  // everything, weight gradients of the adapters, attention's s^2 terms) less the frozen weights'.
  EXPECT_DOUBLE_EQ(schedule::layer_backward_flops(base, 1, t),
                   2 * schedule::layer_forward_flops(base, 1, t));
  EXPECT_DOUBLE_EQ(schedule::layer_backward_flops(m, 1, t),
                   2 * schedule::layer_forward_flops(m, 1, t) - frozen * tokens);
  // The embedding has no matmul, so nothing to skip.
  EXPECT_DOUBLE_EQ(schedule::layer_backward_flops(m, 0, t), 0.0);
}

TEST(Lora, MixtralExpertAdaptersCountEveryExpertButComputeTopK) {
  // Mixtral-8x7B, r = 8 on each expert's w1 (Linear 4096 -> 14336) and the router gate.
  const ModelDesc base = zoo("mixtral-8x7b");
  const ModelDesc m = lora(base, 8, {"w1", "gate"});
  // Parameters: every expert has its adapters: 32 x (8 x 8 x (4096 + 14336) + 8 x (4096 + 8)).
  EXPECT_EQ(m.num_trainable(), 32u * (8 * 8 * 18432 + 8 * 4104));
  // FLOPs per token: a token passes 2 of the 8 experts, so 2 expert adapters plus the router's.
  EXPECT_DOUBLE_EQ(m.layers[1].fwd_flops_per_token - base.layers[1].fwd_flops_per_token,
                   2.0 * 8 * 18432 * 2 + 2.0 * 8 * 4104);
  // Activations: per token and block, 2 routed adapters' and the router adapter's rank-8 inputs.
  TrainingSettings t;
  t.seq_len = 512;
  t.micro_batch = 1;
  EXPECT_EQ(activation_bytes(m, t, DType::BFloat16) - activation_bytes(base, t, DType::BFloat16),
            512ull * 32 * (2 * 8 + 8) * 2);
}

// --- bitsandbytes ---------------------------------------------------------------------------

TEST(Lora, FourBitPacksLinearWeightsAndCountsTheirState) {
  const ModelDesc m = lora(zoo("llama2-7b"), 8, {"q_proj", "v_proj"}, BaseQuantization::Nf4);
  const auto* q = find(m, "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->quant_bits, 4);
  EXPECT_EQ(q->logical_numel, 16777216u);
  // (n + 1) // (2 x itemsize) elements of the bf16 quant storage (bitsandbytes cuda/ops.py:392).
  EXPECT_EQ(q->numel, 4194304u);
  EXPECT_EQ(q->shape, (Shape{4194304, 1}));
  const auto* k = find(m, "base_model.model.model.layers.0.self_attn.k_proj.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->quant_bits, 4);  // every Linear, targeted or not
  for (const char* plain :
       {"base_model.model.lm_head.weight", "base_model.model.model.embed_tokens.weight",
        "base_model.model.model.norm.weight",
        "base_model.model.model.layers.0.input_layernorm.weight",
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight"}) {
    const auto* p = find(m, plain);
    ASSERT_NE(p, nullptr) << plain;
    EXPECT_EQ(p->quant_bits, 0) << plain;
  }
  // Per layer: 4 attention weights of 16,777,216 elements (262,144 blocks of 64: uint8 absmax
  // 262,144 + fp32 absmax per 256 blocks 4 x 1,024 + offset 4 + NF4 code 64 = 266,308 B) and 3
  // MLP weights of 45,088,768 (704,512 blocks: 704,512 + 4 x 2,752 + 68 = 715,588 B):
  // 3,211,996 B; 32 layers, plus the 1,024 B dynamic map once.
  EXPECT_EQ(quantization_state_bytes(m), 32ull * 3211996 + 1024);
  EXPECT_EQ(dequantized_weight_bytes(m, DType::BFloat16), 45088768ull * 2);
  // Storage: every quantized weight is a quarter of its bf16 elements.
  EXPECT_EQ(m.num_logical_parameters(), 6742609920u);
  EXPECT_EQ(m.num_parameters(), 6742609920u - 3 * (6476005376u / 4));
}

TEST(Lora, EightBitKeepsOneByteAndARowScale) {
  const ModelDesc m = lora(zoo("opt-125m"), 8, {"q_proj"}, BaseQuantization::Int8);
  const auto* q =
      find(m, "base_model.model.model.decoder.layers.0.self_attn.q_proj.base_layer.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->quant_bits, 8);
  EXPECT_EQ(q->numel, 768u * 768 / 2);  // 768 x 768 int8 bytes as bf16 elements
  EXPECT_EQ(q->logical_rows, 768u);
  // OPT-125m: 12 layers x (4 x 768 + fc1 3072 + fc2 768 output rows) x 4 B of SCB.
  EXPECT_EQ(quantization_state_bytes(m), 12ull * (4 * 768 + 3072 + 768) * 4);
}

// --- Refusals -------------------------------------------------------------------------------

TEST(Lora, RefusesTargetsPeftWouldRefuseOrZerosimCannotModel) {
  const ModelDesc llama = zoo("llama2-7b");
  EXPECT_NE(lora_error(llama, 8, {"qproj"}).find("target \"qproj\" matches no module"),
            std::string::npos);
  EXPECT_NE(lora_error(llama, 8, {"mlp"}).find("LlamaMLP"), std::string::npos);
  EXPECT_NE(lora_error(llama, 8, {"embed_tokens"}).find("Linear/Conv1D"), std::string::npos);
  EXPECT_NE(lora_error(llama, 0, {"q_proj"}).find("rank >= 1"), std::string::npos);
  // GPT-2's lm_head shares wte's weight.
  EXPECT_NE(lora_error(zoo("gpt2-small"), 8, {"lm_head"}).find("tied"), std::string::npos);
  auto list = load_param_list_text(R"({"params": [["w", [4, 4]]]})", "p.json");
  ASSERT_TRUE(list.ok());
  EXPECT_NE(lora_error(list.value(), 8, {"w"}).find("module tree"), std::string::npos);
}

TEST(Lora, Gpt2ConvOneDAdaptersReadInAndOutFromTheTransposedWeight) {
  // Conv1D stores [in, out]: c_attn is [768, 2304], so lora_A [r, 768], lora_B [2304, r].
  const ModelDesc m = lora(zoo("gpt2-small"), 4, {});  // peft's default for gpt2: c_attn
  const auto* a = find(m, "base_model.model.transformer.h.0.attn.c_attn.lora_A.default.weight");
  const auto* b = find(m, "base_model.model.transformer.h.0.attn.c_attn.lora_B.default.weight");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->shape, (Shape{4, 768}));
  EXPECT_EQ(b->shape, (Shape{2304, 4}));
  EXPECT_EQ(m.num_trainable(), 12u * 4 * (768 + 2304));
}

}  // namespace
}  // namespace zerosim
