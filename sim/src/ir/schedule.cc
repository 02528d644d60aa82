// Schedule IR basics: per-role size lookups and the consistency checker every schedule passes after
// building or reading.
#include "zerosim/schedule.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace zerosim {

std::uint64_t RankRole::rank_count() const {
  std::uint64_t n = 0;
  for (const auto& [first, last] : ranks)
    if (last >= first) n += static_cast<std::uint64_t>(last - first) + 1;
  return n;
}

std::uint32_t Schedule::role_of(std::uint32_t rank) const {
  // Each role's ranges are sorted and disjoint: binary search inside every role.
  for (std::size_t r = 0; r < roles.size(); ++r) {
    const auto& ranges = roles[r].ranks;
    auto it = std::upper_bound(ranges.begin(), ranges.end(), rank,
                               [](std::uint32_t v, const auto& range) { return v < range.first; });
    if (it != ranges.begin() && std::prev(it)->second >= rank) return static_cast<std::uint32_t>(r);
  }
  return kNone;
}

Elements Schedule::buffer_numel(std::uint32_t buffer, std::uint32_t role) const {
  if (buffer >= buffers.size()) return 0;
  const Buffer& b = buffers[buffer];
  if (b.slot == kNone) return b.numel;
  if (role >= roles.size() || b.slot >= roles[role].slots.size()) return 0;
  return roles[role].slots[b.slot];
}

Elements Schedule::op_elements(const Op& op, std::uint32_t role) const {
  if (op.slot == kNone) return op.elements;
  if (role >= roles.size() || op.slot >= roles[role].slots.size()) return 0;
  return roles[role].slots[op.slot];
}

namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

void validate_roles(const Schedule& s, const std::string& src, Diagnostics& d) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> all;
  for (std::size_t r = 0; r < s.roles.size(); ++r) {
    const RankRole& role = s.roles[r];
    const std::string ptr = "/roles/" + str(r);
    if (role.slots.size() != s.meta.slot_names.size())
      d.error(src, ptr + "/slots",
              "expected " + str(s.meta.slot_names.size()) +
                  " slot values (one per slot name), got " + str(role.slots.size()));
    if (role.ranks.empty())
      d.error(src, ptr + "/ranks", "expected at least one rank range, got none");
    for (std::size_t i = 0; i < role.ranks.size(); ++i) {
      const auto& [first, last] = role.ranks[i];
      if (first > last)
        d.error(src, ptr + "/ranks/" + str(i),
                "expected first <= last, got [" + str(first) + ", " + str(last) + "]");
      if (i > 0 && role.ranks[i - 1].second >= first)
        d.error(src, ptr + "/ranks/" + str(i), "expected ranges sorted and disjoint");
      all.push_back(role.ranks[i]);
    }
    if (!role.ranks.empty() && role.representative != role.ranks.front().first)
      d.error(src, ptr + "/representative",
              "expected the role's first rank " + str(role.ranks.front().first) + ", got " +
                  str(role.representative));
  }
  std::sort(all.begin(), all.end());
  std::uint64_t next = 0;  // first rank not yet covered
  for (const auto& [first, last] : all) {
    if (first != next) {
      d.error(
          src, "/roles",
          "expected the roles to cover ranks 0.." + str(s.meta.world - 1) + " exactly once, " +
              (first < next ? "got rank " + str(first) + " twice"
                            : "got ranks " + str(next) + ".." + str(first - 1) + " in no role"));
      return;
    }
    next = static_cast<std::uint64_t>(last) + 1;
  }
  if (next != s.meta.world)
    d.error(src, "/roles",
            "expected the roles to cover ranks 0.." + str(s.meta.world - 1) +
                " exactly once, got " +
                (next < s.meta.world
                     ? "ranks " + str(next) + ".." + str(s.meta.world - 1) + " in no role"
                     : "ranks up to " + str(next - 1)));
}

void validate_collective(const Op& op, const std::string& src, const std::string& ptr,
                         Diagnostics& d) {
  if (op.group_size == 0)
    d.error(src, ptr + "/group_size", "expected a group of at least 1 rank, got 0");
  const bool rooted =
      op.collective == CollectiveKind::Reduce || op.collective == CollectiveKind::Broadcast;
  if (rooted && (op.dst < 0 || static_cast<std::uint64_t>(op.dst) >= op.group_size))
    d.error(src, ptr + "/dst",
            "expected a root rank in 0.." + str(op.group_size == 0 ? 0 : op.group_size - 1) +
                ", got " + std::to_string(op.dst));
  if (!rooted && op.dst != -1)
    d.error(src, ptr + "/dst",
            "expected no root (-1) for " + std::string(collective_name(op.collective)) + ", got " +
                std::to_string(op.dst));
}

// Alloc/Free pairing in program order: no double Alloc, no Free of a dead buffer, nothing but
// persistent buffers live at the end.
void validate_lifetimes(const Schedule& s, const std::string& src, Diagnostics& d) {
  std::vector<std::uint32_t> live_since(s.buffers.size(), kNone);
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.buffer >= s.buffers.size()) continue;
    const std::string ptr = "/ops/" + str(i);
    if (op.kind == OpKind::Alloc) {
      if (live_since[op.buffer] != kNone)
        d.error(src, ptr,
                "expected buffer " + quote(s.buffers[op.buffer].name) +
                    " to be free before its Alloc, got it live since op " +
                    str(live_since[op.buffer]));
      live_since[op.buffer] = static_cast<std::uint32_t>(i);
    } else if (op.kind == OpKind::Free) {
      if (live_since[op.buffer] == kNone)
        d.error(src, ptr,
                "expected buffer " + quote(s.buffers[op.buffer].name) +
                    " to be live before its Free, got it free");
      live_since[op.buffer] = kNone;
    }
  }
  for (std::size_t b = 0; b < s.buffers.size(); ++b)
    if (live_since[b] != kNone && !s.buffers[b].persistent)
      d.error(src, "/buffers/" + str(b),
              "expected buffer " + quote(s.buffers[b].name) + " (allocated at op " +
                  str(live_since[b]) +
                  ") to be freed or marked persistent, got it live at the end");
}

void validate_ops(const Schedule& s, const std::string& src, Diagnostics& d) {
  const std::size_t n_slots = s.meta.slot_names.size();
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    const std::string ptr = "/ops/" + str(i);
    if (op.buffer != kNone && op.buffer >= s.buffers.size())
      d.error(src, ptr + "/buffer",
              "expected a buffer index below " + str(s.buffers.size()) + ", got " + str(op.buffer));
    const bool needs_buffer = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
    if (needs_buffer && op.buffer == kNone)
      d.error(src, ptr + "/buffer", "expected a buffer for " + std::string(op_kind_name(op.kind)));
    if (op.slot != kNone && op.slot >= n_slots)
      d.error(src, ptr + "/slot",
              "expected a slot index below " + str(n_slots) + ", got " + str(op.slot));
    for (std::size_t k = 0; k < op.deps.size(); ++k)
      if (op.deps[k] >= i)
        d.error(src, ptr + "/deps/" + str(k),
                "expected an earlier op index (below " + str(i) + "), got " + str(op.deps[k]));
    if (op.step >= s.meta.steps)
      d.error(src, ptr + "/step",
              "expected a step below " + str(s.meta.steps) + ", got " + str(op.step));
    if (op.micro_step >= s.meta.grad_accum)
      d.error(
          src, ptr + "/micro_step",
          "expected a micro-step below " + str(s.meta.grad_accum) + ", got " + str(op.micro_step));
    if (op.kind == OpKind::Collective) validate_collective(op, src, ptr, d);
  }
}

}  // namespace

Diagnostics validate_schedule(const Schedule& s, const std::string& source) {
  Diagnostics d;
  if (s.meta.world == 0)
    d.error(source, "/meta/world", "expected a world size of at least 1, got 0");
  if (s.meta.steps == 0) d.error(source, "/meta/steps", "expected at least 1 step, got 0");
  if (s.meta.grad_accum == 0)
    d.error(source, "/meta/grad_accum", "expected at least 1 micro-step, got 0");
  if (d.has_errors()) return d;
  for (std::size_t b = 0; b < s.buffers.size(); ++b)
    if (s.buffers[b].slot != kNone && s.buffers[b].slot >= s.meta.slot_names.size())
      d.error(source, "/buffers/" + str(b) + "/slot",
              "expected a slot index below " + str(s.meta.slot_names.size()) + ", got " +
                  str(s.buffers[b].slot));
  validate_roles(s, source, d);
  validate_ops(s, source, d);
  validate_lifetimes(s, source, d);
  return d;
}

}  // namespace zerosim
