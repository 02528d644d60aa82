// DeepSpeed accounting for stage 3 (DeepSpeedZeroOptimizer_Stage3, deepspeed_zero.md §7.1, §7.8),
// with optimizer offload (ratio-aware) and parameter offload.
//
// Gathered parameters are the one term that depends on the module trace (§7.3–§7.4), which a memory
// estimate does not simulate. The approximation used here, documented in README.md:
//   kept    = min(Ψnp, stage3_max_reuse_distance)   params reused within the reuse window stay
//                                                    gathered between their forward and backward
//                                                    use (default 1e9: everything below ~1e9
//                                                    elements)
//   running = min(Ψnp, kept + largest module)        plus the module being computed
//   staging = min(Ψnp, stage3_prefetch_bucket_size)  the coalesced prefetch in flight (W·Σc ≈ n)
// where Ψnp = Σ n over non-persistent params. Persistent params add Σ W·c (§2.2) on top.
#include <algorithm>
#include <cmath>

#include "memory/accounting.h"
#include "memory/exact_math.h"

namespace zerosim::memory {

namespace {

struct Stage3 {
  const AccountingInput& in;
  const ZeroConfig& z;
  DType lp, mw, ga, cd;
  Elements lp_partitions = 0;  // Σc over optimized params (lp_param_buffer, grad partitions)
  Elements frozen_partitions = 0;
  Elements gpu_master = 0;      // Σc of the sub-groups whose master stays on the GPU
  Elements host_master = 0;     // Σc of offloaded sub-groups
  Elements gpu_sg_max = 0;      // largest sub-group on the GPU (step temporaries)
  Elements non_persistent = 0;  // Ψnp
  Elements n_max = 0;
  std::uint64_t states = 2;

  Stage3(const AccountingInput& input, ReportBuilder& rb)
      : in(input),
        z(input.ds.zero),
        lp(input.ds.lp_dtype()),
        mw(input.ds.master_dtype()),
        ga(input.ds.grad_accum()),
        cd(input.ds.comm_dtype()),
        n_max(largest_trainable_param(input.model)),
        states(optimizer_state_count(input.ds.optimizer_type, rb)) {
    const PartitionPlan& plan = in.plan;
    lp_partitions = plan.s3_partition_numel;
    frozen_partitions = plan.s3_unoptimized_partition_numel;
    for (const auto& sp : plan.s3)
      if (!sp.persistent) non_persistent += sp.numel;
    // offload_optimizer.ratio < 1: sub-groups with index < floor((1 - ratio) * count) stay on GPU.
    const std::size_t count = plan.sub_groups.size();
    std::size_t on_gpu = count;
    if (z.offload_optimizer.enabled()) {
      const double ratio = std::clamp(z.offload_optimizer.ratio, 0.0, 1.0);
      on_gpu = static_cast<std::size_t>(std::floor((1.0 - ratio) * static_cast<double>(count)));
    }
    for (std::size_t i = 0; i < count; ++i) {
      const Elements sg = plan.sub_groups[i].partition_numel;
      if (i < on_gpu) {
        gpu_master += sg;
        gpu_sg_max = std::max(gpu_sg_max, sg);
      } else {
        host_master += sg;
      }
    }
  }
};

void add_persistent(const Stage3& c, ReportBuilder& rb) {
  const bool offload_params = c.z.offload_param.enabled();
  const bool offload_opt = c.z.offload_optimizer.enabled();
  const std::string lp_name = "LP partitions (lp_param_buffer): " + elements_text(c.lp_partitions);
  const std::string frozen_name =
      "frozen params' partitions: " + elements_text(c.frozen_partitions);
  if (offload_params) {
    rb.host(lp_name, bytes_of(c.lp_partitions, c.lp));
    rb.host(frozen_name, bytes_of(c.frozen_partitions, c.lp));
  } else {
    rb.persistent(Layer::Params, lp_name, bytes_of(c.lp_partitions, c.lp));
    rb.persistent(Layer::Params, frozen_name, bytes_of(c.frozen_partitions, c.lp));
  }
  const std::string states = std::to_string(c.states) + " x ";
  rb.persistent(Layer::OptimizerStates,
                "fp32 master (sub-groups on GPU): " + elements_text(c.gpu_master),
                bytes_of(c.gpu_master, c.mw));
  rb.persistent(Layer::OptimizerStates,
                "optimizer states (sub-groups on GPU): " + states + elements_text(c.gpu_master),
                sat_mul(c.states, bytes_of(c.gpu_master, c.mw)));
  rb.host("fp32 master (offloaded sub-groups): " + elements_text(c.host_master),
          bytes_of(c.host_master, c.mw));
  rb.host("optimizer states (offloaded sub-groups): " + states + elements_text(c.host_master),
          sat_mul(c.states, bytes_of(c.host_master, c.mw)));
  rb.host("fp32 gradient buffers (offloaded sub-groups): " + elements_text(c.host_master),
          bytes_of(c.host_master, c.mw));
  const std::string grads =
      "grad partitions (grad_partitions_flat_buffer): " + elements_text(c.lp_partitions);
  if (offload_opt)
    rb.host(grads, bytes_of(c.lp_partitions, c.ga));
  else
    rb.persistent(Layer::Grads, grads, bytes_of(c.lp_partitions, c.ga));
  if (c.z.contiguous_gradients)
    rb.persistent(Layer::Buffers,
                  "IPG buffer (stage 3, one, from init): " + elements_text(c.z.reduce_bucket_size),
                  bytes_of(c.z.reduce_bucket_size, c.cd));
}

void add_backward(const Stage3& c, ReportBuilder& rb) {
  rb.during(
      kBackward, Layer::Buffers,
      "persistent params, gathered (W·c each): " + elements_text(c.in.plan.s3_persistent_gathered),
      bytes_of(c.in.plan.s3_persistent_gathered, c.lp));
  const Elements np = c.non_persistent;
  const Elements kept = std::min<Elements>(np, c.z.max_reuse_distance);
  const Elements running = std::min(np, sat_add(kept, c.in.model.largest_module_params()));
  const Elements staging = std::min<Elements>(np, c.z.prefetch_bucket_size);
  rb.during(kBackward, Layer::Buffers,
            "gathered params (approx.: min(Ψnp, max_reuse_distance) + largest module): " +
                elements_text(running),
            bytes_of(running, c.lp));
  rb.during(
      kBackward, Layer::Buffers,
      "prefetch all-gather staging (approx.: prefetch_bucket_size): " + elements_text(staging),
      bytes_of(staging, c.lp));
  rb.during(kBackward, Layer::Buffers,
            "autograd gradient of the largest param: " + elements_text(c.n_max),
            bytes_of(c.n_max, c.lp));
  // Reduce-scatter staging W·Σc over one bucket (≈ R), bounded by the whole gradient.
  const Elements whole = clamp64(mul128(c.in.world, c.lp_partitions));
  const Elements staging_rs = std::min<Elements>(c.z.reduce_bucket_size, whole);
  rb.during(kBackward, Layer::Buffers,
            "reduce-scatter staging (≈ one bucket): " + elements_text(staging_rs),
            bytes_of(staging_rs, c.cd));
}

void add_step(const Stage3& c, ReportBuilder& rb) {
  // Per sub-group: flatten of the averaged views (GA), then the cast to MW (no copy if GA == MW).
  rb.during(kStep, Layer::Buffers,
            "step: flat gradient of the largest GPU sub-group: " + elements_text(c.gpu_sg_max),
            bytes_of(c.gpu_sg_max, c.ga));
  if (c.ga != c.mw)
    rb.during(kStep, Layer::Buffers,
              "step: MW gradient of the largest GPU sub-group: " + elements_text(c.gpu_sg_max),
              bytes_of(c.gpu_sg_max, c.mw));
}

}  // namespace

void add_stage3_terms(const AccountingInput& in, ReportBuilder& rb) {
  Stage3 c(in, rb);
  add_persistent(c, rb);
  add_backward(c, rb);
  add_step(c, rb);
  rb.note(
      "stage 3: gathered parameters approximated from stage3_max_reuse_distance, the largest "
      "module "
      "and stage3_prefetch_bucket_size (the module trace is not simulated here)");
  if (c.z.offload_param.device == OffloadDevice::Nvme ||
      c.z.offload_optimizer.device == OffloadDevice::Nvme)
    rb.note(
        "NVMe offload: the bytes listed as host live on NVMe; host swap buffers are not counted");
}

}  // namespace zerosim::memory
