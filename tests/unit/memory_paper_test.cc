// Paper accounting: ZeRO paper Table 1 (Rajbhandari et al. 2020, model-state memory per device for
// 7.5B, 128B and 1T parameters at DP 1..1024, P_os / P_os+g / P_os+g+p), the 13B example, and the
// paper mode of estimate_memory.
#include <gtest/gtest.h>

#include "memory_test_util.h"
#include "zerosim/memory_model.h"

namespace zerosim {
namespace {

using memtest::cluster_of;
using memtest::kNoOverhead;
using memtest::sized_model;

// A printed table cell: `digits` with `decimals` decimals (31.4 = {314, 1}), in GB = 1e9 bytes.
struct Cell {
  std::uint64_t digits;
  int decimals;
};

Bytes unit_of(const Cell& c) {
  Bytes u = 1000000000;
  for (int i = 0; i < c.decimals; ++i) u /= 10;
  return u;
}

struct TableColumn {
  Elements psi;
  bool rounded;      // the 7.5B columns are rounded half-up; the larger ones are printed truncated
  Cell cells[6][3];  // DP 1, 4, 16, 64, 256, 1024 x (Pos, Pos+g, Pos+g+p) = stage 1, 2, 3
};

constexpr std::uint64_t kDp[6] = {1, 4, 16, 64, 256, 1024};

const TableColumn kTable1[] = {
    {7500000000,
     true,
     {{{120, 0}, {120, 0}, {120, 0}},
      {{525, 1}, {413, 1}, {30, 0}},
      {{356, 1}, {216, 1}, {75, 1}},
      {{314, 1}, {166, 1}, {188, 2}},
      {{304, 1}, {154, 1}, {47, 2}},
      {{301, 1}, {151, 1}, {12, 2}}}},
    {128000000000,
     false,
     {{{2048, 0}, {2048, 0}, {2048, 0}},
      {{896, 0}, {704, 0}, {512, 0}},
      {{608, 0}, {368, 0}, {128, 0}},
      {{536, 0}, {284, 0}, {32, 0}},
      {{518, 0}, {263, 0}, {8, 0}},
      {{513, 0}, {257, 0}, {2, 0}}}},
    {1000000000000,
     false,
     {{{16000, 0}, {16000, 0}, {16000, 0}},
      {{7000, 0}, {5500, 0}, {4000, 0}},
      {{4750, 0}, {2875, 0}, {1000, 0}},
      {{4187, 0}, {2218, 0}, {250, 0}},
      {{4046, 0}, {2054, 0}, {625, 1}},
      {{4011, 0}, {2013, 0}, {156, 1}}}},
};

TEST(MemoryPaper, ZeroPaperTable1CellByCell) {
  for (const auto& col : kTable1) {
    for (int row = 0; row < 6; ++row) {
      for (int stage = 1; stage <= 3; ++stage) {
        const Cell& cell = col.cells[row][stage - 1];
        const Bytes v = paper_model_states(col.psi, kDp[row], stage);
        const Bytes unit = unit_of(cell);
        const std::uint64_t half_up = (v + unit / 2) / unit;
        const std::uint64_t truncated = v / unit;
        if (col.rounded)
          EXPECT_EQ(half_up, cell.digits) << col.psi << " DP " << kDp[row] << " stage " << stage;
        else
          EXPECT_TRUE(cell.digits == truncated || cell.digits == half_up)
              << col.psi << " DP " << kDp[row] << " stage " << stage << ": " << v << " B";
      }
    }
  }
}

TEST(MemoryPaper, ExactValues) {
  EXPECT_EQ(paper_model_states(7500000000, 64, 1), 31406250000u);   // 4Ψ + 12Ψ/64
  EXPECT_EQ(paper_model_states(7500000000, 64, 2), 16640625000u);   // 2Ψ + 14Ψ/64
  EXPECT_EQ(paper_model_states(7500000000, 64, 3), 1875000000u);    // 16Ψ/64
  EXPECT_EQ(paper_model_states(7500000000, 64, 0), 120000000000u);  // 16Ψ, N ignored
  // One floor on the exact product: 2 + floor(14/7) = 4 (flooring 2Ψ/N and 12Ψ/N apart gives 3).
  EXPECT_EQ(paper_model_states(1, 7, 2), 4u);
  EXPECT_EQ(paper_model_states(1000, 8, 2, 8), 2000u + 1250u);  // K = 8: fp32 Adam without master
  EXPECT_EQ(paper_model_states(1000000000000000, 1, 0), 16000000000000000u);  // 1e15: no overflow
  EXPECT_EQ(paper_model_states(1000, 0, 2), 0u);                              // no answer for N = 0
  EXPECT_EQ(paper_model_states(1000, 8, 4), 0u);                              // no stage 4
}

TEST(MemoryPaper, ThirteenBillionUnderPlainDataParallelism) {
  EXPECT_EQ(paper_model_states(13000000000, 1, 0), 208000000000u);  // 16 x 13e9
  const ModelDesc m = sized_model({13000000000});
  auto r = estimate_memory(m, PartitionPlan{}, default_ds_config(0, DType::Float16), cluster_of(1),
                           TrainingSettings{}, Accounting::Paper, kNoOverhead);
  EXPECT_EQ(r.params, 26000000000u);
  EXPECT_EQ(r.grads, 26000000000u);
  EXPECT_EQ(r.optimizer_states, 156000000000u);
  EXPECT_EQ(r.model_states(), 208000000000u);
  EXPECT_EQ(r.buffers, 0u);
  EXPECT_EQ(r.total(), 208000000000u);
}

TEST(MemoryPaper, EstimateMatchesTheFormulaPerStage) {
  const ModelDesc m = sized_model(std::vector<Elements>(1000, 1000000));
  for (int stage = 0; stage <= 3; ++stage) {
    auto r = estimate_memory(m, PartitionPlan{}, default_ds_config(stage, DType::Float16),
                             cluster_of(8), TrainingSettings{}, Accounting::Paper, kNoOverhead);
    EXPECT_EQ(r.model_states(), paper_model_states(1000000000, 8, stage)) << stage;
    EXPECT_EQ(r.buffers, 0u);
  }
  auto s2 = estimate_memory(m, PartitionPlan{}, default_ds_config(2, DType::Float16), cluster_of(8),
                            TrainingSettings{}, Accounting::Paper, kNoOverhead);
  EXPECT_EQ(s2.params, 2000000000u);
  EXPECT_EQ(s2.grads, 250000000u);
  EXPECT_EQ(s2.optimizer_states, 1500000000u);
}

TEST(MemoryPaper, ActivationsAndOverheadsEqualDeepSpeedMode) {
  ModelDesc m = sized_model({4096 * 4096, 4096 * 4096});
  ArchInfo a;
  a.hidden = 4096;
  a.layers = 2;
  a.heads = 32;
  a.kv_heads = 32;
  a.ffn = 11008;
  a.vocab = 32000;
  a.gated_mlp = true;
  a.dropout = false;
  m.arch = a;
  const DsConfig ds = default_ds_config(2, DType::BFloat16);
  TrainingSettings t;
  t.seq_len = 1024;
  auto paper =
      estimate_memory(m, memtest::plan_for(m, 2, 8), ds, cluster_of(8), t, Accounting::Paper);
  auto real =
      estimate_memory(m, memtest::plan_for(m, 2, 8), ds, cluster_of(8), t, Accounting::DeepSpeed);
  EXPECT_GT(paper.activations, 0u);
  EXPECT_EQ(paper.activations, real.activations);
  EXPECT_EQ(paper.activations, activation_bytes(m, t, DType::BFloat16));
  // Fixed overheads are the same; fragmentation is the same fraction of each mode's tensor bytes.
  EXPECT_EQ(memtest::item(paper, "CUDA context"), memtest::item(real, "CUDA context"));
  EXPECT_EQ(memtest::item(paper, "NCCL communicator buffers"), 308281344u);
  EXPECT_EQ(memtest::item(real, "NCCL communicator buffers"), 308281344u);
  EXPECT_NE(paper.model_states(), real.model_states());
}

}  // namespace
}  // namespace zerosim
