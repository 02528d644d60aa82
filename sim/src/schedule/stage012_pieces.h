// The pieces of the stage 0/1/2 builder, named after the DeepSpeed classes whose behaviour they
// emit (DeepSpeed commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641; deepspeed_zero.md §3–§6). Each
// piece owns the buffers and the emission state of its DeepSpeed counterpart and sees only the
// pieces it calls, passed to its constructor; the one thing every piece reads is the Config.
//
//   Config             the ds_config resolved as DeepSpeed resolves it   stage012_config.cc
//   EngineModule       DeepSpeedEngine.module: param storage, p.grad     stage012_module.cc
//   CpuOffload         DeepSpeedZeroOptimizer's cpu_offload buffers      stage012_offload.cc
//   AveragedGradients  grads_in_partition / averaged_gradients           stage012_averaged.cc
//   IpgBuckets         the IPG buckets, reduce_ipg_grads, the epilogue   stage012_buckets.cc
//   ZeroStep           DeepSpeedZeroOptimizer.step()                     stage012_step.cc
//   ZeroOptimizer      DeepSpeedZeroOptimizer: init, hooks, micro-steps  stage012.cc
//   EngineAllReduce    DeepSpeedEngine.allreduce_gradients (stage 0)     stage012_engine.cc
//   Fp16Optimizer, Bf16Optimizer, TorchOptimizer: the optimizers the engine reduces for
//                                                                        stage012_engine_opt.cc
//
// Who calls whom: build_stage012 makes the Config, the SlotTable and the EngineModule, then either
// a ZeroOptimizer (stage 1/2), which owns ZeroPartitions, CpuOffload, AveragedGradients,
// IpgBuckets (inserts, flushes, epilogue: CpuOffload's copies, AveragedGradients' buffers) and
// ZeroStep (reads ZeroPartitions, CpuOffload's B4, AveragedGradients' pass); or the engine program
// over one EngineOptimizer, which reduces through EngineAllReduce. Ops are appended only through
// the Emitter (emitter.h), each built in one spec expression and never patched.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedule/stage012_internal.h"

namespace zerosim::schedule::s12 {

/// `parts` joined, in one allocation (an operator+ chain reallocates at every step): the builder
/// names a few slots and buffers per flush.
inline std::string concat(std::initializer_list<std::string_view> parts) {
  std::size_t n = 0;
  for (std::string_view p : parts) n += p.size();
  std::string out;
  out.reserve(n);
  for (std::string_view p : parts) out += p;
  return out;
}

/// A buffer of the pieces: `numel` elements on every rank, or with `slot` the role's value of that
/// slot (then numel is 0); `persistent`: lives to the end once allocated.
inline Buffer make_buffer(std::string name, std::string spec, BufferCategory cat, MemoryPool pool,
                          DType dt, Elements numel, bool persistent, std::uint32_t slot = kNone) {
  Buffer b;
  b.name = std::move(name);
  b.spec_id = std::move(spec);
  b.category = cat;
  b.pool = pool;
  b.dtype = dt;
  b.numel = numel;
  b.slot = slot;
  b.persistent = persistent;
  return b;
}

// ---------------------------------------------------------------------------------------------
// Config

/// The configuration resolved the way DeepSpeed resolves it: which optimizer wrapper runs
/// (engine.py:2279 _configure_fp16_optimizer, :2336 _configure_bf16_optimizer, :2359
/// _configure_zero_optimizer), whether gradient hooks exist, contiguous gradients forced by offload
/// (stage_1_and_2.py:291 _enforce_cpu_offload), the dtypes LP/MW/GA/CD. Read-only.
struct Config {
  explicit Config(const ScheduleInput& input);

  const ScheduleInput& in;
  const ModelDesc& m;
  const PartitionPlan& plan;
  const DsConfig& ds;

  OptimizerPath path = OptimizerPath::ZeroStage1And2;
  int stage = 0;
  std::uint32_t world = 1;
  std::uint32_t gas = 1;
  Elements r = 0;  ///< reduce_bucket_size
  bool overlap = false, contiguous = true, reduce_scatter = true, multi_rank = true;
  bool offload = false, v0144 = false, managed = true, ga_attr = false, hooks = false;
  DType lp = DType::Float16, mw = DType::Float32, ga = DType::Float16, cd = DType::Float16;
  /// Where offloaded optimizer buffers live: pinned host memory with offload pin_memory.
  MemoryPool host_pool = MemoryPool::Host;
  /// What the data-parallel reductions multiply their sum by: 1/W with gradient_allreduce_op
  /// "mean" (DeepSpeed's div_ by the world size before or after the collective), 1 with "sum".
  double average = 1.0;
  /// What autograd's gradient is scaled by: the engine divides the loss by the accumulation
  /// steps (engine.py:2684 _scale_loss_by_gas) when there are several.
  double loss_scale_gas = 1.0;

  /// The stream the bucket reductions run on (reduction_stream with overlap_comm).
  Stream reduce_stream() const { return overlap ? Stream::Reduce : Stream::Compute; }
  /// The stream whose work a non_blocking offload copy follows: the one that produced the data
  /// (Reduce with overlap_comm, else Compute).
  Stream produced_on() const { return overlap ? Stream::Reduce : Stream::Compute; }
  const std::string& pname(std::uint32_t p) const { return m.params[p].name; }
  /// Σ P_g: the elements of every param group.
  Elements grads_in_groups() const;
};

// ---------------------------------------------------------------------------------------------
// EngineModule

/// DeepSpeedEngine.module as the optimizers see it: where each param's 16-bit values live (the
/// module's storage, then its slice of a flat buffer), its autograd gradient p.grad (T1), its
/// GA-attribute accumulator p.grad_accum, the activations of every layer.
class EngineModule {
 public:
  /// Creates the T1, grad_accum and activation buffers (allocated later, when used).
  EngineModule(const Config& cfg, Emitter& e);

  /// The module's params as separate storage and engine.py:1715 _broadcast_model (§7.1 item 1);
  /// returns the buffer of the optimized params (freed by the caller once flattened).
  /// `trainable_persistent`: the trainable params are never flattened (plain stage 0).
  std::uint32_t emit_params(bool trainable_persistent);
  /// The flatten of group `fg`'s params into its flat 16-bit buffer `flat` (X1: DeepSpeed's
  /// flatten of bit16_groups, stage_1_and_2.py:442; FP16/BF16_Optimizer's flat groups), zero
  /// padding when `aligned`; the params' homes move into `flat`. Emitted before the module's
  /// storage is freed.
  void flatten_into(const FlatGroup& fg, std::uint32_t flat, bool aligned, const std::string& name);

  /// Where p's 16-bit values live now.
  Region home(std::uint32_t p) const { return home_[p]; }
  /// p's T1 gradient buffer (kNone: frozen or empty); live while allocated.
  std::uint32_t grad(std::uint32_t p) const { return grad_buf_[p]; }
  bool grad_live(std::uint32_t p) const { return grad_live_[p]; }
  const std::vector<std::uint32_t>& grad_buffers() const { return grad_buf_; }
  /// `zero_fill`: a zero gradient for a param autograd gave none (torch.zeros). No-op when p has
  /// no gradient buffer or it is live.
  void alloc_grad(std::uint32_t p, bool zero_fill = false);
  void free_grad(std::uint32_t p, Stream st = Stream::Compute);
  /// zero_grad(set_to_none=True): every live p.grad dropped.
  void zero_grad();

  /// GA-attribute mode (stage_1_and_2.py:1123 _fill_param_grad_accum_attribute): p.grad_accum
  /// (kNone: none) and whether it is allocated.
  std::uint32_t grad_accum(std::uint32_t p) const { return grad_accum_buf_[p]; }
  bool grad_accum_live(std::uint32_t p) const { return grad_accum_live_[p]; }
  void alloc_grad_accum(std::uint32_t p);
  /// Every live grad_accum dropped (clear_backward_seen_flag, at the next forward).
  void free_grad_accums();

  const std::vector<std::uint32_t>& activations() const { return activation_; }
  const std::vector<std::uint32_t>& ready_layer() const { return ready_layer_; }

 private:
  const Config& cfg_;
  Emitter& e_;
  std::vector<Region> home_;
  std::vector<std::uint32_t> grad_buf_, grad_accum_buf_;
  std::vector<bool> grad_live_, grad_accum_live_;
  std::vector<std::uint32_t> activation_;  ///< per layer (kNone: none)
  std::vector<std::uint32_t> ready_layer_;
};

// ---------------------------------------------------------------------------------------------
// DeepSpeedZeroOptimizer (stage 1/2)

/// The flat buffers of DeepSpeedZeroOptimizer.__init__: bit16_groups_flat (B1,
/// stage_1_and_2.py:442) and single_partition_of_fp32_groups (B2, :509), per group.
struct ZeroPartitions {
  std::vector<std::uint32_t> bit16_flat;      ///< B1
  std::vector<std::uint32_t> fp32_partition;  ///< B2
};

/// DeepSpeedZeroOptimizer's CPU optimizer offload (cpu_offload): the fp32 gradient partitions B4
/// (single_partition_of_fp32_groups' grads), the LP staging B5
/// (param_buffer_of_bit16_for_cpu_offload_groups), the one-param staging buffers B6/B7
/// (temp_grad_buffer_for_{gpu,cpu}_offload) and the per-param CPU accumulators B8
/// (accumulated_grads_in_cpu, stage_1_and_2.py:1516 async_accumulate_grad_in_cpu_via_gpu).
class CpuOffload {
 public:
  CpuOffload(const Config& cfg, Emitter& e, SlotTable& slots) : cfg_(cfg), e_(e), slots_(slots) {}
  /// With pinned memory, the unpinned fp32 copy of group `g`'s master (S_g elements) that
  /// pin_memory copies from, allocated before B2 (kNone unpinned: no transient).
  std::uint32_t unpinned_master(std::size_t g, Elements s);
  /// After B2 of group `g` (S_g elements) is filled: frees `unpinned` (unpinned_master's), holds
  /// the group's temp_buffer_bit16 (pinned, edaa722), then B4 and B5.
  void create_group(std::size_t g, Elements s, std::uint32_t unpinned);
  /// B6 and B7, of the largest grouped param.
  void create_staging();
  /// __init__ returns: the last group's temp_buffer_bit16 is released.
  void init_returns();
  /// A record for one IPG pass (its B8 accumulators); returns its id.
  std::uint32_t add_pass();
  /// Flush `f` of pass `id` reduces `params`: when flushes accumulate on the CPU, the params' B8
  /// accumulators.
  void attach(std::uint32_t id, const std::vector<std::uint32_t>& params);
  /// The post-flush offload copies of a flush of pass `id` (copy_grads_in_partition, :1650):
  /// `owned_slot` its OwnedSlice slot, `entries` where its gradients were reduced, `flush_plan`
  /// its Schedule::flush_plans entry.
  void post_flush(std::uint32_t id, std::uint32_t owned_slot,
                  const std::vector<FlushEntry>& entries, std::uint32_t flush_plan, bool boundary,
                  std::uint32_t micro, Stream st);
  /// Group g's fp32 gradient partition (B4), what the host update reads.
  Region grad_partition(std::size_t g) const { return region(b4_[g]); }
  /// After the host update of group g: master -> LP staging (B5) -> the rank's LP slice of `flat`.
  void copy_back(std::size_t g, Elements s, std::uint32_t master, std::uint32_t flat);

 private:
  /// Whether any flush goes through async_accumulate_grad_in_cpu_via_gpu.
  bool accumulates_on_cpu() const;

  /// What one IPG pass has attached here.
  struct PassRecord {
    /// Per param (GAS > 1): its CPU accumulator accumulated_grads_in_cpu[param_id] (B8), its
    /// Touching({p}) slot (the param's numel on the ranks it touches, else 0), whether allocated
    /// (once, then persistent).
    std::vector<std::uint32_t> b8_buf, b8_slot;
    std::vector<bool> b8_live;
  };

  const Config& cfg_;
  Emitter& e_;
  SlotTable& slots_;
  std::vector<std::uint32_t> b4_, b5_;
  /// Per flush plan: the OwnedGrads and OwnedPartition operands of its D2H into B4 (empty: not
  /// interned yet).
  std::vector<std::pair<Region, Region>> b4_copy_;
  std::uint32_t b6_ = kNone, b7_ = kNone;
  std::uint32_t temp_bit16_ = kNone;  ///< the live temp_buffer_bit16 (init, pinned only)
  std::vector<PassRecord> passes_;
};

/// What DeepSpeedZeroOptimizer keeps between the reductions and step(): the grads_in_partition
/// pieces (T3, stage_1_and_2.py:1678), the autograd grads kept without contiguous gradients, the
/// averaged_gradients the boundary epilogue builds (:946, with its padding zeros T4), all dropped
/// when step() releases averaged_gradients (:2372).
class AveragedGradients {
 public:
  AveragedGradients(const Config& cfg, Emitter& e, SlotTable& slots, EngineModule& module)
      : cfg_(cfg), e_(e), slots_(slots), module_(module) {}
  /// Keeps `buffer` until step() (set 0) or until the epilogue adds set 1 into set 0.
  void hold(std::uint32_t buffer, std::uint32_t set);
  /// The non-offload part of independent_gradient_partition_epilogue (:919) for `pass` (stage 1
  /// without contiguous gradients: attaches the pass's kept-grads grad pass, once).
  void epilogue(IpgPass& pass, std::uint32_t set, bool boundary);
  /// Drops everything held for step() (the averaged lists released).
  void release();
  /// The grad pass whose boundary epilogue built averaged_gradients (kNone: not carried).
  std::uint32_t pass() const { return averaged_pass_; }

 private:
  const Config& cfg_;
  Emitter& e_;
  SlotTable& slots_;
  EngineModule& module_;
  std::vector<std::uint32_t> step_frees_;      ///< dropped with the last group's averaged list
  std::vector<std::uint32_t> epilogue_frees_;  ///< second grads_in_partition pieces (stage 2)
  std::uint32_t averaged_pass_ = kNone;
  std::uint32_t padding_buf_ = kNone;  ///< T4 zeros appended to averaged_gradients (lazily)
  /// Stage 1 without contiguous gradients: the grads kept after the epilogue, and their flush
  /// plan (every flush's entries, in order).
  std::uint32_t kept_stage1_buf_ = kNone, kept_stage1_plan_ = kNone;
};

/// DeepSpeedZeroOptimizer's independent-partition gradient buckets (IPGBucket,
/// stage_1_and_2.py:113): the IPG buffers T2, the hook's insert
/// (reduce_independent_p_g_buckets_and_remove_grads, :1193), each flush (reduce_ipg_grads, :1691:
/// average_tensor :1350 with allreduce_and_scatter :1314 / allreduce_and_copy_with_multiple_ranks
/// :1290, gradient_reduction_w_predivide :1259, buffered_reduce_fallback :1945) and the backward
/// epilogue (independent_gradient_partition_epilogue, :919).
class IpgBuckets {
 public:
  IpgBuckets(const Config& cfg, Emitter& e, SlotTable& slots, EngineModule& module,
             CpuOffload& offload, AveragedGradients& averaged)
      : cfg_(cfg), e_(e), slots_(slots), module_(module), offload_(offload), averaged_(averaged) {}
  /// The IPG buffers: two with overlap_comm (double buffering), one without, none without
  /// contiguous gradients.
  void create_buffers();
  /// Attaches slots and buffers to a freshly planned pass.
  void prepare(IpgPass& pass, const std::string& name);
  /// setup_buckets (:2493): allocates the IPG buffers (v0.14.4 replaces them every backward).
  void setup();
  /// The first hook of a backward (edaa722): the IPG buffers set up once per backward.
  void on_first_hook();
  /// True once the slot table is past the role-table refusal (SlotTable::full): nothing more is
  /// emitted, the build is refused.
  bool stopped() const { return slots_.full(); }
  /// The insert of `pass.inserts[i]` (the flush before it, the copy into the bucket); `set` is 1
  /// for the second grads_in_partition of later stage-2 micro-steps, `boundary`/`micro` drive the
  /// offload copies.
  void insert(IpgPass& pass, std::size_t i, std::uint32_t set, bool boundary, std::uint32_t micro);
  /// independent_gradient_partition_epilogue (§4.7): the last flush, the drops,
  /// _release_ipg_buffers.
  void epilogue(IpgPass& pass, std::uint32_t set, bool boundary, std::uint32_t micro);

 private:
  void flush(IpgPass& pass, std::uint32_t f, std::uint32_t set, bool boundary, std::uint32_t micro);
  Region partition_grads(IpgPass& pass, std::uint32_t set, std::uint32_t f);
  /// Applies the deferred drops of a non-contiguous overlapped flush (next flush or epilogue).
  void drop_deferred(Stream st);
  std::uint32_t flush_collective(CollectiveKind k, Elements numel, Stream st,
                                 const std::string& tag, std::uint32_t seq, Region src,
                                 std::uint32_t root = kNone, Region dst = {});
  /// `cached`: the reduction's operands from its first emission (filled then), or null.
  void reduce_chunk(CollectiveKind k, Elements total, std::size_t pieces, Stream st,
                    const std::string& tag, std::uint32_t seq, Region src, std::uint32_t root,
                    const CopyBack& back = {}, ChunkOperands* cached = nullptr);
  std::vector<PlannedReduction>& owner_reductions(IpgPass& pass, std::uint32_t f);
  /// Where reduction `red` of flush f goes back (X4), registered at its first emission.
  CopyBack copy_back_of(IpgPass& pass, std::uint32_t f, PlannedReduction& red,
                        std::size_t reductions, const std::string& tag);
  void reduce_contiguous(IpgPass& pass, std::uint32_t f, Stream st, const std::string& tag,
                         std::uint32_t seq);
  void reduce_fallback(const PlannedFlush& fl, Stream st, const std::string& tag,
                       std::uint32_t seq);

  const Config& cfg_;
  Emitter& e_;
  SlotTable& slots_;
  EngineModule& module_;
  CpuOffload& offload_;
  AveragedGradients& averaged_;
  std::vector<std::uint32_t> ipg_;   ///< T2 buffers (1, or 2 with overlap)
  std::vector<BucketSlice> slices_;  ///< owner_reductions' scratch (one flush's owner slices)
  bool ipg_live_ = false;
  bool ready_for_gradients_ = false;  ///< S12 flag: IPG set up by the first hook of a backward
  std::uint32_t flush_seq_ = 0;       ///< next flush number (Op::bucket)
  std::vector<std::uint32_t> deferred_grad_frees_;  ///< non-contiguous + overlap: at next flush
  /// Retained allocations that follow those frees: (kept buffer, the flush plan it adopts).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> deferred_retained_;
};

/// ALL_GATHER_DP_GROUPS (runtime/utils.py:1016 all_gather_dp_groups): one
/// all_gather_into_tensor(out Pal_g, in S_g) per group of the flat 16-bit buffers `flat`, skipped
/// with W = 1.
void all_gather_dp_groups(const Config& cfg, Emitter& e, const std::vector<std::uint32_t>& flat);

/// DeepSpeedZeroOptimizer.step() (stage_1_and_2.py:2279, §5): the overflow check (has_overflow,
/// :2470), the gradient norms (get_grad_norm_direct, :2054), per group the flatten/cast
/// temporaries, the update (_optimizer_step, :2257) on the rank's S_g master elements with Adam
/// states created by the first call, the write-back, all_gather_dp_groups (:2396) and zero_grad.
class ZeroStep {
 public:
  ZeroStep(const Config& cfg, Emitter& e, SlotTable& slots, EngineModule& module,
           const ZeroPartitions& flat, CpuOffload& offload, AveragedGradients& averaged)
      : cfg_(cfg),
        e_(e),
        slots_(slots),
        module_(module),
        flat_(flat),
        offload_(offload),
        averaged_(averaged),
        t6_(cfg.plan.groups.size(), kNone),
        t7_(cfg.plan.groups.size(), kNone),
        t6_slot_(cfg.plan.groups.size(), kNone) {}
  /// step() for optimizer step `step`, then zero_grad.
  void step(std::uint32_t step);

 private:
  std::uint32_t optimizer_op(Elements elements, Stream st, std::uint32_t group, Region grad);
  void alloc_adam(std::uint32_t g, MemoryPool pool);
  void update_on_gpu(std::uint32_t g, bool last);
  void update_on_host(std::uint32_t g);
  void local_grad_stats(OpKind kind);

  const Config& cfg_;
  Emitter& e_;
  SlotTable& slots_;
  EngineModule& module_;
  const ZeroPartitions& flat_;
  CpuOffload& offload_;
  AveragedGradients& averaged_;
  std::vector<std::uint32_t> b3_;        ///< per group: Adam states (created by the first update)
  std::vector<std::uint32_t> t6_, t7_;   ///< per group: step temporaries (created lazily)
  std::vector<std::uint32_t> t6_slot_;   ///< per group: T6's FlatCopy slot
  std::uint32_t norms_ = kNone;          ///< the per-group squared-norm scratch (fp32 x G)
  std::uint32_t overflow_flag_ = kNone;  ///< the overflow flag scratch (uint8 x 1)
};

/// DeepSpeedZeroOptimizer as the engine drives it: __init__ (flat buffers, master partitions,
/// offload buffers, stage_1_and_2.py:146), the gradient hooks (create_gradient_handling_hooks,
/// :1152), every micro-step's forward/backward and epilogue, the stage 1 reduce_gradients (:861)
/// and step().
class ZeroOptimizer {
 public:
  ZeroOptimizer(const Config& cfg, Emitter& e, SlotTable& slots, EngineModule& module);
  /// The whole program: init, then every step's micro-steps and step().
  void emit_program();

 private:
  struct Passes {
    IpgPass backward;  // hook inserts in gradient-ready order
    IpgPass boundary;  // stage 1 without overlap: group order after backward
    bool has_boundary = false;
  };
  void init();
  void plan_passes();
  void micro_step(std::uint32_t step, std::uint32_t micro);
  void on_grad(IpgPass& pass, std::size_t& cursor, std::uint32_t p, bool boundary,
               std::uint32_t micro, std::uint32_t set);
  /// get_gradient_for_reduction (:1136) in GA-attribute mode: a temporary LP copy of grad_accum.
  void lp_copy_of_grad_accum(std::uint32_t p);

  const Config& cfg_;
  Emitter& e_;
  EngineModule& module_;
  ZeroPartitions flat_;
  CpuOffload offload_;
  AveragedGradients averaged_;
  IpgBuckets buckets_;
  ZeroStep step_;
  Passes passes_;
};

// ---------------------------------------------------------------------------------------------
// The engine's own reduction (stage 0, BF16_Optimizer)

/// DeepSpeedEngine.allreduce_gradients (engine.py:2891) as buffered_allreduce_fallback (:3784)
/// runs it: CHUNK_GT over the items with MEMORY_OPT_ALLREDUCE_SIZE (:160) elements, each chunk
/// flattened (allreduce_no_retain :3691, allreduce_bucket :3658), all-reduced in CD, post-scaled,
/// copied back.
class EngineAllReduce {
 public:
  EngineAllReduce(const Config& cfg, Emitter& e) : cfg_(cfg), e_(e) {}
  /// `items[i]` of `sizes[i]` elements of dtype `item_dt`, in order.
  void reduce(const std::vector<Elements>& sizes, const std::vector<Region>& items, DType item_dt);

 private:
  const Config& cfg_;
  Emitter& e_;
};

/// The optimizer the engine reduces gradients for: FP16_Optimizer, BF16_Optimizer or a bare torch
/// optimizer. The engine program (emit_engine_program) calls these in DeepSpeed's order.
class EngineOptimizer {
 public:
  virtual ~EngineOptimizer() = default;
  EngineOptimizer(const EngineOptimizer&) = delete;
  EngineOptimizer& operator=(const EngineOptimizer&) = delete;

  /// The module's params and their broadcast, then the optimizer's construction (its flat
  /// buffers, masters, gradient buffers or Adam states).
  virtual void init() = 0;
  /// Whether a later micro-step's autograd gradient adds into the live p.grad (BF16_Optimizer
  /// zeroes the grads at each backward prologue instead, §3.4).
  virtual bool accumulates_in_grad() const { return true; }
  /// After a micro-step's backward (BF16_Optimizer's backward_epilogue).
  virtual void backward_epilogue(std::uint32_t /*micro*/) {}
  /// allreduce_gradients over what the optimizer reduces.
  virtual void allreduce_gradients() = 0;
  /// The local statistics of step(), its update(s) and write-back, and the post-step all-gather.
  virtual void step(std::uint32_t step) = 0;

 protected:
  EngineOptimizer(const Config& cfg, Emitter& e, EngineModule& module)
      : cfg_(cfg), e_(e), module_(module), allreduce_(cfg, e) {}
  /// The local statistics step() reads after the engine's all-reduce: one squared norm per
  /// group, and with `check` the overflow flag or-ed over the groups (the scratch created once).
  /// `skip`: an overflow step, whose step() returns after the check, before any norm.
  void local_grad_stats(bool check, bool skip);
  /// Group g's gradients as the statistics read them (default: the module's grads in flat
  /// order, LP); sets `dt` to their dtype.
  virtual Region stat_source(std::size_t g, DType& dt);
  /// The module's gradients of group `fg` in flat order, as an operand list.
  Region group_grads(const FlatGroup& fg);
  Region norms() const { return region(norms_, 0, cfg_.plan.groups.size()); }
  Region overflow() const { return overflow_ == kNone ? Region{} : region(overflow_, 0, 1); }
  /// Adam states of `numel` master elements, as zeros (torch.zeros_like).
  std::uint32_t adam_states(const std::string& name, Elements numel, const std::string& spec);

  const Config& cfg_;
  Emitter& e_;
  EngineModule& module_;
  EngineAllReduce allreduce_;
  std::uint32_t norms_ = kNone;
  std::uint32_t overflow_ = kNone;
};

/// The engine optimizer of `cfg.path` (Plain, Fp16Optimizer or Bf16Optimizer).
std::unique_ptr<EngineOptimizer> make_engine_optimizer(const Config& cfg, Emitter& e,
                                                       EngineModule& module);

/// Stage 0 (plain / FP16_Optimizer, §3.5) and BF16_Optimizer (§3.4): the engine's forward, backward
/// (engine.py:3205), allreduce_gradients at the boundary and step() (engine.py:3405), every step.
void emit_engine_program(const Config& cfg, Emitter& e, EngineModule& module, EngineOptimizer& opt);

}  // namespace zerosim::schedule::s12
