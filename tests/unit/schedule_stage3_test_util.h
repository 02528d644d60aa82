// Helpers for the stage 3 schedule tests: hand-built models, a stage 3 DsConfig, building through
// plan_partition + build_stage3 (+ lower_schedule), and compact collective records to compare
// whole sequences with.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "schedule/builders.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/schedule_graph.h"

namespace zerosim::s3test {

/// One collective as the tests compare it.
struct Coll {
  CollectiveKind kind = CollectiveKind::AllGather;
  Elements numel = 0;  ///< input per rank
  Elements out = 0;    ///< output per rank
  DType dtype = DType::Float16;
  Phase phase = Phase::Init;
  std::uint32_t step = 0;
  bool operator==(const Coll&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Coll& c) {
  return os << collective_name(c.kind) << "(in " << c.numel << ", out " << c.out << ", "
            << dtype_name(c.dtype) << ", " << phase_name(c.phase) << ", step " << c.step << ")";
}

inline Coll ag(Elements in, Elements out, Phase ph, std::uint32_t step = 0) {
  return {CollectiveKind::AllGather, in, out, DType::Float16, ph, step};
}
inline Coll rs(Elements in, Elements out, Phase ph, std::uint32_t step = 0) {
  return {CollectiveKind::ReduceScatter, in, out, DType::Float16, ph, step};
}
inline Coll ar(Elements n, DType dt, Phase ph, std::uint32_t step = 0) {
  return {CollectiveKind::AllReduce, n, n, dt, ph, step};
}
inline Coll bc(Elements n, DType dt, Phase ph, std::uint32_t step = 0) {
  return {CollectiveKind::Broadcast, n, n, dt, ph, step};
}

/// Params of the given sizes ("p0", "p1", ...), no layers, the given gradient order.
inline ModelDesc param_model(const std::vector<Elements>& sizes,
                             std::vector<std::uint32_t> grad_order) {
  ModelDesc m;
  m.name = "params";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    m.params.push_back({"p" + std::to_string(i), {sizes[i]}, sizes[i], true});
  m.grad_order = std::move(grad_order);
  return m;
}

/// One layer "L<i>" per entry holding fresh params of the given sizes ("w<i>_<j>"); grad order from
/// the layer structure.
inline ModelDesc layer_model(const std::vector<std::vector<Elements>>& layers,
                             std::vector<LayerKind> kinds = {}) {
  ModelDesc m;
  m.name = "layers";
  for (std::size_t l = 0; l < layers.size(); ++l) {
    Layer layer;
    layer.name = "L" + std::to_string(l + 1);
    layer.kind = l < kinds.size() ? kinds[l] : LayerKind::Other;
    for (std::size_t j = 0; j < layers[l].size(); ++j) {
      layer.param_ids.push_back(static_cast<std::uint32_t>(m.params.size()));
      const std::string name = "w" + std::to_string(l + 1) + "_" + std::to_string(j);
      m.params.push_back({name, {layers[l][j]}, layers[l][j], true});
    }
    m.layers.push_back(std::move(layer));
  }
  m.grad_order = derive_grad_order(m);
  return m;
}

/// Stage 3, fp16, DeepSpeed's defaults otherwise (overlap_comm resolved to true).
inline DsConfig stage3_config() {
  DsConfig ds;
  ds.zero.stage = 3;
  ds.zero.overlap_comm = true;
  ds.fp16 = true;
  return ds;
}

inline PartitionPlan stage3_plan(const ModelDesc& m, const DsConfig& ds, std::uint32_t world) {
  PartitionOptions o = partition_options(ds, world);
  o.stage = 3;
  auto r = plan_partition(m, o);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : PartitionPlan{};
}

/// Builds the stage 3 schedule and checks it passes lower_schedule.
inline Schedule build(const ModelDesc& m, const DsConfig& ds, std::uint32_t world,
                      std::uint32_t steps = 1, DeepSpeedVersion v = DeepSpeedVersion::Edaa722,
                      TrainingSettings t = {}) {
  const PartitionPlan plan = stage3_plan(m, ds, world);
  ScheduleInput in;
  in.model = &m;
  in.plan = &plan;
  in.ds = &ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = world;
  in.training = t;
  in.steps = steps;
  in.version = v;
  auto r = schedule::build_stage3(in);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  if (!r.ok()) return {};
  const Diagnostics d = lower_schedule(r.value(), "stage3 test").diagnostics();
  EXPECT_FALSE(d.has_errors()) << d.to_string();
  return r.value();
}

/// Every collective, in program order, filtered by `keep`.
inline std::vector<Coll> colls(const Schedule& s, const std::function<bool(const Op&)>& keep = {}) {
  std::vector<Coll> out;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Collective && (!keep || keep(o)))
      out.push_back({o.collective, o.numel, o.out_numel, o.dtype, o.phase, o.step});
  return out;
}

inline std::function<bool(const Op&)> kind_in_step(CollectiveKind k, std::uint32_t step) {
  return [k, step](const Op& o) {
    return o.collective == k && o.step == step && o.phase != Phase::Init;
  };
}

/// Elements of live buffers of category `cat` after ops [0, upto) ran.
inline Elements live_elements(const Schedule& s, std::size_t upto, BufferCategory cat) {
  std::vector<bool> live(s.buffers.size(), false);
  Elements total = 0;
  for (std::size_t i = 0; i < upto && i < s.ops.size(); ++i) {
    const Op& o = s.ops[i];
    if (o.buffer == kNone || s.buffers[o.buffer].category != cat) continue;
    if (o.kind == OpKind::Alloc && !live[o.buffer]) {
      live[o.buffer] = true;
      total += s.buffers[o.buffer].numel;
    } else if (o.kind == OpKind::Free && live[o.buffer]) {
      live[o.buffer] = false;
      total -= s.buffers[o.buffer].numel;
    }
  }
  return total;
}

/// Largest live_elements(s, i, cat) over i in [from, to] (one pass).
inline Elements peak_elements(const Schedule& s, std::size_t from, std::size_t to,
                              BufferCategory cat) {
  std::vector<bool> live(s.buffers.size(), false);
  Elements total = 0, peak = 0;
  for (std::size_t i = 0; i <= to; ++i) {
    if (i >= from) peak = std::max(peak, total);
    if (i >= s.ops.size()) break;
    const Op& o = s.ops[i];
    if (o.buffer == kNone || s.buffers[o.buffer].category != cat) continue;
    if (o.kind == OpKind::Alloc && !live[o.buffer]) {
      live[o.buffer] = true;
      total += s.buffers[o.buffer].numel;
    } else if (o.kind == OpKind::Free && live[o.buffer]) {
      live[o.buffer] = false;
      total -= s.buffers[o.buffer].numel;
    }
  }
  return peak;
}

/// Index of the buffer with this name (s.buffers.size() when none).
inline std::size_t find_buffer(const Schedule& s, const std::string& name) {
  for (std::size_t i = 0; i < s.buffers.size(); ++i)
    if (s.buffers[i].name == name) return i;
  return s.buffers.size();
}

/// Names of the buffers of category `cat` freed by ops that pass `keep`, in program order.
inline std::vector<std::string> freed(const Schedule& s, BufferCategory cat,
                                      const std::function<bool(const Op&)>& keep) {
  std::vector<std::string> out;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Free && o.buffer != kNone && s.buffers[o.buffer].category == cat &&
        keep(o))
      out.push_back(s.buffers[o.buffer].name);
  return out;
}

/// Index of the first op with this label at or after `from` (s.ops.size() when none).
inline std::size_t find_label(const Schedule& s, const std::string& label, std::size_t from = 0) {
  for (std::size_t i = from; i < s.ops.size(); ++i)
    if (s.ops[i].label == label) return i;
  return s.ops.size();
}

}  // namespace zerosim::s3test
