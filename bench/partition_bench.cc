// Benchmarks for PartitionPlan (sim/include/zerosim/partition_plan.h).
//
// BM_PlanPartition405B: plan_partition + max_grads_in_partition for a Llama-3.1-405B-sized
// synthetic model (126 blocks x 9 tensors + embedding, final norm and LM head = 1137 tensors,
// ~406e9 elements) at W = 8 .. 65536, for stage 2 and stage 3. The cost should be flat in W.
// BM_RankQueries405B: rank_partition, grads_in_partition and max_grads_in_partition of one plan at
// W = 8 .. 2^24: none of them may grow with W (binary search and a per-param sweep, no rank loop).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"

namespace {

using zerosim::Elements;

// Hyper-parameters of Llama-3.1-405B (hidden 16384, FFN 53248, 126 layers, 128 heads / 8 KV heads
// of dim 128, vocab 128256, untied head; Meta's published config.json).
zerosim::ModelDesc synthetic_405b() {
  constexpr Elements h = 16384, ffn = 53248, kv = 8 * 128, vocab = 128256;
  zerosim::ModelDesc m;
  m.name = "synthetic-llama3.1-405b";
  auto add = [&m](const std::string& name, Elements rows, Elements cols) {
    m.params.push_back({name, {rows, cols}, rows * cols, true});
  };
  add("model.embed_tokens.weight", vocab, h);
  for (int l = 0; l < 126; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "self_attn.q_proj.weight", h, h);
    add(p + "self_attn.k_proj.weight", kv, h);
    add(p + "self_attn.v_proj.weight", kv, h);
    add(p + "self_attn.o_proj.weight", h, h);
    add(p + "mlp.gate_proj.weight", ffn, h);
    add(p + "mlp.up_proj.weight", ffn, h);
    add(p + "mlp.down_proj.weight", h, ffn);
    add(p + "input_layernorm.weight", 1, h);
    add(p + "post_attention_layernorm.weight", 1, h);
  }
  add("model.norm.weight", 1, h);
  add("lm_head.weight", vocab, h);
  return m;
}

void BM_PlanPartition405B(benchmark::State& state) {
  const auto model = synthetic_405b();
  zerosim::PartitionOptions o;
  o.world = static_cast<std::uint32_t>(state.range(0));
  o.stage = static_cast<int>(state.range(1));
  for (auto _ : state) {
    auto plan = zerosim::plan_partition(model, o);
    if (!plan.ok()) {
      state.SkipWithError("plan_partition failed");
      break;
    }
    Elements m = o.stage == 3 ? plan->s3_partition_numel : plan->max_grads_in_partition();
    benchmark::DoNotOptimize(m);
  }
  state.counters["tensors"] = static_cast<double>(model.params.size());
}
BENCHMARK(BM_PlanPartition405B)
    ->ArgsProduct({{8, 64, 512, 4096, 32768, 65536}, {2, 3}})
    ->ArgNames({"W", "stage"})
    ->Unit(benchmark::kMicrosecond);

void BM_RankQueries405B(benchmark::State& state) {
  const auto model = synthetic_405b();
  zerosim::PartitionOptions o;
  o.world = static_cast<std::uint32_t>(state.range(0));
  o.stage = 2;
  auto plan = zerosim::plan_partition(model, o);
  if (!plan.ok()) {
    state.SkipWithError("plan_partition failed");
    return;
  }
  const std::uint32_t mid = o.world / 2, last = o.world - 1;
  for (auto _ : state) {
    auto a = plan->rank_partition(0, mid);
    auto b = plan->rank_partition(0, last);
    Elements g = plan->grads_in_partition(mid) + plan->max_grads_in_partition();
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK(BM_RankQueries405B)
    ->RangeMultiplier(16)
    ->Range(8, 1 << 24)
    ->ArgName("W")
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
