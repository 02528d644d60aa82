// `plan --verbose` itemises what is live at each row's peak by DeepSpeed buffer (#13 follow-up:
// the simulated rows had listed ledger categories only, "param16: low-precision parameters", and
// lost the buffer ids B1, T2, ... that docs/deepspeed_behaviour.md explains). Each item is one
// family of schedule buffers (same spec id, category and name pattern) with the bytes it holds at
// the worst role's whole-run peak; the GPU items add up to that peak layer by layer, the host
// items to the host peak.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "zerosim/model_loader.h"
#include "zerosim/planner.h"

namespace zerosim {
namespace {

PlanResult plan_gpt2_small() {
  PlanRequest req;
  auto m = load_zoo_model("gpt2-small");
  EXPECT_TRUE(m.ok()) << m.diagnostics().to_string();
  req.model = m.value();
  req.cluster.gpu = find_gpu("H100-SXM-80GB").value();
  req.cluster.nodes = 1;
  req.cluster.gpus_per_node = 4;
  req.base = default_ds_config(0, DType::BFloat16);
  req.training.seq_len = 1024;
  req.sweep_max_gpus = 4;
  auto plan = make_plan(req);
  EXPECT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  return plan.value();
}

const PlanRow& row_of(const PlanResult& p, int stage, OffloadVariant offload) {
  for (const PlanRow& r : p.rows)
    if (r.stage == stage && r.offload == offload) return r;
  ADD_FAILURE() << "no row for stage " << stage;
  return p.rows.front();
}

// Item name -> bytes for one layer ("host", "params", ...).
std::map<std::string, Bytes> items_of(const PlanRow& row, const std::string& layer) {
  std::map<std::string, Bytes> out;
  for (const MemoryItem& i : row.memory.items)
    if (i.layer == layer) out[i.name] += i.bytes;
  return out;
}

Bytes sum_of(const PlanRow& row, const std::string& layer) {
  Bytes b = 0;
  for (const auto& [name, bytes] : items_of(row, layer)) b += bytes;
  return b;
}

TEST(PlanBreakdown, ItemsAddUpToEveryLayerAndToTheHostPeak) {
  const PlanResult p = plan_gpt2_small();
  ASSERT_EQ(p.rows.size(), 8u);
  for (const PlanRow& row : p.rows) {
    SCOPED_TRACE("stage " + std::to_string(row.stage) + " " +
                 std::string(offload_name(row.offload)));
    EXPECT_EQ(sum_of(row, "params"), row.memory.params);
    EXPECT_EQ(sum_of(row, "grads"), row.memory.grads);
    EXPECT_EQ(sum_of(row, "optimizer_states"), row.memory.optimizer_states);
    EXPECT_EQ(sum_of(row, "buffers"), row.memory.buffers);
    EXPECT_EQ(sum_of(row, "activations"), row.memory.activations);
    EXPECT_EQ(sum_of(row, "overhead"), row.memory.overhead);
    EXPECT_EQ(sum_of(row, "host"), row.memory.host_bytes);
    for (const MemoryItem& i : row.memory.items) {
      EXPECT_GT(i.bytes, 0u) << i.name;
      EXPECT_EQ(i.name.find("simulated ledger"), std::string::npos) << i.name;
    }
  }
}

TEST(PlanBreakdown, Stage1NamesDeepSpeedsBuffersWithTheirIds) {
  const PlanResult p = plan_gpt2_small();
  const PlanRow& row = row_of(p, 1, OffloadVariant::None);
  const auto params = items_of(row, "params");
  const auto states = items_of(row, "optimizer_states");
  const auto buffers = items_of(row, "buffers");
  ASSERT_TRUE(params.count("bit16_groups_flat[0] (B1)")) << ::testing::PrintToString(params);
  ASSERT_TRUE(states.count("single_partition_of_fp32_groups[0] (B2)"))
      << ::testing::PrintToString(states);
  ASSERT_TRUE(states.count("optimizer states [0] (B3)")) << ::testing::PrintToString(states);
  ASSERT_TRUE(buffers.count("ipg[0] (T2)")) << ::testing::PrintToString(buffers);
  // B1 is the whole flat 16-bit model; B3 (Adam's two moments) twice B2 (the fp32 partition).
  EXPECT_EQ(params.at("bit16_groups_flat[0] (B1)"), row.memory.params);
  EXPECT_EQ(states.at("optimizer states [0] (B3)"),
            2 * states.at("single_partition_of_fp32_groups[0] (B2)"));
  // Stage 1 keeps every parameter's gradient (T1) until the step: one item for the family.
  const auto grads = items_of(row, "grads");
  bool t1_family = false;
  for (const auto& [name, bytes] : grads)
    t1_family |= name.rfind("grad:* (T1), ", 0) == 0 && name.find(" buffers") != std::string::npos;
  EXPECT_TRUE(t1_family) << ::testing::PrintToString(grads);
}

TEST(PlanBreakdown, OffloadRowsItemiseTheHostBuffers) {
  const PlanResult p = plan_gpt2_small();
  const PlanRow& row = row_of(p, 2, OffloadVariant::OptimizerCpu);
  const auto host = items_of(row, "host");
  for (const char* id : {"(B2)", "(B3)", "(B4)", "(B5)", "(B7)"}) {
    bool found = false;
    for (const auto& [name, bytes] : host) found |= name.find(id) != std::string::npos;
    EXPECT_TRUE(found) << id << " in " << ::testing::PrintToString(host);
  }
  bool gpu_staging = false;  // B6 stays on the GPU
  for (const auto& [name, bytes] : items_of(row, "grads"))
    gpu_staging |= name == "temp_grad_buffer_for_gpu_offload (B6)";
  EXPECT_TRUE(gpu_staging);
}

}  // namespace
}  // namespace zerosim
