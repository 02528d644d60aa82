// lower_schedule (schedule_graph.h): one pass over roles, buffers and ops that checks every rule of
// the IR and lays out the graph. Messages are built only on the error path (the engine lowers the
// 16k ops of a Llama-2-70B step inside its benchmark budget).
#include "zerosim/schedule_graph.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "zerosim/units.h"

namespace zerosim {
namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

// "expected a buffer index 0..4, got 9", or with nothing to index "expected no buffer index (the
// schedule has no buffers), got 9".
std::string index_problem(const char* what, std::uint64_t value, std::uint64_t count,
                          const char* empty) {
  if (count == 0)
    return std::string("expected no ") + what + " index (" + empty + "), got " + str(value);
  return std::string("expected a ") + what + " index 0.." + str(count - 1) + ", got " + str(value);
}

class Lowering {
 public:
  Lowering(const Schedule& s, const std::string& source, LayoutCheck layout)
      : s_(s), src_(source), layout_(layout) {}

  Result<ScheduleGraph> run();

 private:
  void error(const std::string& pointer, const std::string& message) {
    d_.error(src_, pointer, message);
  }
  static std::string op_ptr(std::size_t i, const char* key = "") { return "/ops/" + str(i) + key; }
  void check_meta();
  void check_roles();
  void check_role_cover();
  void check_buffers();
  void check_comms();
  void check_tensors();
  void check_layout();
  void check_op(const Op& op, std::uint32_t i);
  void check_collective(const Op& op, std::uint32_t i);
  void track_lifetime(const Op& op, std::uint32_t i);
  void check_lifetimes_at_end();

  const Schedule& s_;
  const std::string& src_;
  LayoutCheck layout_;
  Diagnostics d_;
  ScheduleGraph g_;
  std::vector<std::uint32_t> live_since_;  // per buffer: op of its live Alloc, or kNone
  bool comms_ok_ = true;                   // communicator problems are reported once, at /comms
};

void Lowering::check_meta() {
  if (s_.meta.world == 0) error("/meta/world", "expected a world size of at least 1, got 0");
  if (s_.meta.steps == 0) error("/meta/steps", "expected at least 1 step, got 0");
  if (s_.meta.grad_accum == 0) error("/meta/grad_accum", "expected at least 1 micro-step, got 0");
}

void Lowering::check_roles() {
  const std::size_t n_slots = s_.meta.slot_names.size();
  if (s_.roles.empty()) error("/roles", "expected at least one rank role, got none");
  bool ranges_ok = true;
  for (std::size_t r = 0; r < s_.roles.size(); ++r) {
    const RankRole& role = s_.roles[r];
    const auto ptr = [r] { return "/roles/" + str(r); };  // built on the error path only
    if (role.slots.size() != n_slots)
      error(ptr() + "/slots", "expected " + str(n_slots) +
                                  " slot values (one per meta slot_names entry), got " +
                                  str(role.slots.size()));
    if (role.ranks.empty()) error(ptr() + "/ranks", "expected at least one rank range, got none");
    for (std::size_t i = 0; i < role.ranks.size(); ++i) {
      const auto& [first, last] = role.ranks[i];
      if (first > last) {
        error(ptr() + "/ranks/" + str(i),
              "expected first <= last, got [" + str(first) + ", " + str(last) + "]");
        ranges_ok = false;
      } else if (i > 0 && role.ranks[i - 1].second >= first) {
        error(ptr() + "/ranks/" + str(i), "expected ranges sorted and disjoint");
        ranges_ok = false;
      }
    }
    if (!role.ranks.empty() && role.representative != role.ranks.front().first)
      error(ptr() + "/representative", "expected the role's first rank " +
                                           str(role.ranks.front().first) + ", got " +
                                           str(role.representative));
  }
  if (ranges_ok && s_.meta.world != 0) check_role_cover();
  if (!d_.has_errors()) {  // the timing role: every role has one value per slot now
    g_.max_slots.assign(n_slots, 0);
    for (const RankRole& role : s_.roles)
      for (std::size_t k = 0; k < n_slots; ++k)
        g_.max_slots[k] = std::max(g_.max_slots[k], role.slots[k]);
  }
}

// Rank ranges of all roles, sorted, must tile 0..world-1: a gap is a rank in no role, an overlap a
// rank in two. Reported as ranges, so a bad 10,000-rank file gives a few lines, not 10,000.
void Lowering::check_role_cover() {
  struct Range {
    std::uint32_t first, last, role;
  };
  std::vector<Range> all;
  for (std::uint32_t i = 0; i < s_.roles.size(); ++i)
    for (const auto& [f, l] : s_.roles[i].ranks) all.push_back({f, l, i});
  std::sort(all.begin(), all.end(), [](const Range& a, const Range& b) {
    return a.first != b.first ? a.first < b.first : a.role < b.role;
  });
  const auto span = [](std::uint64_t a, std::uint64_t b) {
    return a == b ? "rank " + str(a) : "ranks " + str(a) + ".." + str(b);
  };
  const std::uint64_t world = s_.meta.world;
  std::uint64_t next = 0;  // first rank not yet covered
  std::uint32_t prev_role = 0;
  for (const Range& r : all) {
    if (r.first >= world) {
      error("/roles/" + str(r.role) + "/ranks",
            "expected ranks below the world size " + str(world) + ", got " + str(r.first));
      return;
    }
    if (r.first > next)
      error("/roles", "expected every rank 0.." + str(world - 1) + " in exactly one role, got " +
                          span(next, r.first - 1) + " in no role");
    else if (r.first < next)
      error("/roles", "expected every rank in exactly one role, got " +
                          span(r.first, std::min<std::uint64_t>(r.last, next - 1)) + " in roles " +
                          str(prev_role) + " and " + str(r.role));
    if (r.last + std::uint64_t{1} > next) {
      next = r.last + std::uint64_t{1};
      prev_role = r.role;
    }
  }
  if (next < world)
    error("/roles", "expected every rank 0.." + str(world - 1) + " in exactly one role, got " +
                        span(next, world - 1) + " in no role");
  else if (next > world)
    error("/roles", "expected ranks below the world size " + str(world) + ", got ranks up to " +
                        str(next - 1));
}

// Slot indices in range, and sizes the ledger can add up: the largest role's bytes per buffer
// (every role's sizes are at most the timing role's) sum to at most 2^64 - 1.
void Lowering::check_buffers() {
  const std::size_t n_slots = s_.meta.slot_names.size();
  bool overflow = false;
  Bytes total = 0;
  for (std::size_t b = 0; b < s_.buffers.size(); ++b) {
    const Buffer& buf = s_.buffers[b];
    if (buf.slot != kNone && buf.slot >= n_slots) {
      error("/buffers/" + str(b) + "/slot",
            index_problem("slot", buf.slot, n_slots, "meta slot_names is empty"));
      continue;
    }
    if (buf.slot != kNone && g_.max_slots.size() != n_slots) continue;  // roles already reported
    const Elements numel = buf.slot == kNone ? buf.numel : g_.max_slots[buf.slot];
    Bytes bytes = 0;
    overflow = overflow || __builtin_mul_overflow(numel, Bytes{dtype_size(buf.dtype)}, &bytes) ||
               __builtin_add_overflow(total, bytes, &total);
  }
  if (overflow)
    error("/buffers", "expected buffer sizes whose sum fits in 64 bits, got an overflow");
}

// Communicators: comms[0] is the data-parallel world; each one's groups of `size` ranks, `stride`
// apart, tile ranks first..world-1 (so size·stride divides world - first).
void Lowering::check_comms() {
  const std::uint64_t world = s_.meta.world;
  const std::size_t before = d_.items().size();
  if (s_.comms.empty()) {
    comms_ok_ = false;
    error("/comms", "expected at least the data-parallel world {\"size\": " + str(world) +
                        "} as communicator 0, got none");
    return;
  }
  const CommGroup& w = s_.comms.front();
  if (w.first != 0 || w.size != world || w.stride != 1)
    error("/comms/0", "expected the data-parallel world {first 0, size " + str(world) +
                          ", stride 1}, got {first " + str(w.first) + ", size " + str(w.size) +
                          ", stride " + str(w.stride) + "}");
  for (std::size_t c = 1; c < s_.comms.size(); ++c) {
    const CommGroup& g = s_.comms[c];
    const std::string ptr = "/comms/" + str(c);
    if (g.size == 0 || g.stride == 0) {
      error(ptr, "expected a size and a stride of at least 1, got size " + str(g.size) +
                     ", stride " + str(g.stride));
      continue;
    }
    const std::uint64_t block = std::uint64_t{g.size} * g.stride;
    if (g.first >= world)
      error(ptr + "/first",
            "expected a first rank below the world size " + str(world) + ", got " + str(g.first));
    else if ((world - g.first) % block != 0)
      error(ptr, "expected size x stride (" + str(block) + ") to divide the " +
                     str(world - g.first) + " ranks " + str(g.first) + ".." + str(world - 1) +
                     " its groups tile, got a remainder of " + str((world - g.first) % block));
  }
  comms_ok_ = comms_ok_ && d_.items().size() == before;
}

// Tensor references: a gradient buffer, a param group, a sub-group.
void Lowering::check_tensors() {
  const Layout& l = s_.layout;
  for (std::size_t t = 0; t < s_.tensors.size(); ++t) {
    const TensorInfo& ti = s_.tensors[t];
    const auto ptr = [t] { return "/tensors/" + str(t); };  // built on the error path only
    if (ti.grad != kNone && ti.grad >= s_.buffers.size())
      error(ptr() + "/grad",
            index_problem("buffer", ti.grad, s_.buffers.size(), "the schedule has no buffers"));
    if (ti.group != kNone && ti.group >= l.groups.size())
      error(ptr() + "/group",
            index_problem("param group", ti.group, l.groups.size(), "the layout has no groups"));
    if (ti.sub_group != kNone && ti.sub_group >= l.sub_groups.size())
      error(ptr() + "/sub_group", index_problem("sub-group", ti.sub_group, l.sub_groups.size(),
                                                "the layout has no sub-groups"));
  }
  for (std::size_t g = 0; g < l.groups.size(); ++g)
    for (std::size_t k = 0; k < l.groups[g].params.size(); ++k)
      if (l.groups[g].params[k] >= s_.tensors.size())
        error("/layout/groups/" + str(g) + "/params/" + str(k),
              index_problem("tensor", l.groups[g].params[k], s_.tensors.size(),
                            "the schedule has no tensors"));
}

// The recorded layout must be what plan_partition gives for the tensor table and the layout's
// options (the builder's own plan): the first difference is reported, the rest would echo it.
void Lowering::check_layout() {
  const Layout& l = s_.layout;
  if (l.world != s_.meta.world)
    error("/layout/world",
          "expected the world size " + str(s_.meta.world) + " (meta), got " + str(l.world));
  if (l.stage != s_.meta.stage)
    error("/layout/stage", "expected stage " + str(static_cast<std::uint64_t>(s_.meta.stage)) +
                               " (meta), got " + str(static_cast<std::uint64_t>(l.stage)));
  if (d_.has_errors()) return;
  auto planned = plan_of(s_);
  if (!planned.ok()) {
    for (const Diagnostic& x : planned.diagnostics().items())
      if (x.severity == Severity::Error) error("/layout", x.message);
    return;
  }
  const PartitionPlan& p = planned.value();
  const std::string why = " (plan_partition of the tensor table and the layout options)";
  auto differs = [&](const std::string& ptr, auto expected, auto got) {
    if (expected == got) return false;
    error(ptr, "expected " + str(expected) + why + ", got " + str(got));
    return true;
  };
  auto differs_list = [&](const std::string& ptr, const std::vector<std::uint32_t>& expected,
                          const std::vector<std::uint32_t>& got) {
    if (expected == got) return false;
    std::size_t k = 0;
    while (k < expected.size() && k < got.size() && expected[k] == got[k]) ++k;
    if (k < expected.size() && k < got.size())
      error(ptr + "/" + str(k), "expected " + str(expected[k]) + why + ", got " + str(got[k]));
    else
      error(ptr,
            "expected " + str(expected.size()) + " entries" + why + ", got " + str(got.size()));
    return true;
  };
  const std::size_t n_groups = p.stage == 3 ? l.groups.size() : p.groups.size();
  if (differs("/layout/groups", std::uint64_t{n_groups}, std::uint64_t{l.groups.size()})) return;
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    const FlatGroup& fg = p.groups[g];
    const GroupLayout& gl = l.groups[g];
    const std::string ptr = "/layout/groups/" + str(g);
    if (differs_list(ptr + "/flat_order", fg.flat_order, gl.flat_order) ||
        differs(ptr + "/numel", fg.numel, gl.numel) ||
        differs(ptr + "/padding", fg.padding, gl.padding) ||
        differs(ptr + "/aligned", fg.aligned, gl.aligned) ||
        differs(ptr + "/partition", fg.partition, gl.partition))
      return;
  }
  if (differs("/layout/sub_groups", std::uint64_t{p.sub_groups.size()},
              std::uint64_t{l.sub_groups.size()}))
    return;
  for (std::size_t i = 0; i < p.sub_groups.size(); ++i) {
    const std::string ptr = "/layout/sub_groups/" + str(i);
    if (differs(ptr + "/group", p.sub_groups[i].group, l.sub_groups[i].group) ||
        differs_list(ptr + "/params", p.sub_groups[i].params, l.sub_groups[i].params) ||
        differs(ptr + "/partition_numel", p.sub_groups[i].partition_numel,
                l.sub_groups[i].partition_numel))
      return;
  }
  std::vector<std::uint32_t> sub_group_of(s_.tensors.size(), kNone);
  for (std::uint32_t i = 0; i < p.sub_groups.size(); ++i)
    for (std::uint32_t t : p.sub_groups[i].params) sub_group_of[t] = i;
  for (std::uint32_t t = 0; t < s_.tensors.size(); ++t) {
    const TensorInfo& ti = s_.tensors[t];
    const std::string ptr = "/tensors/" + str(t);
    const std::uint32_t group =
        p.param_group[t] == PartitionPlan::kNoGroup ? kNone : p.param_group[t];
    const Elements flat =
        p.stage == 3 || group == kNone ? 0 : p.groups[group].flat_offset[p.flat_index[t]];
    const bool persistent = p.stage == 3 && p.s3[t].persistent;
    if (differs(ptr + "/group", group, ti.group) || differs(ptr + "/flat", flat, ti.flat_offset) ||
        differs(ptr + "/sub_group", sub_group_of[t], ti.sub_group) ||
        differs(ptr + "/persistent", std::uint64_t{persistent}, std::uint64_t{ti.persistent}))
      return;
  }
}

void Lowering::check_collective(const Op& op, std::uint32_t i) {
  const bool known = op.comm < s_.comms.size() && comms_ok_;
  if (comms_ok_ && !known)
    error(op_ptr(i, "/comm"),
          index_problem("communicator", op.comm, s_.comms.size(), "the schedule has no comms"));
  const std::uint32_t size = known ? s_.comms[op.comm].size : 0;
  const std::string name(collective_name(op.collective));
  const bool reduces = op.collective == CollectiveKind::AllReduce ||
                       op.collective == CollectiveKind::Reduce ||
                       op.collective == CollectiveKind::ReduceScatter;
  // A value a file omits is its default (schedule_io.h): a missing one is named at the op.
  if (reduces && op.reduce_op == ReduceOp::None)
    error(op_ptr(i), "expected \"reduce_op\" (\"sum\" or \"max\") for " + name + ", got none");
  if (!reduces && op.reduce_op != ReduceOp::None)
    error(op_ptr(i, "/reduce_op"), "expected no reduce_op for " + name + ", got \"" +
                                       std::string(reduce_op_name(op.reduce_op)) + "\"");
  const bool rooted =
      op.collective == CollectiveKind::Reduce || op.collective == CollectiveKind::Broadcast;
  if (rooted && op.root == kNone && comms_ok_)
    error(op_ptr(i), "expected \"root\" (an index in communicator " + str(op.comm) + ") for " +
                         name + ", got none");
  else if (rooted && known && op.root >= size)
    error(op_ptr(i, "/root"), "expected a root index 0.." + str(size == 0 ? 0 : size - 1) +
                                  " (communicator " + str(op.comm) + " has groups of " + str(size) +
                                  " ranks) for " + name + ", got " + str(op.root));
  if (!rooted && op.root != kNone)
    error(op_ptr(i, "/root"), "expected no root for " + name + ", got " + str(op.root));
}

// The slow path: op i broke a rule; say which.
void Lowering::check_op(const Op& op, std::uint32_t i) {
  const bool needs_buffer = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
  if (needs_buffer && op.buffer == kNone)
    error(op_ptr(i), "expected a \"buffer\" index for a " + std::string(op_kind_name(op.kind)) +
                         " op, got none");
  else if (op.buffer != kNone && op.buffer >= s_.buffers.size())
    error(op_ptr(i, "/buffer"),
          index_problem("buffer", op.buffer, s_.buffers.size(), "the schedule has no buffers"));
  const std::size_t n_slots = s_.meta.slot_names.size();
  if (op.slot != kNone && op.slot >= n_slots)
    error(op_ptr(i, "/slot"), index_problem("slot", op.slot, n_slots, "meta slot_names is empty"));
  if (static_cast<std::size_t>(op.stream) >= kStreamCount)
    error(op_ptr(i, "/stream"), "expected a stream, got an out-of-range value");
  for (std::size_t k = 0; k < op.deps.size(); ++k)
    if (op.deps[k] >= i)
      error(op_ptr(i, "/deps/") + str(k),
            i == 0 ? "expected no deps (op 0 is the first op), got " + str(op.deps[k])
                   : "expected an earlier op index 0.." + str(i - 1) + ", got " + str(op.deps[k]));
  if (op.step >= s_.meta.steps)
    error(op_ptr(i, "/step"),
          "expected a step below " + str(s_.meta.steps) + ", got " + str(op.step));
  if (op.micro_step >= s_.meta.grad_accum)
    error(op_ptr(i, "/micro_step"),
          "expected a micro-step below " + str(s_.meta.grad_accum) + ", got " + str(op.micro_step));
  if (op.kind == OpKind::Collective) check_collective(op, i);
}

// Alloc/Free pairing in program order: no double Alloc, no Free of a dead buffer.
void Lowering::track_lifetime(const Op& op, std::uint32_t i) {
  std::uint32_t& since = live_since_[op.buffer];
  if (op.kind == OpKind::Alloc) {
    if (since != kNone)
      error(op_ptr(i), "expected buffer " + quote(s_.buffers[op.buffer].name) +
                           " to be free before its Alloc, got it live since op " + str(since));
    since = i;
  } else {
    if (since == kNone)
      error(op_ptr(i), "expected buffer " + quote(s_.buffers[op.buffer].name) +
                           " to be live before its Free, got it free");
    since = kNone;
  }
}

void Lowering::check_lifetimes_at_end() {
  for (std::size_t b = 0; b < s_.buffers.size(); ++b)
    if (live_since_[b] != kNone && !s_.buffers[b].persistent)
      error("/buffers/" + str(b), "expected buffer " + quote(s_.buffers[b].name) +
                                      " (allocated at op " + str(live_since_[b]) +
                                      ") to be freed or marked persistent, got it live at the end");
}

Result<ScheduleGraph> Lowering::run() {
  check_meta();
  if (d_.has_errors()) return d_;
  check_roles();
  check_buffers();
  check_comms();
  check_tensors();
  if (layout_ == LayoutCheck::Replan && !s_.tensors.empty() && !d_.has_errors()) check_layout();
  const auto n = static_cast<std::uint32_t>(s_.ops.size());
  const std::size_t n_buffers = s_.buffers.size(), n_slots = s_.meta.slot_names.size();
  g_.op_count = n;
  g_.dep_offsets.reserve(std::size_t{n} + 1);
  g_.deps.reserve(n);
  g_.gate.reserve(n);
  g_.prev_call.assign(n, kNone);
  g_.memory_ops.reserve(n / 2);
  live_since_.assign(n_buffers, kNone);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> last_call;  // (communicator, latest op)
  std::uint32_t last_sync = kNone;
  bool op_errors = false;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Op& op = s_.ops[i];
    g_.dep_offsets.push_back(static_cast<std::uint32_t>(g_.deps.size()));
    g_.gate.push_back(last_sync);
    // The fast path checks everything check_op does, without building a string.
    const bool memory = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
    bool ok = (memory ? op.buffer < n_buffers : op.buffer == kNone || op.buffer < n_buffers) &&
              (op.slot == kNone || op.slot < n_slots) &&
              static_cast<std::size_t>(op.stream) < kStreamCount && op.step < s_.meta.steps &&
              op.micro_step < s_.meta.grad_accum;
    for (std::uint32_t dep : op.deps) ok = ok && dep < i;
    if (ok && op.kind == OpKind::Collective) {
      const bool reduces = op.collective == CollectiveKind::AllReduce ||
                           op.collective == CollectiveKind::Reduce ||
                           op.collective == CollectiveKind::ReduceScatter;
      const bool rooted =
          op.collective == CollectiveKind::Reduce || op.collective == CollectiveKind::Broadcast;
      ok = op.comm < s_.comms.size() && reduces == (op.reduce_op != ReduceOp::None) &&
           (rooted ? op.root < s_.comms[op.comm].size : op.root == kNone);
    }
    if (!ok) {
      check_op(op, i);
      op_errors = true;  // lifetimes after a broken op would only echo it
      continue;
    }
    g_.deps.insert(g_.deps.end(), op.deps.begin(), op.deps.end());
    g_.lanes[static_cast<std::size_t>(op.stream)].push_back(i);
    if (op.kind == OpKind::Sync) last_sync = i;
    if (memory) {
      g_.memory_ops.push_back(i);
      if (!op_errors) track_lifetime(op, i);
    }
    if (op.kind == OpKind::Collective) {
      g_.collectives.push_back(i);
      const std::uint32_t comm = communicator_of(op);
      auto it = std::find_if(last_call.begin(), last_call.end(),
                             [comm](const auto& c) { return c.first == comm; });
      if (it == last_call.end())
        last_call.emplace_back(comm, i);
      else
        g_.prev_call[i] = std::exchange(it->second, i);
    }
  }
  g_.dep_offsets.push_back(static_cast<std::uint32_t>(g_.deps.size()));
  if (!op_errors) check_lifetimes_at_end();
  if (d_.has_errors()) return d_;
  return std::move(g_);
}

template <class T>
std::size_t vec_bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

std::uint32_t communicator_of(const Op& op) { return op.comm; }

std::size_t ScheduleGraph::footprint_bytes() const {
  std::size_t n = sizeof(*this) + vec_bytes(dep_offsets) + vec_bytes(deps) + vec_bytes(gate) +
                  vec_bytes(prev_call) + vec_bytes(memory_ops) + vec_bytes(collectives) +
                  vec_bytes(max_slots);
  for (const auto& lane : lanes) n += vec_bytes(lane);
  return n;
}

Result<ScheduleGraph> lower_schedule(const Schedule& s, const std::string& source,
                                     LayoutCheck layout) {
  return Lowering(s, source, layout).run();
}

}  // namespace zerosim
