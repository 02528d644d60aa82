// Paper mode: the textbook ZeRO schedule (Rajbhandari et al. 2020, §5, §7) to compare with what
// DeepSpeed really issues (deepspeed_zero.md §10 item 1, §11).
//   DDP (stage 0): one all_reduce of the Ψ gradient elements per optimizer step.
//   ZeRO-1/2:      reduce_scatter of the gradients in buckets of reduce_bucket_size elements, then,
//                  after the step on the rank's Ψ/N shard, one all_gather of the parameters.
//   ZeRO-3:        all_gather of each layer's parameters before its forward AND before its
//   backward,
//                  reduce_scatter of the gradients; no parameter all-gather after the step.
// Per-rank traffic with ring algorithms: ZeRO-1/2 move exactly DDP's 2Ψ(N−1)/N, ZeRO-3 1.5× that.
// The flat gradient buffer (grad-ready order) is padded to a multiple of N so every reduce_scatter
// splits evenly; buckets are consecutive R_N-element ranges of it (R rounded down to a multiple of
// N). Memory follows the paper's model states: 2Ψ + 2Ψ + KΨ bytes (K = 12), partitioned per stage.
// Every rank runs the same program with the same sizes: one role.
#include <algorithm>
#include <string>
#include <vector>

#include "schedule/builders.h"

namespace zerosim::schedule {
namespace {

struct Unit {  // a layer, or a param when the model has no layers
  std::string name;
  std::vector<std::uint32_t> params;
  double flops = 0;
};

Buffer paper_buffer(std::string name, BufferCategory cat, DType dt, Elements numel,
                    bool persistent) {
  Buffer b;
  b.name = std::move(name);
  b.category = cat;
  b.dtype = dt;
  b.numel = numel;
  b.persistent = persistent;
  return b;
}

class PaperBuilder {
 public:
  PaperBuilder(const ScheduleInput& in, Schedule& s)
      : in_(in), m_(*in.model), e_(s, in.plan->world) {
    stage_ = in.ds->zero.stage;
    w_ = in.plan->world;
    lp_ = in.ds->lp_dtype();
    for (const auto& p : m_.params)
      if (p.trainable) psi_ += p.numel;
    psi_pad_ = ceil_div(psi_, w_) * w_;
    shard_ = psi_pad_ / w_;
    const Elements r = in.ds->zero.reduce_bucket_size;
    bucket_ = std::max<Elements>(w_, r - r % w_);
    gas_ = static_cast<std::uint32_t>(in.ds->grad_accum_steps);
    build_units();
    build_ready();
    gathered_buf_.assign(units_.size(), kNone);
  }

  void run() {
    init();
    for (std::uint32_t step = 0; step < in_.steps; ++step) {
      for (std::uint32_t micro = 0; micro < gas_; ++micro) micro_step(step, micro);
      step_ops(step);
    }
  }

 private:
  void build_units() {
    if (!m_.layers.empty()) {
      for (std::uint32_t l = 0; l < m_.layers.size(); ++l)
        units_.push_back(
            {m_.layers[l].name, m_.layers[l].param_ids, layer_forward_flops(m_, l, in_.training)});
      return;
    }
    for (std::uint32_t p = 0; p < m_.params.size(); ++p)
      units_.push_back({m_.params[p].name, {p}, 0});
  }

  // Trainable elements whose gradient becomes ready at each unit's backward (its earliest use).
  void build_ready() {
    std::vector<bool> seen(m_.params.size(), false);
    ready_numel_.assign(units_.size(), 0);
    for (std::uint32_t l = 0; l < units_.size(); ++l)
      for (auto p : units_[l].params)
        if (p < seen.size() && !seen[p]) {
          seen[p] = true;
          if (m_.params[p].trainable) ready_numel_[l] += m_.params[p].numel;
        }
  }

  Elements unit_numel(const Unit& u) const {
    Elements n = 0;
    for (auto p : u.params) n += m_.params[p].numel;
    return n;
  }

  void init() {
    e_.set_phase(Phase::Init);
    e_.marker("init");
    const bool p3 = stage_ >= 3, g2 = stage_ >= 2, o1 = stage_ >= 1;
    auto persistent = [&](std::string name, BufferCategory c, DType dt, Elements n) {
      e_.alloc(e_.buffer(paper_buffer(std::move(name), c, dt, n, true)));
    };
    persistent("fp16 params", BufferCategory::Param16, lp_, p3 ? shard_ : psi_);
    persistent("fp16 grads", BufferCategory::Grad, lp_, g2 ? shard_ : psi_);
    persistent("fp32 master params", BufferCategory::Param32, DType::Float32, o1 ? shard_ : psi_);
    persistent("Adam states", BufferCategory::OptimState, DType::Float32, 2 * (o1 ? shard_ : psi_));
  }

  void gather(std::uint32_t l, const std::string& why) {
    const Unit& u = units_[l];
    const Elements c = ceil_div(unit_numel(u), w_);
    if (c == 0) return;
    if (gathered_buf_[l] == kNone)
      gathered_buf_[l] = e_.buffer(
          paper_buffer("gathered " + u.name, BufferCategory::GatheredParam, lp_, c * w_, false));
    e_.alloc(gathered_buf_[l]);
    e_.collective({.kind = CollectiveKind::AllGather,
                   .dtype = lp_,
                   .numel = c,
                   .out_numel = c * w_,
                   .label = why + " " + u.name + ": AG(" + std::to_string(c * w_) + "," +
                            std::to_string(c) + ")"});
    live_ = gathered_buf_[l];
  }

  void release() {
    if (live_ != kNone) e_.free(live_);
    live_ = kNone;
  }

  void compute(OpKind k, std::uint32_t l, const Unit& u) {
    e_.compute({k, m_.layers.empty() ? kNone : l, k == OpKind::Backward ? 2 * u.flops : u.flops,
                std::string(k == OpKind::Backward ? "bwd " : "fwd ") + u.name});
  }

  // Gradients fill the padded flat buffer in grad-ready order; bucket k is reduce-scattered once
  // every real element of [k·B, (k+1)·B) exists (padding never does: the last bucket waits for Ψ).
  void grads_ready(Elements produced, bool reduce) {
    if (!reduce) return;
    while (reduced_ < psi_pad_) {
      const Elements in = std::min(bucket_, psi_pad_ - reduced_);
      if (produced < std::min(reduced_ + in, psi_)) break;
      e_.collective({.kind = CollectiveKind::ReduceScatter,
                     .dtype = lp_,
                     .numel = in,
                     .out_numel = in / w_,
                     .op = ReduceOp::Sum,
                     .label = "reduce_scatter grads: RS(" + std::to_string(in) + "," +
                              std::to_string(in / w_) + ")"});
      reduced_ += in;
    }
  }

  void micro_step(std::uint32_t step, std::uint32_t micro) {
    e_.set_step(step, micro);
    const bool boundary = micro + 1 == gas_;
    const bool reduce =
        stage_ >= 2 || (stage_ == 1 && boundary);  // stage 1 keeps full grads until then
    e_.set_phase(Phase::Forward);
    for (std::uint32_t l = 0; l < units_.size(); ++l) {
      if (stage_ >= 3) gather(l, "forward");
      compute(OpKind::Forward, l, units_[l]);
      if (stage_ >= 3) release();
    }
    e_.set_phase(Phase::Backward);
    Elements produced = 0;
    reduced_ = 0;
    for (std::uint32_t l = static_cast<std::uint32_t>(units_.size()); l-- > 0;) {
      if (stage_ >= 3) gather(l, "backward");
      compute(OpKind::Backward, l, units_[l]);
      if (stage_ >= 3) release();
      produced += ready_numel_[l];
      grads_ready(produced, reduce);
    }
    grads_ready(psi_, reduce);  // gradients of params no unit uses
    if (stage_ == 0 && boundary) {
      e_.set_phase(Phase::BoundaryReduce);
      e_.collective({.dtype = lp_,
                     .numel = psi_,
                     .out_numel = psi_,
                     .op = ReduceOp::Sum,
                     .label = "all_reduce grads: AR(" + std::to_string(psi_) + ")"});
    }
  }

  void step_ops(std::uint32_t step) {
    e_.set_step(step, gas_ - 1);
    e_.set_phase(Phase::Step);
    e_.optimizer_step({.dtype = DType::Float32,
                       .elements = stage_ >= 1 ? shard_ : psi_,
                       .label = "optimizer step"});
    e_.set_phase(Phase::PostStep);
    if ((stage_ == 1 || stage_ == 2) && w_ > 1)
      e_.collective({.kind = CollectiveKind::AllGather,
                     .dtype = lp_,
                     .numel = shard_,
                     .out_numel = psi_pad_,
                     .label = "all_gather params: AG(" + std::to_string(psi_pad_) + "," +
                              std::to_string(shard_) + ")"});
  }

  const ScheduleInput& in_;
  const ModelDesc& m_;
  Emitter e_;
  int stage_ = 0;
  std::uint32_t w_ = 1, gas_ = 1;
  DType lp_ = DType::Float16;
  Elements psi_ = 0, psi_pad_ = 0, shard_ = 0, bucket_ = 1, reduced_ = 0;
  std::vector<Unit> units_;
  std::vector<Elements> ready_numel_;
  std::vector<std::uint32_t> gathered_buf_;
  std::uint32_t live_ = kNone;
};

}  // namespace

Result<Schedule> build_paper(const ScheduleInput& in) {
  if (in.model == nullptr || in.plan == nullptr || in.ds == nullptr || in.plan->world == 0)
    return fail<Schedule>("schedule", "",
                          "expected a model, a partition plan and a DeepSpeed config");
  Schedule s;
  ScheduleMeta& meta = s.meta;
  meta.model = in.model->name;
  meta.mode = "paper";
  meta.deepspeed_version = in.version;
  meta.optimizer = "ZeRO paper (textbook schedule)";
  meta.stage = in.ds->zero.stage;
  meta.world = in.plan->world;
  meta.nodes = static_cast<std::uint32_t>(in.cluster.nodes);
  meta.gpus_per_node = static_cast<std::uint32_t>(in.cluster.gpus_per_node);
  meta.steps = in.steps;
  meta.grad_accum = static_cast<std::uint32_t>(in.ds->grad_accum_steps);
  meta.lp = meta.grad_accum_dtype = meta.comm = in.ds->lp_dtype();
  meta.master = DType::Float32;
  meta.notes.push_back(
      "paper mode: the ZeRO paper's schedule, not what DeepSpeed issues (deepspeed_zero.md §10.1)");
  meta.notes.push_back("gradients padded to a multiple of the world size for even reduce-scatters");
  PaperBuilder(in, s).run();
  fill_tensor_table(s, in, {});  // paper mode keeps one gradient buffer, no per-param grads
  RankRole all;
  all.ranks.emplace_back(0, in.plan->world - 1);
  s.roles.push_back(std::move(all));
  return s;
}

}  // namespace zerosim::schedule
