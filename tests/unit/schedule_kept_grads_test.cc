// X6 (scenarios/README.md "Not carried yet"): without contiguous gradients DeepSpeed keeps the
// p.grad of the params touching the rank and averaged_gradients views them. The stage 1/2 builder
// re-homes those kept grads into one rank-sized buffer per flush (stage 2) or per pass (stage 1)
// with an *adopting* Alloc (Op::src) right after the Frees that release them: these tests check
// that the schedule says so (the src, the slot, the Frees before it, a per_flush grad pass), that
// the memory ledger is unchanged by it (the Alloc is costless and sized as before), that the
// schedule JSON keeps it, that an uncast fp32 update reads them before their Frees, and that a
// broken adopting Alloc is refused with its pointer.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/schedule_graph.h"
#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

Schedule build(int stage, const std::string& zero, std::uint32_t grad_accum = 1,
               const std::string& precision = R"("fp16": {"enabled": true}, )") {
  const std::string text =
      R"({"format": "zerosim-scenario", "version": 1, "model": {"param_list": ")" +
      std::string(ZEROSIM_SOURCE_DIR) +
      R"(/scenarios/tiny_params.json"}, "deepspeed": {"train_micro_batch_size_per_gpu": 1,
      "gradient_accumulation_steps": )" +
      std::to_string(grad_accum) + ", " + precision + R"("zero_optimization": {"stage": )" +
      std::to_string(stage) + ", " + zero +
      R"(}}, "cluster": {"gpu": "RTX-4090", "nodes": 1, "gpus_per_node": 4},
      "training": {"seq_len": 64, "steps": 2}})";
  auto sc = load_scenario_text(text, "kept_grads", "");
  EXPECT_TRUE(sc.ok()) << sc.diagnostics().to_string();
  auto plan = plan_partition(sc->model, partition_options(sc->ds, 4));
  EXPECT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  auto s = build_schedule(schedule_input(sc.value(), plan.value()));
  EXPECT_TRUE(s.ok()) << s.diagnostics().to_string();
  return s.value();
}

bool is_adopt(const Op& op) { return op.kind == OpKind::Alloc && !op.src.empty(); }

std::string lowering_errors(const Schedule& s) {
  auto g = lower_schedule(s);
  return g.ok() ? std::string() : g.diagnostics().to_string();
}

// Every kept-grads buffer is allocated by an adopting Alloc of a flush's gradients, sized by the
// buffer's slot, right after Frees of every gradient it adopts; the grad pass says per_flush at
// stage 2 and names one buffer per pass at stage 1.
TEST(KeptGrads, EveryKeptBufferAdoptsTheGradientsFreedRightBeforeIt) {
  struct Case {
    int stage;
    std::string zero;
    std::uint32_t grad_accum;
  };
  const Case cases[] = {
      {2, R"("contiguous_gradients": false)", 1},
      {2, R"("contiguous_gradients": false, "overlap_comm": true, "reduce_bucket_size": 5000)", 1},
      {2, R"("contiguous_gradients": false)", 2},
      {1, R"("contiguous_gradients": false)", 1},
      {1, R"("contiguous_gradients": false, "overlap_comm": true, "reduce_bucket_size": 5000)", 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.stage) + " " + c.zero + " gas " + std::to_string(c.grad_accum));
    const Schedule s = build(c.stage, c.zero, c.grad_accum);
    EXPECT_EQ(lowering_errors(s), "");
    std::size_t adopts = 0, kept_allocs = 0;
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
      const Op& op = s.ops[i];
      if (op.kind == OpKind::Alloc &&
          s.buffers[op.buffer].name.find("kept autograd grads") != std::string::npos)
        ++kept_allocs;
      if (!is_adopt(op)) continue;
      ++adopts;
      ASSERT_NE(op.src.flush_grads, kNone) << op.label;
      EXPECT_EQ(op.slot, s.buffers[op.buffer].slot);
      for (const FlushEntry& e : s.flush_plans[op.src.flush_grads].entries) {
        bool freed = false;
        for (std::size_t j = i; j-- > 0 && s.ops[j].kind == OpKind::Free;)
          freed = freed || s.ops[j].buffer == e.buffer;
        EXPECT_TRUE(freed) << "op " << i << ": " << s.buffers[e.buffer].name;
      }
    }
    EXPECT_GT(adopts, 0u);
    EXPECT_EQ(adopts, kept_allocs);  // no kept buffer is allocated empty any more
    ASSERT_FALSE(s.grad_passes.empty());
    EXPECT_EQ(s.grad_passes.back().per_flush, c.stage == 2);
  }
}

// fp32 training (no fp16/bf16 block): `.to(fp32)` of the flat gradient returns it uncast
// (stage_1_and_2.py:2361 at edaa722), on a rank whose averaged_gradients is one tensor a view of
// the kept p.grad, alive until `del single_grad_partition` after the update (:2383): every step's
// Frees of the kept buffers follow its optimizer step. With a cast (fp16) the fp32 copy is made
// first and DeepSpeed drops the kept grads before the update (:2369-2372): the Frees precede it.
TEST(KeptGrads, Fp32UpdateReadsTheKeptGradsBeforeTheirFrees) {
  struct Case {
    int stage;
    std::string zero;
    std::uint32_t grad_accum;
  };
  const Case cases[] = {
      {1, R"("contiguous_gradients": false)", 1},
      {1, R"("contiguous_gradients": false)", 2},
      {2, R"("contiguous_gradients": false)", 1},
      {2, R"("contiguous_gradients": false)", 2},
      {2, R"("contiguous_gradients": false, "overlap_comm": true, "reduce_bucket_size": 5000)", 1}};
  for (const Case& c : cases)
    for (const bool fp32 : {true, false}) {
      SCOPED_TRACE(std::to_string(c.stage) + " " + c.zero + " gas " + std::to_string(c.grad_accum) +
                   (fp32 ? " fp32" : " fp16"));
      const Schedule s =
          fp32 ? build(c.stage, c.zero, c.grad_accum, "") : build(c.stage, c.zero, c.grad_accum);
      EXPECT_EQ(lowering_errors(s), "");
      EXPECT_EQ(s.meta.lp, fp32 ? DType::Float32 : DType::Float16);
      std::vector<std::size_t> update(s.meta.steps, s.ops.size());  // per step: its update
      for (std::size_t i = 0; i < s.ops.size(); ++i)
        if (s.ops[i].kind == OpKind::OptimizerStep) update[s.ops[i].step] = i;
      std::size_t frees = 0;
      for (std::size_t i = 0; i < s.ops.size(); ++i) {
        const Op& op = s.ops[i];
        if (op.kind != OpKind::Free || op.phase != Phase::Step ||
            s.buffers[op.buffer].name.find("kept autograd grads") == std::string::npos)
          continue;
        ++frees;
        ASSERT_LT(update[op.step], s.ops.size()) << "step " << op.step << " has no update";
        EXPECT_EQ(i > update[op.step], fp32) << "op " << i << " frees " << s.buffers[op.buffer].name
                                             << ", the update is op " << update[op.step];
      }
      EXPECT_GE(frees, s.meta.steps);  // every step frees its kept grads
    }
}

// The contiguous path is untouched: no adopting Alloc, no per_flush pass.
TEST(KeptGrads, ContiguousGradientsHaveNoAdoptingAlloc) {
  const Schedule s = build(2, R"("contiguous_gradients": true)");
  for (const Op& op : s.ops) EXPECT_FALSE(is_adopt(op)) << op.label;
  for (const GradPass& gp : s.grad_passes) EXPECT_FALSE(gp.per_flush);
}

// The adopting Alloc and the per_flush pass survive the JSON round trip, byte for byte.
TEST(KeptGrads, RoundTripsThroughScheduleJson) {
  const Schedule s = build(2, R"("contiguous_gradients": false, "reduce_bucket_size": 5000)");
  std::ostringstream a;
  write_schedule_json(s, a);
  EXPECT_NE(a.str().find("\"per_flush\":true"), std::string::npos);
  auto back = read_schedule_json(a.str(), "kept.json");
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  EXPECT_EQ(back->grad_passes, s.grad_passes);
  std::ostringstream b;
  write_schedule_json(back.value(), b);
  EXPECT_EQ(a.str(), b.str());
}

// A broken adopting Alloc is refused with its op's pointer: src not among the Frees right before
// it, src of another kind, an extent other than its buffer's.
TEST(KeptGradsBadInput, BrokenAdoptingAllocsAreRefused) {
  const Schedule good = build(2, R"("contiguous_gradients": false)");
  std::size_t at = 0;
  while (at < good.ops.size() && !is_adopt(good.ops[at])) ++at;
  ASSERT_LT(at, good.ops.size());
  ASSERT_GT(at, 0u);
  ASSERT_EQ(good.ops[at - 1].kind, OpKind::Free);
  const std::string ptr = "/ops/" + std::to_string(at);
  {
    Schedule s = good;  // a marker between the Frees and the Alloc
    Op marker;
    marker.kind = OpKind::Marker;
    marker.step = good.ops[at].step;
    marker.micro_step = good.ops[at].micro_step;
    s.ops.insert(s.ops.begin() + static_cast<std::ptrdiff_t>(at), marker);
    const std::string e = lowering_errors(s);
    EXPECT_NE(e.find("/ops/" + std::to_string(at + 1) +
                     "/src: expected every gradient an alloc adopts to be released by the free "
                     "ops right before it, got \"grad:"),
              std::string::npos)
        << e;
  }
  {
    Schedule s = good;  // a plain region
    s.ops[at].src = Region{};
    s.ops[at].src.buffer = s.ops[at].buffer;
    const std::string e = lowering_errors(s);
    EXPECT_NE(e.find(ptr + "/src: expected a flush's gradients (flush_grads) as an alloc's src, "
                           "got another region"),
              std::string::npos)
        << e;
  }
  {
    Schedule s = good;  // sized by no slot
    s.ops[at].slot = kNone;
    const std::string e = lowering_errors(s);
    EXPECT_NE(e.find(ptr + "/slot: expected an adopting alloc sized as its buffer"),
              std::string::npos)
        << e;
  }
}

}  // namespace
}  // namespace zerosim
