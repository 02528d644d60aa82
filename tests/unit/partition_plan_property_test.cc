// Property tests of PartitionPlan on random models (fixed seed): the fast, binary-search and
// sweep based queries must agree with a brute-force walk written straight from deepspeed_zero.md
// §2.1 steps 7–10 (get_partition_info / groups_padding) and §2.2 / §7.1 step 3 for stage 3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"

namespace zerosim {
namespace {

struct Case {
  ModelDesc model;
  PartitionOptions opts;
};

Elements random_size(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0:
      return 0;
    case 1:
      return 1 + rng() % 3;
    case 2:
      return 1 + rng() % 20;
    case 3:
      return 1 + rng() % 200;
    default:
      return 1 + rng() % 2000;  // often larger than S: straddles many partitions
  }
}

Case random_case(std::mt19937_64& rng, int stage) {
  Case c;
  const std::size_t n = 1 + rng() % 24;
  for (std::size_t i = 0; i < n; ++i) {
    const Elements s = random_size(rng);
    c.model.params.push_back({"p" + std::to_string(i), {s}, s, rng() % 8 != 0});
  }
  c.opts.stage = stage;
  c.opts.world = static_cast<std::uint32_t>(1 + rng() % 64);
  c.opts.round_robin = rng() % 2 == 0;
  c.opts.sub_group_size = rng() % 60;
  c.opts.param_persistence_threshold = rng() % 300;
  c.opts.model_persistence_threshold = rng() % 3 == 0 ? rng() % 1000 : 9223372036854775807ULL;
  // 0: the default single group; 9..12 groups take the sort path of grads_in_partition_runs.
  const std::size_t groups = rng() % 5 == 0 ? 9 + rng() % 4 : rng() % 4;
  if (groups > 0) {
    c.opts.groups.resize(groups);
    for (std::size_t i = 0; i < n; ++i)
      if (rng() % 10 != 0) c.opts.groups[rng() % groups].push_back(static_cast<std::uint32_t>(i));
    for (auto& g : c.opts.groups) std::shuffle(g.begin(), g.end(), rng);
  }
  return c;
}

// The optimizer param groups as DeepSpeed sees them: requires_grad params only, group order.
std::vector<std::vector<std::uint32_t>> trainable(const Case& c) {
  std::vector<std::vector<std::uint32_t>> out;
  if (c.opts.groups.empty()) {
    out.emplace_back();
    for (std::uint32_t i = 0; i < c.model.params.size(); ++i)
      if (c.model.params[i].trainable) out.back().push_back(i);
    return out;
  }
  for (const auto& g : c.opts.groups) {
    out.emplace_back();
    for (std::uint32_t id : g)
      if (c.model.params[id].trainable) out.back().push_back(id);
  }
  return out;
}

// get_partition_info, literally: walk the flat order with a running offset.
RankPartition brute_rank(const ModelDesc& m, const FlatGroup& g, std::uint32_t rank) {
  RankPartition rp;
  rp.rank = rank;
  const Elements start = g.partition * rank, end = g.partition * (rank + 1);
  Elements cur = 0;
  for (std::uint32_t id : g.flat_order) {
    const Elements n = m.params[id].numel;
    if (start <= cur && cur < end) {
      rp.params_in.push_back(id);
      rp.grads_in_partition += n;
    } else if (cur < start && start < cur + n) {
      rp.params_in.push_back(id);
      rp.grads_in_partition += n;
      rp.first_offset = start - cur;
    }
    cur += n;
  }
  if (g.numel <= start) {
    rp.padding = g.partition;
  } else if (g.numel < end) {
    rp.padding = end - g.numel;
  }
  return rp;
}

void check_flat_group(const Case& c, const PartitionPlan& p, std::size_t gi) {
  const FlatGroup& g = p.groups[gi];
  const std::uint32_t w = p.world;
  ASSERT_EQ(g.aligned % (2 * w), 0u);
  ASSERT_EQ(g.aligned, g.numel + g.padding);
  ASSERT_LT(g.padding, 2 * w);
  ASSERT_EQ(g.partition * w, g.aligned);
  ASSERT_EQ(g.partition % 2, 0u);
  Elements padding_sum = 0;
  bool padding_seen = false;
  for (std::uint32_t r = 0; r < w; ++r) {
    const RankPartition fast = p.rank_partition(gi, r);
    const RankPartition slow = brute_rank(c.model, g, r);
    ASSERT_EQ(fast.params_in, slow.params_in) << "rank " << r;
    ASSERT_EQ(fast.first_offset, slow.first_offset) << "rank " << r;
    ASSERT_EQ(fast.padding, slow.padding) << "rank " << r;
    ASSERT_EQ(fast.grads_in_partition, slow.grads_in_partition) << "rank " << r;
    // Padding only on the last rank(s): after the first padded rank, all later ranks are full.
    if (padding_seen) {
      ASSERT_EQ(fast.padding, g.partition) << "rank " << r;
    }
    padding_seen = padding_seen || fast.padding > 0;
    padding_sum += fast.padding;
  }
  ASSERT_EQ(padding_sum, g.padding);
  // Every flat element in [0, P) owned by exactly one rank, slices contiguous and ordered.
  for (std::size_t i = 0; i < g.flat_order.size(); ++i) {
    const std::uint32_t id = g.flat_order[i];
    const Elements n = c.model.params[id].numel, start = g.flat_offset[i];
    const auto own = p.owners(gi, id);
    if (n == 0) {
      ASSERT_EQ(own.size(), start < g.aligned ? 1u : 0u);
      if (!own.empty()) {
        ASSERT_EQ(own[0], (OwnerSlice{static_cast<std::uint32_t>(start / g.partition), 0, 0}));
      }
      continue;
    }
    ASSERT_FALSE(own.empty());
    Elements next = 0;
    for (std::size_t k = 0; k < own.size(); ++k) {
      ASSERT_EQ(own[k].offset, next);
      ASSERT_GT(own[k].length, 0u);
      if (k > 0) {
        ASSERT_EQ(own[k].rank, own[k - 1].rank + 1);
      }
      const Elements lo = start + own[k].offset, hi = lo + own[k].length;
      ASSERT_GE(lo, own[k].rank * g.partition);
      ASSERT_LE(hi, (own[k].rank + 1) * g.partition);
      next += own[k].length;
    }
    ASSERT_EQ(next, n);
  }
}

void check_stage12(const Case& c, const PartitionPlan& p) {
  const auto groups = trainable(c);
  ASSERT_EQ(p.groups.size(), groups.size());
  for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
    SCOPED_TRACE("group " + std::to_string(gi));
    ASSERT_EQ(p.groups[gi].params, groups[gi]);
    // _round_robin_reorder: bucket i into key i mod W, keys in creation order 0, 1, ...
    std::vector<std::vector<std::uint32_t>> buckets(p.world);
    for (std::size_t i = 0; i < groups[gi].size(); ++i)
      buckets[c.opts.round_robin ? i % p.world : 0].push_back(groups[gi][i]);
    std::vector<std::uint32_t> order;
    for (const auto& b : buckets) order.insert(order.end(), b.begin(), b.end());
    ASSERT_EQ(p.groups[gi].flat_order, order);
    check_flat_group(c, p, gi);
  }
  // The shared grads_in_partition buffer: per rank, the runs and the maximum.
  std::vector<Elements> brute(p.world, 0);
  for (std::uint32_t r = 0; r < p.world; ++r) {
    for (const FlatGroup& g : p.groups) brute[r] += brute_rank(c.model, g, r).grads_in_partition;
    ASSERT_EQ(p.grads_in_partition(r), brute[r]) << "rank " << r;
  }
  const auto runs = p.grads_in_partition_runs();
  ASSERT_FALSE(runs.empty());
  ASSERT_EQ(runs[0].first_rank, 0u);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const std::uint32_t end = k + 1 < runs.size() ? runs[k + 1].first_rank : p.world;
    ASSERT_LT(runs[k].first_rank, end);
    if (k > 0) {
      ASSERT_NE(runs[k].value, runs[k - 1].value);  // maximal runs
    }
    for (std::uint32_t r = runs[k].first_rank; r < end; ++r) ASSERT_EQ(runs[k].value, brute[r]);
  }
  ASSERT_EQ(p.max_grads_in_partition(), *std::max_element(brute.begin(), brute.end()));
}

void check_stage3(const Case& c, const PartitionPlan& p) {
  const std::uint32_t w = p.world;
  Elements t = 0, persistent = 0, gathered = 0;
  for (std::uint32_t i = 0; i < c.model.params.size(); ++i) {
    const Stage3Param& s = p.s3[i];
    const Elements n = c.model.params[i].numel;
    ASSERT_EQ(s.partition, (n + w - 1) / w);
    ASSERT_EQ(s.padding, w * s.partition - n);
    Elements real = 0;
    for (std::uint32_t r = 0; r < w; ++r) real += p.s3_real_numel(i, r);
    ASSERT_EQ(real, n);
    // parameter_offload.py mark_persistent_parameters, literally.
    bool expect_persistent = false;
    if (!(n + t > c.opts.model_persistence_threshold) && n <= c.opts.param_persistence_threshold) {
      expect_persistent = true;
      t += n;
      persistent += n;
      gathered += w * s.partition;
    }
    ASSERT_EQ(s.persistent, expect_persistent) << "param " << i;
  }
  ASSERT_EQ(p.s3_persistent_numel, persistent);
  ASSERT_EQ(p.s3_persistent_gathered, gathered);
  // Sub-groups: per group, concatenation == trainable params; every sub-group but a group's last
  // reaches sub_group_size exactly at its last param.
  Elements total = 0;
  for (std::size_t k = 0; k < p.sub_groups.size(); ++k) {
    const SubGroup& sg = p.sub_groups[k];
    ASSERT_FALSE(sg.params.empty());
    Elements sum = 0, before_last = 0;
    for (std::uint32_t id : sg.params) {
      before_last = sum;
      sum += p.s3[id].partition;
      ASSERT_EQ(p.param_group[id], sg.group);
    }
    ASSERT_EQ(sg.partition_numel, sum);
    total += sum;
    const bool last_of_group =
        k + 1 == p.sub_groups.size() || p.sub_groups[k + 1].group != sg.group;
    if (!last_of_group) {
      ASSERT_GE(sum, c.opts.sub_group_size);
    }
    // No earlier param closed it: every proper non-empty prefix stays below sub_group_size
    // (unless the whole group fit, where stage3.py returns one sub-group before cutting).
    const bool first_of_group = k == 0 || p.sub_groups[k - 1].group != sg.group;
    if (sg.params.size() > 1 && !(first_of_group && last_of_group)) {
      ASSERT_LT(before_last, c.opts.sub_group_size);
    }
    if (sg.params.size() > 1 && first_of_group && last_of_group) {
      ASSERT_TRUE(sum <= c.opts.sub_group_size || before_last < c.opts.sub_group_size);
    }
  }
  ASSERT_EQ(p.s3_partition_numel, total);
  std::vector<std::vector<std::uint32_t>> concat;
  for (const auto& g : trainable(c))
    if (!g.empty()) concat.push_back(g);
  std::vector<std::vector<std::uint32_t>> got;
  for (std::size_t k = 0; k < p.sub_groups.size(); ++k) {
    if (k == 0 || p.sub_groups[k].group != p.sub_groups[k - 1].group) got.emplace_back();
    got.back().insert(got.back().end(), p.sub_groups[k].params.begin(),
                      p.sub_groups[k].params.end());
  }
  ASSERT_EQ(got, concat);
  Elements unoptimized = 0, flattened = 0;
  for (std::uint32_t i = 0; i < c.model.params.size(); ++i) {
    if (p.param_group[i] == PartitionPlan::kNoGroup) unoptimized += p.s3[i].partition;
    flattened += p.s3[i].partition;
  }
  ASSERT_EQ(p.s3_unoptimized_partition_numel, unoptimized);
  ASSERT_EQ(p.s3_partition_numel + unoptimized, flattened);
}

TEST(PartitionPlanProperty, Stage12RandomModelsMatchBruteForce) {
  std::mt19937_64 rng(20240611);
  for (int i = 0; i < 300; ++i) {
    const Case c = random_case(rng, 1 + i % 2);
    SCOPED_TRACE("case " + std::to_string(i) + " W=" + std::to_string(c.opts.world));
    auto r = plan_partition(c.model, c.opts);
    ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
    check_stage12(c, r.value());
  }
}

TEST(PartitionPlanProperty, Stage3RandomModelsMatchBruteForce) {
  std::mt19937_64 rng(77);
  for (int i = 0; i < 300; ++i) {
    const Case c = random_case(rng, 3);
    SCOPED_TRACE("case " + std::to_string(i) + " W=" + std::to_string(c.opts.world));
    auto r = plan_partition(c.model, c.opts);
    ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
    check_stage3(c, r.value());
  }
}

TEST(PartitionPlanProperty, PlanIsPure) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 50; ++i) {
    const Case c = random_case(rng, i % 4);
    auto a = plan_partition(c.model, c.opts), b = plan_partition(c.model, c.opts);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->param_group, b->param_group);
    ASSERT_EQ(a->groups.size(), b->groups.size());
    for (std::size_t g = 0; g < a->groups.size(); ++g) {
      ASSERT_EQ(a->groups[g].flat_order, b->groups[g].flat_order);
      ASSERT_EQ(a->groups[g].flat_offset, b->groups[g].flat_offset);
    }
    ASSERT_EQ(a->s3_partition_numel, b->s3_partition_numel);
    ASSERT_EQ(a->sub_groups.size(), b->sub_groups.size());
  }
}

}  // namespace
}  // namespace zerosim
