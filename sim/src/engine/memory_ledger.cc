// MemoryLedger (memory_ledger.h): records allocations in event order and derives, per rank role,
// the peak, its breakdown by category and the first OOM, without ever materialising one curve per
// role. The analysis walks the events once, cutting them into intervals at role-buffer events; each
// interval keeps the maximum of the common curve C, where it was reached and C's category breakdown
// there; a sparse table answers "largest interval maximum in [a, b]" in O(1). A role's curve is C
// plus a step function that only moves at the role-buffer events listing that role, so its peak is
// the best (range maximum + step value) over its runs of constant step value.
#include "zerosim/memory_ledger.h"

#include <algorithm>
#include <string>
#include <utility>

#include "zerosim/saturating.h"

namespace zerosim {
namespace {

constexpr const char* kSource = "memory ledger";

bool is_device(MemoryPool p) { return p == MemoryPool::Device; }
std::size_t cat_index(BufferCategory c) { return static_cast<std::size_t>(c); }
// Saturating: lower_schedule bounds a schedule's buffers to 64 bits, but a ledger built directly
// (the planner's micro-batch search resizes activation buffers) must not wrap to a small total.
Bytes apply(Bytes v, Bytes d, bool add) {
  return add ? saturating_add(v, d) : (v >= d ? v - d : 0);
}

Diagnostic ledger_error(std::string message) {
  Diagnostic d;
  d.source = kSource;
  d.message = std::move(message);
  return d;
}

}  // namespace

Bytes LedgerBuffer::bytes_for(std::uint32_t role) const {
  if (!per_role) return bytes;
  auto it = std::lower_bound(role_bytes.begin(), role_bytes.end(), role,
                             [](const RoleBytes& r, std::uint32_t v) { return r.role < v; });
  return it != role_bytes.end() && it->role == role ? it->bytes : 0;
}

MemoryLedger::MemoryLedger(std::uint32_t roles) : roles_(roles == 0 ? 1 : roles) {}

void MemoryLedger::reset(std::uint32_t roles) {
  roles_ = roles == 0 ? 1 : roles;
  buffers_.clear();
  live_alloc_.clear();
  allocations_.clear();
  events_.clear();
  last_t_ = 0;
}

void MemoryLedger::reserve(std::size_t buffers, std::size_t events) {
  buffers_.reserve(buffers);
  live_alloc_.reserve(buffers);
  events_.reserve(events);
  allocations_.reserve(events);
}

std::uint32_t MemoryLedger::add_buffer(std::string name, BufferCategory category, MemoryPool pool,
                                       Bytes bytes) {
  LedgerBuffer& b = buffers_.emplace_back();    // in place: the simulator adds every buffer per run
  if (!name.empty()) b.name = std::move(name);  // the simulator's are unnamed (make_ledger)
  b.category = category;
  b.pool = pool;
  b.bytes = bytes;
  live_alloc_.push_back(kNone);
  return static_cast<std::uint32_t>(buffers_.size() - 1);
}

Result<std::uint32_t> MemoryLedger::add_role_buffer(std::string name, BufferCategory category,
                                                    MemoryPool pool,
                                                    const std::vector<Bytes>& bytes_per_role) {
  if (bytes_per_role.size() != roles_)
    return fail<std::uint32_t>(kSource, "",
                               "expected " + std::to_string(roles_) + " sizes for buffer " +
                                   quote(name) + " (one per role), got " +
                                   std::to_string(bytes_per_role.size()));
  std::vector<RoleBytes> sparse;
  for (std::uint32_t r = 0; r < bytes_per_role.size(); ++r)
    if (bytes_per_role[r] != 0) sparse.push_back({r, bytes_per_role[r]});
  return add_sparse_role_buffer(std::move(name), category, pool, std::move(sparse));
}

Result<std::uint32_t> MemoryLedger::add_sparse_role_buffer(std::string name,
                                                           BufferCategory category, MemoryPool pool,
                                                           std::vector<RoleBytes> sizes) {
  Bytes largest = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const bool ordered = i == 0 || sizes[i].role > sizes[i - 1].role;
    if (sizes[i].role >= roles_ || !ordered)
      return fail<std::uint32_t>(kSource, "",
                                 "expected ascending roles below " + std::to_string(roles_) +
                                     " for buffer " + quote(name) + ", got role " +
                                     std::to_string(sizes[i].role) + " at position " +
                                     std::to_string(i));
    largest = std::max(largest, sizes[i].bytes);
  }
  const std::uint32_t id = add_buffer(std::move(name), category, pool, largest);
  buffers_[id].per_role = true;
  buffers_[id].role_bytes = std::move(sizes);
  return id;
}

std::string MemoryLedger::label(std::uint32_t buffer) const {
  const std::string& name = buffers_[buffer].name;
  return name.empty() ? "#" + std::to_string(buffer) : quote(name);
}

std::optional<Diagnostic> MemoryLedger::check(std::uint32_t buffer, SimTime t,
                                              const char* what) const {
  if (buffer >= buffers_.size())
    return ledger_error("expected a buffer id below " + std::to_string(buffers_.size()) + " to " +
                        what + ", got " + std::to_string(buffer));
  if (t < last_t_)
    return ledger_error("expected events in time order, got " + std::string(what) + " of " +
                        label(buffer) + " at " + std::to_string(t) + " ns after an event at " +
                        std::to_string(last_t_) + " ns");
  return std::nullopt;
}

std::optional<Diagnostic> MemoryLedger::allocate(std::uint32_t buffer, SimTime t) {
  if (try_allocate(buffer, t)) return std::nullopt;
  if (auto d = check(buffer, t, "allocate")) return d;
  return ledger_error("buffer " + label(buffer) + " allocated at " + std::to_string(t) +
                      " ns while live since " +
                      std::to_string(allocations_[live_alloc_[buffer]].t_alloc) + " ns");
}

std::optional<Diagnostic> MemoryLedger::release(std::uint32_t buffer, SimTime t) {
  if (try_release(buffer, t)) return std::nullopt;
  if (auto d = check(buffer, t, "release")) return d;
  return ledger_error("buffer " + label(buffer) + " released at " + std::to_string(t) +
                      " ns but it is not live (double free, or never allocated)");
}

bool MemoryLedger::is_live(std::uint32_t buffer) const {
  return buffer < live_alloc_.size() && live_alloc_[buffer] != kNone;
}

std::vector<Allocation> MemoryLedger::allocations_for_role(std::uint32_t role) const {
  std::vector<Allocation> out = allocations_;
  for (Allocation& a : out) {
    a.role = role;
    a.bytes = buffers_[a.buffer].bytes_for(role);
  }
  return out;
}

Bytes MemoryLedger::live_bytes(std::uint32_t role, SimTime t, MemoryPool pool) const {
  Bytes live = 0;
  for (const Event& e : events_) {
    if (e.t > t) break;
    const LedgerBuffer& b = buffers_[e.buffer];
    if (b.pool == pool) live = apply(live, b.bytes_for(role), e.alloc);
  }
  return live;
}

std::vector<MemorySample> MemoryLedger::device_curve(std::uint32_t role) const {
  std::vector<MemorySample> out;
  MemorySample cur;
  for (const Event& e : events_) {
    const LedgerBuffer& b = buffers_[e.buffer];
    const Bytes n = b.bytes_for(role);
    if (!is_device(b.pool) || n == 0) continue;
    cur.t = e.t;
    cur.total = apply(cur.total, n, e.alloc);
    Bytes& c = cur.by_category[cat_index(b.category)];
    c = apply(c, n, e.alloc);
    out.push_back(cur);
  }
  return out;
}

std::size_t MemoryLedger::footprint_bytes() const {
  std::size_t n = sizeof(*this);
  for (const LedgerBuffer& b : buffers_)
    n += sizeof(LedgerBuffer) + b.name.capacity() + b.role_bytes.capacity() * sizeof(RoleBytes);
  n += live_alloc_.capacity() * sizeof(std::uint32_t);
  n += allocations_.capacity() * sizeof(Allocation);
  n += events_.capacity() * sizeof(Event);
  return n;
}

// ---------------------------------------------------------------------------------------------
// analyze()

namespace {

// A run of events with no role-buffer event of the pool after its first event.
struct Interval {
  bool any = false;            // holds a point inside the window
  Bytes max_c = 0;             // max of C over the interval's points
  std::size_t argmax = 0;      // first event reaching max_c
  CategoryBytes cat_at_max{};  // C's breakdown there
  std::size_t first = 0;       // first event (a role event, except for interval 0)
};

struct PoolScan {
  std::vector<Interval> intervals;       // intervals[j + 1] starts with role_events[j]
  std::vector<Interval> steady;          // the same runs, only points from event `from - 1` on
  std::vector<std::size_t> role_events;  // event indices
};

// Keeps the first point reaching the interval's maximum (points before `from - 1` skipped).
void consider(Interval& iv, std::size_t i, std::size_t from, Bytes c, const CategoryBytes& cat) {
  if (i + 1 >= from && (!iv.any || c > iv.max_c)) {
    iv.any = true;
    iv.max_c = c;
    iv.argmax = i;
    iv.cat_at_max = cat;
  }
}

// Walks the events of one pool class once, for the whole run and for the steady window that
// starts at event `from - 1` (with_steady; otherwise `steady` stays empty).
PoolScan scan_pool(const std::vector<MemoryLedger::Event>& events,
                   const std::vector<LedgerBuffer>& bufs, bool device, std::size_t from,
                   bool with_steady) {
  PoolScan s;
  // Sized once: grown by doubling, the three lists were most of a stage 2 simulation's transient
  // allocations (583 roles at 1024 GPUs: each role's buffers are a run of role events). The count
  // is a pass of its own, skipped when no buffer is per role (stage 3: one role).
  std::size_t role_events = 0;
  if (std::any_of(bufs.begin(), bufs.end(), [](const LedgerBuffer& b) { return b.per_role; }))
    for (const MemoryLedger::Event& e : events) {
      const LedgerBuffer& b = bufs[e.buffer];
      role_events += is_device(b.pool) == device && b.per_role;
    }
  s.role_events.reserve(role_events);
  s.intervals.reserve(role_events + 1);
  if (with_steady) s.steady.reserve(role_events + 1);
  s.intervals.emplace_back();
  if (with_steady) s.steady.emplace_back();
  Bytes c = 0;
  CategoryBytes cat{};
  for (std::size_t i = 0; i < events.size(); ++i) {
    const LedgerBuffer& b = bufs[events[i].buffer];
    if (is_device(b.pool) == device && b.per_role) {
      s.role_events.push_back(i);
      s.intervals.emplace_back().first = i;
      if (with_steady) s.steady.emplace_back().first = i;
    } else if (is_device(b.pool) == device) {
      c = apply(c, b.bytes, events[i].alloc);
      Bytes& slot = cat[cat_index(b.category)];
      slot = apply(slot, b.bytes, events[i].alloc);
    }
    consider(s.intervals.back(), i, 0, c, cat);
    if (with_steady) consider(s.steady.back(), i, from, c, cat);
  }
  return s;
}

// Sparse table: the best interval (largest max_c, earliest on ties, intervals without points last)
// of any range in O(1) after O(n log n) preprocessing.
class RangeMax {
 public:
  explicit RangeMax(const std::vector<Interval>& iv) : iv_(iv) {
    levels_.push_back(std::vector<std::uint32_t>(iv.size()));
    for (std::uint32_t i = 0; i < iv.size(); ++i) levels_[0][i] = i;
    for (std::size_t w = 2; w <= iv.size(); w *= 2) {
      const std::vector<std::uint32_t>& prev = levels_.back();
      std::vector<std::uint32_t> next(iv.size() - w + 1);
      for (std::size_t i = 0; i < next.size(); ++i) next[i] = better(prev[i], prev[i + w / 2]);
      levels_.push_back(std::move(next));
    }
  }
  /// Best interval in [a, b] (a <= b < size).
  std::uint32_t query(std::size_t a, std::size_t b) const {
    std::size_t k = 0;
    while ((std::size_t{2} << k) <= b - a + 1) ++k;
    return better(levels_[k][a], levels_[k][b + 1 - (std::size_t{1} << k)]);
  }

 private:
  std::uint32_t better(std::uint32_t a, std::uint32_t b) const {
    if (!iv_[b].any) return a;
    if (!iv_[a].any) return b;
    if (iv_[b].max_c > iv_[a].max_c || (iv_[b].max_c == iv_[a].max_c && b < a)) return b;
    return a;
  }
  const std::vector<Interval>& iv_;
  std::vector<std::vector<std::uint32_t>> levels_;
};

// Role k's size changes, role by role (CSR): change = (role event j, bytes).
struct RoleChanges {
  std::vector<std::size_t> offset;  // roles + 1
  std::vector<std::pair<std::uint32_t, Bytes>> change;
};

RoleChanges role_changes(const PoolScan& s, const std::vector<MemoryLedger::Event>& events,
                         const std::vector<LedgerBuffer>& bufs, std::uint32_t roles) {
  RoleChanges rc;
  rc.offset.assign(roles + 1, 0);
  for (std::size_t e : s.role_events)
    for (const RoleBytes& r : bufs[events[e].buffer].role_bytes) ++rc.offset[r.role + 1];
  for (std::uint32_t k = 0; k < roles; ++k) rc.offset[k + 1] += rc.offset[k];
  rc.change.resize(rc.offset[roles]);
  std::vector<std::size_t> fill(rc.offset.begin(), rc.offset.end() - 1);
  for (std::uint32_t j = 0; j < s.role_events.size(); ++j)
    for (const RoleBytes& r : bufs[events[s.role_events[j]].buffer].role_bytes)
      rc.change[fill[r.role]++] = {j, r.bytes};
  return rc;
}

// Calls f(first interval, last interval, step value) for each run of role k's constant step value.
template <class F>
void for_each_run(const PoolScan& s, const std::vector<MemoryLedger::Event>& events,
                  const RoleChanges& rc, std::uint32_t k, F&& f) {
  Bytes r = 0;
  std::size_t start = 0;
  for (std::size_t c = rc.offset[k]; c < rc.offset[k + 1]; ++c) {
    const auto [j, bytes] = rc.change[c];
    if (j + 1 > start && f(start, std::size_t{j}, r)) return;
    r = apply(r, bytes, events[s.role_events[j]].alloc);
    start = j + 1;
  }
  f(start, s.intervals.size() - 1, r);
}

// Role k's peak over `ivs` (s.intervals or s.steady), with rm built over the same intervals.
MemoryPeak role_peak(const PoolScan& s, const std::vector<Interval>& ivs, const RangeMax& rm,
                     const RoleChanges& rc, const std::vector<MemoryLedger::Event>& events,
                     const std::vector<LedgerBuffer>& bufs, std::uint32_t k) {
  MemoryPeak p;
  std::size_t best = ivs.size();
  for_each_run(s, events, rc, k, [&](std::size_t a, std::size_t b, Bytes r) {
    const std::uint32_t q = rm.query(a, b);
    if (ivs[q].any && (best == ivs.size() || saturating_add(ivs[q].max_c, r) > p.bytes)) {
      best = q;
      p.bytes = saturating_add(ivs[q].max_c, r);
    }
    return false;
  });
  if (best == ivs.size()) return MemoryPeak{};
  const Interval& iv = ivs[best];
  p.event = iv.argmax;
  p.t = events[iv.argmax].t;
  p.by_category = iv.cat_at_max;
  for (std::size_t c = rc.offset[k]; c < rc.offset[k + 1] && rc.change[c].first < best; ++c) {
    const auto [j, bytes] = rc.change[c];
    const LedgerBuffer& b = bufs[events[s.role_events[j]].buffer];
    Bytes& slot = p.by_category[cat_index(b.category)];
    slot = apply(slot, bytes, events[s.role_events[j]].alloc);
  }
  return p;
}

// The first event that takes role k above `cap`. Called only when the role's peak (from the fast
// analysis) exceeds the capacity, so simulations without an OOM never pay for this replay; a plain
// walk of the events is used because the first crossing, unlike the maximum, is not decomposable
// over the common curve and the role's own buffers.
OomEvent role_oom(const std::vector<MemoryLedger::Event>& events,
                  const std::vector<LedgerBuffer>& bufs, std::uint32_t k, Bytes cap) {
  OomEvent oom;
  Bytes live = 0;
  for (const auto& ev : events) {
    const LedgerBuffer& buf = bufs[ev.buffer];
    if (!is_device(buf.pool)) continue;
    live = apply(live, buf.bytes_for(k), ev.alloc);
    if (live > cap) {
      oom = {ev.t, k, ev.buffer, buf.name, buf.category, buf.bytes_for(k), live, cap};
      break;
    }
  }
  return oom;
}

}  // namespace

std::vector<RoleMemory> MemoryLedger::analyze(Bytes device_capacity, SimTime steady_from) const {
  const auto from =
      static_cast<std::size_t>(std::upper_bound(events_.begin(), events_.end(), steady_from,
                                                [](SimTime t, const Event& e) { return t < e.t; }) -
                               events_.begin());
  const PoolScan dev = scan_pool(events_, buffers_, true, from, true);
  const RangeMax dev_rm(dev.intervals);
  const RangeMax steady_rm(dev.steady);
  const RoleChanges dev_rc = role_changes(dev, events_, buffers_, roles_);
  const bool any_host = std::any_of(buffers_.begin(), buffers_.end(),
                                    [](const LedgerBuffer& b) { return !is_device(b.pool); });
  const PoolScan host =
      any_host ? scan_pool(events_, buffers_, false, 0, false) : PoolScan{{Interval{}}, {}, {}};
  const RangeMax host_rm(host.intervals);
  const RoleChanges host_rc = role_changes(host, events_, buffers_, roles_);
  std::vector<RoleMemory> out(roles_);
  for (std::uint32_t k = 0; k < roles_; ++k) {
    RoleMemory& m = out[k];
    m.device = role_peak(dev, dev.intervals, dev_rm, dev_rc, events_, buffers_, k);
    m.steady = role_peak(dev, dev.steady, steady_rm, dev_rc, events_, buffers_, k);
    if (any_host) m.host = role_peak(host, host.intervals, host_rm, host_rc, events_, buffers_, k);
    if (device_capacity != 0 && m.device.bytes > device_capacity)
      m.oom = role_oom(events_, buffers_, k, device_capacity);
  }
  return out;
}

}  // namespace zerosim
