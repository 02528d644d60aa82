// The data movements data mode needed that the builders did not carry: the flatten of the module
// params into the flat 16-bit groups at stage 0/1/2 init (X1; DeepSpeed's flatten of
// bit16_groups, stage_1_and_2.py, and FP16/BF16_Optimizer's flat groups), the fp32 master of
// FP16_Optimizer/BF16_Optimizer filled from those 16-bit values (X3), and the local squared
// gradient norm and overflow flag written into the executor-owned scratch before the norm and
// overflow all-reduces (grad_norm / grad_overflow, stages 0-3), computed by the host data path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "data_check.h"
#include "host_data.h"
#include "numerics.h"
#include "schedule_stage012_testlib.h"
#include "zerosim/schedule_graph.h"

namespace zerosim {
namespace {

using testlib::build;
using testlib::make_model;

// One element position of a resolved operand: (buffer, element), buffer kNone for a zero.
using Pos = std::pair<std::uint32_t, Elements>;

std::vector<Pos> positions(const Schedule& s, const Op& op, const Region& r, std::uint32_t rank,
                           bool is_src) {
  std::vector<Pos> out;
  for (const OperandSpan& sp : resolve_pieces(s, op, r, rank, is_src))
    for (Elements i = 0; i < sp.length; ++i)
      out.emplace_back(sp.buffer, sp.buffer == kNone ? 0 : sp.offset + i);
  return out;
}

std::uint32_t buffer_named(const Schedule& s, const std::string& name) {
  for (std::uint32_t b = 0; b < s.buffers.size(); ++b)
    if (s.buffers[b].name == name) return b;
  return kNone;
}

std::uint32_t op_index(const Schedule& s, OpKind k, std::uint32_t buffer) {
  for (std::uint32_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].kind == k && s.ops[i].buffer == buffer) return i;
  return kNone;
}

// The copy whose dst lies in buffer `b` (first one), or kNone.
std::uint32_t copy_into(const Schedule& s, std::uint32_t b) {
  for (std::uint32_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.kind != OpKind::Copy || op.dst.empty()) continue;
    const auto dst = positions(s, op, op.dst, 0, false);
    if (!dst.empty() && dst.front().first == b) return i;
  }
  return kNone;
}

// Every element of the group's flat 16-bit buffer is written, before the module's storage is
// freed, from the module param that lands there (or a zero: the alignment padding), on every rank.
void expect_flatten(const Schedule& s, const std::string& flat_name, bool padded) {
  const std::uint32_t module = buffer_named(s, "module params (optimized)");
  const std::uint32_t flat = buffer_named(s, flat_name);
  ASSERT_NE(module, kNone);
  ASSERT_NE(flat, kNone) << flat_name;
  const std::uint32_t copy = copy_into(s, flat);
  ASSERT_NE(copy, kNone) << "no op writes " << flat_name << " from the module params";
  const std::uint32_t freed = op_index(s, OpKind::Free, module);
  ASSERT_NE(freed, kNone);
  EXPECT_LT(copy, freed) << "the flatten must read the module params before they are freed";
  // After _broadcast_model, which makes every rank's module params rank 0's.
  for (std::uint32_t i = copy; i < s.ops.size(); ++i)
    EXPECT_FALSE(s.ops[i].kind == OpKind::Collective &&
                 s.ops[i].collective == CollectiveKind::Broadcast && s.ops[i].phase == Phase::Init)
        << s.ops[i].label << " comes after the flatten";
  const Op& op = s.ops[copy];
  const GroupLayout& g = s.layout.groups[0];
  // The module's storage: the group's params concatenated in group (declaration) order.
  std::vector<Elements> module_at(s.tensors.size(), 0);
  Elements at = 0;
  for (std::uint32_t t : g.params) {
    module_at[t] = at;
    at += s.tensors[t].numel;
  }
  for (std::uint32_t rank = 0; rank < s.meta.world; ++rank) {
    const auto src = positions(s, op, op.src, rank, true);
    const auto dst = positions(s, op, op.dst, rank, false);
    ASSERT_EQ(src.size(), dst.size());
    ASSERT_EQ(dst.size(), padded ? g.aligned : g.numel);
    std::vector<bool> seen(dst.size(), false);
    for (std::size_t k = 0; k < dst.size(); ++k) {
      ASSERT_EQ(dst[k].first, flat);
      const Elements x = dst[k].second;
      ASSERT_LT(x, seen.size());
      EXPECT_FALSE(seen[x]) << "flat element " << x << " written twice";
      seen[x] = true;
      Pos want{kNone, 0};  // padding
      for (std::uint32_t t : g.flat_order) {
        const TensorInfo& ti = s.tensors[t];
        if (x >= ti.flat_offset && x < ti.flat_offset + ti.numel)
          want = {module, module_at[t] + (x - ti.flat_offset)};
      }
      EXPECT_EQ(src[k], want) << "rank " << rank << ", flat element " << x;
    }
  }
}

TEST(InitFlatten, Stage1And2CopyTheModuleParamsIntoBit16GroupsFlat) {
  for (int stage : {1, 2}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    auto b = build(make_model({5, 7, 3}), testlib::zero_config(stage, 1000, false), 4);
    ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
    ASSERT_EQ(b.s().layout.groups[0].padding, 1u);  // 15 elements aligned to 2W = 8: one pad
    expect_flatten(b.s(), "bit16_groups_flat[0]", true);
  }
}

TEST(InitFlatten, RoundRobinFlattensInTheReorderedFlatOrder) {
  DsConfig ds = testlib::zero_config(2, 1000, false);
  ds.zero.round_robin_gradients = true;
  auto b = build(make_model({5, 7, 3, 9, 2}), ds, 3);
  ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
  expect_flatten(b.s(), "bit16_groups_flat[0]", true);
}

TEST(InitFlatten, Fp16OptimizerFlattensWithoutPadding) {
  auto b = build(make_model({5, 7, 3}), testlib::zero_config(0, 1000, false), 4);
  ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
  expect_flatten(b.s(), "flat LP params [0]", false);
}

// The fp32 master is the 16-bit values cast up, read after the flatten wrote them.
void expect_master_fill(const Schedule& s, const std::string& flat_name, bool partitioned) {
  const std::uint32_t flat = buffer_named(s, flat_name);
  const std::uint32_t master = buffer_named(s, "fp32 master [0]");
  ASSERT_NE(master, kNone);
  const std::uint32_t fill = copy_into(s, master);
  ASSERT_NE(fill, kNone) << "no op fills the fp32 master";
  EXPECT_GT(fill, copy_into(s, flat)) << "the master is cast from the flattened params";
  const Op& op = s.ops[fill];
  EXPECT_EQ(op.dtype, DType::Float32);
  const GroupLayout& g = s.layout.groups[0];
  for (std::uint32_t rank = 0; rank < s.meta.world; ++rank) {
    const auto src = positions(s, op, op.src, rank, true);
    const auto dst = positions(s, op, op.dst, rank, false);
    const Elements n = partitioned ? g.partition : g.numel;
    ASSERT_EQ(src.size(), n);
    ASSERT_EQ(dst.size(), n);
    for (Elements k = 0; k < n; ++k) {
      EXPECT_EQ(src[k], Pos(flat, (partitioned ? rank * g.partition : 0) + k));
      EXPECT_EQ(dst[k], Pos(master, k));
    }
  }
}

TEST(MasterFill, Fp16OptimizerCastsTheWholeFlatGroup) {
  auto b = build(make_model({5, 7, 3}), testlib::zero_config(0, 1000, false), 4);
  ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
  expect_master_fill(b.s(), "flat LP params [0]", false);
}

TEST(MasterFill, Bf16OptimizerCastsTheRanksPartition) {
  DsConfig ds = testlib::zero_config(1, 1000, false);
  ds.fp16 = false;
  ds.bf16 = true;
  ds.grad_accum_dtype = DType::Float32;
  auto b = build(make_model({5, 7, 3}), ds, 4);
  ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
  ASSERT_EQ(b.s().meta.optimizer, "BF16_Optimizer");
  expect_flatten(b.s(), "flat LP params [0]", true);
  expect_master_fill(b.s(), "flat LP params [0]", true);
}

// Every element of the norm and overflow scratch an all-reduce or an update reads was written in
// the same step by a grad_norm / grad_overflow op reading gradients, before the all-reduce.
void expect_stats_before_reads(const Schedule& s) {
  std::vector<bool> scalar(s.buffers.size(), false);
  for (const UpdateCall& u : s.updates)
    for (const Region* r : {&u.norms, &u.overflow})
      if (r->buffer != kNone) scalar[r->buffer] = true;
  std::vector<std::vector<bool>> written(s.buffers.size());
  std::uint32_t stats = 0, step = 0;
  for (std::uint32_t b = 0; b < s.buffers.size(); ++b)
    if (scalar[b]) written[b].assign(s.buffer_numel(b, 0), false);
  const auto reads = [&](const Op& op, const Region& r) {
    for (Elements k = 0; k < r.length; ++k)
      EXPECT_TRUE(written[r.buffer][r.offset + k])
          << op.label << " reads element " << r.offset + k << " of " << s.buffers[r.buffer].name
          << " before a local norm or overflow check wrote it";
  };
  for (const Op& op : s.ops) {
    if (op.step != step) {  // a new step: last step's values do not count
      step = op.step;
      for (auto& w : written) w.assign(w.size(), false);
    }
    if (op.kind == OpKind::GradNorm || op.kind == OpKind::GradOverflow) {
      ++stats;
      ASSERT_FALSE(op.src.empty()) << op.label;
      ASSERT_LT(op.dst.buffer, s.buffers.size()) << op.label;
      EXPECT_TRUE(scalar[op.dst.buffer]) << op.label;
      EXPECT_EQ(s.buffers[op.dst.buffer].dtype == DType::UInt8, op.kind == OpKind::GradOverflow);
      Elements n = 0;
      for (const OperandSpan& sp : resolve_pieces(s, op, op.src, 0, true)) n += sp.length;
      EXPECT_EQ(n, op.elements) << op.label;
      written[op.dst.buffer][op.dst.offset] = true;
    } else if (op.kind == OpKind::Collective && op.src.buffer != kNone && scalar[op.src.buffer]) {
      reads(op, op.src);
    } else if (op.kind == OpKind::OptimizerStep && op.update != kNone) {
      const UpdateCall& u = s.updates[op.update];
      ASSERT_NE(u.norms.buffer, kNone) << op.label << ": the update carries no norms";
      reads(op, u.norms);
      if (u.overflow.buffer != kNone) reads(op, u.overflow);
    }
  }
  EXPECT_GT(stats, 0u);
}

TEST(GradStats, EveryStageComputesTheLocalNormAndOverflowBeforeReadingThem) {
  for (int stage : {0, 1, 2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    auto b = build(make_model({5, 7, 3}), testlib::zero_config(stage, 1000, false), 4,
                   testlib::with_steps(2));
    ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
    expect_stats_before_reads(b.s());
    ASSERT_TRUE(lower_schedule(b.s()).ok());
  }
}

TEST(GradStats, CpuOffloadReadsTheFp32PartitionsAndBf16HasNoOverflowCheckAtStage3) {
  DsConfig ds = testlib::zero_config(2, 1000, false);
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  auto b = build(make_model({5, 7, 3}), ds, 4);
  ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
  expect_stats_before_reads(b.s());
  DsConfig bf = testlib::zero_config(3, 1000, false);
  bf.fp16 = false;
  bf.bf16 = true;
  auto b3 = build(make_model({5, 7, 3}), bf, 4);
  ASSERT_TRUE(b3.schedule.ok()) << b3.schedule.diagnostics().to_string();
  expect_stats_before_reads(b3.s());
  for (const Op& op : b3.s().ops) EXPECT_NE(op.kind, OpKind::GradOverflow) << op.label;
}

// The reader and the lowering refuse a grad_norm whose scratch is not one float element.
TEST(GradStats, TheLoweringRefusesAScratchThatIsNotOneFloatElement) {
  auto b = build(make_model({5, 7, 3}), testlib::zero_config(2, 1000, false), 4);
  ASSERT_TRUE(b.schedule.ok());
  Schedule s = b.s();
  std::uint32_t i = 0;
  while (s.ops[i].kind != OpKind::GradNorm) ++i;
  Schedule wide = s;
  wide.ops[i].dst.length = 2;
  auto g = lower_schedule(wide);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.diagnostics().to_string().find("/ops/" + std::to_string(i) + "/dst"),
            std::string::npos)
      << g.diagnostics().to_string();
  Schedule flag = s;
  std::uint32_t j = 0;
  while (flag.ops[j].kind != OpKind::GradOverflow) ++j;
  flag.ops[i].dst = flag.ops[j].dst;  // a norm into the uint8 flag
  g = lower_schedule(flag);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.diagnostics().to_string().find("expected a float32 or float64 buffer"),
            std::string::npos)
      << g.diagnostics().to_string();
}

}  // namespace
}  // namespace zerosim

namespace zerosim::exec {
namespace {

// The host data path's local statistics, on hand-written gradients.
TEST(DataPathGradStats, SumOfSquaresAndAnInfOrNanFlag) {
  Schedule s;
  const auto add = [&](std::string name, DType t, Elements n, bool owned) {
    Buffer b;
    b.name = std::move(name);
    b.dtype = t;
    b.numel = n;
    b.executor_owned = owned;
    s.buffers.push_back(b);
    return static_cast<std::uint32_t>(s.buffers.size() - 1);
  };
  const std::uint32_t grad = add("grad", DType::Float16, 4, false);
  const std::uint32_t norms = add("norms", DType::Float32, 2, true);
  const std::uint32_t flag = add("flag", DType::UInt8, 1, true);
  s.roles.push_back({{{0, 0}}, 0, {}});
  s.meta.world = 1;
  DataOptions o;
  RingRegistry rings{std::chrono::milliseconds(1000)};
  DataPath dp(s, o, 0, rings);
  ASSERT_FALSE(dp.allocate(grad, 8, false, false));
  const float g[4] = {0.5f, -1.5f, 2.0f, 0.25f};
  for (int i = 0; i < 4; ++i) {
    const std::uint16_t h = float_to_fp16(g[i]);
    std::memcpy(dp.bytes(grad) + 2 * i, &h, 2);
  }
  WorkCall w;
  w.kind = OpKind::GradNorm;
  w.src = {{grad, 0, 3, DType::Float16}, {kNone, 0, 5, DType::Float16}};  // zeros add nothing
  w.dst = {{norms, 1, 1, DType::Float32}};
  ASSERT_FALSE(dp.work(w));
  float got;
  std::memcpy(&got, dp.bytes(norms) + 4, 4);
  EXPECT_EQ(got, 0.25f + 2.25f + 4.0f);
  w.src = {{grad, 3, 1, DType::Float16}};
  w.accumulate = true;  // a later group adds its squares
  ASSERT_FALSE(dp.work(w));
  std::memcpy(&got, dp.bytes(norms) + 4, 4);
  EXPECT_EQ(got, 6.5f + 0.0625f);
  WorkCall f;
  f.kind = OpKind::GradOverflow;
  f.src = {{grad, 0, 4, DType::Float16}};
  f.dst = {{flag, 0, 1, DType::UInt8}};
  ASSERT_FALSE(dp.work(f));
  EXPECT_EQ(dp.bytes(flag)[0], 0);
  const std::uint16_t inf = float_to_fp16(INFINITY);
  std::memcpy(dp.bytes(grad) + 4, &inf, 2);
  ASSERT_FALSE(dp.work(f));
  EXPECT_EQ(dp.bytes(flag)[0], 1);
  f.src = {{grad, 0, 2, DType::Float16}};  // finite, but or-ed into the set flag
  f.accumulate = true;
  ASSERT_FALSE(dp.work(f));
  EXPECT_EQ(dp.bytes(flag)[0], 1);
  w.dst = {{norms, 0, 2, DType::Float32}};  // not one element
  Status bad = dp.work(w);
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->message.find("one scratch element"), std::string::npos) << bad->message;
}

}  // namespace
}  // namespace zerosim::exec
