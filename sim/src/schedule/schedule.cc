// Schedule IR basics: enum names, DeepSpeed version parsing, per-role size lookups, the consistency
// checker every schedule passes after building or reading, and build_schedule, which checks the
// inputs every builder relies on and dispatches to the stage builders (builders.h).
#include "zerosim/schedule.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "schedule/builders.h"

namespace zerosim {

std::string_view deepspeed_version_name(DeepSpeedVersion v) {
  switch (v) {
    case DeepSpeedVersion::Edaa722:
      return "edaa722";
    case DeepSpeedVersion::V0_14_4:
      return "0.14.4";
  }
  return "unknown";
}

std::optional<DeepSpeedVersion> parse_deepspeed_version(std::string_view s) {
  if (s == "edaa722" || s == "edaa7221267243c7be7fb49c5d5f5c4fb97b4641")
    return DeepSpeedVersion::Edaa722;
  if (s == "0.14.4" || s == "v0.14.4") return DeepSpeedVersion::V0_14_4;
  return std::nullopt;
}

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::Compute:
      return "compute";
    case Stream::Reduce:
      return "reduce";
    case Stream::Gather:
      return "gather";
    case Stream::H2D:
      return "h2d";
    case Stream::D2H:
      return "d2h";
    case Stream::Host:
      return "host";
  }
  return "unknown";
}

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Alloc:
      return "alloc";
    case OpKind::Free:
      return "free";
    case OpKind::Forward:
      return "forward";
    case OpKind::Backward:
      return "backward";
    case OpKind::Recompute:
      return "recompute";
    case OpKind::GradReady:
      return "grad_ready";
    case OpKind::CopyToBucket:
      return "copy_to_bucket";
    case OpKind::Copy:
      return "copy";
    case OpKind::Collective:
      return "collective";
    case OpKind::OptimizerStep:
      return "optimizer_step";
    case OpKind::WriteBack:
      return "write_back";
    case OpKind::HostToDevice:
      return "host_to_device";
    case OpKind::DeviceToHost:
      return "device_to_host";
    case OpKind::Sync:
      return "sync";
    case OpKind::Marker:
      return "marker";
  }
  return "unknown";
}

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::Init:
      return "init";
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::BoundaryReduce:
      return "boundary_reduce";
    case Phase::Epilogue:
      return "epilogue";
    case Phase::Step:
      return "step";
    case Phase::PostStep:
      return "post_step";
  }
  return "unknown";
}

std::string_view reduce_op_name(ReduceOp r) {
  switch (r) {
    case ReduceOp::None:
      return "";
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Max:
      return "max";
  }
  return "";
}

std::string_view category_name(BufferCategory c) {
  switch (c) {
    case BufferCategory::Param16:
      return "param16";
    case BufferCategory::Param32:
      return "param32";
    case BufferCategory::Grad:
      return "grad";
    case BufferCategory::OptimState:
      return "optim_state";
    case BufferCategory::Activation:
      return "activation";
    case BufferCategory::CommBucket:
      return "comm_bucket";
    case BufferCategory::GatheredParam:
      return "gathered_param";
    case BufferCategory::Temp:
      return "temp";
  }
  return "unknown";
}

std::uint64_t RankRole::rank_count() const {
  std::uint64_t n = 0;
  for (const auto& [first, last] : ranks)
    if (last >= first) n += static_cast<std::uint64_t>(last - first) + 1;
  return n;
}

std::uint32_t Schedule::role_of(std::uint32_t rank) const {
  // Each role's ranges are sorted and disjoint: binary search inside every role.
  for (std::size_t r = 0; r < roles.size(); ++r) {
    const auto& ranges = roles[r].ranks;
    auto it = std::upper_bound(ranges.begin(), ranges.end(), rank,
                               [](std::uint32_t v, const auto& range) { return v < range.first; });
    if (it != ranges.begin() && std::prev(it)->second >= rank) return static_cast<std::uint32_t>(r);
  }
  return kNone;
}

Elements Schedule::buffer_numel(std::uint32_t buffer, std::uint32_t role) const {
  if (buffer >= buffers.size()) return 0;
  const Buffer& b = buffers[buffer];
  if (b.slot == kNone) return b.numel;
  if (role >= roles.size() || b.slot >= roles[role].slots.size()) return 0;
  return roles[role].slots[b.slot];
}

Elements Schedule::op_elements(const Op& op, std::uint32_t role) const {
  if (op.slot == kNone) return op.elements;
  if (role >= roles.size() || op.slot >= roles[role].slots.size()) return 0;
  return roles[role].slots[op.slot];
}

namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

void validate_roles(const Schedule& s, const std::string& src, Diagnostics& d) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> all;
  for (std::size_t r = 0; r < s.roles.size(); ++r) {
    const RankRole& role = s.roles[r];
    const std::string ptr = "/roles/" + str(r);
    if (role.slots.size() != s.meta.slot_names.size())
      d.error(src, ptr + "/slots",
              "expected " + str(s.meta.slot_names.size()) +
                  " slot values (one per slot name), got " + str(role.slots.size()));
    if (role.ranks.empty())
      d.error(src, ptr + "/ranks", "expected at least one rank range, got none");
    for (std::size_t i = 0; i < role.ranks.size(); ++i) {
      const auto& [first, last] = role.ranks[i];
      if (first > last)
        d.error(src, ptr + "/ranks/" + str(i),
                "expected first <= last, got [" + str(first) + ", " + str(last) + "]");
      if (i > 0 && role.ranks[i - 1].second >= first)
        d.error(src, ptr + "/ranks/" + str(i), "expected ranges sorted and disjoint");
      all.push_back(role.ranks[i]);
    }
    if (!role.ranks.empty() && role.representative != role.ranks.front().first)
      d.error(src, ptr + "/representative",
              "expected the role's first rank " + str(role.ranks.front().first) + ", got " +
                  str(role.representative));
  }
  std::sort(all.begin(), all.end());
  std::uint64_t next = 0;  // first rank not yet covered
  for (const auto& [first, last] : all) {
    if (first != next) {
      d.error(
          src, "/roles",
          "expected the roles to cover ranks 0.." + str(s.meta.world - 1) + " exactly once, " +
              (first < next ? "got rank " + str(first) + " twice"
                            : "got ranks " + str(next) + ".." + str(first - 1) + " in no role"));
      return;
    }
    next = static_cast<std::uint64_t>(last) + 1;
  }
  if (next != s.meta.world)
    d.error(src, "/roles",
            "expected the roles to cover ranks 0.." + str(s.meta.world - 1) +
                " exactly once, got " +
                (next < s.meta.world
                     ? "ranks " + str(next) + ".." + str(s.meta.world - 1) + " in no role"
                     : "ranks up to " + str(next - 1)));
}

void validate_collective(const Op& op, const std::string& src, const std::string& ptr,
                         Diagnostics& d) {
  if (op.group_size == 0)
    d.error(src, ptr + "/group_size", "expected a group of at least 1 rank, got 0");
  const bool rooted =
      op.collective == CollectiveKind::Reduce || op.collective == CollectiveKind::Broadcast;
  if (rooted && (op.dst < 0 || static_cast<std::uint64_t>(op.dst) >= op.group_size))
    d.error(src, ptr + "/dst",
            "expected a root rank in 0.." + str(op.group_size == 0 ? 0 : op.group_size - 1) +
                ", got " + std::to_string(op.dst));
  if (!rooted && op.dst != -1)
    d.error(src, ptr + "/dst",
            "expected no root (-1) for " + std::string(collective_name(op.collective)) + ", got " +
                std::to_string(op.dst));
}

// Alloc/Free pairing in program order: no double Alloc, no Free of a dead buffer, nothing but
// persistent buffers live at the end.
void validate_lifetimes(const Schedule& s, const std::string& src, Diagnostics& d) {
  std::vector<std::uint32_t> live_since(s.buffers.size(), kNone);
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.buffer >= s.buffers.size()) continue;
    const std::string ptr = "/ops/" + str(i);
    if (op.kind == OpKind::Alloc) {
      if (live_since[op.buffer] != kNone)
        d.error(src, ptr,
                "expected buffer " + quote(s.buffers[op.buffer].name) +
                    " to be free before its Alloc, got it live since op " +
                    str(live_since[op.buffer]));
      live_since[op.buffer] = static_cast<std::uint32_t>(i);
    } else if (op.kind == OpKind::Free) {
      if (live_since[op.buffer] == kNone)
        d.error(src, ptr,
                "expected buffer " + quote(s.buffers[op.buffer].name) +
                    " to be live before its Free, got it free");
      live_since[op.buffer] = kNone;
    }
  }
  for (std::size_t b = 0; b < s.buffers.size(); ++b)
    if (live_since[b] != kNone && !s.buffers[b].persistent)
      d.error(src, "/buffers/" + str(b),
              "expected buffer " + quote(s.buffers[b].name) + " (allocated at op " +
                  str(live_since[b]) +
                  ") to be freed or marked persistent, got it live at the end");
}

void validate_ops(const Schedule& s, const std::string& src, Diagnostics& d) {
  const std::size_t n_slots = s.meta.slot_names.size();
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    const std::string ptr = "/ops/" + str(i);
    if (op.buffer != kNone && op.buffer >= s.buffers.size())
      d.error(src, ptr + "/buffer",
              "expected a buffer index below " + str(s.buffers.size()) + ", got " + str(op.buffer));
    const bool needs_buffer = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
    if (needs_buffer && op.buffer == kNone)
      d.error(src, ptr + "/buffer", "expected a buffer for " + std::string(op_kind_name(op.kind)));
    if (op.slot != kNone && op.slot >= n_slots)
      d.error(src, ptr + "/slot",
              "expected a slot index below " + str(n_slots) + ", got " + str(op.slot));
    for (std::size_t k = 0; k < op.deps.size(); ++k)
      if (op.deps[k] >= i)
        d.error(src, ptr + "/deps/" + str(k),
                "expected an earlier op index (below " + str(i) + "), got " + str(op.deps[k]));
    if (op.step >= s.meta.steps)
      d.error(src, ptr + "/step",
              "expected a step below " + str(s.meta.steps) + ", got " + str(op.step));
    if (op.micro_step >= s.meta.grad_accum)
      d.error(
          src, ptr + "/micro_step",
          "expected a micro-step below " + str(s.meta.grad_accum) + ", got " + str(op.micro_step));
    if (op.kind == OpKind::Collective) validate_collective(op, src, ptr, d);
  }
}

}  // namespace

Diagnostics validate_schedule(const Schedule& s, const std::string& source) {
  Diagnostics d;
  if (s.meta.world == 0)
    d.error(source, "/meta/world", "expected a world size of at least 1, got 0");
  if (s.meta.steps == 0) d.error(source, "/meta/steps", "expected at least 1 step, got 0");
  if (s.meta.grad_accum == 0)
    d.error(source, "/meta/grad_accum", "expected at least 1 micro-step, got 0");
  if (d.has_errors()) return d;
  for (std::size_t b = 0; b < s.buffers.size(); ++b)
    if (s.buffers[b].slot != kNone && s.buffers[b].slot >= s.meta.slot_names.size())
      d.error(source, "/buffers/" + str(b) + "/slot",
              "expected a slot index below " + str(s.meta.slot_names.size()) + ", got " +
                  str(s.buffers[b].slot));
  validate_roles(s, source, d);
  validate_ops(s, source, d);
  validate_lifetimes(s, source, d);
  return d;
}

namespace {

constexpr const char* kSource = "schedule";

// What every builder relies on: the three inputs, matching world sizes and stage layouts, a
// gradient order of distinct, known, trainable params.
Diagnostics check_input(const ScheduleInput& in) {
  Diagnostics d;
  if (in.model == nullptr || in.plan == nullptr || in.ds == nullptr) {
    d.error(kSource, "",
            "expected a model, a partition plan and a DeepSpeed config, got a missing input");
    return d;
  }
  const ModelDesc& m = *in.model;
  const PartitionPlan& plan = *in.plan;
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
    const bool checked = lp == DType::Float16 ||
                         (stage != 3 && lp == DType::BFloat16 && in.ds->bf16_check_grad_overflow);
    const OptimizerPath path = in.ds->optimizer_path();
    const bool zero = path == OptimizerPath::ZeroStage1And2 || path == OptimizerPath::ZeroStage3;
    if (in.mode != Accounting::DeepSpeed || !zero)
      d.error(
          kSource, "/overflow_steps",
          "expected DeepSpeedZeroOptimizer (stage 1/2) or stage 3 in deepspeed mode for overflow "
          "steps, got " +
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

Result<Schedule> build_schedule(const ScheduleInput& in) {
  Diagnostics d = check_input(in);
  if (d.has_errors()) return d;
  Result<Schedule> built = [&]() -> Result<Schedule> {
    if (in.mode == Accounting::Paper) return schedule::build_paper(in);
    if (in.ds->zero.stage == 3) return schedule::build_stage3(in);
    return schedule::build_stage012(in);
  }();
  if (!built.ok()) return built;
  // A schedule that fails its own consistency check is a builder bug: report it, never hand it on.
  Diagnostics v = validate_schedule(built.value(), "schedule (internal error)");
  if (v.has_errors()) return v;
  return built;
}

}  // namespace zerosim
