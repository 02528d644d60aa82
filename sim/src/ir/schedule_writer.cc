// Writer of schedule JSON (schedule_io.h). The document is streamed: the header and meta first,
// then one line per buffer, role and op, each dumped from a small ordered_json, so keys come out in
// a fixed order and a million-op schedule never exists as one JSON tree in memory. An op field is
// written only when it differs from a default-constructed Op (the compactness rule the reader and
// scenarios/README.md rely on); "kind" is always written.
#include <nlohmann/json.hpp>
#include <ostream>

#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

using ojson = nlohmann::ordered_json;

std::string str(std::string_view s) { return std::string(s); }

ojson meta_json(const ScheduleMeta& m, bool names) {
  ojson j;
  if (names) j["model"] = m.model;
  j["mode"] = m.mode;
  j["deepspeed_version"] = str(deepspeed_version_name(m.deepspeed_version));
  j["optimizer"] = m.optimizer;
  j["stage"] = m.stage;
  j["world"] = m.world;
  j["nodes"] = m.nodes;
  j["gpus_per_node"] = m.gpus_per_node;
  j["steps"] = m.steps;
  j["grad_accum"] = m.grad_accum;
  if (m.hidden != 0) j["hidden"] = m.hidden;  // optional: 0 (unknown) is not written
  if (m.tokens_per_micro_batch != 0) j["tokens_per_micro_batch"] = m.tokens_per_micro_batch;
  j["lp"] = str(dtype_name(m.lp));
  j["master"] = str(dtype_name(m.master));
  j["grad_accum_dtype"] = str(dtype_name(m.grad_accum_dtype));
  j["comm"] = str(dtype_name(m.comm));
  j["slot_names"] = m.slot_names;
  if (names) j["notes"] = m.notes;
  return j;
}

ojson buffer_json(const Buffer& b) {
  const Buffer d;
  ojson j;
  j["name"] = b.name;
  if (b.spec_id != d.spec_id) j["spec_id"] = b.spec_id;
  if (b.category != d.category) j["category"] = str(category_name(b.category));
  if (b.pool != d.pool) j["pool"] = str(memory_pool_name(b.pool));
  if (b.dtype != d.dtype) j["dtype"] = str(dtype_name(b.dtype));
  if (b.numel != d.numel) j["numel"] = b.numel;
  if (b.slot != d.slot) j["slot"] = b.slot;
  if (b.persistent != d.persistent) j["persistent"] = b.persistent;
  if (b.executor_owned != d.executor_owned) j["executor_owned"] = b.executor_owned;
  return j;
}

ojson comm_json(const CommGroup& c) {
  const CommGroup d;
  ojson j = ojson::object();
  if (c.first != d.first) j["first"] = c.first;
  if (c.size != d.size) j["size"] = c.size;
  if (c.stride != d.stride) j["stride"] = c.stride;
  return j;
}

// A tensor's dtype is written only when it is not the schedule's LP dtype.
ojson tensor_json(const TensorInfo& t, DType lp) {
  const TensorInfo d;
  ojson j;
  j["name"] = t.name;
  j["shape"] = t.shape;
  j["numel"] = t.numel;
  if (t.dtype != lp) j["dtype"] = str(dtype_name(t.dtype));
  if (t.trainable != d.trainable) j["trainable"] = t.trainable;
  if (t.grad != d.grad) j["grad"] = t.grad;
  if (t.group != d.group) j["group"] = t.group;
  if (t.flat_offset != d.flat_offset) j["flat"] = t.flat_offset;
  if (t.sub_group != d.sub_group) j["sub_group"] = t.sub_group;
  if (t.persistent != d.persistent) j["persistent"] = t.persistent;
  return j;
}

ojson group_json(const GroupLayout& g) {
  ojson j;
  j["params"] = g.params;
  if (g.flat_order != g.params) j["flat_order"] = g.flat_order;
  if (g.numel != 0) j["numel"] = g.numel;
  if (g.padding != 0) j["padding"] = g.padding;
  if (g.aligned != 0) j["aligned"] = g.aligned;
  if (g.partition != 0) j["partition"] = g.partition;
  return j;
}

// Options always; groups and sub-groups as arrays of one-line objects.
void write_layout(std::ostream& out, const Layout& l) {
  ojson j;
  j["stage"] = l.stage;
  j["world"] = l.world;
  j["round_robin"] = l.round_robin;
  j["sub_group_size"] = l.sub_group_size;
  j["param_persistence_threshold"] = l.param_persistence_threshold;
  j["model_persistence_threshold"] = l.model_persistence_threshold;
  std::string head = j.dump();
  head.pop_back();  // the closing brace: groups and sub-groups follow
  out << "  \"layout\": " << head << ",\n    \"groups\": [";
  for (std::size_t g = 0; g < l.groups.size(); ++g)
    out << (g == 0 ? "\n      " : ",\n      ") << group_json(l.groups[g]).dump();
  out << (l.groups.empty() ? "]" : "\n    ]") << ",\n    \"sub_groups\": [";
  for (std::size_t i = 0; i < l.sub_groups.size(); ++i) {
    const SubGroupLayout& sg = l.sub_groups[i];
    ojson s;
    s["group"] = sg.group;
    s["params"] = sg.params;
    s["partition_numel"] = sg.partition_numel;
    out << (i == 0 ? "\n      " : ",\n      ") << s.dump();
  }
  out << (l.sub_groups.empty() ? "]" : "\n    ]") << "},\n";
}

// Slots sparse: the count and the non-zero [slot, value] pairs, ascending slot. A stage 0-2 role
// has a handful of non-zero slots out of one per bucket and partition boundary, so the dense array
// made the file grow with the ranks (O(roles x slots)); the dense form is kept for the digest.
ojson role_json(const RankRole& r, SlotsForm form) {
  ojson j;
  ojson ranges = ojson::array();
  for (const auto& [first, last] : r.ranks) ranges.push_back(ojson::array({first, last}));
  j["ranks"] = ranges;
  j["representative"] = r.representative;
  if (form == SlotsForm::Dense) {
    j["slots"] = r.slots.dense();
    return j;
  }
  ojson nonzero = ojson::array();
  for (const SlotValues::Entry& e : r.slots.nonzero())
    if (e.slot < r.slots.size())  // as dense() has it
      nonzero.push_back(ojson::array({e.slot, e.value}));
  ojson slots;
  slots["count"] = r.slots.size();
  slots["nonzero"] = std::move(nonzero);
  j["slots"] = std::move(slots);
  return j;
}

// A region's fields other than the buffer only when non-zero.
ojson region_json(const Region& r) {
  ojson j;
  if (r.list != kNone) {
    j["list"] = r.list;
    return j;
  }
  if (r.flush_grads != kNone) {
    j["flush_grads"] = r.flush_grads;
    return j;
  }
  if (r.derived != kNone) {
    j["derived"] = r.derived;
    return j;
  }
  j["buffer"] = r.buffer;
  if (r.offset != 0) j["offset"] = r.offset;
  if (r.rank_stride != 0) j["rank_stride"] = r.rank_stride;
  if (r.length != 0) j["length"] = r.length;
  return j;
}

ojson grad_pass_json(const GradPass& g) {
  ojson j;
  j["flush_plans"] = g.flush_plans;
  j["t3"] = g.t3;
  if (g.per_flush) j["per_flush"] = true;  // absent: packed (every schedule before it)
  return j;
}

// Arguments only when they differ from a default-constructed DerivedOperand; "kind" always.
ojson derived_json(const DerivedOperand& o) {
  const DerivedOperand d;
  ojson j;
  j["kind"] = str(derived_kind_name(o.kind));
  if (o.pass != d.pass) j["pass"] = o.pass;
  if (o.set != d.set) j["set"] = o.set;
  if (o.flush != d.flush) j["flush"] = o.flush;
  if (o.group != d.group) j["group"] = o.group;
  if (o.flat != d.flat) j["flat"] = o.flat;
  if (o.flush_plan != d.flush_plan) j["flush_plan"] = o.flush_plan;
  if (o.buffers != d.buffers) j["buffers"] = o.buffers;
  if (o.window != d.window) j["window"] = o.window;
  if (o.window_length != d.window_length) j["window_length"] = o.window_length;
  if (o.rank != d.rank) j["rank"] = o.rank;
  if (o.into != d.into) j["into"] = o.into;
  if (o.packed != d.packed) j["packed"] = o.packed;
  return j;
}

ojson update_json(const UpdateCall& u) {
  ojson j = ojson::object();
  const std::pair<const char*, const Region*> fields[] = {
      {"master", &u.master},         {"grad", &u.grad},     {"exp_avg", &u.exp_avg},
      {"exp_avg_sq", &u.exp_avg_sq}, {"lp_out", &u.lp_out}, {"norms", &u.norms},
      {"overflow", &u.overflow}};
  for (const auto& [key, r] : fields)
    if (!r->empty()) j[key] = region_json(*r);
  return j;
}

// Fields in declaration order of Op (zero_fill after the buffer it fills, copy_mode after the
// operands it writes); each only when it differs from the default.
ojson op_json(const Op& o) {
  const Op d;
  ojson j;
  j["kind"] = str(op_kind_name(o.kind));
  if (o.stream != d.stream) j["stream"] = str(stream_name(o.stream));
  if (o.phase != d.phase) j["phase"] = str(phase_name(o.phase));
  if (o.step != d.step) j["step"] = o.step;
  if (o.micro_step != d.micro_step) j["micro_step"] = o.micro_step;
  if (o.buffer != d.buffer) j["buffer"] = o.buffer;
  if (o.zero_fill != d.zero_fill) j["zero_fill"] = o.zero_fill;
  if (o.layer != d.layer) j["layer"] = o.layer;
  if (o.update != d.update) j["update"] = o.update;
  if (o.param != d.param) j["param"] = o.param;
  if (o.bucket != d.bucket) j["bucket"] = o.bucket;
  if (o.flops != d.flops) j["flops"] = o.flops;
  if (o.elements != d.elements) j["elements"] = o.elements;
  if (o.slot != d.slot) j["slot"] = o.slot;
  if (o.dtype != d.dtype) j["dtype"] = str(dtype_name(o.dtype));
  if (!o.src.empty()) j["src"] = region_json(o.src);
  if (!o.dst.empty()) j["dst"] = region_json(o.dst);
  if (o.copy_mode != d.copy_mode) j["copy_mode"] = str(copy_mode_name(o.copy_mode));
  if (o.scale != d.scale) j["scale"] = o.scale;
  if (o.collective != d.collective) j["collective"] = str(collective_name(o.collective));
  if (o.numel != d.numel) j["numel"] = o.numel;
  if (o.out_numel != d.out_numel) j["out_numel"] = o.out_numel;
  if (o.comm != d.comm) j["comm"] = o.comm;
  if (o.reduce_op != d.reduce_op) j["reduce_op"] = str(reduce_op_name(o.reduce_op));
  if (o.root != d.root) j["root"] = o.root;
  if (o.deps != d.deps) j["deps"] = std::vector<std::uint32_t>(o.deps.begin(), o.deps.end());
  if (o.label != d.label) j["label"] = o.label;
  return j;
}

// Writes `"key": [` + one element per line + `]`, each element made by `to_json`.
template <class T, class F>
void write_array(std::ostream& out, const char* key, const std::vector<T>& items, F&& to_json,
                 bool last) {
  out << "  \"" << key << "\": [";
  for (std::size_t i = 0; i < items.size(); ++i)
    out << (i == 0 ? "\n    " : ",\n    ") << to_json(items[i]).dump();
  out << (items.empty() ? "]" : "\n  ]") << (last ? "\n" : ",\n");
}

}  // namespace

void write_schedule_json(const Schedule& s, std::ostream& out, SlotsForm slots, bool names) {
  out << "{\n";
  out << "  \"format\": " << ojson(kScheduleFormat).dump() << ",\n";
  out << "  \"version\": " << kScheduleIrVersion << ",\n";
  out << "  \"meta\": " << meta_json(s.meta, names).dump() << ",\n";
  write_array(out, "comms", s.comms, comm_json, false);
  write_array(
      out, "tensors", s.tensors, [&](const TensorInfo& t) { return tensor_json(t, s.meta.lp); },
      false);
  write_layout(out, s.layout);
  write_array(out, "updates", s.updates, update_json, false);
  write_array(
      out, "lists", s.lists,
      [](const std::vector<Piece>& pieces) {
        ojson a = ojson::array();
        for (const Piece& p : pieces) {
          ojson j;
          if (p.buffer != kNone) j["buffer"] = p.buffer;  // absent: zeros
          if (p.offset != 0) j["offset"] = p.offset;
          j["length"] = p.length;
          if (p.rank_stride != 0) j["rank_stride"] = p.rank_stride;
          if (p.block != 0) j["block"] = p.block;
          if (p.block_stride != 0) j["block_stride"] = p.block_stride;
          if (p.limit != kNoLimit) j["limit"] = p.limit;
          a.push_back(std::move(j));
        }
        return a;
      },
      false);
  write_array(
      out, "flush_plans", s.flush_plans,
      [](const FlushPlan& f) {
        ojson a = ojson::array();
        for (const FlushEntry& e : f.entries)
          a.push_back(ojson::array({e.tensor, e.buffer, e.offset}));
        return a;
      },
      false);
  write_array(out, "grad_passes", s.grad_passes, grad_pass_json, false);
  write_array(out, "derived", s.derived, derived_json, false);
  write_array(out, "buffers", s.buffers, buffer_json, false);
  write_array(
      out, "roles", s.roles, [&](const RankRole& r) { return role_json(r, slots); }, false);
  write_array(out, "ops", s.ops, op_json, true);
  out << "}\n";
}

}  // namespace zerosim
