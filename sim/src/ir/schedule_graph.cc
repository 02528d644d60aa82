// lower_schedule (schedule_graph.h): one pass over roles, buffers and ops that checks every rule of
// the IR and lays out the graph. Messages are built only on the error path (the engine lowers the
// 16k ops of a Llama-2-70B step inside its benchmark budget).
#include "zerosim/schedule_graph.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
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
  const bool vowel = std::string_view("aeiou").find(what[0]) != std::string_view::npos;
  return std::string(vowel ? "expected an " : "expected a ") + what + " index 0.." +
         str(count - 1) + ", got " + str(value);
}

// Copy, CopyToBucket, WriteBack, HostToDevice, DeviceToHost: the kinds that move a src stream
// into a dst (schedule.h Op::src).
bool copy_like(OpKind k) {
  return k == OpKind::Copy || k == OpKind::CopyToBucket || k == OpKind::WriteBack ||
         k == OpKind::HostToDevice || k == OpKind::DeviceToHost;
}
// GradNorm, GradOverflow: a statistic of the src stream into one scratch element (dst).
bool grad_stat(OpKind k) { return k == OpKind::GradNorm || k == OpKind::GradOverflow; }
// Add: dst accumulates (a copy's stream, autograd's gradient, a statistic over several groups).
bool may_add(OpKind k) { return copy_like(k) || k == OpKind::GradReady || grad_stat(k); }
// A scale multiplies what lands in dst: a copy's stream, the gradient autograd writes (of the
// loss the engine divided by the accumulation steps), or a sum reduction's result (a max, a
// broadcast or a gather has no DeepSpeed site that scales it).
bool may_scale(const Op& op) {
  return copy_like(op.kind) || op.kind == OpKind::GradReady ||
         (op.kind == OpKind::Collective && op.reduce_op == ReduceOp::Sum &&
          (op.collective == CollectiveKind::AllReduce || op.collective == CollectiveKind::Reduce ||
           op.collective == CollectiveKind::ReduceScatter));
}
// copy_mode, scale and zero_fill on the kinds that carry them (the fast path's test). Almost every
// op has none of them (assign, scale 1, no zero fill): that case is one test per field, inline;
// the per-kind rules run out of line for the rest.
[[gnu::noinline]] bool data_fields_ok_slow(const Op& op) {
  const bool mode_ok =
      op.copy_mode == CopyMode::Assign || (op.copy_mode == CopyMode::Add && may_add(op.kind));
  const bool scale_ok = op.scale == 1.0 || (may_scale(op) && op.scale > 0 &&
                                            op.scale <= std::numeric_limits<double>::max());
  return mode_ok && scale_ok && (!op.zero_fill || op.kind == OpKind::Alloc);
}
inline bool data_fields_ok(const Op& op) {
  if (op.copy_mode == CopyMode::Assign && op.scale == 1.0 && !op.zero_fill) return true;
  return data_fields_ok_slow(op);
}

// An executor-owned buffer in Lowering::live_since_. Op indices stay below it: a program of 2^32
// ops would be a terabyte of Ops.
constexpr std::uint32_t kExecutorOwned = kNone - 1;
// How far ahead the op loop asks for an op's cache lines, and half as far for its deps' (a heap
// array apiece): Llama-2-70B stage 3's 16k ops are 3.9 MB, streamed from memory on every call.
constexpr std::uint32_t kPrefetchOps = 16;

class Lowering {
 public:
  // `storage`: a graph whose vectors' storage the lowering reuses (emptied first).
  Lowering(const Schedule& s, ScheduleGraph&& storage, const std::string& source,
           LayoutCheck layout)
      : s_(s), src_(source), layout_(layout), g_(std::move(storage)) {}

  Diagnostics run();
  /// The graph (after run()).
  ScheduleGraph take() { return std::move(g_); }

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
  void check_data_fields(const Op& op, std::uint32_t i);
  /// What a region's length 0 stands for: a collective's input or output count, the op's extent,
  /// or nothing (scalar scratch: the length is explicit).
  enum class Side : std::uint8_t { Src, Dst, Scalar };
  void check_region(const Op& op, const std::string& ptr, const Region& r, Side side);
  void check_update(const Op& op, std::uint32_t u);
  void check_stat_dst(const Op& op, const std::string& ptr);
  void check_lists();
  bool piece_shape_ok(const Piece& p, const std::string& ptr);
  void check_flush_plans();
  void check_flush_region(const Op& op, const std::string& ptr, const Region& r);
  void check_list_region(const Op& op, const std::string& ptr, const Region& r, Side side);
  void check_derived_table();
  void check_derived_region(const Op& op, const std::string& ptr, const Region& r);
  /// Per grad pass and role: each flush's touching total for the role's representative.
  const std::vector<Elements>& pass_touching(std::uint32_t pass, std::uint32_t role);
  void track_lifetime(const Op& op, std::uint32_t i);
  void check_adopt(const Op& op, std::uint32_t i);
  [[gnu::noinline]] void lifetime_error(const Op& op, std::uint32_t i, std::uint32_t since);
  void check_lifetimes_at_end();

  const Schedule& s_;
  const std::string& src_;
  LayoutCheck layout_;
  Diagnostics d_;
  ScheduleGraph g_;  // a member, not a reference: the loop keeps its vectors in registers
  // Per buffer: the op of its live Alloc, kNone (not live) or kExecutorOwned (no Alloc/Free may
  // name it). One array answers both per-op questions: the Buffer (88 bytes, at a random index)
  // was a cache miss of its own for every Alloc and Free, a tenth of the lowering.
  std::vector<std::uint32_t> live_since_;
  std::vector<std::uint32_t> freed_run_;  // buffers the Free ops right before this op released
  bool comms_ok_ = true;                  // communicator problems are reported once, at /comms
  bool layout_ok_ = true;  // layout-derived operands are checked only against a sound layout
  // (flush plan, slot) pairs already checked: the micro-steps repeating a flush cost nothing more.
  std::set<std::pair<std::uint32_t, std::uint32_t>> flush_checked_;
  // (derived operand, slot) pairs already checked, and the derived table's soundness.
  std::set<std::tuple<std::uint32_t, std::uint32_t, Elements>> derived_checked_;
  bool derived_ok_ = true;
  std::vector<std::vector<std::vector<Elements>>> pass_touching_;  // [pass][role][flush]
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
    Elements* max = g_.max_slots.data();
    for (const RankRole& role : s_.roles)  // most values are 0 (a flush touches a few ranks)
      for (const SlotValues::Entry& e : role.slots.nonzero())
        if (e.value > max[e.slot]) max[e.slot] = e.value;
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

// An operand lies inside its buffer for every rank (start is monotone in the rank index, so the
// last index of the communicator bounds it) and every role (sizes from slots differ per role);
// an explicit length equals the op's extent, the count the simulator costs.
// Every piece of every list lies inside its buffer for every role (kNone: zeros / dropped).
void Lowering::check_lists() {
  for (std::size_t k = 0; k < s_.lists.size(); ++k)
    for (std::size_t j = 0; j < s_.lists[k].size(); ++j) {
      const Piece& p = s_.lists[k][j];
      const std::string ptr = "/lists/" + str(k) + "/" + str(j);
      if (p.buffer == kNone) continue;
      if (p.buffer >= s_.buffers.size()) {
        error(ptr + "/buffer",
              index_problem("buffer", p.buffer, s_.buffers.size(), "the schedule has no buffers"));
        continue;
      }
      if (!piece_shape_ok(p, ptr)) continue;
      // The last position the piece reaches for the world's last rank index (start is monotone
      // in the index; every communicator's groups are at most the world), cut at its limit.
      const std::uint64_t last_index = p.rank_stride == 0 ? 0 : s_.meta.world - 1;
      Elements start = 0, end = 0;
      bool overflow = __builtin_mul_overflow(p.rank_stride, last_index, &start) ||
                      __builtin_add_overflow(start, p.offset, &start);
      if (p.block == 0) {
        overflow = overflow || __builtin_add_overflow(start, p.length, &end);
      } else if (p.length > 0) {
        const Elements runs = (p.length - 1) / p.block;  // full strides before the last run
        Elements skip = 0;
        overflow = overflow || __builtin_mul_overflow(runs, p.block_stride, &skip) ||
                   __builtin_add_overflow(start, skip, &end) ||
                   __builtin_add_overflow(end, p.length - runs * p.block, &end);
      } else {
        end = start;
      }
      const Elements reach = overflow ? kNoLimit : std::min(end, p.limit);
      const bool per_role = s_.buffers[p.buffer].slot != kNone;
      for (std::size_t role = 0; role < (per_role ? s_.roles.size() : 1); ++role) {
        const Elements numel = s_.buffer_numel(p.buffer, static_cast<std::uint32_t>(role));
        if (overflow || reach > numel) {
          error(ptr, "expected a piece inside buffer " + quote(s_.buffers[p.buffer].name) + " (" +
                         str(numel) + " elements" +
                         (per_role ? " for role " + str(role) : std::string()) +
                         "), got elements [" + (overflow ? std::string("overflow") : str(start)) +
                         ", " + (overflow ? std::string("overflow") : str(reach)) + ")" +
                         (last_index != 0 ? " at rank index " + str(last_index) : ""));
          break;
        }
      }
    }
}

// A strided piece's runs do not overlap (block <= block_stride); block_stride only with a block.
bool Lowering::piece_shape_ok(const Piece& p, const std::string& ptr) {
  if (p.block == 0 && p.block_stride != 0) {
    error(ptr + "/block_stride",
          "expected no block_stride without a block, got " + str(p.block_stride));
    return false;
  }
  if (p.block != 0 && p.block_stride < p.block) {
    error(ptr + "/block_stride", "expected a block_stride of at least the block " + str(p.block) +
                                     " (runs must not overlap), got " + str(p.block_stride));
    return false;
  }
  return true;
}

// Every planned flush names known tensors, each inside the buffer it is reduced from.
void Lowering::check_flush_plans() {
  for (std::size_t f = 0; f < s_.flush_plans.size(); ++f)
    for (std::size_t j = 0; j < s_.flush_plans[f].entries.size(); ++j) {
      const FlushEntry& e = s_.flush_plans[f].entries[j];
      const std::string ptr = "/flush_plans/" + str(f) + "/" + str(j);
      if (e.tensor >= s_.tensors.size()) {
        error(ptr,
              index_problem("tensor", e.tensor, s_.tensors.size(), "the schedule has no tensors"));
        continue;
      }
      if (e.buffer >= s_.buffers.size()) {
        error(ptr,
              index_problem("buffer", e.buffer, s_.buffers.size(), "the schedule has no buffers"));
        continue;
      }
      const Elements numel = s_.buffers[e.buffer].slot == kNone ? s_.buffers[e.buffer].numel : 0;
      Elements end = 0;
      if (s_.buffers[e.buffer].slot == kNone &&
          (__builtin_add_overflow(e.offset, s_.tensors[e.tensor].numel, &end) || end > numel))
        error(ptr, "expected tensor " + str(e.tensor) + " inside buffer " +
                       quote(s_.buffers[e.buffer].name) + " (" + str(numel) +
                       " elements), got elements [" + str(e.offset) + ", " + str(end) + ")");
    }
}

// A flush's touching gradients: per role (its representative rank) they total the op's extent,
// which cross-checks the builder's Touching slots against the recorded layout.
void Lowering::check_flush_region(const Op& op, const std::string& ptr, const Region& r) {
  if (r.flush_grads >= s_.flush_plans.size()) {
    error(ptr + "/flush_grads", index_problem("flush plan", r.flush_grads, s_.flush_plans.size(),
                                              "the schedule has no flush plans"));
    return;
  }
  if (op.kind == OpKind::Collective || op.kind == OpKind::GradReady) {
    error(ptr, "expected a copy-like op for a flush's gradients, got a " +
                   std::string(op_kind_name(op.kind)) + " op");
    return;
  }
  if (op.slot != kNone && !flush_checked_.emplace(r.flush_grads, op.slot).second) return;
  for (std::size_t role = 0; role < s_.roles.size(); ++role) {
    const std::uint32_t rank = s_.roles[role].representative;
    Elements total = 0;
    for (const FlushEntry& e : s_.flush_plans[r.flush_grads].entries)
      if (touches_partition(s_, e.tensor, rank)) total += s_.tensors[e.tensor].numel;
    const Elements extent = s_.op_elements(op, static_cast<std::uint32_t>(role));
    if (total != extent) {
      error(ptr, "expected flush plan " + str(r.flush_grads) + "'s gradients touching rank " +
                     str(rank) + "'s partition (role " + str(role) + ") to total the op's extent " +
                     str(extent) + ", got " + str(total));
      return;
    }
  }
}

// A list operand: a known list whose pieces add up to the op's extent.
void Lowering::check_list_region(const Op& op, const std::string& ptr, const Region& r, Side side) {
  if (r.list >= s_.lists.size()) {
    error(ptr + "/list",
          index_problem("list", r.list, s_.lists.size(), "the schedule has no lists"));
    return;
  }
  const bool collective = op.kind == OpKind::Collective;
  if (side == Side::Scalar || (!collective && op.kind == OpKind::GradReady)) return;
  Elements total = 0;
  for (const Piece& p : s_.lists[r.list]) total += p.length;
  const bool per_role = !collective && op.slot != kNone;
  for (std::size_t role = 0; role < (per_role ? s_.roles.size() : 1); ++role) {
    const auto k = static_cast<std::uint32_t>(role);
    const Elements extent =
        collective ? (side == Side::Src ? op.numel : op.out_numel) : s_.op_elements(op, k);
    if (total != extent) {
      error(ptr, "expected list " + str(r.list) + "'s pieces to total the op's extent " +
                     str(extent) + (per_role ? " for role " + str(role) : std::string()) +
                     ", got " + str(total));
      return;
    }
  }
}

// The grad passes and derived operands name known flush plans, buffers, groups and passes.
void Lowering::check_derived_table() {
  const std::size_t before = d_.items().size();
  const auto idx = [&](const std::string& ptr, const char* what, std::uint64_t v, std::uint64_t n,
                       const char* empty) {
    if (v >= n) error(ptr, index_problem(what, v, n, empty));
  };
  for (std::size_t q = 0; q < s_.grad_passes.size(); ++q) {
    const GradPass& gp = s_.grad_passes[q];
    const std::string ptr = "/grad_passes/" + str(q);
    for (std::size_t f = 0; f < gp.flush_plans.size(); ++f)
      idx(ptr + "/flush_plans/" + str(f), "flush plan", gp.flush_plans[f], s_.flush_plans.size(),
          "the schedule has no flush plans");
    for (std::size_t set = 0; set < gp.t3.size(); ++set) {
      if (gp.t3[set].size() != gp.flush_plans.size())
        error(ptr + "/t3/" + str(set), "expected one buffer per flush (" +
                                           str(gp.flush_plans.size()) + "), got " +
                                           str(gp.t3[set].size()));
      for (std::size_t f = 0; f < gp.t3[set].size(); ++f)
        idx(ptr + "/t3/" + str(set) + "/" + str(f), "buffer", gp.t3[set][f], s_.buffers.size(),
            "the schedule has no buffers");
    }
  }
  for (std::size_t k = 0; k < s_.derived.size(); ++k) {
    const DerivedOperand& d = s_.derived[k];
    const std::string ptr = "/derived/" + str(k);
    switch (d.kind) {
      case DerivedKind::PartitionGrads:
        idx(ptr + "/pass", "grad pass", d.pass, s_.grad_passes.size(),
            "the schedule has no grad passes");
        if (d.pass < s_.grad_passes.size()) {
          const GradPass& gp = s_.grad_passes[d.pass];
          idx(ptr + "/set", "set", d.set, gp.t3.size(), "the pass has no sets");
          if (d.flush != kNone)
            idx(ptr + "/flush", "flush", d.flush, gp.flush_plans.size(), "the pass has no flushes");
        }
        break;
      case DerivedKind::AveragedGrads:
        idx(ptr + "/pass", "grad pass", d.pass, s_.grad_passes.size(),
            "the schedule has no grad passes");
        if (d.pass < s_.grad_passes.size() && s_.grad_passes[d.pass].t3.empty())
          error(ptr + "/pass", "expected a grad pass with grads_in_partition (set 0), got none");
        idx(ptr + "/group", "param group", d.group, s_.layout.groups.size(),
            "the layout has no groups");
        if (d.flat != kNone)
          idx(ptr + "/flat", "buffer", d.flat, s_.buffers.size(), "the schedule has no buffers");
        break;
      case DerivedKind::OwnedGrads:
      case DerivedKind::OwnedPartition:
        idx(ptr + "/flush_plan", "flush plan", d.flush_plan, s_.flush_plans.size(),
            "the schedule has no flush plans");
        if (d.kind == DerivedKind::OwnedPartition && d.buffers.size() != s_.layout.groups.size())
          error(ptr + "/buffers", "expected one buffer per param group (" +
                                      str(s_.layout.groups.size()) + "), got " +
                                      str(d.buffers.size()));
        for (std::size_t g = 0; g < d.buffers.size(); ++g)
          idx(ptr + "/buffers/" + str(g), "buffer", d.buffers[g], s_.buffers.size(),
              "the schedule has no buffers");
        if (d.kind == DerivedKind::OwnedPartition &&
            (d.window_length != 0 || d.rank != kNone || d.into != kNone || d.packed))
          error(ptr,
                "expected no window, rank, into or packed on an owned_partition operand, got "
                "one");
        if (d.window > UINT64_MAX - d.window_length)
          error(ptr + "/window_length", "expected a window ending below 2^64, got " +
                                            str(d.window) + " + " + str(d.window_length));
        if (d.rank != kNone && d.rank >= s_.meta.world)
          error(ptr + "/rank", "expected a rank below the world size (" + str(s_.meta.world) +
                                   "), got " + str(d.rank));
        if (d.into != kNone)
          idx(ptr + "/into", "buffer", d.into, s_.buffers.size(), "the schedule has no buffers");
        if (d.packed && d.into == kNone)
          error(ptr + "/packed", "expected \"into\" with packed, got none");
        break;
    }
  }
  derived_ok_ = d_.items().size() == before;
}

const std::vector<Elements>& Lowering::pass_touching(std::uint32_t pass, std::uint32_t role) {
  if (pass_touching_.size() != s_.grad_passes.size()) pass_touching_.resize(s_.grad_passes.size());
  auto& per_role = pass_touching_[pass];
  if (per_role.size() != s_.roles.size()) per_role.resize(s_.roles.size());
  auto& out = per_role[role];
  const GradPass& gp = s_.grad_passes[pass];
  if (out.size() == gp.flush_plans.size()) return out;
  const std::uint32_t rank = s_.roles[role].representative;
  out.assign(gp.flush_plans.size(), 0);
  for (std::size_t f = 0; f < gp.flush_plans.size(); ++f)
    for (const FlushEntry& e : s_.flush_plans[gp.flush_plans[f]].entries)
      if (touches_partition(s_, e.tensor, rank)) out[f] += s_.tensors[e.tensor].numel;
  return out;
}

// A derived operand, for each role's representative rank: every piece inside its buffer, and the
// pieces total the op's extent (an op whose extent is 0 for a role moves nothing there). This
// cross-checks the builder's slots (FirstTouch, Touching, OwnedSlice, FlatCopy) against the layout.
void Lowering::check_derived_region(const Op& op, const std::string& ptr, const Region& r) {
  if (r.derived >= s_.derived.size()) {
    error(ptr + "/derived", index_problem("derived operand", r.derived, s_.derived.size(),
                                          "the schedule has no derived operands"));
    return;
  }
  if (!derived_ok_) return;
  if (op.kind == OpKind::Collective || op.kind == OpKind::GradReady) {
    error(ptr, "expected a copy-like op for a derived operand, got a " +
                   std::string(op_kind_name(op.kind)) + " op");
    return;
  }
  // The micro-steps and steps repeating an op cost nothing more.
  if (!derived_checked_.emplace(r.derived, op.slot, op.slot == kNone ? op.elements : 0).second)
    return;
  const DerivedOperand& d = s_.derived[r.derived];
  for (std::uint32_t role = 0; role < s_.roles.size(); ++role) {
    const std::uint32_t rank = s_.roles[role].representative;
    const Elements extent = s_.op_elements(op, role);
    if (extent == 0) continue;
    std::vector<OperandSpan> pieces;
    if (d.kind == DerivedKind::PartitionGrads &&
        !s_.grad_passes[d.pass].per_flush) {  // from the per-role cache: O(1) per op
      const GradPass& gp = s_.grad_passes[d.pass];
      const auto& touch = pass_touching(d.pass, role);
      std::size_t first = 0;
      while (first < touch.size() && touch[first] == 0) ++first;
      Elements offset = 0, length = 0;
      for (std::size_t f = 0; f < touch.size(); ++f) {
        if (d.flush == kNone || f == d.flush) length += touch[f];
        if (d.flush != kNone && f < d.flush) offset += touch[f];
      }
      if (first < touch.size()) pieces.push_back({gp.t3[d.set][first], offset, length});
    } else {
      pieces = resolve_pieces(s_, op, r, rank, true);
    }
    Elements total = 0;
    for (const OperandSpan& p : pieces) {
      total += p.length;
      if (p.buffer == kNone) continue;
      const Elements numel = s_.buffer_numel(p.buffer, role);
      if (p.offset + p.length > numel) {
        error(ptr, "expected derived operand " + str(r.derived) + " (" +
                       std::string(derived_kind_name(d.kind)) + ") inside buffer " +
                       quote(s_.buffers[p.buffer].name) + " (" + str(numel) +
                       " elements for role " + str(role) + "), got elements [" + str(p.offset) +
                       ", " + str(p.offset + p.length) + ")");
        return;
      }
    }
    if (total != extent) {
      error(ptr, "expected derived operand " + str(r.derived) + " (" +
                     std::string(derived_kind_name(d.kind)) + ") of rank " + str(rank) + " (role " +
                     str(role) + ") to total the op's extent " + str(extent) + ", got " +
                     str(total));
      return;
    }
  }
}

void Lowering::check_region(const Op& op, const std::string& ptr, const Region& r, Side side) {
  if (r.derived != kNone) {
    if (layout_ok_) check_derived_region(op, ptr, r);
    return;
  }
  if (r.list != kNone) {
    check_list_region(op, ptr, r, side);
    return;
  }
  if (r.flush_grads != kNone) {
    if (layout_ok_) check_flush_region(op, ptr, r);
    return;
  }
  const bool is_src = side == Side::Src;
  if (r.buffer >= s_.buffers.size()) {
    error(ptr + "/buffer",
          index_problem("buffer", r.buffer, s_.buffers.size(), "the schedule has no buffers"));
    return;
  }
  const Buffer& b = s_.buffers[r.buffer];
  const bool collective = op.kind == OpKind::Collective;
  // GradReady has no extent; scalar scratch gives its length.
  const bool sized = side != Side::Scalar && (collective || op.kind != OpKind::GradReady);
  std::uint64_t last_index = 0;
  if (r.rank_stride != 0) {
    const std::uint32_t size = op.comm < s_.comms.size() ? s_.comms[op.comm].size : 1;
    last_index = size == 0 ? 0 : size - 1;
  }
  const bool per_role =
      b.slot != kNone || (side != Side::Scalar && !collective && op.slot != kNone);
  const std::size_t n_roles = per_role ? s_.roles.size() : 1;
  for (std::size_t role = 0; role < n_roles; ++role) {
    const auto k = static_cast<std::uint32_t>(role);
    const Elements extent = side == Side::Scalar ? 0
                            : collective         ? (is_src ? op.numel : op.out_numel)
                                                 : s_.op_elements(op, k);
    const Elements length = r.length != 0 ? r.length : extent;
    const std::string who = per_role ? " for role " + str(role) : "";
    if (sized && r.length != 0 && r.length != extent) {
      error(ptr + "/length",
            "expected the op's extent " + str(extent) + who + ", got " + str(r.length));
      return;
    }
    Elements start = 0, end = 0;
    const bool overflow = __builtin_mul_overflow(r.rank_stride, last_index, &start) ||
                          __builtin_add_overflow(start, r.offset, &start) ||
                          __builtin_add_overflow(start, length, &end);
    const Elements numel = s_.buffer_numel(r.buffer, k);
    if (overflow || end > numel) {
      error(ptr, "expected a region inside buffer " + quote(b.name) + " (" + str(numel) +
                     " elements" + who + "), got elements [" + str(start) + ", " +
                     (overflow ? std::string("overflow") : str(end)) + ")" +
                     (r.rank_stride != 0 ? " at rank index " + str(last_index) : ""));
      return;
    }
  }
}

// A grad_norm's or grad_overflow's scratch: one element of a float (the squared norm) or uint8
// (the flag) buffer, named by a plain region.
void Lowering::check_stat_dst(const Op& op, const std::string& ptr) {
  const Region& r = op.dst;
  const bool norm = op.kind == OpKind::GradNorm;
  if (r.buffer == kNone || r.list != kNone || r.flush_grads != kNone || r.derived != kNone ||
      r.rank_stride != 0 || r.length != 1) {
    error(ptr, std::string("expected one element of a buffer (a region of length 1) for the ") +
                   (norm ? "squared norm" : "overflow flag") + ", got another region");
    return;
  }
  if (r.buffer < s_.buffers.size()) {
    const DType t = s_.buffers[r.buffer].dtype;
    const bool ok = norm ? (t == DType::Float32 || t == DType::Float64) : t == DType::UInt8;
    if (!ok) {
      error(ptr + "/buffer", std::string("expected a ") + (norm ? "float32 or float64" : "uint8") +
                                 " buffer, got " + quote(s_.buffers[r.buffer].name) + " of " +
                                 std::string(dtype_name(t)));
      return;
    }
  }
  check_region(op, ptr, r, Side::Scalar);
}

// An update's operands, checked once, against the first OptimizerStep naming it: the weights,
// gradient and states are the op's `elements`, the norm and overflow scratch give their length.
void Lowering::check_update(const Op& op, std::uint32_t u) {
  const UpdateCall& c = s_.updates[u];
  const std::string ptr = "/updates/" + str(u);
  const std::pair<const char*, const Region*> sized[] = {{"/master", &c.master},
                                                         {"/grad", &c.grad},
                                                         {"/exp_avg", &c.exp_avg},
                                                         {"/exp_avg_sq", &c.exp_avg_sq},
                                                         {"/lp_out", &c.lp_out}};
  for (const auto& [key, r] : sized)
    if (!r->empty()) check_region(op, ptr + key, *r, Side::Dst);
  if (!c.norms.empty()) check_region(op, ptr + "/norms", c.norms, Side::Scalar);
  if (!c.overflow.empty()) check_region(op, ptr + "/overflow", c.overflow, Side::Scalar);
}

// The slow path: op i broke a rule; say which.
void Lowering::check_op(const Op& op, std::uint32_t i) {
  const bool needs_buffer = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
  if (needs_buffer && op.buffer == kNone)
    error(op_ptr(i), "expected a \"buffer\" index for a " + std::string(op_kind_name(op.kind)) +
                         " op, got none");
  else if (!needs_buffer && op.buffer != kNone)
    error(op_ptr(i, "/buffer"), "expected no buffer on a " + std::string(op_kind_name(op.kind)) +
                                    " op (only alloc and free name one; operands are src and "
                                    "dst), got " +
                                    str(op.buffer));
  else if (op.buffer != kNone && op.buffer >= s_.buffers.size())
    error(op_ptr(i, "/buffer"),
          index_problem("buffer", op.buffer, s_.buffers.size(), "the schedule has no buffers"));
  else if (needs_buffer && s_.buffers[op.buffer].executor_owned)
    error(op_ptr(i, "/buffer"), "expected a buffer the program allocates, got " +
                                    quote(s_.buffers[op.buffer].name) +
                                    ", which the executor owns (no Alloc or Free)");
  if (op.update != kNone && op.kind != OpKind::OptimizerStep)
    error(op_ptr(i, "/update"), "expected no update for a " + std::string(op_kind_name(op.kind)) +
                                    " op, got " + str(op.update));
  else if (op.update != kNone && op.update >= s_.updates.size())
    error(op_ptr(i, "/update"),
          index_problem("update", op.update, s_.updates.size(), "the schedule has no updates"));
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
  check_data_fields(op, i);
}

// copy_mode, scale, zero_fill: only where they mean something (schedule.h Op).
void Lowering::check_data_fields(const Op& op, std::uint32_t i) {
  const std::string kind(op_kind_name(op.kind));
  if (static_cast<std::size_t>(op.copy_mode) >= kCopyModeCount)
    error(op_ptr(i, "/copy_mode"), "expected \"assign\" or \"add\", got an out-of-range value");
  else if (op.copy_mode == CopyMode::Add && !may_add(op.kind))
    error(op_ptr(i, "/copy_mode"),
          "expected \"add\" only on copy, copy_to_bucket, write_back, host_to_device, "
          "device_to_host, grad_ready, grad_norm or grad_overflow, got it on a " +
              kind + " op");
  if (op.scale != 1.0) {
    char value[32];
    std::snprintf(value, sizeof value, "%.17g", op.scale);
    const std::string what = op.kind == OpKind::Collective
                                 ? std::string(collective_name(op.collective)) +
                                       (op.reduce_op == ReduceOp::Max ? " (max)" : "")
                                 : kind;
    if (!may_scale(op))
      error(op_ptr(i, "/scale"),
            std::string("expected no scale on ") +
                (std::string_view("aeiou").find(what[0]) != std::string_view::npos ? "an " : "a ") +
                what +
                " op (only copy-like ops, grad_ready and sum all_reduce, reduce or "
                "reduce_scatter_tensor scale), got " +
                value);
    else if (!(op.scale > 0 && op.scale <= std::numeric_limits<double>::max()))
      error(op_ptr(i, "/scale"), std::string("expected a finite scale above 0, got ") + value);
  }
  if (op.zero_fill && op.kind != OpKind::Alloc)
    error(op_ptr(i, "/zero_fill"),
          "expected zero_fill only on an alloc op, got it on a " + kind + " op");
}

// An adopting Alloc (schedule.h Op::src): its src is a flush's gradients, all released by the
// run of Free ops right before it, and its extent is the buffer's (the slot it is sized by).
void Lowering::check_adopt(const Op& op, std::uint32_t i) {
  const Region& r = op.src;
  if (r.flush_grads == kNone || r.buffer != kNone || r.list != kNone || r.derived != kNone) {
    error(op_ptr(i, "/src"),
          "expected a flush's gradients (flush_grads) as an alloc's src, got "
          "another region");
    return;
  }
  const Buffer& b = s_.buffers[op.buffer];
  if (op.slot != b.slot || (b.slot == kNone && op.elements != b.numel)) {
    error(op_ptr(i, "/slot"), "expected an adopting alloc sized as its buffer " + quote(b.name) +
                                  " (slot " + (b.slot == kNone ? "none" : str(b.slot)) +
                                  "), got slot " + (op.slot == kNone ? "none" : str(op.slot)));
    return;
  }
  if (r.flush_grads >= s_.flush_plans.size()) return;  // check_region names it
  for (const FlushEntry& e : s_.flush_plans[r.flush_grads].entries)
    if (std::find(freed_run_.begin(), freed_run_.end(), e.buffer) == freed_run_.end()) {
      error(op_ptr(i, "/src"),
            "expected every gradient an alloc adopts to be released by the free ops right "
            "before it, got " +
                (e.buffer < s_.buffers.size() ? quote(s_.buffers[e.buffer].name)
                                              : "buffer " + str(e.buffer)) +
                " not among them");
      return;
    }
}

// Alloc/Free pairing in program order: no double Alloc, no Free of a dead buffer. Inline (it runs
// for every Alloc and Free); the messages are built out of line.
inline void Lowering::track_lifetime(const Op& op, std::uint32_t i) {
  std::uint32_t& since = live_since_[op.buffer];
  const bool alloc = op.kind == OpKind::Alloc;
  if (alloc == (since != kNone)) lifetime_error(op, i, since);
  since = alloc ? i : kNone;
}

void Lowering::lifetime_error(const Op& op, std::uint32_t i, std::uint32_t since) {
  if (op.kind == OpKind::Alloc)
    error(op_ptr(i), "expected buffer " + quote(s_.buffers[op.buffer].name) +
                         " to be free before its Alloc, got it live since op " + str(since));
  else
    error(op_ptr(i), "expected buffer " + quote(s_.buffers[op.buffer].name) +
                         " to be live before its Free, got it free");
}

void Lowering::check_lifetimes_at_end() {
  for (std::size_t b = 0; b < s_.buffers.size(); ++b)
    if (live_since_[b] != kNone && live_since_[b] != kExecutorOwned && !s_.buffers[b].persistent)
      error("/buffers/" + str(b), "expected buffer " + quote(s_.buffers[b].name) +
                                      " (allocated at op " + str(live_since_[b]) +
                                      ") to be freed or marked persistent, got it live at the end");
}

Diagnostics Lowering::run() {
  g_.op_count = 0;
  for (auto& lane : g_.lanes) lane.clear();
  // dep_offsets, gate and prev_call are not emptied: the op loop resizes them and writes every
  // element, so a workspace's graph lowering a schedule of the same size keeps them as they are
  // (emptying them first made resize() zero 12 bytes per op again, a tenth of the lowering).
  g_.deps.clear();
  g_.memory_ops.clear();
  g_.collectives.clear();
  g_.max_slots.clear();
  check_meta();
  if (d_.has_errors()) return d_;
  check_roles();
  check_buffers();
  check_comms();
  const std::size_t before_layout = d_.items().size();
  check_tensors();
  if (layout_ == LayoutCheck::Replan && !s_.tensors.empty() && !d_.has_errors()) check_layout();
  layout_ok_ = d_.items().size() == before_layout;
  // Operands are what executors read; the simulator's lowering (LayoutCheck::References) skips
  // their per-role sweeps, which cost O(roles x operands) — build_schedule and the reader run them.
  const bool operands = layout_ == LayoutCheck::Replan;
  if (operands && g_.max_slots.size() == s_.meta.slot_names.size()) check_lists();
  if (operands) check_flush_plans();
  if (operands) check_derived_table();
  const auto n = static_cast<std::uint32_t>(s_.ops.size());
  // The loop below runs for every op of every simulation: the limits it compares against are
  // locals (a store into the graph's vectors could alias a member, so the compiler would reload
  // them per op), and the per-op arrays are sized once and written by index.
  const std::size_t n_buffers = s_.buffers.size(), n_slots = s_.meta.slot_names.size();
  const std::size_t n_updates = s_.updates.size(), n_comms = s_.comms.size();
  const std::uint32_t n_steps = s_.meta.steps, n_micro = s_.meta.grad_accum;
  const Buffer* const buffers = s_.buffers.data();
  g_.op_count = n;
  g_.dep_offsets.resize(std::size_t{n} + 1);  // these three: every element written per op below
  g_.deps.reserve(n);
  g_.gate.resize(n);
  g_.prev_call.resize(n);
  g_.memory_ops.reserve(n / 2);
  live_since_.resize(n_buffers);
  for (std::size_t b = 0; b < n_buffers; ++b)
    live_since_[b] = buffers[b].executor_owned ? kExecutorOwned : kNone;
  const std::uint32_t* const live_since = live_since_.data();
  std::uint32_t* const dep_offsets = g_.dep_offsets.data();
  std::uint32_t* const gate = g_.gate.data();
  std::uint32_t* const prev_call = g_.prev_call.data();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> last_call;  // (communicator, latest op)
  std::uint32_t last_sync = kNone;
  std::uint32_t n_deps = 0;  // g_.deps.size(), in a register
  bool op_errors = false;
  // Regions are sized per role: only once every role has its slot values.
  const bool regions_checked = operands && g_.max_slots.size() == n_slots && !s_.roles.empty();
  std::vector<bool> update_checked(n_updates, false);
  const Op* const ops = s_.ops.data();
  for (std::uint32_t i = 0; i < n; ++i) {
    const Op& op = ops[i];
    if (i + kPrefetchOps < n) {
      const Op& ahead = ops[i + kPrefetchOps];
      __builtin_prefetch(&ahead);
      __builtin_prefetch(reinterpret_cast<const char*>(&ahead) + 64);
      const Op& near = ops[i + kPrefetchOps / 2];
      if (!near.deps.empty()) __builtin_prefetch(near.deps.data());
    }
    dep_offsets[i] = n_deps;
    gate[i] = last_sync;
    prev_call[i] = kNone;
    // The fast path checks everything check_op does, without building a string.
    const bool memory = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
    bool ok = (memory ? op.buffer < n_buffers : op.buffer == kNone) &&
              (op.slot == kNone || op.slot < n_slots) &&
              static_cast<std::size_t>(op.stream) < kStreamCount && op.step < n_steps &&
              op.micro_step < n_micro &&
              (op.update == kNone || (op.kind == OpKind::OptimizerStep && op.update < n_updates)) &&
              (!memory || live_since[op.buffer] != kExecutorOwned) && data_fields_ok(op);
    for (std::uint32_t dep : op.deps) ok = ok && dep < i;
    if (ok && op.kind == OpKind::Collective) {
      const bool reduces = op.collective == CollectiveKind::AllReduce ||
                           op.collective == CollectiveKind::Reduce ||
                           op.collective == CollectiveKind::ReduceScatter;
      const bool rooted =
          op.collective == CollectiveKind::Reduce || op.collective == CollectiveKind::Broadcast;
      ok = op.comm < n_comms && reduces == (op.reduce_op != ReduceOp::None) &&
           (rooted ? op.root < s_.comms[op.comm].size : op.root == kNone);
    }
    if (!ok) {
      const std::size_t before = d_.items().size();
      check_op(op, i);
      // The fast test above and check_op state the same rules twice (one without messages): an op
      // the first refuses and the second passes would vanish from the graph without a word. (A
      // collective's communicator problems are reported once, at /comms: not here.)
      if (d_.items().size() == before && (comms_ok_ || op.kind != OpKind::Collective))
        error(op_ptr(i),
              "internal error: the lowering's fast check refused this op, check_op "
              "found nothing (the two must state the same rules)");
      op_errors = true;  // lifetimes after a broken op would only echo it
      continue;
    }
    if (regions_checked) {
      if (!op.src.empty()) check_region(op, op_ptr(i, "/src"), op.src, Side::Src);
      if (!op.dst.empty()) {
        if (grad_stat(op.kind))
          check_stat_dst(op, op_ptr(i, "/dst"));
        else
          check_region(op, op_ptr(i, "/dst"), op.dst, Side::Dst);
      }
      if (op.update != kNone && !update_checked[op.update]) {
        update_checked[op.update] = true;
        check_update(op, op.update);
      }
    }
    for (std::uint32_t dep : op.deps) g_.deps.push_back(dep);  // most ops have 0-2
    n_deps += static_cast<std::uint32_t>(op.deps.size());
    g_.lanes[static_cast<std::size_t>(op.stream)].push_back(i);
    if (op.kind == OpKind::Sync) last_sync = i;
    if (memory) {
      g_.memory_ops.push_back(i);
      if (!op_errors) track_lifetime(op, i);
    }
    if (op.kind == OpKind::Alloc && !op.src.empty()) check_adopt(op, i);
    if (op.kind == OpKind::Free)
      freed_run_.push_back(op.buffer);
    else
      freed_run_.clear();
    if (op.kind == OpKind::Collective) {
      g_.collectives.push_back(i);
      const std::uint32_t comm = communicator_of(op);
      auto it = std::find_if(last_call.begin(), last_call.end(),
                             [comm](const auto& c) { return c.first == comm; });
      if (it == last_call.end())
        last_call.emplace_back(comm, i);
      else
        prev_call[i] = std::exchange(it->second, i);
    }
  }
  dep_offsets[n] = n_deps;
  if (!op_errors) check_lifetimes_at_end();
  return std::move(d_);
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
  Lowering lowering(s, ScheduleGraph{}, source, layout);
  Diagnostics d = lowering.run();
  if (d.has_errors()) return d;
  return lowering.take();
}

Diagnostics lower_schedule_into(const Schedule& s, ScheduleGraph& out, const std::string& source,
                                LayoutCheck layout) {
  Lowering lowering(s, std::move(out), source, layout);
  Diagnostics d = lowering.run();
  out = lowering.take();
  return d;
}

}  // namespace zerosim
