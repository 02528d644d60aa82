// plan_partition: validates the options and builds the stage 1/2 flat layout (deepspeed_zero.md
// §2.1) or the stage 3 per-param partitioning, persistence marking and sub-groups (§2.2, §7.1 step
// 3).
//
// Every size is computed with checked arithmetic: models of up to ~1e15 elements and W up to 2^24
// fit comfortably in 64 bits, but a hostile model description (a numel near 2^64) must become a
// diagnostic, never a wrapped value. Queries on a finished plan live in partition_plan_query.cc.
#include "zerosim/partition_plan.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zerosim/model_desc.h"

namespace zerosim {
namespace {

constexpr const char* kSource = "partition";

std::string group_pointer(std::size_t g) { return "/groups/" + std::to_string(g); }

std::string param_label(const ModelDesc& m, std::uint32_t id) {
  return "param " + std::to_string(id) + " (" + quote(m.params[id].name) + ")";
}

// Checks stage, world and group membership; collects every problem.
void validate_options(const ModelDesc& model, const PartitionOptions& opts, Diagnostics& d) {
  if (opts.stage < 0 || opts.stage > 3)
    d.error(kSource, "/stage", "expected a ZeRO stage 0..3, got " + std::to_string(opts.stage));
  if (opts.world == 0)
    d.error(kSource, "/world", "expected a data-parallel world size of at least 1, got 0");
  if (opts.world > kMaxPartitionWorld)
    d.error(kSource, "/world",
            "expected a data-parallel world size of at most " + std::to_string(kMaxPartitionWorld) +
                ", got " + std::to_string(opts.world));
  const std::size_t n = model.params.size();
  std::vector<std::string> seen_at(n);
  for (std::size_t g = 0; g < opts.groups.size(); ++g) {
    for (std::size_t i = 0; i < opts.groups[g].size(); ++i) {
      const std::uint32_t id = opts.groups[g][i];
      const std::string ptr = group_pointer(g) + "/" + std::to_string(i);
      if (id >= n) {
        d.error(kSource, ptr,
                "expected a param id below " + std::to_string(n) + " (the model has " +
                    std::to_string(n) + " params), got " + std::to_string(id));
      } else if (!seen_at[id].empty()) {
        d.error(kSource, ptr,
                "expected each param in at most one group, got " + param_label(model, id) +
                    " again (first at " + seen_at[id] + ")");
      } else {
        seen_at[id] = ptr;
      }
    }
  }
}

// The param groups as lists of trainable model ids, in group order.
std::vector<std::vector<std::uint32_t>> trainable_groups(const ModelDesc& model,
                                                         const PartitionOptions& opts) {
  std::vector<std::vector<std::uint32_t>> out;
  if (opts.groups.empty()) {
    out.emplace_back();
    for (std::size_t i = 0; i < model.params.size(); ++i)
      if (model.params[i].trainable) out.back().push_back(static_cast<std::uint32_t>(i));
    return out;
  }
  for (const auto& g : opts.groups) {
    out.emplace_back();
    for (std::uint32_t id : g)
      if (model.params[id].trainable) out.back().push_back(id);
  }
  return out;
}

// §2.1 step 2: param i goes to list i mod W; lists concatenated for keys 0..W-1 in creation order.
// Only min(W, T) lists are ever created, so this is O(T) whatever W is.
std::vector<std::uint32_t> round_robin_order(const std::vector<std::uint32_t>& params,
                                             std::uint32_t world) {
  std::vector<std::uint32_t> order;
  order.reserve(params.size());
  const std::size_t lists = std::min<std::size_t>(world, params.size());
  for (std::size_t key = 0; key < lists; ++key)
    for (std::size_t i = key; i < params.size(); i += world) order.push_back(params[i]);
  return order;
}

// Builds one flat group (§2.1 steps 1–6); nullopt after reporting an overflow.
std::optional<FlatGroup> build_flat_group(const ModelDesc& model, std::vector<std::uint32_t> params,
                                          std::size_t g, const PartitionOptions& opts,
                                          Diagnostics& d) {
  FlatGroup fg;
  fg.flat_order = opts.round_robin && (opts.stage == 1 || opts.stage == 2)
                      ? round_robin_order(params, opts.world)
                      : params;
  fg.params = std::move(params);
  fg.flat_offset.reserve(fg.flat_order.size());
  Elements offset = 0;
  for (std::uint32_t id : fg.flat_order) {
    fg.flat_offset.push_back(offset);
    auto next = checked_add(offset, model.params[id].numel);
    if (!next) {
      d.error(kSource, group_pointer(g),
              "expected the group's element count to fit in 64 bits, got an overflow adding " +
                  param_label(model, id) + " of " + std::to_string(model.params[id].numel) +
                  " elements to " + std::to_string(offset));
      return std::nullopt;
    }
    offset = *next;
  }
  fg.numel = offset;
  // Alignment unit 2W elements, independent of dtype (stage_1_and_2.py:347).
  const Elements unit = 2 * static_cast<Elements>(opts.world);
  fg.padding = (unit - fg.numel % unit) % unit;
  auto aligned = checked_add(fg.numel, fg.padding);
  if (!aligned) {
    d.error(kSource, group_pointer(g),
            "expected the group's aligned size (" + std::to_string(fg.numel) +
                " elements rounded up to a multiple of 2W = " + std::to_string(unit) +
                ") to fit in 64 bits, got an overflow");
    return std::nullopt;
  }
  fg.aligned = *aligned;
  fg.partition = fg.aligned / opts.world;
  return fg;
}

bool build_stage12(const ModelDesc& model, const PartitionOptions& opts, PartitionPlan& plan,
                   Diagnostics& d) {
  auto groups = trainable_groups(model, opts);
  plan.flat_index.assign(model.params.size(), PartitionPlan::kNoGroup);
  Elements total_aligned = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto fg = build_flat_group(model, std::move(groups[g]), g, opts, d);
    if (!fg) return false;
    auto total = checked_add(total_aligned, fg->aligned);
    if (!total) {
      d.error(kSource, "/groups",
              "expected the aligned size summed over all groups to fit in 64 bits, got an overflow "
              "at group " +
                  std::to_string(g));
      return false;
    }
    total_aligned = *total;
    for (std::size_t i = 0; i < fg->flat_order.size(); ++i) {
      plan.param_group[fg->flat_order[i]] = static_cast<std::uint32_t>(g);
      plan.flat_index[fg->flat_order[i]] = static_cast<std::uint32_t>(i);
    }
    plan.groups.push_back(std::move(*fg));
  }
  return true;
}

// §2.2: c = ceil(n/W), padding W*c - n, for every param (frozen ones are partitioned too).
bool build_stage3_params(const ModelDesc& model, const PartitionOptions& opts, PartitionPlan& plan,
                         Diagnostics& d) {
  plan.s3.resize(model.params.size());
  for (std::size_t i = 0; i < model.params.size(); ++i) {
    Stage3Param& p = plan.s3[i];
    p.numel = model.params[i].numel;
    p.partition = ceil_div(p.numel, opts.world);
    auto gathered = checked_mul(p.partition, opts.world);
    if (!gathered) {
      d.error(kSource, "/params/" + std::to_string(i),
              "expected W*ceil(n/W) of " + param_label(model, static_cast<std::uint32_t>(i)) +
                  " to fit in 64 bits, got an overflow (n = " + std::to_string(p.numel) + ")");
      return false;
    }
    p.padding = *gathered - p.numel;
  }
  return true;
}

// parameter_offload.py:311: walk all params in declaration order with running total T; a param that
// would push T past the model threshold is skipped (continue, not stop), otherwise n <= threshold
// marks it persistent. Python ints never overflow, so an overflowing n + T counts as "past".
bool mark_persistent(const PartitionOptions& opts, PartitionPlan& plan, Diagnostics& d) {
  Elements total = 0;
  for (std::size_t i = 0; i < plan.s3.size(); ++i) {
    Stage3Param& p = plan.s3[i];
    auto t = checked_add(total, p.numel);
    if (!t || *t > opts.model_persistence_threshold) continue;
    if (p.numel > opts.param_persistence_threshold) continue;
    p.persistent = true;
    total = *t;
    auto gathered = checked_add(plan.s3_persistent_gathered, p.partition * opts.world);
    if (!gathered) {
      d.error(kSource, "/params/" + std::to_string(i),
              "expected the gathered size of persistent params to fit in 64 bits, got an overflow");
      return false;
    }
    plan.s3_persistent_gathered = *gathered;
  }
  plan.s3_persistent_numel = total;
  return true;
}

// stage3.py:1160 _create_fp16_sub_groups: one sub-group when Σc <= sub_group_size, else close after
// the param that makes the running Σc >= sub_group_size, or at the group's last param.
void cut_sub_groups(const std::vector<std::uint32_t>& params, std::uint32_t g, Elements group_numel,
                    const PartitionOptions& opts, PartitionPlan& plan) {
  if (opts.sub_group_size >= group_numel) {
    plan.sub_groups.push_back({params, group_numel, g});
    return;
  }
  SubGroup cur{{}, 0, g};
  for (std::size_t i = 0; i < params.size(); ++i) {
    cur.params.push_back(params[i]);
    cur.partition_numel += plan.s3[params[i]].partition;  // ≤ group_numel: no overflow
    if (cur.partition_numel >= opts.sub_group_size || i + 1 == params.size()) {
      plan.sub_groups.push_back(std::move(cur));
      cur = SubGroup{{}, 0, g};
    }
  }
}

bool build_stage3(const ModelDesc& model, const PartitionOptions& opts, PartitionPlan& plan,
                  Diagnostics& d) {
  if (!build_stage3_params(model, opts, plan, d) || !mark_persistent(opts, plan, d)) return false;
  auto groups = trainable_groups(model, opts);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Elements group_numel = 0;
    for (std::uint32_t id : groups[g]) {
      plan.param_group[id] = static_cast<std::uint32_t>(g);
      auto s = checked_add(group_numel, plan.s3[id].partition);
      if (!s) {
        d.error(kSource, group_pointer(g),
                "expected the group's partition size to fit in 64 bits, got an overflow");
        return false;
      }
      group_numel = *s;
    }
    // stage3.py _get_trainable_parameter_groups drops groups without trainable params.
    if (groups[g].empty()) continue;
    auto total = checked_add(plan.s3_partition_numel, group_numel);
    if (!total) {
      d.error(kSource, "/groups",
              "expected the partition size summed over all groups to fit in 64 bits, got an "
              "overflow at group " +
                  std::to_string(g));
      return false;
    }
    plan.s3_partition_numel = *total;
    cut_sub_groups(groups[g], static_cast<std::uint32_t>(g), group_numel, opts, plan);
  }
  Elements unoptimized = 0;
  for (std::size_t i = 0; i < plan.s3.size(); ++i) {
    if (plan.param_group[i] != PartitionPlan::kNoGroup) continue;
    auto s = checked_add(unoptimized, plan.s3[i].partition);
    if (!s) {
      d.error(kSource, "/params",
              "expected the partition size of params outside any group to fit in 64 bits, got an "
              "overflow");
      return false;
    }
    unoptimized = *s;
  }
  plan.s3_unoptimized_partition_numel = unoptimized;
  return true;
}

}  // namespace

Result<PartitionPlan> plan_partition(const ModelDesc& model, const PartitionOptions& opts) {
  Diagnostics d;
  validate_options(model, opts, d);
  if (d.has_errors()) return Result<PartitionPlan>(std::move(d));
  PartitionPlan plan;
  plan.stage = opts.stage;
  plan.world = opts.world;
  plan.round_robin = opts.round_robin && (opts.stage == 1 || opts.stage == 2);
  plan.param_group.assign(model.params.size(), PartitionPlan::kNoGroup);
  const bool ok =
      opts.stage == 3 ? build_stage3(model, opts, plan, d) : build_stage12(model, opts, plan, d);
  if (!ok) return Result<PartitionPlan>(std::move(d));
  return plan;
}

}  // namespace zerosim
