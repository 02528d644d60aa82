// plain_dp_schedule and reference_train (data_reference.h).
#include "data_reference.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "host_data.h"
#include "numerics.h"
#include "training_math.h"

namespace zerosim::exec {
namespace {

float round_to(DType t, double v) {
  switch (t) {
    case DType::Float16:
      return fp16_to_float(float_to_fp16(static_cast<float>(v)));
    case DType::BFloat16:
      return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    default:
      return static_cast<float>(v);
  }
}

}  // namespace

Schedule plain_dp_schedule(const PlainDpSpec& spec) {
  Schedule s;
  const auto T = static_cast<std::uint32_t>(spec.tensors.size());
  std::vector<Elements> offset(T, 0);
  Elements n = 0;
  for (std::uint32_t t = 0; t < T; ++t) {
    offset[t] = n;
    n += spec.tensors[t];
  }
  s.meta.model = "plain data-parallel reference (" + std::to_string(T) + " tensors)";
  s.meta.optimizer = "FP16_Optimizer";
  s.meta.world = spec.world;
  s.meta.gpus_per_node = spec.world;
  s.meta.steps = spec.steps;
  s.meta.grad_accum = spec.grad_accum;
  s.meta.lp = spec.lp;
  s.meta.grad_accum_dtype = spec.lp;
  s.meta.comm = spec.lp;
  s.comms.push_back({0, spec.world, 1});
  s.layout.world = spec.world;
  s.roles.push_back({{{0, spec.world - 1}}, 0, {}});
  const auto buffer = [&](std::string name, BufferCategory c, DType t, Elements numel,
                          bool persistent) {
    Buffer b;
    b.name = std::move(name);
    b.category = c;
    b.dtype = t;
    b.numel = numel;
    b.persistent = persistent;
    s.buffers.push_back(b);
    return static_cast<std::uint32_t>(s.buffers.size() - 1);
  };
  const std::uint32_t module = buffer("module params", BufferCategory::Param16, spec.lp, n, true);
  const std::uint32_t master =
      buffer("fp32 master", BufferCategory::Param32, DType::Float32, n, true);
  const std::uint32_t states =
      buffer("optimizer states", BufferCategory::OptimState, DType::Float32, 2 * n, true);
  std::vector<std::uint32_t> grad(T);
  for (std::uint32_t t = 0; t < T; ++t)
    grad[t] =
        buffer("grad:" + std::to_string(t), BufferCategory::Grad, spec.lp, spec.tensors[t], false);
  const std::uint32_t flat = buffer("flat grads", BufferCategory::Temp, spec.lp, n, false);
  const std::uint32_t g32 = buffer("fp32 grads", BufferCategory::Temp, DType::Float32, n, false);
  std::vector<Piece> grads;
  for (std::uint32_t t = 0; t < T; ++t) grads.push_back({grad[t], 0, spec.tensors[t]});
  s.lists.push_back(grads);                // list 0: the gradients, flattened in tensor order
  s.lists.push_back({{kNone, 0, 2 * n}});  // list 1: zeros (Adam's moments start at 0)
  UpdateCall u;
  u.master = {master};
  u.grad = {g32};
  u.exp_avg = {states, 0, 0, n};
  u.exp_avg_sq = {states, n, 0, n};
  u.lp_out = {module};
  s.updates.push_back(u);

  const auto op = [&](OpKind k, Phase ph, std::uint32_t step, std::string label) -> Op& {
    Op o;
    o.kind = k;
    o.phase = ph;
    o.step = step;
    o.label = std::move(label);
    s.ops.push_back(o);
    return s.ops.back();
  };
  const auto alloc = [&](std::uint32_t b, Phase ph, std::uint32_t step) {
    op(OpKind::Alloc, ph, step, "").buffer = b;
  };
  const auto free_ = [&](std::uint32_t b, Phase ph, std::uint32_t step) {
    op(OpKind::Free, ph, step, "").buffer = b;
  };
  const auto copy = [&](Phase ph, std::uint32_t step, Elements elements, DType t, Region src,
                        Region dst, std::string label) {
    Op& o = op(OpKind::Copy, ph, step, std::move(label));
    o.elements = elements;
    o.dtype = t;
    o.src = src;
    o.dst = dst;
  };
  alloc(module, Phase::Init, 0);
  for (std::uint32_t t = 0; t < T; ++t) {
    Op& o = op(OpKind::Collective, Phase::Init, 0, "broadcast tensor " + std::to_string(t));
    o.collective = CollectiveKind::Broadcast;
    o.numel = o.out_numel = spec.tensors[t];
    o.dtype = spec.lp;
    o.root = 0;
    o.src = {module, offset[t], 0, spec.tensors[t]};
  }
  alloc(master, Phase::Init, 0);
  copy(Phase::Init, 0, n, DType::Float32, {module}, {master}, "master from the LP params");
  alloc(states, Phase::Init, 0);
  s.ops.back().zero_fill = true;  // Adam's moments start at 0 (torch.zeros_like)
  Region flat_src;
  flat_src.list = 0;
  for (std::uint32_t k = 0; k < spec.steps; ++k) {
    for (std::uint32_t mi = 0; mi < spec.grad_accum; ++mi)
      for (std::uint32_t t = T; t-- > 0;) {
        if (mi == 0) alloc(grad[t], Phase::Backward, k);
        Op& o = op(OpKind::GradReady, Phase::Backward, k, "grad ready " + std::to_string(t));
        o.micro_step = mi;
        o.param = t;
        o.src = {module, offset[t], 0, spec.tensors[t]};
        o.dst = {grad[t], 0, 0, spec.tensors[t]};
        o.copy_mode = mi == 0 ? CopyMode::Assign : CopyMode::Add;  // autograd into a live p.grad
        o.scale = 1.0 / spec.grad_accum;                           // the engine's loss / GA
      }
    alloc(flat, Phase::BoundaryReduce, k);
    copy(Phase::BoundaryReduce, k, n, spec.lp, flat_src, {flat}, "flatten grads");
    Op& ar = op(OpKind::Collective, Phase::BoundaryReduce, k, "all-reduce grads");
    ar.numel = ar.out_numel = n;
    ar.dtype = spec.lp;
    ar.reduce_op = ReduceOp::Sum;
    ar.src = {flat};
    ar.scale = 1.0 / spec.world;  // the engine's averaging
    alloc(g32, Phase::Step, k);
    copy(Phase::Step, k, n, DType::Float32, {flat}, {g32}, "cast grads to fp32");
    free_(flat, Phase::Step, k);
    Op& st = op(OpKind::OptimizerStep, Phase::Step, k, "optimizer step");
    st.update = 0;
    st.elements = n;
    st.dtype = DType::Float32;
    free_(g32, Phase::Step, k);
    Op& wb = op(OpKind::WriteBack, Phase::Step, k, "master -> LP params");
    wb.elements = n;
    wb.dtype = spec.lp;
    wb.src = {master};
    wb.dst = {module};
    for (std::uint32_t t = 0; t < T; ++t) free_(grad[t], Phase::PostStep, k);
  }
  return s;
}

ReferenceRun reference_train(const DataOptions& o, const ReferenceSpec& spec) {
  const auto T = static_cast<std::uint32_t>(spec.tensors.size());
  ReferenceRun r;
  r.params.resize(T);
  r.master.resize(T);
  std::vector<std::vector<float>> m(T), v(T);
  Elements off = 0;
  for (std::uint32_t t = 0; t < T; ++t) {
    for (Elements i = 0; i < spec.tensors[t]; ++i)
      r.master[t].push_back(
          round_to(spec.lp, initial_weight(o.seed, 0, spec.weights_buffer, off + i)));
    off += spec.tensors[t];
    m[t].assign(spec.tensors[t], 0.0f);
    v[t].assign(spec.tensors[t], 0.0f);
  }
  const bool scaled = spec.lp == DType::Float16;
  DynamicLossScaler scaler(scaled ? o.initial_loss_scale : 1.0);
  AdamWParams h;
  h.lr = o.lr;
  h.beta1 = o.beta1;
  h.beta2 = o.beta2;
  h.eps = o.eps;
  h.weight_decay = o.weight_decay;
  std::uint64_t t_adam = 0;
  for (std::uint32_t k = 0; k < spec.steps; ++k) {
    const auto ls = static_cast<float>(scaler.scale());
    const bool overflow =
        std::find(o.overflow_steps.begin(), o.overflow_steps.end(), k) != o.overflow_steps.end();
    if (overflow) {  // DeepSpeed's step(): skip, lower the scale
      scaler.update(true);
      ++r.skipped_steps;
      continue;
    }
    std::vector<std::vector<float>> g(T);
    double sq = 0;
    for (std::uint32_t t = 0; t < T; ++t) {
      const Elements n = spec.tensors[t];
      g[t].resize(n);
      std::vector<double> sums(n, 0.0);
      std::vector<float> acc(n);
      for (std::uint32_t rank = 0; rank < spec.world; ++rank) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (std::uint32_t mi = 0; mi < spec.grad_accum; ++mi) {
          const StandInGrads grads(o, rank, k, mi, t);
          const float micro =
              spec.scale_micro_steps ? 1.0f / static_cast<float>(spec.grad_accum) : 1.0f;
          for (Elements i = 0; i < n; ++i)
            acc[i] = round_to(spec.lp, acc[i] + round_to(spec.lp, grads(i) * ls * micro));
        }
        for (Elements i = 0; i < n; ++i) sums[i] += acc[i];
      }
      for (Elements i = 0; i < n; ++i) {
        const double sum = sums[i];
        float reduced = round_to(spec.lp, sum);
        if (spec.average)
          reduced = round_to(spec.lp, reduced * (1.0f / static_cast<float>(spec.world)));
        g[t][i] = reduced;
        sq += static_cast<double>(reduced) * reduced;
      }
    }
    const double combined = o.gradient_clipping > 0
                                ? combined_scale(scaler.scale(), std::sqrt(sq), o.gradient_clipping)
                                : scaler.scale();
    ++t_adam;
    for (std::uint32_t t = 0; t < T; ++t) {
      if (combined != 1.0)
        for (float& x : g[t]) x *= static_cast<float>(1.0 / combined);
      adamw_step(h, t_adam, r.master[t].data(), m[t].data(), v[t].data(), g[t].data(),
                 spec.tensors[t]);
    }
    if (scaled) scaler.update(false);
  }
  for (std::uint32_t t = 0; t < T; ++t)
    for (float x : r.master[t]) r.params[t].push_back(round_to(spec.lp, x));
  r.loss_scale = scaler.scale();
  return r;
}

}  // namespace zerosim::exec
