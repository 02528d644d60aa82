// The plan's predicted speed and its recommendation on it (planner.h): each fitting row's schedule
// is simulated at its largest micro-batch (the steady step: stage 3's second iteration, after the
// trace-recording one), and the recommendation takes the configuration with the most tokens/s, so
// a higher stage, activation checkpointing or offload wins when the larger micro-batch it lets fit
// outweighs its extra communication, recompute or host work.
#include <algorithm>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "schedule/builders.h"
#include "zerosim/calibration.h"
#include "zerosim/engine.h"
#include "zerosim/planner.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/time_model.h"

namespace zerosim {
namespace {

std::string with_commas(double x) {
  auto v = static_cast<unsigned long long>(x < 0 ? 0 : x + 0.5);
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string percent(double x) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << x * 100 << "%";
  return os.str();
}

std::string describe(const PlanRow& r, const RowSpeed& s, std::uint64_t world) {
  std::ostringstream os;
  os << "ZeRO stage " << r.stage;
  if (r.offload != OffloadVariant::None)
    os << " with " << offload_name(r.offload) << " offload to CPU";
  if (s.activation_checkpointing) os << " with activation checkpointing";
  os << " at micro-batch " << s.micro_batch << ": "
     << with_commas(s.tokens_per_s / static_cast<double>(world))
     << " tokens/s per GPU predicted (step " << human_duration(s.step_ns) << ", MFU "
     << percent(s.mfu) << ")";
  return os.str();
}

struct Candidate {
  std::size_t row = 0;
  bool checkpointed = false;
  const RowSpeed* speed = nullptr;
};

// Lower is better: most tokens/s, then no offload, then the lower stage, then no recompute.
auto rank(const PlanRow& r, const Candidate& c) {
  return std::make_tuple(-c.speed->tokens_per_s, r.offload != OffloadVariant::None, r.stage,
                         c.checkpointed);
}

// A configuration predict_speeds may simulate.
struct Trial {
  std::size_t row = 0;
  bool checkpointed = false;
  std::uint64_t micro_batch = 0;
  double bound = 0;  ///< upper bound on tokens/s (all GPUs)
};

// tokens/s if the step were its compute alone at the engine's rate: the schedule's forward and
// backward FLOPs (recompute excluded, so it stays a bound) over dense rate x efficiency.
double tokens_bound(const PlanRequest& req, std::uint64_t micro_batch) {
  TrainingSettings t = req.training;
  t.micro_batch = micro_batch;
  double flops = 0;
  for (std::uint32_t l = 0; l < req.model.layers.size(); ++l)
    flops += schedule::layer_forward_flops(req.model, l, t) +
             schedule::layer_backward_flops(req.model, l, t);
  flops *= static_cast<double>(req.base.grad_accum_steps);
  const GemmShape g{req.model.arch ? req.model.arch->hidden : 0, micro_batch * t.seq_len};
  const ComputeRate r = compute_rate(req.cluster.gpu, req.base.lp_dtype(), g, std::nullopt);
  const double seconds = flops / (r.dense_tflops * 1e12 * r.efficiency);
  const double tokens = static_cast<double>(micro_batch * t.seq_len * req.base.grad_accum_steps *
                                            req.cluster.world_size());
  return seconds > 0 ? tokens / seconds : 0;
}

// Whether trial `b` is never faster than `a`: same stage, no less offload (offload only adds host
// work and copies), no less recompute, no larger micro-batch.
bool dominated(const PlanResult& out, const Trial& a, const Trial& b) {
  const PlanRow& ra = out.rows[a.row];
  const PlanRow& rb = out.rows[b.row];
  const bool less_offload = (!offloads_optimizer(ra.offload) || offloads_optimizer(rb.offload)) &&
                            (!offloads_params(ra.offload) || offloads_params(rb.offload));
  return ra.stage == rb.stage && less_offload && (!a.checkpointed || b.checkpointed) &&
         a.micro_batch >= b.micro_batch && (a.row != b.row || a.checkpointed != b.checkpointed);
}

}  // namespace

const char* speed_skip_name(SpeedSkip s) {
  switch (s) {
    case SpeedSkip::None:
      return nullptr;
    case SpeedSkip::NoFit:
      return "no_fit";
    case SpeedSkip::Dominated:
      return "dominated";
    case SpeedSkip::Bounded:
      return "bounded";
    case SpeedSkip::Failed:
      return "failed";
    case SpeedSkip::NoShape:
      return "no_shape";
  }
  return nullptr;
}

Result<RowSpeed> simulate_row_speed(const PlanRequest& request, const DsConfig& ds,
                                    const PartitionPlan& plan, std::uint64_t micro_batch,
                                    bool activation_checkpointing) {
  // The planner shares one flat layout among stages 0-2 (planned as stage 1); the builder wants the
  // plan of the stage it builds (the same layout, its own stage number).
  std::optional<PartitionPlan> own;
  const PartitionPlan* use = &plan;
  const auto world = static_cast<std::uint32_t>(request.cluster.world_size());
  if (plan.stage != ds.zero.stage) {
    auto p = plan_partition(request.model, partition_options(ds, world));
    if (!p.ok()) return p.diagnostics();
    own = std::move(p.value());
    use = &*own;
  }
  DsConfig d = ds;
  d.micro_batch = micro_batch;
  d.train_batch_size = micro_batch * d.grad_accum_steps * request.cluster.world_size();
  ScheduleInput in;
  in.model = &request.model;
  in.plan = use;
  in.ds = &d;
  in.cluster = request.cluster;
  in.training = request.training;
  in.training.micro_batch = micro_batch;
  in.training.activation_checkpointing = activation_checkpointing;
  if (d.zero.stage != 3) in.training.zero_init = false;
  in.mode = request.mode;
  in.version = request.version;
  // Stage 3's first iteration records the module trace without prefetching; the second is steady.
  in.steps = d.zero.stage == 3 && request.mode == Accounting::DeepSpeed ? 2 : 1;
  auto schedule = build_schedule(in);
  if (!schedule.ok()) return schedule.diagnostics();
  EngineOptions o;
  o.gemm.hidden = request.model.arch ? request.model.arch->hidden : 0;
  o.gemm.tokens = request.model.arch ? micro_batch * request.training.seq_len : 0;
  if (request.calibration) (void)apply_calibration(*request.calibration, request.cluster.gpu, o);
  o.record_trace = false;
  o.device_capacity = 0;  // the planner decided the fit; only times are read
  auto sim = simulate(schedule.value(), request.cluster.gpu, o);
  if (!sim.ok()) return sim.diagnostics();
  const StepSpeed v = step_speed(sim->summary, schedule.value(), request.cluster.gpu, o.gemm);
  RowSpeed r;
  r.micro_batch = micro_batch;
  r.activation_checkpointing = activation_checkpointing;
  r.step_ns = v.step_ns;
  r.tokens_per_s = v.tokens_per_s;
  r.mfu = v.mfu;
  return r;
}

void predict_speeds(PlanResult& out,
                    const std::function<const PartitionPlan*(const PlanRow&)>& plan_of,
                    std::size_t window) {
  const PlanRequest& req = out.request;
  const bool ck = req.training.activation_checkpointing;
  if (!req.model.arch) {  // no GEMM shape and no activation model
    for (PlanRow& r : out.rows) r.speed_skip = r.speed_checkpointed_skip = SpeedSkip::NoShape;
    return;
  }
  // The cell of the speed table a trial fills: the row's speed, or its checkpointed speed when the
  // request does not checkpoint. A trial left unsimulated keeps the reason set here or below.
  auto skip_of = [&](const Trial& t) -> SpeedSkip& {
    PlanRow& r = out.rows[t.row];
    return t.checkpointed && !ck ? r.speed_checkpointed_skip : r.speed_skip;
  };
  std::vector<Trial> trials;
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    PlanRow& r = out.rows[i];
    r.speed_skip = SpeedSkip::NoFit;
    r.speed_checkpointed_skip = ck ? SpeedSkip::None : SpeedSkip::NoFit;
    if (r.max_micro_batch > 0) trials.push_back({i, ck, r.max_micro_batch, 0});
    if (r.max_micro_batch_checkpointed > r.max_micro_batch)
      trials.push_back({i, true, r.max_micro_batch_checkpointed, 0});
  }
  std::vector<Trial> kept;
  for (const Trial& t : trials) {
    bool beaten = false;
    for (const Trial& o : trials) beaten = beaten || dominated(out, o, t);
    skip_of(t) = beaten ? SpeedSkip::Dominated : SpeedSkip::Bounded;  // Bounded until simulated
    if (!beaten) kept.push_back(t);
  }
  for (Trial& t : kept) t.bound = tokens_bound(req, t.micro_batch);
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Trial& a, const Trial& b) { return a.bound > b.bound; });
  // The trials run in order until none left can beat the best: `window` at a time on parallel
  // threads (each a pure function of the request), taken in order afterwards, so the rows get the
  // speeds (and the notes) the one-at-a-time loop gives; a trial the loop would not have reached
  // is computed and dropped (on 2 cores the Llama-3.1-405B --zero-init sweep spent 36 ms here on
  // one thread).
  if (window == 0) window = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
  double best = 0;
  for (std::size_t first = 0; first < kept.size(); first += window) {
    if (best > 0 && best >= kept[first].bound) break;  // nothing left can beat it
    const std::size_t n = std::min(window, kept.size() - first);
    std::vector<const PartitionPlan*> plans(n, nullptr);
    for (std::size_t k = 0; k < n; ++k) plans[k] = plan_of(out.rows[kept[first + k].row]);
    std::vector<std::optional<Result<RowSpeed>>> speeds(n);
    auto run = [&](std::size_t k) {
      if (!plans[k]) return;
      const Trial& t = kept[first + k];
      const PlanRow& r = out.rows[t.row];
      speeds[k].emplace(simulate_row_speed(req, variant_config(req.base, r.stage, r.offload),
                                           *plans[k], t.micro_batch, t.checkpointed));
    };
    std::vector<std::thread> pool;
    for (std::size_t k = 1; k < n; ++k) pool.emplace_back(run, k);
    run(0);
    for (auto& th : pool) th.join();
    for (std::size_t k = 0; k < n; ++k) {
      const Trial& t = kept[first + k];
      if (k > 0 && best > 0 && best >= t.bound) return;  // the loop stops here: drop the rest
      if (!speeds[k]) {                                  // no partition plan
        skip_of(t) = SpeedSkip::Failed;
        continue;
      }
      PlanRow& r = out.rows[t.row];
      const Result<RowSpeed>& s = *speeds[k];
      skip_of(t) = s.ok() ? SpeedSkip::None : SpeedSkip::Failed;
      if (!s.ok()) {
        const auto& items = s.diagnostics().items();
        out.notes.push_back("speed of stage " + std::to_string(r.stage) + " (offload " +
                            std::string(offload_name(r.offload)) + ") not predicted: " +
                            (items.empty() ? std::string("unknown error") : items.front().message));
        continue;
      }
      (t.checkpointed && !req.training.activation_checkpointing ? r.speed_checkpointed : r.speed) =
          s.value();
      best = std::max(best, s->tokens_per_s);
    }
  }
}

void recommend_on_speed(PlanResult& out) {
  std::optional<Candidate> best;
  std::optional<std::size_t> lowest;  // the lowest stage that fits without offload, if any
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    const PlanRow& r = out.rows[i];
    for (const bool ck : {false, true}) {
      const auto& s = ck ? r.speed_checkpointed : r.speed;
      if (!s || s->tokens_per_s <= 0) continue;
      const Candidate c{i, ck, &*s};
      if (!best || rank(r, c) < rank(out.rows[best->row], *best)) best = c;
    }
    if (r.speed && r.offload == OffloadVariant::None && !lowest) lowest = i;
  }
  if (!best) return;  // no speeds (no transformer shape, or nothing fits): the memory rule stands
  const std::uint64_t world = out.request.cluster.world_size();
  const PlanRow& r = out.rows[best->row];
  std::ostringstream os;
  os << describe(r, *best->speed, world) << ", the fastest configuration that fits";
  if (best->checkpointed)
    os << "; activation checkpointing (--activation-checkpointing) lets micro-batch "
       << best->speed->micro_batch << " fit ("
       << (r.max_micro_batch > 0 ? "without it: " + std::to_string(r.max_micro_batch)
                                 : std::string("nothing fits without it"))
       << "), worth its recomputed forward";
  if (r.offload != OffloadVariant::None)
    os << "; the offload frees the GPU memory that micro-batch needs";
  if (lowest && *lowest != best->row) {
    const PlanRow& l = out.rows[*lowest];
    os << " (the lowest stage that fits, stage " << l.stage << ", runs micro-batch "
       << l.speed->micro_batch << " at "
       << with_commas(l.speed->tokens_per_s / static_cast<double>(world)) << " tokens/s per GPU)";
  }
  os << "; the global batch is micro-batch x " << out.request.base.grad_accum_steps
     << " accumulation steps x " << world << " GPUs";
  out.recommended = best->row;
  out.recommend_checkpointing = best->checkpointed;
  out.recommendation = os.str();
}

}  // namespace zerosim
