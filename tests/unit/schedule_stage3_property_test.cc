// Properties of the stage 3 schedule on random layered models (fixed seed):
//  * with nothing retained (max_reuse_distance 0, no prefetch budget, nothing persistent) every
//    layer gathers its params once per forward and once per backward, so the gathered inputs of
//    each pass sum to Σc and each pass issues one all-gather per layer with params;
//  * with the default reuse distance every param is gathered exactly once per iteration;
//  * every gradient element is reduce-scattered exactly once per micro-step: Σ RS inputs = W·Σc;
//  * the schedule passes lower_schedule (checked by build()).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "schedule_stage3_test_util.h"

namespace zerosim {
namespace {

using namespace s3test;  // NOLINT

struct Case {
  ModelDesc model;
  DsConfig ds;
  std::uint32_t world = 1;
  Elements sum_c = 0;
  std::size_t layers_with_params = 0;
};

Case random_case(std::mt19937_64& rng) {
  auto pick = [&rng](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  Case c;
  c.world = static_cast<std::uint32_t>(pick(1, 8));
  std::vector<std::vector<Elements>> layers(pick(1, 6));
  for (auto& l : layers) {
    l.resize(pick(0, 3));
    for (auto& n : l) n = pick(1, 5000);
    if (!l.empty()) ++c.layers_with_params;
  }
  c.model = layer_model(layers);
  for (const auto& p : c.model.params) c.sum_c += ceil_div(p.numel, c.world);
  c.ds = stage3_config();
  c.ds.zero.param_persistence_threshold = 0;
  c.ds.zero.reduce_bucket_size = pick(1, 12000);
  c.ds.zero.contiguous_gradients = pick(0, 1) == 1;
  c.ds.zero.overlap_comm = pick(0, 1) == 1;
  c.ds.grad_accum_steps = pick(1, 3);
  return c;
}

// (step, micro-step, phase) -> (Σ all-gather inputs, all-gather count)
using PassKey = std::tuple<std::uint32_t, std::uint32_t, Phase>;
std::map<PassKey, std::pair<Elements, std::size_t>> gathers_per_pass(const Schedule& s) {
  std::map<PassKey, std::pair<Elements, std::size_t>> out;
  for (const Op& o : s.ops) {
    if (o.kind != OpKind::Collective || o.collective != CollectiveKind::AllGather) continue;
    if (o.phase != Phase::Forward && o.phase != Phase::Backward) continue;
    auto& v = out[{o.step, o.micro_step, o.phase}];
    v.first += o.numel;
    ++v.second;
  }
  return out;
}

TEST(ScheduleStage3Property, NothingRetainedGathersEveryElementOncePerPass) {
  std::mt19937_64 rng(20240611);
  for (int trial = 0; trial < 40; ++trial) {
    Case c = random_case(rng);
    c.ds.zero.max_reuse_distance = 0;
    c.ds.zero.prefetch_bucket_size = 0;
    SCOPED_TRACE("trial " + std::to_string(trial) + ", W " + std::to_string(c.world));
    const Schedule s = build(c.model, c.ds, c.world, 2);
    const auto passes = gathers_per_pass(s);
    for (std::uint32_t step = 0; step < 2; ++step)
      for (std::uint32_t micro = 0; micro < c.ds.grad_accum_steps; ++micro)
        for (const Phase ph : {Phase::Forward, Phase::Backward}) {
          const auto it = passes.find({step, micro, ph});
          if (c.layers_with_params == 0) {
            EXPECT_EQ(it, passes.end());
            continue;
          }
          ASSERT_NE(it, passes.end());
          EXPECT_EQ(it->second.first, c.sum_c);
          // Every FETCH finds all its params released: one launch per layer, recording or not.
          EXPECT_EQ(it->second.second, c.layers_with_params);
        }
  }
}

TEST(ScheduleStage3Property, DefaultReuseGathersEveryParamOncePerIteration) {
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 40; ++trial) {
    const Case c = random_case(rng);
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Schedule s = build(c.model, c.ds, c.world, 2);
    std::map<std::pair<std::uint32_t, std::uint32_t>, Elements> per_iteration;
    for (const auto& [key, v] : gathers_per_pass(s))
      per_iteration[{std::get<0>(key), std::get<1>(key)}] += v.first;
    for (const auto& [it, sum] : per_iteration) {
      if (it.first == 0 && it.second == 0) continue;  // the recording iteration gathers every use
      EXPECT_EQ(sum, c.sum_c) << "step " << it.first << " micro " << it.second;
    }
  }
}

TEST(ScheduleStage3Property, EveryGradientElementReduceScatteredOncePerMicroStep) {
  std::mt19937_64 rng(4242);
  for (int trial = 0; trial < 40; ++trial) {
    const Case c = random_case(rng);
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Schedule s = build(c.model, c.ds, c.world, 2);
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<Elements, Elements>> rs;
    for (const Op& o : s.ops)
      if (o.kind == OpKind::Collective && o.collective == CollectiveKind::ReduceScatter) {
        auto& v = rs[{o.step, o.micro_step}];
        v.first += o.numel;
        v.second += o.out_numel;
      }
    const std::size_t micro_steps = 2 * c.ds.grad_accum_steps;
    EXPECT_EQ(rs.size(), c.model.params.empty() ? 0u : micro_steps);
    for (const auto& [key, v] : rs) {
      EXPECT_EQ(v.first, c.world * c.sum_c);
      EXPECT_EQ(v.second, c.sum_c);
    }
  }
}

}  // namespace
}  // namespace zerosim
