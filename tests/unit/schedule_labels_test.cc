// ScheduleInput::labels = false (the planner's builds): every op label is empty and nothing else
// changes. Across stages 0-3, optimizer and parameter offload and gradient accumulation, the
// schedule built without labels writes the same JSON as the one built with labels once those are
// cleared, so a simulation (which reads no label) gives the planner the same answer.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "zerosim/model_loader.h"
#include "zerosim/partition_plan.h"
#include "zerosim/planner.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

struct LabelCase {
  int stage;
  OffloadVariant offload;
  std::uint64_t grad_accum;
};

Schedule build(const LabelCase& c, bool labels) {
  auto m = load_zoo_model("gpt2-small");
  EXPECT_TRUE(m.ok()) << m.diagnostics().to_string();
  static const ModelDesc model = m.value();
  DsConfig ds = variant_config(default_ds_config(c.stage, DType::BFloat16), c.stage, c.offload);
  ds.grad_accum_steps = c.grad_accum;
  const std::uint32_t world = 8;
  auto plan = plan_partition(model, partition_options(ds, world));
  EXPECT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  ScheduleInput in;
  in.model = &model;
  in.plan = &plan.value();
  in.ds = &ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = world;
  in.training.seq_len = 1024;
  in.steps = 2;
  in.labels = labels;
  auto s = build_schedule(in);
  EXPECT_TRUE(s.ok()) << s.diagnostics().to_string();
  return s.ok() ? std::move(s.value()) : Schedule{};
}

std::string json_of(const Schedule& s) {
  std::ostringstream os;
  write_schedule_json(s, os);
  return os.str();
}

class ScheduleLabels : public ::testing::TestWithParam<LabelCase> {};

TEST_P(ScheduleLabels, OffLeavesEveryLabelEmptyAndChangesNothingElse) {
  Schedule with = build(GetParam(), true);
  const Schedule without = build(GetParam(), false);
  ASSERT_FALSE(with.ops.empty());
  ASSERT_EQ(with.ops.size(), without.ops.size());
  std::size_t labelled = 0;
  for (const Op& o : with.ops) labelled += o.label.empty() ? 0 : 1;
  EXPECT_GT(labelled, with.ops.size() / 4);  // labels on: every op but Alloc/Free says what it is
  for (const Op& o : without.ops) EXPECT_EQ(o.label, "") << op_kind_name(o.kind);
  for (Op& o : with.ops) o.label.clear();
  EXPECT_EQ(json_of(with), json_of(without));
}

INSTANTIATE_TEST_SUITE_P(StagesAndOffload, ScheduleLabels,
                         ::testing::Values(LabelCase{0, OffloadVariant::None, 1},
                                           LabelCase{1, OffloadVariant::None, 2},
                                           LabelCase{1, OffloadVariant::OptimizerCpu, 1},
                                           LabelCase{2, OffloadVariant::None, 2},
                                           LabelCase{2, OffloadVariant::OptimizerCpu, 2},
                                           LabelCase{3, OffloadVariant::None, 2},
                                           LabelCase{3, OffloadVariant::OptimizerCpu, 1},
                                           LabelCase{3, OffloadVariant::OptimizerAndParamsCpu, 2}));

}  // namespace
}  // namespace zerosim
