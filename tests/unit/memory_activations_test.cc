// Activation memory (Korthikanti et al. 2022 §4.1, generalised): the paper's 34sbh + 5as²b per
// layer for GPT-3-style settings, every generalised term (no dropout, flash attention, GQA, gated
// MLP), full checkpointing, linearity in the micro-batch, and models without ArchInfo.
#include <gtest/gtest.h>

#include "memory_test_util.h"
#include "zerosim/memory_model.h"

namespace zerosim {
namespace {

// GPT-3 175B: h 12288, a 96, L 96, ffn 4h, vocab 50257, dropout, MHA.
ModelDesc gpt3(std::uint64_t layers = 96) {
  ModelDesc m;
  m.name = "gpt3-like";
  ArchInfo a;
  a.hidden = 12288;
  a.layers = layers;
  a.heads = 96;
  a.kv_heads = 96;
  a.ffn = 4 * 12288;
  a.vocab = 50257;
  a.dropout = true;
  m.arch = a;
  return m;
}

TrainingSettings eager(std::uint64_t b = 1, std::uint64_t s = 2048) {
  TrainingSettings t;
  t.micro_batch = b;
  t.seq_len = s;
  t.flash_attention = false;
  return t;
}

constexpr Bytes kS = 2048, kH = 12288, kA = 96, kV = 50257;
constexpr Bytes kSbh = kS * kH;                                // b = 1
constexpr Bytes kPerLayer = 34 * kSbh + 5 * kA * kS * kS;      // Korthikanti et al. eq. (1)
constexpr Bytes kOutside = 2 * 2 * kSbh + kSbh + 6 * kS * kV;  // norm + head inputs, mask, logits

TEST(MemoryActivations, PaperFormulaPerLayer) {
  const Bytes one = activation_bytes(gpt3(1), eager(), DType::Float16);
  const Bytes two = activation_bytes(gpt3(2), eager(), DType::Float16);
  EXPECT_EQ(two - one, kPerLayer);  // 34sbh + 5as²b = 2,868,903,936 B
  EXPECT_EQ(kPerLayer, 2868903936u);
  EXPECT_EQ(one, kPerLayer + kOutside);
  EXPECT_EQ(activation_bytes(gpt3(), eager(), DType::Float16), 96 * kPerLayer + kOutside);
  EXPECT_EQ(activation_bytes(gpt3(), eager(), DType::Float16), 276158164992u);
}

TEST(MemoryActivations, FullCheckpointingKeepsLayerInputsAndOneLayer) {
  TrainingSettings t = eager();
  t.activation_checkpointing = true;
  const Bytes ckpt = activation_bytes(gpt3(), t, DType::Float16);
  EXPECT_EQ(ckpt, 96 * 2 * kSbh + kPerLayer + kOutside);
  EXPECT_EQ(ckpt, 8444129280u);
  EXPECT_LT(ckpt, activation_bytes(gpt3(), eager(), DType::Float16));
}

TEST(MemoryActivations, LinearAndMonotonicInMicroBatch) {
  const Bytes b1 = activation_bytes(gpt3(), eager(1), DType::Float16);
  const Bytes b2 = activation_bytes(gpt3(), eager(2), DType::Float16);
  const Bytes b4 = activation_bytes(gpt3(), eager(4), DType::Float16);
  EXPECT_LT(b1, b2);
  EXPECT_LT(b2, b4);
  EXPECT_EQ(b2, 2 * b1);
  EXPECT_EQ(b4, 4 * b1);
}

TEST(MemoryActivations, EachGeneralisedTerm) {
  const Bytes base = activation_bytes(gpt3(1), eager(), DType::Float16);
  // No dropout: hidden masks 2sbh, the scores' mask as²b and dropout output 2as²b, embedding mask
  // sbh.
  ModelDesc nodrop = gpt3(1);
  nodrop.arch->dropout = false;
  EXPECT_EQ(base - activation_bytes(nodrop, eager(), DType::Float16),
            2 * kSbh + 3 * kA * kS * kS + kSbh);
  // Flash attention (no dropout): the softmax output 2as²b becomes a fp32 log-sum-exp 4as.
  TrainingSettings flash = eager();
  flash.flash_attention = true;
  EXPECT_EQ(activation_bytes(nodrop, eager(), DType::Float16) -
                activation_bytes(nodrop, flash, DType::Float16),
            2 * kA * kS * kS - 4 * kA * kS);
  // Flash attention with dropout: also no s² mask or dropout output.
  EXPECT_EQ(base - activation_bytes(gpt3(1), flash, DType::Float16),
            5 * kA * kS * kS - 4 * kA * kS);
  // GQA with 8 KV heads: K and V shrink from h to h/12 wide.
  ModelDesc gqa = gpt3(1);
  gqa.arch->kv_heads = 8;
  EXPECT_EQ(base - activation_bytes(gqa, eager(), DType::Float16), 2 * 2 * kS * (kH - kH * 8 / 96));
  // head_dim set explicitly (128 = h / a here): no change.
  ModelDesc hd = gpt3(1);
  hd.arch->head_dim = 128;
  EXPECT_EQ(activation_bytes(hd, eager(), DType::Float16), base);
  // Gated MLP: four ffn-sized tensors instead of two.
  ModelDesc gated = gpt3(1);
  gated.arch->gated_mlp = true;
  EXPECT_EQ(activation_bytes(gated, eager(), DType::Float16) - base, 2 * 2 * kS * 4 * kH);
  // fp32 activations: every LP tensor doubles, masks (1 byte) and the fp32 logits copy do not.
  const Bytes fp32 = activation_bytes(gpt3(1), eager(), DType::Float32);
  EXPECT_EQ(fp32 - base, (34 - 2) * kSbh + 4 * kA * kS * kS + 4 * kSbh + 2 * kS * kV);
}

TEST(MemoryActivations, NoArchInfoMeansZeroWithANote) {
  ModelDesc m = memtest::sized_model({1000});
  EXPECT_EQ(activation_bytes(m, eager(), DType::Float16), 0u);
  auto r =
      estimate_memory(m, memtest::plan_for(m, 2, 2), default_ds_config(2, DType::Float16),
                      memtest::cluster_of(2), eager(), Accounting::DeepSpeed, memtest::kNoOverhead);
  EXPECT_EQ(r.activations, 0u);
  bool noted = false;
  for (const auto& n : r.notes)
    noted = noted || n.find("activations not counted") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(MemoryActivations, AbsurdSizesSaturateInsteadOfWrapping) {
  TrainingSettings t = eager(1000000, 100000000);
  EXPECT_EQ(activation_bytes(gpt3(), t, DType::Float16), UINT64_MAX);
}

TEST(MemoryActivations, CountedInTheBackwardPhase) {
  ModelDesc m = gpt3(2);
  m.params = memtest::sized_model({1000, 1000}).params;
  auto r =
      estimate_memory(m, memtest::plan_for(m, 2, 2), default_ds_config(2, DType::Float16),
                      memtest::cluster_of(2), eager(), Accounting::DeepSpeed, memtest::kNoOverhead);
  EXPECT_EQ(r.peak_phase, "backward");
  EXPECT_EQ(r.activations, 2 * kPerLayer + kOutside);
  EXPECT_EQ(
      memtest::item(
          r, "activations (Korthikanti et al. 2022): b = 1, s = 2048, L = 2, eager attention"),
      2 * kPerLayer + kOutside);
}

}  // namespace
}  // namespace zerosim
