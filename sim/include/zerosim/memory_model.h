// Per-GPU memory of one training configuration, in three layers (DESIGN.md "Memory"):
//   1. model states  — parameters, gradients, optimizer state;
//   2. runtime buffers — IPG buckets, extra gradient copies, fp32 gradient copies in step(),
//      stage-3 gathered parameters and staging;
//   3. activations and overhead — Korthikanti et al. 2022 activation formulas, CUDA context, NCCL
//      buffers, allocator fragmentation (documented parameters in OverheadParams).
// Two accountings: `Accounting::DeepSpeed` (shared/docs/deepspeed_zero.md §3, §7.8; the default)
// and `Accounting::Paper` (ZeRO paper: 16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N for mixed-precision Adam).
//
// Peak model: a report describes the worst rank at its peak in steady state (after the first step,
// so lazily created Adam states exist). Transient terms live in phases — "backward" (activations,
// gradients being produced and reduced, IPG buckets, stage-3 gathered params), "allreduce" (stage 0
// / BF16_Optimizer engine all-reduce after backward) and "step" (optimizer temporaries). The total
// is the persistent terms plus the largest phase; `items` lists exactly what is resident at that
// peak (they add up to total()), `off_peak_items` the transient terms of the other phases.
// sim/src/memory/README.md documents every term, default and approximation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "zerosim/ds_config.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"
#include "zerosim/units.h"

namespace zerosim {

enum class Accounting { DeepSpeed, Paper };

/// Offload variants the planner sweeps (stage 1–3: optimizer; stage 3 also parameters).
/// What a plan row offloads to the CPU. ParamsCpu (stage 3 parameters without the optimizer, which
/// DeepSpeed allows) is a row only when the ds_config asks for it.
enum class OffloadVariant { None, OptimizerCpu, OptimizerAndParamsCpu, ParamsCpu };
/// "none", "optimizer", "optimizer+params", "params"
std::string_view offload_name(OffloadVariant v);
/// Whether `v` offloads the optimizer state / the parameters.
bool offloads_optimizer(OffloadVariant v);
bool offloads_params(OffloadVariant v);

/// Training settings that drive activations.
struct TrainingSettings {
  std::uint64_t micro_batch = 1;          ///< b, sequences per GPU per micro-step
  std::uint64_t seq_len = 4096;           ///< s, tokens per sequence
  bool activation_checkpointing = false;  ///< full checkpointing of each transformer block
  bool flash_attention = true;            ///< attention scores not stored (drops the 5as^2b term)
  /// The model is built under deepspeed.zero.Init (stage 3 only; what HF Trainer does for stage 3):
  /// params are partitioned as they are constructed instead of all living on every GPU at init.
  bool zero_init = false;
};

/// Overheads with their documented defaults (sources in sim/src/memory/overhead.cc and README).
struct OverheadParams {
  Bytes cuda_context = 0;    ///< CUDA context + kernel modules + library workspaces
  Bytes nccl_buffers = 0;    ///< NCCL communicator buffers per rank
  double fragmentation = 0;  ///< caching-allocator fragmentation, fraction of allocated bytes
  /// QLoRA (zerosim/lora.h): bitsandbytes' quantization state, whole on every rank (not a
  /// parameter, so ZeRO never partitions it), and the largest weight dequantized for a backward
  /// matmul. 0 without a quantized base.
  Bytes quantization_state = 0;
  Bytes dequantized_weight = 0;
};
/// cuda_context 1 GiB, nccl_buffers 2 peers x 16 channels x 9,633,792 B, fragmentation 0.05.
OverheadParams default_overheads();

struct MemoryItem {
  std::string layer;  ///< "params", "grads", "optimizer_states", "buffers", "activations",
                      ///< "overhead", "host"
  std::string name;   ///< cites the spec id: "flat LP params (B1)", "IPG buckets (T2) 2 x 500000000
                      ///< elements"
  Bytes bytes = 0;
  std::string
      phase;  ///< "persistent" or the transient phase it belongs to ("backward", "step", ...)
};

/// GPU bytes resident at one phase's peak (persistent terms included, overhead excluded).
struct PhaseTotal {
  std::string name;
  Bytes bytes = 0;
};

struct MemoryReport {
  Bytes params = 0;            ///< layer 1: parameters on the GPU
  Bytes grads = 0;             ///< layer 1: gradients on the GPU
  Bytes optimizer_states = 0;  ///< layer 1: fp32 master + Adam moments on the GPU
  Bytes buffers = 0;           ///< layer 2
  Bytes activations = 0;       ///< layer 3a
  Bytes overhead = 0;          ///< layer 3b
  Bytes host_bytes = 0;        ///< CPU memory per GPU (offload), not part of total
  std::vector<MemoryItem>
      items;  ///< every term resident at the peak (GPU items add up to total()), then host items
  std::vector<MemoryItem> off_peak_items;  ///< transient terms of the phases that are not the peak
  std::string peak_phase;  ///< phase of the peak ("backward", "step", ...; "persistent" if none)
  std::vector<PhaseTotal> phases;  ///< every phase's total, in evaluation order
  std::vector<std::string> notes;  ///< approximations and assumptions that apply to this estimate
  Bytes model_states() const { return params + grads + optimizer_states; }
  Bytes total() const { return model_states() + buffers + activations + overhead; }
};

/// Activation bytes per GPU for one micro-batch (Korthikanti et al. 2022, "Reducing Activation
/// Recomputation in Large Transformer Models", §4; no tensor/sequence parallelism), generalised for
/// GQA, ffn != 4h, gated MLPs, no dropout, flash attention and full checkpointing; plus the final
/// norm, LM-head input and the logits (LP + fp32 copy for the loss). Zero for models without
/// ArchInfo. Saturates at UINT64_MAX instead of overflowing.
Bytes activation_bytes(const ModelDesc& model, const TrainingSettings& t, DType lp);

/// Per-GPU memory for `ds` (its stage and offload settings) on `cluster`, with `plan` partitioned
/// for cluster.world_size(). Worst rank (the largest grads_in_partition) in DeepSpeed accounting.
/// A plan whose stage or world size does not match is re-planned (a note says so).
MemoryReport estimate_memory(const ModelDesc& model, const PartitionPlan& plan, const DsConfig& ds,
                             const Cluster& cluster, const TrainingSettings& t, Accounting mode,
                             const OverheadParams& overheads = default_overheads());

/// ZeRO paper model-state bytes per GPU: (2 + 2 + K)Ψ split by stage, K = 12 (mixed-precision
/// Adam): stage 0: (4+K)Ψ; 1: 4Ψ + floor(KΨ/N); 2: 2Ψ + floor((2+K)Ψ/N); 3: floor((4+K)Ψ/N). Exact
/// (the one division is floored once, on the exact product); saturates at UINT64_MAX. Returns 0
/// when there is no answer (n == 0, or a stage outside 0..3).
Bytes paper_model_states(Elements psi, std::uint64_t n, int stage, std::uint64_t k = 12);

}  // namespace zerosim
