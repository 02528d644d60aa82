// Helpers shared by the stage 0/1/2 and paper schedule tests: hand-built models, a one-call build
// through plan_partition + build_schedule, the collective log as comparable values, and a memory
// replay per rank role (live bytes after every op).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "zerosim/partition_plan.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_builder.h"

namespace zerosim::testlib {

/// Params p0..pN-1 with the given sizes; grad_order as given (empty: reverse declaration order).
inline ModelDesc make_model(const std::vector<Elements>& sizes,
                            std::vector<std::uint32_t> grad_order = {}) {
  ModelDesc m;
  m.name = "test";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ParamTensor p;
    p.name = "p" + std::to_string(i);
    p.shape = {sizes[i]};
    p.numel = sizes[i];
    m.params.push_back(p);
  }
  if (grad_order.empty())
    for (std::size_t i = sizes.size(); i-- > 0;)
      grad_order.push_back(static_cast<std::uint32_t>(i));
  m.grad_order = std::move(grad_order);
  return m;
}

inline DsConfig zero_config(int stage, Elements r, bool overlap) {
  DsConfig ds;
  ds.fp16 = true;
  ds.zero.stage = stage;
  ds.zero.reduce_bucket_size = r;
  ds.zero.overlap_comm = overlap;
  return ds;
}

struct Built {
  ModelDesc model;
  DsConfig ds;
  PartitionPlan plan;
  Result<Schedule> schedule = Result<Schedule>(Diagnostics{});
  const Schedule& s() const { return schedule.value(); }
};

struct BuildOptions {
  std::uint32_t steps = 1;
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;
  Accounting mode = Accounting::DeepSpeed;
  std::vector<std::vector<std::uint32_t>> groups;
  std::vector<std::uint32_t> overflow_steps;
  bool expect_ok = true;  ///< false for inputs the builder must refuse
};

inline BuildOptions with_steps(std::uint32_t steps) {
  BuildOptions o;
  o.steps = steps;
  return o;
}
inline BuildOptions with_version(DeepSpeedVersion v) {
  BuildOptions o;
  o.version = v;
  return o;
}
inline BuildOptions with_groups(std::vector<std::vector<std::uint32_t>> groups) {
  BuildOptions o;
  o.groups = std::move(groups);
  return o;
}
inline BuildOptions paper_mode() {
  BuildOptions o;
  o.mode = Accounting::Paper;
  return o;
}

/// Plans and builds; the plan's round robin follows the config as DeepSpeed applies it.
inline Built build(ModelDesc model, DsConfig ds, std::uint32_t world, BuildOptions o = {}) {
  Built b;
  b.model = std::move(model);
  b.ds = std::move(ds);
  b.ds.version = o.version;  // as a loader resolving the config for that release sets it
  PartitionOptions po = partition_options(b.ds, world);
  po.groups = o.groups;
  auto plan = plan_partition(b.model, po);
  EXPECT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  if (!plan.ok()) return b;
  b.plan = plan.value();
  ScheduleInput in;
  in.model = &b.model;
  in.plan = &b.plan;
  in.ds = &b.ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = world;
  in.steps = o.steps;
  in.overflow_steps = o.overflow_steps;
  in.mode = o.mode;
  in.version = o.version;
  b.schedule = build_schedule(in);
  if (o.expect_ok) {
    EXPECT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
  }
  return b;
}

/// One collective as the spec's worked examples write it.
struct Coll {
  CollectiveKind kind = CollectiveKind::AllReduce;
  Elements numel = 0;
  Elements out = 0;
  DType dtype = DType::Float16;
  ReduceOp op = ReduceOp::Sum;
  std::int32_t dst = -1;
  Phase phase = Phase::Backward;
  bool operator==(const Coll&) const = default;
};

inline Coll AR(Elements n, Phase ph, DType dt = DType::Float16, ReduceOp op = ReduceOp::Sum) {
  return {CollectiveKind::AllReduce, n, n, dt, op, -1, ph};
}
inline Coll RD(std::int32_t dst, Elements n, Phase ph) {
  return {CollectiveKind::Reduce, n, n, DType::Float16, ReduceOp::Sum, dst, ph};
}
inline Coll AG(Elements out, Elements in, DType dt = DType::Float16) {
  return {CollectiveKind::AllGather, in, out, dt, ReduceOp::None, -1, Phase::PostStep};
}
inline Coll BC(Elements n, DType dt = DType::Float16) {
  return {CollectiveKind::Broadcast, n, n, dt, ReduceOp::None, 0, Phase::Init};
}
/// The step's overflow check and one norm all-reduce.
inline Coll OVERFLOW_AR() { return AR(1, Phase::Step, DType::UInt8, ReduceOp::Max); }
inline Coll NORM_AR() { return AR(1, Phase::Step, DType::Float32, ReduceOp::Sum); }

inline void PrintTo(const Coll& c, std::ostream* os) {
  *os << collective_name(c.kind) << "(numel " << c.numel << ", out " << c.out << ", "
      << dtype_name(c.dtype) << ", op '" << reduce_op_name(c.op) << "', dst " << c.dst << ", "
      << phase_name(c.phase) << ")";
}

/// Collectives of the program whose op passes `keep` (default: every op), in issue order.
inline std::vector<Coll> collectives(const Schedule& s,
                                     const std::function<bool(const Op&)>& keep = {}) {
  std::vector<Coll> out;
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::Collective || (keep && !keep(op))) continue;
    out.push_back({op.collective, op.numel, op.out_numel, op.dtype, op.reduce_op,
                   op.root == kNone ? -1 : static_cast<std::int32_t>(op.root), op.phase});
  }
  return out;
}

/// Collectives outside the init phase (what one training step issues) of step `step`.
inline std::vector<Coll> step_collectives(const Schedule& s, std::uint32_t step = 0) {
  return collectives(s,
                     [step](const Op& op) { return op.phase != Phase::Init && op.step == step; });
}

/// Sum of a buffer-set's sizes for `rank` (elements).
inline Elements buffers_for_rank(const Schedule& s, std::uint32_t rank,
                                 const std::function<bool(const Buffer&)>& pick) {
  const std::uint32_t role = s.role_of(rank);
  Elements total = 0;
  for (std::uint32_t b = 0; b < s.buffers.size(); ++b)
    if (pick(s.buffers[b])) total += s.buffer_numel(b, role);
  return total;
}

/// Replays Alloc/Free for one role: live bytes of buffers passing `pick` after every op.
inline std::vector<Bytes> live_bytes(const Schedule& s, std::uint32_t role,
                                     const std::function<bool(const Buffer&)>& pick = {}) {
  std::vector<Bytes> out;
  Bytes live = 0;
  for (const Op& op : s.ops) {
    if ((op.kind == OpKind::Alloc || op.kind == OpKind::Free) &&
        (!pick || pick(s.buffers[op.buffer]))) {
      const Bytes b = s.buffer_numel(op.buffer, role) * dtype_size(s.buffers[op.buffer].dtype);
      live = op.kind == OpKind::Alloc ? live + b : live - b;
    }
    out.push_back(live);
  }
  return out;
}

/// Largest live bytes over the ops passing `when`.
inline Bytes peak_bytes(const Schedule& s, std::uint32_t role,
                        const std::function<bool(const Op&)>& when,
                        const std::function<bool(const Buffer&)>& pick = {}) {
  const auto live = live_bytes(s, role, pick);
  Bytes peak = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (when(s.ops[i])) peak = std::max(peak, live[i]);
  return peak;
}

inline bool spec_is(const Buffer& b, const char* id) { return b.spec_id == id; }

}  // namespace zerosim::testlib
