// Helpers shared by the memory model tests: hand-built models, plans, clusters and item lookup.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "zerosim/memory_model.h"

namespace zerosim::memtest {

/// A model with one trainable 1-D param per size, each in its own module: m0.weight, m1.weight, ...
/// (no layers, no ArchInfo).
inline ModelDesc sized_model(const std::vector<Elements>& sizes) {
  ModelDesc m;
  m.name = "test";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    m.params.push_back({"m" + std::to_string(i) + ".weight", {sizes[i]}, sizes[i], true});
  return m;
}

inline PartitionPlan plan_for(const ModelDesc& m, int stage, std::uint32_t world,
                              std::uint64_t sub_group_size = 1000000000) {
  PartitionOptions o;
  o.stage = stage;
  o.world = world;
  o.sub_group_size = sub_group_size;
  auto r = plan_partition(m, o);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : PartitionPlan{};
}

inline Cluster cluster_of(std::uint64_t gpus) {
  Cluster c;
  c.nodes = 1;
  c.gpus_per_node = gpus;
  return c;
}

/// Bytes of the one item (at the peak or off it) whose name starts with `prefix` in `phase`
/// ("" = any phase); fails the test when there is not exactly one.
inline Bytes item(const MemoryReport& r, std::string_view prefix, std::string_view phase = "") {
  Bytes found = 0;
  int count = 0;
  for (const auto* list : {&r.items, &r.off_peak_items})
    for (const auto& it : *list)
      if (it.name.rfind(prefix, 0) == 0 && (phase.empty() || it.phase == phase)) {
        found = it.bytes;
        ++count;
      }
  EXPECT_EQ(count, 1) << "items starting with \"" << prefix << "\" in phase \"" << phase << "\"";
  return found;
}

/// True when some item's name starts with `prefix`.
inline bool has_item(const MemoryReport& r, std::string_view prefix) {
  for (const auto* list : {&r.items, &r.off_peak_items})
    for (const auto& it : *list)
      if (it.name.rfind(prefix, 0) == 0) return true;
  return false;
}

/// GPU total of a phase (persistent terms included, overhead excluded).
inline Bytes phase_total(const MemoryReport& r, std::string_view phase) {
  for (const auto& p : r.phases)
    if (p.name == phase) return p.bytes;
  ADD_FAILURE() << "no phase " << phase;
  return 0;
}

/// Σ of the persistent GPU items in a layer ("params", "optimizer_states", ...).
inline Bytes persistent_layer(const MemoryReport& r, std::string_view layer) {
  Bytes b = 0;
  for (const auto& it : r.items)
    if (it.phase == "persistent" && it.layer == layer) b += it.bytes;
  return b;
}

inline const OverheadParams kNoOverhead{};

}  // namespace zerosim::memtest
