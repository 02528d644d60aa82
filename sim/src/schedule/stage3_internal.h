// Private pieces of the stage 3 schedule builder (deepspeed_zero.md §7), split by concern:
//   stage3_walk.cc        — ModelDesc -> hooked modules and the hook sequence of one fwd+bwd
//   stage3_coordinator.cc — PartitionedParameterCoordinator: trace, FETCH/RELEASE, prefetch
//   (§7.2–7.5) stage3_reduce.cc      — grad hooks, the IPG bucket, reduce-scatter / all-reduce
//   flushes (§7.6) stage3_init.cc        — initialization: broadcasts, persistent buffers, hook
//   gathers (§7.1) stage3_step.cc        — step() with sub-groups and the post-step gather (§7.7)
//   stage3_builder.cc     — build_stage3: input checks, meta, the iteration loop (§7.9, §12)
//
// Module mapping when the ModelDesc carries its nn.Module tree (model.modules, the zoo and Hugging
// Face configs): every module is hooked and fetches its direct params (a tied weight is fetched by
// every module holding it; params no module holds go to the root). Forward replays
// model.module_calls: FETCH at each pre-forward, RELEASE at each post-forward. Backward mirrors it:
// pre-backward hooks fire in reverse post-forward order (FETCH, when an output feeds the loss),
// post-backward hooks when the module's whole subtree is done (RELEASE, when its inputs need grad;
// otherwise edaa722's epilogue sweep, or v0.14.4's step() release-all, frees it), e.g. Llama:
//   fwd: F(layer) F(input_ln) R(input_ln) F(self_attn) F(q) R(q) .. F(o) R(o) R(self_attn) ..
//   bwd: F(layer) F(mlp) F(down) R(down) F(up) R(up) F(act) R(act) F(gate) R(gate) R(mlp)
//        F(post_ln) R(post_ln) F(self_attn) F(o) R(o) F(v) .. R(q) R(self_attn) F(input_ln) ..
// which is what autograd's order (latest-created node first) gives for these modeling files.
// GradReady events follow model.grad_order; a param's gradient is placed right after the
// backward FETCH of the last module (in backward order) holding it. A Layer's compute (its FLOPs
// per pass) runs in pieces: one Forward (Backward, Recompute) op right after the FETCH of each of
// its modules that holds params, weighted by the module's param elements (an approximation for
// attention scores and activations, which have no params; a layer whose modules hold none runs
// whole after its first module's FETCH). With activation checkpointing a Block layer's modules
// replay their forward hooks (FETCH, RELEASE) right before the layer's first backward FETCH.
//
// Module mapping without a module tree (hand-built models, param lists):
//   * every ModelDesc Layer is one hooked module whose direct params are its param_ids
//   (deduplicated,
//     sorted by ds_id); a tied weight listed by two layers is fetched by both;
//   * params that no layer lists belong to the root module, fetched before the first layer's
//   forward
//     and released after the last one, fetched first in backward and released last;
//   * a model without layers (a param list) has one module per param, in declaration order;
//   * forward visits layers in order; backward visits them in reverse, driven by model.grad_order
//     exactly as the other builders do; FETCH(bwd) precedes a layer's backward, RELEASE(bwd)
//     follows the gradients that become ready there;
//   * an Embedding layer's inputs (token ids) need no grad, so its post-backward hook never fires
//     (§7.2): at edaa722 the backward epilogue's leftover sweep releases it, at v0.14.4 step()'s
//     release-all does (the root module behaves the same when the first layer is an embedding);
//   * with activation checkpointing every Block layer's recompute runs its forward hooks again
//     (FETCH, recompute, RELEASE) right before its backward FETCH.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "schedule/builders.h"

namespace zerosim::schedule::s3 {

/// DeepSpeed's trace-verification broadcasts carry int64 lists (runtime/zero/utils.py).
inline constexpr DType kTraceIdDType = DType::Int64;

/// One hooked nn.Module.
struct Module {
  std::string name;
  /// Fetch set, unique, ascending ds_id (= model param id): direct params plus registered
  /// external params; for a z3 leaf, every descendant's too.
  std::vector<std::uint32_t> params;
  std::uint32_t layer = kNone;    ///< ModelDesc layer index; kNone for the root / a param module
  bool bwd_release_fires = true;  ///< false when the module's inputs need no grad (§7.2)
  bool bwd_fetch_fires = true;    ///< false when no output of the module needs grad
};

enum class HookKind : std::uint8_t { Fetch, Release, Forward, Recompute, Backward, GradReady };

/// One step of the fwd+bwd hook sequence.
struct HookEvent {
  HookKind kind = HookKind::Fetch;
  bool backward = false;        ///< the event belongs to the backward pass
  std::uint32_t index = kNone;  ///< module (Fetch/Release), layer (compute) or param (GradReady)
  // Compute events (Forward/Recompute/Backward) of the module-tree mapping run once per module that
  // holds params, right after its FETCH, each with its share of the layer's FLOPs.
  double share = 1.0;            ///< fraction of the layer's FLOPs this event runs
  std::uint32_t module = kNone;  ///< the module whose FETCH it follows (kNone: the whole layer)
  bool first = true;             ///< the layer's first piece of this pass (activations allocated)
  bool last = true;              ///< the layer's last piece of this pass (backward frees them)
};

/// The modules of a model and the identical hook sequence every iteration replays.
struct Walk {
  std::vector<Module> modules;
  std::vector<HookEvent> events;        ///< forward events, then backward events
  std::vector<std::uint32_t> leftover;  ///< modules whose post-backward RELEASE never fires
  std::string mapping;  ///< one line for the schedule's notes: which module mapping was used
};

/// Builds the module mapping above (recompute hooks with activation checkpointing). Fails (source
/// "model") on a layer, module or grad_order param id out of range, a module's layer out of range,
/// or module_calls that are not properly nested begin/end pairs. O(params + layer uses + modules).
/// `persistent` (per param, may be empty) keeps persistent params out of the external params a
/// module registers: they are AVAILABLE when read, and DeepSpeed registers only NOT_AVAILABLE ones.
Result<Walk> build_walk(const ModelDesc& m, bool activation_checkpointing,
                        const std::vector<bool>& persistent = {});

/// Transient buffers of one shape reused across launches, so the buffer table grows with distinct
/// shapes, not with iterations. A buffer is handed out only while it is free.
class BufferPool {
 public:
  std::uint32_t acquire(Emitter& e, std::string_view name, BufferCategory cat, DType dt,
                        Elements numel, MemoryPool pool = MemoryPool::Device);
  /// Returns a buffer acquired here (its Free op is the caller's).
  void release(std::uint32_t buffer);

 private:
  // A stage 3 row acquires and releases ~10,000 pooled buffers per step: the shape is found once
  // per acquire without copying its name (looked up as a string_view; clang's tuple comparison
  // does not mix string and string_view elements, hence KeyLess), and a release reads the
  // buffer's shape from a vector instead of a map.
  using Key = std::tuple<std::string, DType, Elements, MemoryPool>;
  using KeyView = std::tuple<std::string_view, DType, Elements, MemoryPool>;
  struct KeyLess {  // transparent: a Key and a KeyView compare as views (the same order)
    using is_transparent = void;
    static KeyView view(const KeyView& k) { return k; }
    static KeyView view(const Key& k) {
      return {std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k)};
    }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return view(a) < view(b);
    }
  };
  struct Shape {
    std::vector<std::uint32_t> free;  ///< released buffers of this shape, the latest last
    std::uint32_t created = 0;        ///< buffers made (numbers their names)
  };
  std::map<Key, std::uint32_t, KeyLess> index_;  ///< shape -> shapes_ index
  std::vector<Shape> shapes_;
  std::vector<std::uint32_t> shape_of_;  ///< per schedule buffer: its shape (kNone: not pooled)
};

/// Everything the stage 3 pieces share while emitting one schedule.
struct Context {
  Context(Schedule& s, const ScheduleInput& in, const Walk& w);

  Emitter e;
  const ModelDesc& m;
  const PartitionPlan& plan;
  const DsConfig& ds;
  const ZeroConfig& z;
  const Walk& walk;
  DeepSpeedVersion version;
  std::uint32_t world;
  DType lp, mw, ga, cd;
  bool overlap, offload_opt, offload_param;
  bool zero_init;        ///< the model was built under deepspeed.zero.Init (§7.1 step 1)
  bool updated = false;  ///< a step() has updated the master weights (Adam states exist)
  MemoryPool host_pool;  ///< Pinned with offload pin_memory, else Host
  Stream gather_stream, reduce_stream;
  std::uint32_t micro = 0;  ///< micro-step inside the current optimizer step
  bool boundary = false;    ///< the current micro-step ends with step()

  // Persistent buffers (§7.8).
  std::uint32_t lp_partitions = kNone, frozen_partitions = kNone, ipg = kNone,
                grad_partitions = kNone;
  std::vector<std::uint32_t> master, adam, host_fp32_grads;  ///< per sub-group
  /// step()'s executor-owned scratch: squared norms per sub-group (fp64 on the GPU, fp32 for
  /// CPU sub-groups) and the overflow flag (fp16 only).
  std::uint32_t norms64 = kNone, norms32 = kNone, overflow_flag = kNone;
  std::vector<std::uint32_t> sg_of_param;  ///< per param, kNone outside sub-groups
  /// Per sub-group: its start in lp_param_buffer and grad_partitions (Σc of earlier sub-groups).
  std::vector<Elements> sg_offset;
  /// Per param: the start of its c-chunk in lp_param_buffer / grad_partitions (sub-group params,
  /// in sub-group order) or in the frozen partitions (the others, in declaration order).
  std::vector<Elements> part_offset;
  // Per-param and per-layer buffers, re-allocated at every use.
  std::vector<std::uint32_t> grad_buf, full_buf, padded_buf, act_buf;
  BufferPool pool;
  Diagnostics internal;  ///< coordinator assertions DeepSpeed would raise (never expected)

  Elements n(std::uint32_t p) const { return m.params[p].numel; }
  Elements c(std::uint32_t p) const { return plan.s3[p].partition; }
  bool persistent(std::uint32_t p) const { return plan.s3[p].persistent; }
  /// Whether p's gathers copy its partition to the device first: under offload_param every
  /// trainable partition sits in the host flat buffer by the time it is gathered (persistent ones
  /// too); a persistent param outside the optimizer keeps its device partition in DeepSpeed
  /// (memory: the schedule holds it on the host, scenarios/README.md) and is read in place.
  bool staged_from_host(std::uint32_t p) const {
    return offload_param && !(persistent(p) && sg_of_param[p] == kNone);
  }
  /// The rank's c-chunk of p in the LP partitions (or in the frozen partitions).
  Region own_partition(std::uint32_t p) const {
    return region(sg_of_param[p] == kNone ? frozen_partitions : lp_partitions, part_offset[p],
                  c(p));
  }
  /// The rank's c-chunk of p's gradient in grad_partitions (sub-group params only).
  Region grad_partition(std::uint32_t p) const {
    return region(sg_of_param[p] == kNone ? kNone : grad_partitions, part_offset[p], c(p));
  }
  /// offload_optimizer.ratio: sub-groups with index < floor((1 - ratio) * count) stay on the GPU.
  bool sg_on_cpu(std::size_t sg) const;
  /// Whether sub-group sg's master weights are its LP partitions themselves: DeepSpeed keeps no
  /// copy when they already have the master dtype on the optimizer's device (stage3.py:1112-1117,
  /// e.g. fp32 training without offload).
  bool master_is_lp(std::size_t sg) const { return lp == mw && !sg_on_cpu(sg) && !offload_param; }
  /// Where sub-group sg's master weights live (its own buffer, or its LP partitions).
  Region master_region(std::size_t sg) const {
    return master_is_lp(sg)
               ? region(lp_partitions, sg_offset[sg], plan.sub_groups[sg].partition_numel)
               : region(master[sg]);
  }
  /// A Collective op over the data-parallel group, with deps; input `src`, output `dst` (empty:
  /// in place); a sum's output is the reduction x `scale`.
  std::uint32_t collective(CollectiveKind k, Elements numel, Elements out, DType dt, ReduceOp r,
                           Stream st, std::string label, DepList deps = {},
                           std::uint32_t root = kNone, Region src = {}, Region dst = {},
                           double scale = 1.0);
  /// A copy-like op (Copy, HostToDevice, DeviceToHost, WriteBack) from `src` into `dst`.
  std::uint32_t data_op(OpKind k, Stream st, Elements elements, DType dt, Region src, Region dst,
                        std::string label, DepList deps = {}, CopyMode mode = CopyMode::Assign);
  /// The operand list of `pieces` (interned; an empty list is an empty region).
  Region pieces(std::vector<Piece> pieces) { return list_region(e.list(std::move(pieces))); }
  /// p's own partition as a list piece (the c-chunk own_partition() names).
  Piece own_piece(std::uint32_t p) const {
    const Region r = own_partition(p);
    return {r.buffer, r.offset, r.length};
  }
  /// The executor-owned int64 scratch a trace-check broadcast of `length` ids runs on (one per
  /// distinct length).
  std::uint32_t trace_ids(Elements length);
  std::map<Elements, std::uint32_t> trace_id_buffers;
};

/// PartitionedParameterCoordinator (PPC) state machine for one process (§7.2–§7.5).
class Coordinator {
 public:
  explicit Coordinator(Context& cx);
  /// RESET_STEP: waits for and releases in-flight params, advances the trace state machine (with
  /// its int64 broadcasts), restarts the prefetch queue, step_id = 0, n_available = 0.
  void reset_step();
  void fetch(std::uint32_t module, bool backward);  ///< FETCH(m) (§7.3)
  void release(std::uint32_t module);               ///< RELEASE(m) (§7.4)
  void release_all();                               ///< step()'s RELEASE_ALL (persistent included)
  void gather_persistent();                         ///< POST_STEP synchronous gather (§7.7)
  std::int64_t n_available() const { return n_available_; }
  /// The buffer holding p's gathered values while it is available (kNone otherwise).
  std::uint32_t storage(std::uint32_t p) const { return ps_[p].storage; }

 private:
  enum class Mode : std::uint8_t { Record, Complete, Invalid };
  enum class Status : std::uint8_t { NotAvailable, InFlight, Available };
  struct ParamState {
    Status status = Status::NotAvailable;
    std::uint32_t handle = kNone;   ///< in the in-flight registry under this handle
    std::uint32_t storage = kNone;  ///< buffer holding the gathered param (full or padded)
    std::int64_t last_consumed = 0;
    std::vector<std::uint32_t> active;  ///< modules using the param right now
  };
  struct Handle {
    std::uint32_t first = 0;  ///< its params: handle_params_[first, first + count), ds_id order
    std::uint32_t count = 0;
    std::uint32_t staging = kNone;  ///< coalesced staging W*Σc (kNone: single-param gather)
    Elements staging_numel = 0;
    std::uint32_t registered = 0;  ///< params still in the registry under this handle
    bool complete = false;
  };

  /// Gathers `params` (sorted here, in place).
  void gather(std::vector<std::uint32_t>& params, const std::string& why);
  void gather_single(std::uint32_t p, const std::string& why, std::uint32_t h);
  void gather_coalesced(const std::vector<std::uint32_t>& params, const std::string& why,
                        std::uint32_t h);
  std::uint32_t stage_partitions_on_device(std::span<const std::uint32_t> params, Elements& numel);
  void wait(std::uint32_t p);
  void free_param(std::uint32_t p);
  /// The own-partition source of a gather of `params`: each param's c-chunk, from the device copy
  /// `tmp` staged under offload_param (every param, persistent ones included).
  std::vector<Piece> own_sources(const std::vector<std::uint32_t>& params, std::uint32_t tmp) const;
  /// own_sources of the one param `p`.
  Piece own_source(std::uint32_t p, std::uint32_t tmp) const;
  void consume_own(const Module& mod);
  void prefetch();
  /// The params RELEASE(mod) frees, into `cand`.
  void params_to_release(const Module& mod, std::vector<std::uint32_t>& cand) const;
  void clean_inflight();
  void invalidate();
  void broadcast_list(const std::string& what, Elements length);
  CollectiveKind fetch_kind() const;

  Context& cx_;
  Mode mode_;
  std::vector<std::uint32_t> recorded_;  ///< modules fetched while recording
  std::vector<std::uint32_t> trace_;     ///< the frozen module trace
  std::vector<std::pair<std::uint32_t, std::uint32_t>> param_trace_;  ///< (param, step)
  std::size_t queue_head_ = 0;
  std::uint32_t step_id_ = 0;
  std::int64_t n_available_ = 0;
  std::vector<ParamState> ps_;
  std::vector<Handle> handles_;
  std::vector<std::uint32_t> handle_params_;  ///< every handle's params, one after another
  std::uint32_t last_gather_op_ = kNone;
  // Scratch lists reused by every FETCH / RELEASE (cleared before each use): a stage 3 row runs
  // ~6,600 of each per step, and a fresh vector for each was ~10 % of its build's allocations.
  std::vector<std::uint32_t> to_gather_, fresh_, popped_, release_;
  // Per param: 1 while it is in release_ (a lookup instead of a scan of release_ per param: a
  // module of 100k params took 3 s, 500k two minutes).
  std::vector<std::uint8_t> releasing_;
};

/// Gradient hooks, the single IPG bucket and its flushes (§7.6).
class Reducer {
 public:
  explicit Reducer(Context& cx) : cx_(cx) {}
  /// S3_ON_GRAD for a param whose GradReady op is `ready_op`.
  void on_grad(std::uint32_t p, std::uint32_t ready_op);
  /// Epilogue: flush the bucket if non-empty, then the compute stream waits for the reduce stream.
  void epilogue();

 private:
  struct Entry {
    std::uint32_t param = kNone;
    bool in_ipg =
        false;  ///< the grad was copied into the IPG buffer (else it keeps its own storage)
    Elements offset = 0;  ///< its start in the IPG buffer (bucket elements before it)
  };
  /// Where entry `en`'s gradient lies when the flush reads it: n elements of the IPG buffer at
  /// its offset, or its own gradient buffer.
  Piece grad_piece(const Entry& en) const;
  void flush();
  void reduce_scatter(const std::vector<std::uint32_t>& sorted, Elements sum_c);
  void all_reduce(Elements e);
  /// `chunks[k]`: where the rank's reduced c-chunk of params[k] lies (a piece of the
  /// reduce-scatter output, or of the all-reduced bucket: rank-strided, zeros past the tensor).
  /// `out`: the reduce-scatter output holding them all in order (kNone: the all-reduced bucket).
  void partition_grads(const std::vector<std::uint32_t>& params, Elements sum_c,
                       const std::vector<Piece>& chunks, std::uint32_t out);
  /// Ops on the reduce stream, tagged with the current flush; each becomes last_reduce_op_.
  std::uint32_t on_reduce_stream(std::uint32_t op);
  std::uint32_t alloc(std::uint32_t buffer);
  std::uint32_t free(std::uint32_t buffer);
  std::uint32_t copy(OpKind kind, Elements elements, DType dt, Region src, Region dst,
                     std::string label, std::uint32_t param = kNone, DepList deps = {},
                     CopyMode mode = CopyMode::Assign, double scale = 1.0);

  Context& cx_;
  std::vector<Entry> bucket_;
  // Per param: its first entry in bucket_ while reduce_scatter stages it, else kNone (a lookup
  // instead of a scan of the bucket per grad: quadratic in a bucket of many small grads).
  std::vector<std::uint32_t> entry_of_;
  Elements elements_ = 0;
  std::uint32_t flush_seq_ = 0;
  std::vector<std::uint32_t> flush_end_;  ///< last reduce-stream op of every flush
  std::uint32_t last_reduce_op_ = kNone;
};

/// §7.1: model broadcasts, conversion, persistent buffers, hook-registration all-gathers.
void emit_init(Context& cx);
/// §7.7: RELEASE_ALL, overflow check (fp16 only), per-sub-group norms and updates, POST_STEP.
void emit_step(Context& cx, Coordinator& co, bool overflow);

}  // namespace zerosim::schedule::s3
