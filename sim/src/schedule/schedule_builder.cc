// build_schedule (schedule_builder.h): checks the inputs every builder relies on and dispatches to
// the stage builders (builders.h); the overflow-step and zero.Init rules shared with the CLI and
// the scenario loader.
#include "zerosim/schedule_builder.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedule/builders.h"
#include "zerosim/memory_model.h"
#include "zerosim/saturating.h"
#include "zerosim/schedule_graph.h"

namespace zerosim {

namespace {
std::string str(std::uint64_t v) { return std::to_string(v); }
}  // namespace

namespace {

constexpr const char* kSource = "schedule";
constexpr Bytes kMaxActivationBytes = Bytes{1} << 62;

// What every builder relies on: the three inputs, matching world sizes and stage layouts, a
// gradient order of distinct, known, trainable params.
Diagnostics check_input(const ScheduleInput& in) {
  Diagnostics d;
  if (in.model == nullptr || in.plan == nullptr || in.ds == nullptr) {
    d.error(kSource, "",
            "expected a model, a partition plan and a DeepSpeed config, got a missing input");
    return d;
  }
  for (const Diagnostic& r : in.ds->refusals) d.add(r);  // stage 3 NVMe offload
  // The config's dtypes and wrapper were resolved by one DeepSpeed's rules: building another's
  // schedule from them would mix the two.
  if (const std::string why = in.ds->version_problem(in.version); !why.empty())
    d.error(kSource, "/deepspeed_version", why);
  const ModelDesc& m = *in.model;
  const PartitionPlan& plan = *in.plan;
  // Activations grow with sequence x micro-batch, and nothing else bounds their product: past
  // 2^62 bytes the buffers of one rank would no longer add up in 64 bits (lower_schedule's check),
  // so the run is refused here, naming the inputs, before anything is built.
  if (const Bytes act = activation_bytes(m, in.training, in.ds->lp_dtype());
      act > kMaxActivationBytes)
    d.error("zerosim", "",
            "expected activations per GPU of at most 2^62 bytes (4 EiB), got " +
                std::string(act == kBytesOverflow ? "more than 2^64" : str(act)) +
                " bytes at sequence length " + str(in.training.seq_len) + " x micro-batch " +
                str(in.training.micro_batch) + " (--seq-len, --micro-batch) for " + m.name);
  if (in.steps == 0) d.error(kSource, "/steps", "expected at least 1 optimizer step, got 0");
  if (in.ds->grad_accum_steps == 0 || in.ds->grad_accum_steps > 0xFFFFFFFFull)
    d.error(kSource, "/gradient_accumulation_steps",
            "expected 1..4294967295 micro-steps per step, got " + str(in.ds->grad_accum_steps));
  if (in.ds->zero.stage < 0 || in.ds->zero.stage > 3)
    d.error(kSource, "/zero_optimization/stage",
            "expected a ZeRO stage 0..3, got " + std::to_string(in.ds->zero.stage));
  if (in.training.zero_init)
    if (const std::string why = zero_init_problem(in.ds->zero.stage, in.mode); !why.empty())
      d.error(kSource, "/training/zero_init", why);
  if (const std::string why = overflow_steps_problem(in.overflow_steps, in.steps); !why.empty())
    d.error(kSource, "/overflow_steps", why);
  if (!in.overflow_steps.empty()) {
    const DType lp = in.ds->lp_dtype();
    const int stage = in.ds->zero.stage;
    // Stage 0's FP16_Optimizer checks fp16 grads only (CheckOverflow in its step()).
    const bool checked =
        lp == DType::Float16 ||
        (stage != 3 && stage != 0 && lp == DType::BFloat16 && in.ds->bf16_check_grad_overflow);
    const OptimizerPath path = in.ds->optimizer_path();
    const bool zero = path == OptimizerPath::ZeroStage1And2 || path == OptimizerPath::ZeroStage3;
    const bool fp16opt = path == OptimizerPath::Fp16Optimizer;
    if (in.mode != Accounting::DeepSpeed || !(zero || fp16opt))
      d.error(
          kSource, "/overflow_steps",
          "expected DeepSpeedZeroOptimizer (stage 1/2), stage 3 or stage 0's FP16_Optimizer in "
          "deepspeed mode for overflow steps, got " +
              std::string(in.mode == Accounting::DeepSpeed
                              ? "stage " + std::to_string(stage) + " (" +
                                    (path == OptimizerPath::Bf16Optimizer ? "BF16_Optimizer"
                                                                          : "no ZeRO optimizer") +
                                    ")"
                              : "paper mode"));
    else if (!checked)
      d.error(kSource, "/overflow_steps",
              "expected a precision whose step() checks for overflow (fp16; bf16 with "
              "check_grad_overflow in stage "
              "1/2), got " +
                  std::string(dtype_name(lp)) + " in stage " + std::to_string(stage));
  }
  if ((plan.stage == 3) != (in.ds->zero.stage == 3))
    d.error(kSource, "/plan/stage",
            "expected a partition plan for stage " + std::to_string(in.ds->zero.stage) +
                "'s layout, got one for stage " + std::to_string(plan.stage));
  if (plan.world == 0 || plan.world != in.cluster.world_size())
    d.error(kSource, "/plan/world",
            "expected the plan's world size to equal the cluster's " +
                str(in.cluster.world_size()) + " ranks, got " + str(plan.world));
  if (plan.param_group.size() != m.params.size())
    d.error(kSource, "/plan/param_group",
            "expected a plan made for this model's " + str(m.params.size()) +
                " params, got one for " + str(plan.param_group.size()));
  std::vector<bool> seen(m.params.size(), false);
  for (std::size_t i = 0; i < m.grad_order.size(); ++i) {
    const std::uint32_t p = m.grad_order[i];
    const std::string ptr = "/grad_order/" + str(i);
    if (p >= m.params.size()) {
      d.error(kSource, ptr,
              "expected a param id below " + str(m.params.size()) + ", got " + str(p));
    } else if (seen[p]) {
      d.error(kSource, ptr,
              "expected each param once in the gradient order, got " + quote(m.params[p].name) +
                  " again");
    } else {
      seen[p] = true;
    }
  }
  return d;
}

// Buffers whose bytes do not add up in 64 bits come from the inputs (a reduce_bucket_size of 9e18
// elements), not from a builder bug: refused naming the largest buffer, before the self-check
// (lower_schedule) would call the same sum an internal error.
Diagnostics check_buffer_total(const Schedule& s) {
  Diagnostics d;
  std::vector<Elements> max_slot(s.meta.slot_names.size(), 0);  // the largest role's count
  for (const RankRole& r : s.roles)
    for (const SlotValues::Entry& e : r.slots.nonzero())
      if (e.slot < max_slot.size()) max_slot[e.slot] = std::max(max_slot[e.slot], e.value);
  Bytes total = 0, largest = 0;
  const Buffer* big = nullptr;
  Elements big_numel = 0;
  bool wraps = false;
  for (const Buffer& b : s.buffers) {
    const Elements numel = b.slot == kNone            ? b.numel
                           : b.slot < max_slot.size() ? max_slot[b.slot]
                                                      : 0;
    const std::optional<Bytes> bytes = checked_mul(numel, dtype_size(b.dtype));
    const Bytes shown = bytes.value_or(kBytesOverflow);
    if (big == nullptr || shown > largest) big = &b, largest = shown, big_numel = numel;
    const std::optional<Bytes> sum = bytes ? checked_add(total, *bytes) : std::nullopt;
    wraps = wraps || !sum;
    total = sum.value_or(kBytesOverflow);
  }
  if (wraps && big != nullptr)
    d.error("zerosim", "",
            "expected the buffers of one GPU to add up to less than 2^64 bytes (16 EiB), got more; "
            "the largest is " +
                quote(big->name) + " (" + str(big_numel) + " elements of " +
                std::string(dtype_name(big->dtype)) +
                "; bucket sizes such as reduce_bucket_size are in elements)");
  return d;
}

}  // namespace

std::string zero_init_problem(int stage, Accounting mode) {
  if (stage == 3 || mode != Accounting::DeepSpeed) return {};
  return "expected ZeRO stage 3 (zero.Init partitions params as they are built), got stage " +
         std::to_string(stage);
}

std::string overflow_steps_problem(const std::vector<std::uint32_t>& overflow_steps,
                                   std::uint32_t steps) {
  for (std::size_t k = 0; k < overflow_steps.size(); ++k) {
    const std::uint32_t st = overflow_steps[k];
    if (k > 0 && st <= overflow_steps[k - 1])
      return "expected ascending steps without repeats, got " + std::to_string(st) + " after " +
             std::to_string(overflow_steps[k - 1]);
    if (st + 1 >= steps)  // the last step is the steady state a simulation reports: it updates
      return "expected steps before the last one (" + std::to_string(steps == 0 ? 0 : steps - 1) +
             ", the steady state a simulation reports), got " + std::to_string(st);
  }
  return {};
}

ScheduleInput schedule_input(const Scenario& s, const PartitionPlan& plan) {
  ScheduleInput in;
  in.model = &s.model;
  in.plan = &plan;
  in.ds = &s.ds;
  in.cluster = s.cluster;
  in.training = s.training;
  in.steps = s.steps;
  in.overflow_steps = s.overflow_steps;
  in.mode = s.mode;
  in.version = s.version;
  return in;
}

Result<Schedule> build_schedule(const ScheduleInput& in) {
  Diagnostics d = check_input(in);
  if (d.has_errors()) return d;
  Result<Schedule> built = [&]() -> Result<Schedule> {
    if (in.mode == Accounting::Paper) return schedule::build_paper(in);
    if (in.ds->zero.stage == 3) return schedule::build_stage3(in);
    return schedule::build_stage012(in);
  }();
  if (!built.ok()) return built;
  if (Diagnostics sizes = check_buffer_total(built.value()); sizes.has_errors()) return sizes;
  // The GEMM shape the engine's compute efficiency depends on (time_model.h), so a schedule file
  // simulates as its scenario does.
  if (in.model->arch) {
    built.value().meta.hidden = in.model->arch->hidden;
    built.value().meta.tokens_per_micro_batch = in.training.micro_batch * in.training.seq_len;
  }
  // A schedule that fails its own consistency check is a builder bug: report it, never hand it on.
  if (!in.self_check) return built;
  auto lowered = lower_schedule(built.value(), "schedule (internal error)", *in.self_check);
  if (!lowered.ok()) return lowered.diagnostics();
  return built;
}

}  // namespace zerosim
