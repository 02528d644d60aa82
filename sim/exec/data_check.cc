// data_mode_gap (data_check.h).
#include "data_check.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "zerosim/units.h"

namespace zerosim::exec {
namespace {

// Disjoint written ranges [a, b) of one buffer, keyed by start.
class Ranges {
 public:
  void clear() { r_.clear(); }
  void add(Elements a, Elements b) {
    if (a >= b) return;
    auto it = r_.upper_bound(a);
    if (it != r_.begin() && std::prev(it)->second >= a) {
      --it;
      a = it->first;
      b = std::max(b, it->second);
      it = r_.erase(it);
    }
    while (it != r_.end() && it->first <= b) {
      b = std::max(b, it->second);
      it = r_.erase(it);
    }
    r_.emplace(a, b);
  }
  /// The first element of [a, b) not covered, or b when all are.
  Elements first_gap(Elements a, Elements b) const {
    auto it = r_.upper_bound(a);
    if (it == r_.begin()) return a;
    --it;
    if (it->second <= a) return a;
    return std::min(b, it->second) == b ? b : it->second;
  }

 private:
  std::map<Elements, Elements> r_;
};

struct Walk {
  const Schedule& s;
  const DataCheckOptions& o;
  std::uint32_t rank = 0;
  std::vector<bool> live;
  std::vector<Ranges> written;
  std::uint32_t weights_alloc = model_weights_alloc(s);
  /// The buffers the run of Free ops right before this op released, with what they held: an
  /// adopting Alloc (Op::src) reads them.
  std::map<std::uint32_t, Ranges> freed_run;

  Walk(const Schedule& sc, const DataCheckOptions& opt, std::uint32_t r)
      : s(sc), o(opt), rank(r), live(sc.buffers.size(), false), written(sc.buffers.size()) {
    // Executor-owned scratch is provided before op 0 as zeros (the host device zero-fills it),
    // except what an update reads as its squared norms or overflow flag: only a local norm or
    // overflow check (grad_norm, grad_overflow) gives those, so they start unwritten.
    std::vector<bool> computed(sc.buffers.size(), false);
    for (const UpdateCall& u : sc.updates)
      for (const Region* scratch : {&u.norms, &u.overflow})
        if (scratch->buffer < computed.size()) computed[scratch->buffer] = true;
    for (std::uint32_t b = 0; b < s.buffers.size(); ++b)
      if (s.buffers[b].executor_owned) {
        live[b] = true;
        if (!computed[b]) written[b].add(0, s.buffer_numel(b, s.role_of(rank)));
      }
  }

  Diagnostic gap(std::uint32_t op, const std::string& what) const {
    return Diagnostic{Severity::Error, "data mode", "", where(s, rank, op) + ": " + what,
                      "the schedule does not carry this data movement yet (scenarios/README.md "
                      "\"Not carried yet\"); run count-only with --no-data"};
  }
  std::string buffer_name(std::uint32_t b) const {
    return "buffer #" + std::to_string(b) + " (" + quote(s.buffers[b].name) + ")";
  }
  Status missing(std::uint32_t op, const char* operand) const {
    return gap(op, std::string(operand) + " is not carried (empty region)");
  }
  Status read(std::uint32_t op, const char* operand, const Operand& x) const {
    for (const OperandPiece& p : x) {
      if (p.buffer == kNone) continue;  // zeros
      if (!live[p.buffer])
        return gap(op, std::string(operand) + " reads " + buffer_name(p.buffer) +
                           ", which is not allocated here");
      const Elements g = written[p.buffer].first_gap(p.offset, p.offset + p.length);
      if (g < p.offset + p.length)
        return gap(op, std::string(operand) + " reads element " + std::to_string(g) + " of " +
                           buffer_name(p.buffer) + ", which no earlier op wrote since its Alloc");
    }
    return {};
  }
  Status write(std::uint32_t op, const char* operand, const Operand& x) {
    for (const OperandPiece& p : x) {
      if (p.buffer == kNone) continue;  // dropped
      if (!live[p.buffer])
        return gap(op, std::string(operand) + " writes " + buffer_name(p.buffer) +
                           ", which is not allocated here (its Alloc comes later or was freed)");
      written[p.buffer].add(p.offset, p.offset + p.length);
    }
    return {};
  }
  Operand get(const Op& op, const Region& r, bool is_src) const {
    Operand out;
    for (const OperandSpan& p : resolve_pieces(s, op, r, rank, is_src))
      out.push_back({p.buffer, p.offset, p.length, DType::Float16});
    return out;
  }

  Status collective(std::uint32_t i, const Op& op) {
    if (op.numel == 0 && op.out_numel == 0) return {};  // moves nothing: needs no operand
    if (op.src.empty()) return missing(i, "src");
    const bool in_place = op.dst.empty();
    if (in_place && op.numel != op.out_numel) return missing(i, "dst");
    const Operand src = get(op, op.src, true);
    const Operand dst = in_place ? get(op, op.src, true) : get(op, op.dst, false);
    const std::uint32_t me = s.comms[op.comm].index_of(rank);
    switch (op.collective) {
      case CollectiveKind::Broadcast:
        if (me == op.root) return read(i, "src", src);
        return write(i, in_place ? "src" : "dst", dst);
      case CollectiveKind::Reduce:
        if (Status e = read(i, "src", src)) return e;
        return me == op.root ? write(i, in_place ? "src" : "dst", dst) : Status{};
      default:
        if (Status e = read(i, "src", src)) return e;
        return write(i, in_place ? "src" : "dst", dst);
    }
  }

  // An adopting Alloc's src: each piece inside what a Free right before released, written there.
  Status adopt(std::uint32_t op, const Operand& x) const {
    for (const OperandPiece& p : x) {
      if (p.buffer == kNone) continue;
      auto it = freed_run.find(p.buffer);
      if (it == freed_run.end())
        return gap(op, "src (adopted) reads " + buffer_name(p.buffer) +
                           ", which no free right before this alloc released");
      const Elements g = it->second.first_gap(p.offset, p.offset + p.length);
      if (g < p.offset + p.length)
        return gap(op, "src (adopted) reads element " + std::to_string(g) + " of " +
                           buffer_name(p.buffer) + ", which no earlier op wrote since its Alloc");
    }
    return {};
  }

  Status run(std::uint32_t i, const Op& op) {
    if (op.kind != OpKind::Free && !(op.kind == OpKind::Alloc && !op.src.empty()))
      freed_run.clear();
    switch (op.kind) {
      case OpKind::Alloc: {
        if (!op.src.empty()) {
          if (Status e = adopt(i, get(op, op.src, true))) return e;
          freed_run.clear();
        }
        live[op.buffer] = true;
        written[op.buffer].clear();
        if (i == weights_alloc || op.zero_fill || !op.src.empty())  // weights / zeros / adopted
          written[op.buffer].add(0, s.buffer_numel(op.buffer, s.role_of(rank)));
        return {};
      }
      case OpKind::Free:
        live[op.buffer] = false;
        freed_run[op.buffer] = std::move(written[op.buffer]);
        written[op.buffer].clear();
        return {};
      case OpKind::Copy:
      case OpKind::CopyToBucket:
      case OpKind::WriteBack:
      case OpKind::HostToDevice:
      case OpKind::DeviceToHost: {
        if (s.op_elements(op, s.role_of(rank)) == 0) return {};  // moves nothing on this rank
        if (op.src.empty()) return missing(i, "src");
        if (op.dst.empty()) return missing(i, "dst");
        if (Status e = read(i, "src", get(op, op.src, true))) return e;
        if (op.copy_mode == CopyMode::Add)  // dst += src: the accumulator must hold something
          if (Status e = read(i, "dst (accumulated into)", get(op, op.dst, false))) return e;
        return write(i, "dst", get(op, op.dst, false));
      }
      case OpKind::GradNorm:
      case OpKind::GradOverflow:
        if (op.src.empty()) return missing(i, "src (the gradients)");
        if (op.dst.empty()) return missing(i, "dst (the scratch)");
        if (Status e = read(i, "src (the gradients)", get(op, op.src, true))) return e;
        if (op.copy_mode == CopyMode::Add)
          if (Status e = read(i, "dst (accumulated into)", get(op, op.dst, false))) return e;
        return write(i, "dst (the scratch)", get(op, op.dst, false));
      case OpKind::GradReady:
        if (op.dst.empty()) return missing(i, "dst (the gradient)");
        if (op.copy_mode == CopyMode::Add)  // autograd accumulating into a live p.grad
          if (Status e = read(i, "dst (the gradient, accumulated into)", get(op, op.dst, false)))
            return e;
        return write(i, "dst (the gradient)", get(op, op.dst, false));
      case OpKind::OptimizerStep: {
        if (op.update == kNone || op.update >= s.updates.size())
          return gap(i, "the update's operands are not carried (no `update`)");
        const UpdateCall& u = s.updates[op.update];
        const std::pair<const char*, const Region*> need[] = {{"update master", &u.master},
                                                              {"update grad", &u.grad},
                                                              {"update exp_avg", &u.exp_avg},
                                                              {"update exp_avg_sq", &u.exp_avg_sq}};
        for (const auto& [name, r] : need) {
          if (r->empty()) return missing(i, name);
          if (Status e = read(i, name, get(op, *r, true))) return e;
        }
        if (o.gradient_clipping > 0 && u.norms.empty())
          return missing(i, "update norms (gradient clipping is on)");
        if (!u.norms.empty())
          if (Status e = read(i, "update norms", get(op, u.norms, true))) return e;
        if (!u.overflow.empty())
          if (Status e = read(i, "update overflow", get(op, u.overflow, true))) return e;
        for (const Region* r : {&u.master, &u.exp_avg, &u.exp_avg_sq})
          if (Status e = write(i, "update state", get(op, *r, false))) return e;
        return {};
      }
      case OpKind::Collective:
        return collective(i, op);
      default:
        return {};  // compute stand-ins, Sync, Marker
    }
  }
};

}  // namespace

long double data_buffer_peaks(const Schedule& s) {
  long double total = 0;
  for (std::uint32_t role = 0; role < s.roles.size(); ++role) {
    Bytes cur = 0, peak = 0;
    for (const Op& op : s.ops) {
      if (op.kind != OpKind::Alloc && op.kind != OpKind::Free) continue;
      const Bytes b = s.buffer_numel(op.buffer, role) * dtype_size(s.buffers[op.buffer].dtype);
      cur = op.kind == OpKind::Alloc ? cur + b : cur - std::min(cur, b);
      peak = std::max(peak, cur);
    }
    total += static_cast<long double>(peak) * static_cast<long double>(s.roles[role].rank_count());
  }
  return total;
}

std::size_t page_cache_limit(const Schedule& s, Bytes memory_cap) {
  constexpr std::size_t kDefault = std::size_t{1} << 30;
  if (memory_cap == 0 || s.meta.world == 0) return kDefault;
  const long double left = static_cast<long double>(memory_cap) - data_buffer_peaks(s);
  if (left <= 0) return 0;
  const long double share = left / static_cast<long double>(s.meta.world);
  return share >= static_cast<long double>(kDefault) ? kDefault : static_cast<std::size_t>(share);
}

Status data_mode_gap(const Schedule& s, const DataCheckOptions& o) {
  if (s.meta.mode != "deepspeed")
    return Diagnostic{Severity::Error, "data mode", "/meta/mode",
                      "expected a deepspeed-mode schedule, got " + quote(s.meta.mode) +
                          " (paper-mode schedules are a traffic model: only their parameter "
                          "all-gathers carry operands)",
                      "run count-only with --no-data"};
  // Every rank's buffers at their peaks: the memory data mode would take from this process.
  if (o.memory_cap > 0) {
    const long double total = data_buffer_peaks(s);
    if (total > static_cast<long double>(o.memory_cap))
      return Diagnostic{Severity::Error, "data mode", "",
                        "expected every rank's buffers to fit in " + std::to_string(o.memory_cap) +
                            " bytes of host memory together, got " +
                            std::to_string(static_cast<unsigned long long>(total)) +
                            " bytes at their peaks",
                        "run count-only with --no-data (or raise --data-memory-cap)"};
  }
  for (const RankRole& role : s.roles) {
    Walk w(s, o, role.representative);
    for (std::uint32_t i = 0; i < s.ops.size(); ++i)
      if (Status e = w.run(i, s.ops[i])) return e;
  }
  return {};
}

}  // namespace zerosim::exec
