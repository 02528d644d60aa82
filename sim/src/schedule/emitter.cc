// The emitter (emitter.h): every op of every builder is made here, from its kind's spec, and
// appended once with the current phase, step and micro-step.
#include "schedule/emitter.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace zerosim::schedule {
namespace {}  // namespace

std::string short_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "AR";
    case CollectiveKind::Reduce:
      return "RD";
    case CollectiveKind::Broadcast:
      return "BC";
    case CollectiveKind::AllGather:
      return "AG";
    case CollectiveKind::ReduceScatter:
      return "RS";
  }
  return "?";
}

std::string collective_label(const std::string& what, CollectiveKind k, Elements numel,
                             Elements out_numel, std::uint32_t root) {
  std::string label = what + ": " + short_name(k) + "(";
  if (k == CollectiveKind::Reduce) label += std::to_string(root) + ",";
  label += std::to_string(k == CollectiveKind::AllGather ? out_numel : numel);
  if (k == CollectiveKind::AllGather) label += "," + std::to_string(numel);
  label += ")";
  return label;
}

Emitter::Emitter(Schedule& s, std::uint32_t world) : s_(s) { s_.comms.assign(1, {0, world, 1}); }

std::uint32_t Emitter::list(std::vector<Piece> pieces) {
  if (pieces.empty()) return kNone;
  std::uint64_t h = kHashSeed;
  for (const Piece& p : pieces)
    for (std::uint64_t v : {std::uint64_t{p.buffer}, p.offset, p.length, p.rank_stride, p.block,
                            p.block_stride, p.limit})
      h = hash_mix(h, v);
  for (auto [it, end] = list_index_.equal_range(h); it != end; ++it)
    if (s_.lists[it->second] == pieces) return it->second;
  const auto id = static_cast<std::uint32_t>(s_.lists.size());
  s_.lists.push_back(std::move(pieces));
  list_index_.emplace(h, id);
  return id;
}

std::uint32_t Emitter::flush_plan(FlushPlan f) {
  std::uint64_t h = kHashSeed;
  for (const FlushEntry& e : f.entries)
    h = hash_mix(hash_mix(hash_mix(h, e.tensor), e.buffer), e.offset);
  for (auto [it, end] = flush_plan_index_.equal_range(h); it != end; ++it)
    if (s_.flush_plans[it->second] == f) return it->second;
  const auto id = static_cast<std::uint32_t>(s_.flush_plans.size());
  s_.flush_plans.push_back(std::move(f));
  flush_plan_index_.emplace(h, id);
  return id;
}

std::uint32_t Emitter::grad_pass(GradPass g) {
  s_.grad_passes.push_back(std::move(g));
  return static_cast<std::uint32_t>(s_.grad_passes.size() - 1);
}

Region Emitter::derived(DerivedOperand d) {
  std::uint64_t h = kHashSeed;
  for (std::uint64_t v : {std::uint64_t{static_cast<std::uint8_t>(d.kind)}, std::uint64_t{d.pass},
                          std::uint64_t{d.set}, std::uint64_t{d.flush}, std::uint64_t{d.group},
                          std::uint64_t{d.flat}, std::uint64_t{d.flush_plan}})
    h = hash_mix(h, v);
  for (std::uint32_t b : d.buffers) h = hash_mix(h, b);
  Region r;
  for (auto [it, end] = derived_index_.equal_range(h); it != end; ++it) {
    if (s_.derived[it->second] == d) {
      r.derived = it->second;
      return r;
    }
  }
  r.derived = static_cast<std::uint32_t>(s_.derived.size());
  s_.derived.push_back(std::move(d));
  derived_index_.emplace(h, r.derived);
  return r;
}

std::uint32_t Emitter::comm(CommGroup g) {
  for (std::size_t i = 0; i < s_.comms.size(); ++i)
    if (s_.comms[i] == g) return static_cast<std::uint32_t>(i);
  s_.comms.push_back(g);
  return static_cast<std::uint32_t>(s_.comms.size() - 1);
}

std::uint32_t Emitter::buffer(Buffer b) {
  s_.buffers.push_back(std::move(b));
  return static_cast<std::uint32_t>(s_.buffers.size() - 1);
}

std::uint32_t Emitter::scratch(const std::string& name, Elements numel, DType dt) {
  Buffer b;
  b.name = name;
  b.category = BufferCategory::Temp;
  b.dtype = dt;
  b.numel = numel;
  b.executor_owned = true;
  return buffer(std::move(b));
}

std::uint32_t Emitter::temp(std::string_view name, Elements numel, DType dt, BufferCategory c,
                            std::string_view spec_id) {
  const std::uint64_t h = hash_mix(hash_mix(std::hash<std::string_view>{}(name), numel),
                                   static_cast<std::uint64_t>(dt));
  for (auto [it, end] = temp_index_.equal_range(h); it != end; ++it) {
    const TempKey& k = temp_keys_[it->second];
    if (k.numel == numel && k.dtype == dt && k.name == name) return k.buffer;
  }
  Buffer b;
  b.name =
      std::string(name) + " (" + std::to_string(numel) + " x " + std::string(dtype_name(dt)) + ")";
  b.spec_id = std::string(spec_id);
  b.category = c;
  b.dtype = dt;
  b.numel = numel;
  const std::uint32_t id = buffer(std::move(b));
  temp_index_.emplace(h, static_cast<std::uint32_t>(temp_keys_.size()));
  temp_keys_.push_back({std::string(name), numel, dt, id});
  return id;
}

namespace {
// Asks Linux to back the 2 MiB-aligned interior of a large array with transparent huge pages
// (advice only: nothing changes where THP is off or the call fails). The op vector is most of
// what `zerosim plan` faults in (60 % of the 405B sweep's 11 k page faults, each a kernel entry
// and a zeroed 4 KiB page); with 2 MiB pages a stage 3 program's ~12 MB fault ~8 times instead of
// ~3,000, and the sweep 5.0 k times instead of 11.2 k (README "Benchmarks"; the log:
// docs/benchmarks.md). sim/exec/host_storage.cc declines huge pages for gigabytes of fresh buffers,
// where compaction made their faults cost more; for these few MB per program the sweep's CPU fell
// 15 %.
void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::size_t kHuge = std::size_t{1} << 21;
  const std::size_t lead = (kHuge - reinterpret_cast<std::uintptr_t>(data) % kHuge) % kHuge;
  if (bytes < lead + kHuge) return;
  char* first = static_cast<char*>(data) + lead;
  (void)madvise(first, (bytes - lead) / kHuge * kHuge, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}
}  // namespace

// A capacity hint, nothing else: the program's length is about proportional to tensors x steps x
// micro-steps (Llama-3.1-405B at 1024 ranks, 2 steps: ~21 ops per tensor and step at stage 3, ~22
// with optimizer offload, ~28 with parameter offload, 5-9 at stages 0-2), so that many are
// reserved up front instead of letting ~50,000 Ops (~250 bytes each, with a label and deps to
// move) be moved by every doubling: 4 % of `zerosim plan`'s 405B sweep, and the doubled vector
// (28 MB for stage 3 with parameter offload) a quarter of its page faults. Reserved pages that no
// op reaches are never touched, so the hint errs high. Called after the builder's meta is filled
// (stage, steps, micro-steps).
void Emitter::reserve_ops(std::size_t tensors) {
  const std::size_t per_tensor_step = s_.meta.stage == 3 ? 30 : 10;
  const std::size_t hint = 64 + tensors * per_tensor_step *
                                    std::max<std::size_t>(s_.meta.steps, 1) *
                                    std::max<std::size_t>(s_.meta.grad_accum, 1);
  s_.ops.reserve(std::min<std::size_t>(hint, std::size_t{1} << 22));
  advise_huge_pages(s_.ops.data(), s_.ops.capacity() * sizeof(Op));
}

// The op is made in place at the end of the program and filled there: built on the stack and
// moved in, each op cost one more ~250-byte copy (the Op, its label and deps) and a destruction.
Op& Emitter::start(OpKind kind, Stream st) {
  Op& o = s_.ops.emplace_back();
  o.kind = kind;
  o.stream = st;
  o.phase = phase_;
  o.step = step_;
  o.micro_step = micro_step_;
  return o;
}

std::uint32_t Emitter::finish(Op& o) {
  if (!labels_) std::string().swap(o.label);  // a label built without Emitter::label
  const auto lane = static_cast<std::size_t>(o.stream);
  const auto index = static_cast<std::uint32_t>(s_.ops.size() - 1);
  if (lane < kStreamCount) last_on_[lane] = index;
  return index;
}

std::uint32_t Emitter::alloc(std::uint32_t buf, Stream st, std::uint32_t flush, bool zero_fill) {
  Op& o = start(OpKind::Alloc, st);
  o.buffer = buf;
  o.zero_fill = zero_fill;
  o.bucket = flush;
  return finish(o);
}

std::uint32_t Emitter::adopt(std::uint32_t buf, std::uint32_t flush_plan, Stream st) {
  Op& o = start(OpKind::Alloc, st);
  o.buffer = buf;
  o.slot = s_.buffers[buf].slot;
  if (o.slot == kNone) o.elements = s_.buffers[buf].numel;
  o.src.flush_grads = flush_plan;
  return finish(o);
}

std::uint32_t Emitter::free(std::uint32_t buf, Stream st, std::uint32_t flush) {
  Op& o = start(OpKind::Free, st);
  o.buffer = buf;
  o.bucket = flush;
  return finish(o);
}

std::uint32_t Emitter::marker(std::string label, Stream st, DepList deps) {
  Op& o = start(OpKind::Marker, st);
  o.deps = std::move(deps);
  o.label = std::move(label);
  return finish(o);
}

std::uint32_t Emitter::sync(std::string label) {
  Op& o = start(OpKind::Sync);
  o.label = std::move(label);
  return finish(o);
}

std::uint32_t Emitter::wait_stream(Stream waiter, Stream on) {
  const std::uint32_t last = last_on(on);
  if (last == kNone || waiter == on) return kNone;
  return marker(label("wait ", stream_name(on)), waiter, {last});
}

std::uint32_t Emitter::compute(ComputeSpec c) {
  Op& o = start(c.kind);
  o.layer = c.layer;
  o.flops = c.flops;
  o.label = std::move(c.label);
  return finish(o);
}

std::uint32_t Emitter::grad_ready(GradSpec g) {
  Op& o = start(OpKind::GradReady);
  o.param = g.param;
  o.elements = g.elements;
  o.dtype = g.dtype;
  o.src = g.src;
  o.dst = g.dst;
  o.copy_mode = g.mode;
  o.scale = g.scale;
  o.label = std::move(g.label);
  return finish(o);
}

std::uint32_t Emitter::copy(CopySpec c) {
  Op& o = start(c.kind, c.stream);
  o.elements = c.elements;
  o.slot = c.slot;
  o.dtype = c.dtype;
  o.src = c.src;
  o.dst = c.dst;
  o.copy_mode = c.mode;
  o.scale = c.scale;
  o.param = c.param;
  o.bucket = c.flush;
  o.deps = std::move(c.deps);
  if (c.after) {
    const std::uint32_t last = last_on(*c.after);
    if (last != kNone) o.deps.push_back(last);
  }
  o.label = std::move(c.label);
  return finish(o);
}

std::uint32_t Emitter::grad_stat(GradStatSpec g) {
  Op& o = start(g.kind, g.stream);
  o.dtype = g.dtype;
  o.elements = g.elements;
  o.src = g.src;
  o.dst = g.dst;
  o.copy_mode = g.mode;
  o.label = std::move(g.label);
  return finish(o);
}

std::uint32_t Emitter::collective(CollectiveSpec c) {
  Op& o = start(OpKind::Collective, c.stream);
  o.collective = c.kind;
  o.numel = c.numel;
  o.out_numel = c.out_numel;
  o.dtype = c.dtype;
  o.reduce_op = c.op;
  o.root = c.root;
  o.comm = c.comm;
  o.bucket = c.flush;
  o.src = c.src;
  o.dst = c.dst;
  o.scale = c.scale;
  o.deps = std::move(c.deps);
  o.label = std::move(c.label);
  return finish(o);
}

std::uint32_t Emitter::optimizer_step(UpdateSpec u) {
  Op& o = start(OpKind::OptimizerStep, u.stream);
  o.elements = u.elements;
  o.dtype = u.dtype;
  if (!(u.call == UpdateCall{})) {  // interned: every step repeating a call shares it
    const auto it = std::find(s_.updates.begin(), s_.updates.end(), u.call);
    o.update = static_cast<std::uint32_t>(it - s_.updates.begin());
    if (it == s_.updates.end()) s_.updates.push_back(u.call);
  }
  o.deps = std::move(u.deps);
  o.label = std::move(u.label);
  return finish(o);
}

}  // namespace zerosim::schedule
