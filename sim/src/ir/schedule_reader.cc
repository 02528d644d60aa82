// Reader of schedule JSON (schedule_io.h). Layers as style.md §4.4: syntax (json::parse, with line
// and column), header (format and version; a wrong one stops reading, since nothing after it can be
// trusted), schema (types, ranges, enum names with "did you mean", unknown keys; param and layer
// indices against the model when one is given), then the IR's own rules through lower_schedule
// (schedule_graph.h: references, rank roles covering 0..world-1 exactly once, collectives,
// lifetimes), the one check every consumer shares. No exception leaves this file.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "base/json_reader.h"
#include "zerosim/collective_model.h"
#include "zerosim/schedule_graph.h"
#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

using json::JsonReader;
constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();

using json::enum_names;

// Every accepted spelling, per enum, in enum order (index = value). ReduceOp::None is the omitted
// default, so a written reduce_op is "sum" or "max" (index + 1 = value).
struct Names {
  std::vector<std::string> stream, kind, phase, category, pool, dtype, collective, reduce_op,
      copy_mode, derived;
};
const Names& names() {
  static const Names n = {
      enum_names<Stream>(kStreamCount, stream_name),
      enum_names<OpKind>(kOpKindCount, op_kind_name),
      enum_names<Phase>(kPhaseCount, phase_name),
      enum_names<BufferCategory>(kCategoryCount, category_name),
      enum_names<MemoryPool>(kMemoryPoolCount, memory_pool_name),
      enum_names<DType>(kDTypeCount, dtype_name),
      enum_names<CollectiveKind>(kCollectiveKindCount, collective_name),
      {std::string(reduce_op_name(ReduceOp::Sum)), std::string(reduce_op_name(ReduceOp::Max))},
      enum_names<CopyMode>(kCopyModeCount, copy_mode_name),
      enum_names<DerivedKind>(kDerivedKindCount, derived_kind_name),
  };
  return n;
}

/// Reads `key` as one of `names` into `out` (index = enum value + offset); absent leaves `out`.
template <class E>
void read_enum(JsonReader& r, std::string_view key, const std::vector<std::string>& names, E& out,
               std::size_t offset = 0) {
  auto s = r.get_enum(key, names);
  if (!s) return;
  auto it = std::find(names.begin(), names.end(), *s);
  out = static_cast<E>(static_cast<std::size_t>(it - names.begin()) + offset);
}

template <class T>
void read_uint(JsonReader& r, std::string_view key, std::uint64_t lo, std::uint64_t hi, T& out) {
  if (auto v = r.get_uint(key, lo, hi)) out = static_cast<T>(*v);
}

std::vector<std::string> read_strings(JsonReader& r, std::string_view key) {
  std::vector<std::string> out;
  auto c = r.child(key);
  if (!c) return out;
  auto items = c->elements();
  if (!items) return out;
  for (auto& item : *items)
    if (auto s = item.as_string()) out.push_back(*s);
  return out;
}

// "expected a buffer index 0..4, got 9", or with nothing to index "expected no buffer index
// (<empty>), got 9".
void check_index(JsonReader& r, std::string_view key, std::uint64_t value, std::uint64_t count,
                 const std::string& what, const std::string& empty) {
  if (value < count) return;
  if (count == 0)
    r.error("expected no " + what + " index (" + empty + "), got " + std::to_string(value), key);
  else
    r.error("expected a " + what + " index 0.." + std::to_string(count - 1) + ", got " +
                std::to_string(value),
            key);
}

class ScheduleReader {
 public:
  ScheduleReader(const ModelDesc* model, Diagnostics& d) : model_(model), d_(d) {}

  void read(JsonReader& root);
  Schedule take() { return std::move(s_); }

 private:
  bool read_header(JsonReader& root);
  void read_meta(JsonReader& m);
  void read_buffer(JsonReader& r, Buffer& b);
  void read_comm(JsonReader& r, CommGroup& c);
  void read_tensor(JsonReader& r, TensorInfo& t);
  void read_layout(JsonReader& r);
  void read_role(JsonReader& r, RankRole& role);
  void read_sparse_slots(JsonReader& r, SlotValues& out);
  void read_op(JsonReader& r, Op& o);
  void read_op_refs(JsonReader& r, Op& o);

  const ModelDesc* model_;
  Diagnostics& d_;
  Schedule s_;
  bool meta_ok_ = false;
  bool slot_names_ok_ = false;  // meta slot_names read without error: a role's count is checked
};

bool ScheduleReader::read_header(JsonReader& root) {
  auto format = root.child("format");
  if (!format) {
    root.error("expected \"format\": " + quote(kScheduleFormat) + ", got no \"format\" key");
    return false;
  }
  if (!format->value().is_string() || format->value().get<std::string>() != kScheduleFormat) {
    format->error("expected " + quote(kScheduleFormat) + ", got " +
                  json::describe(format->value()));
    return false;
  }
  auto version = root.child("version");
  if (!version) {
    root.error("expected \"version\": " + std::to_string(kScheduleIrVersion) +
               ", got no \"version\" key");
    return false;
  }
  const auto& v = version->value();
  if (!v.is_number_integer() || v.get<std::int64_t>() != kScheduleIrVersion) {
    // Version 1 (no communicators, no tensor table, no operands) is refused, not upgraded.
    const bool v1 = v.is_number_integer() && v.get<std::int64_t>() == 1;
    version->error("expected version " + std::to_string(kScheduleIrVersion) + ", got " +
                   json::describe(v) +
                   (v1 ? ": regenerate the file with \"zerosim schedule --output\"" : ""));
    return false;
  }
  return true;
}

// Bound of the optional GEMM-shape keys: 2^40, far beyond any hidden size or micro-batch of tokens.
constexpr std::uint64_t kMaxDimension = 1ULL << 40;

void ScheduleReader::read_meta(JsonReader& m) {
  if (!m.expect_object()) return;
  static const std::vector<std::string> keys = {
      "model", "mode",   "deepspeed_version", "optimizer", "stage",
      "world", "nodes",  "gpus_per_node",     "steps",     "grad_accum",
      "lp",    "master", "grad_accum_dtype",  "comm",      "slot_names",
      "notes"};
  for (const auto& k : keys)
    if (!m.has(k)) m.error("expected key " + quote(k) + " (every meta key is required), got none");
  ScheduleMeta& meta = s_.meta;
  if (auto v = m.get_name("model")) meta.model = *v;
  if (auto v = m.get_enum("mode", {"deepspeed", "paper"})) meta.mode = *v;
  if (auto v = m.get_enum("deepspeed_version",
                          {std::string(deepspeed_version_name(DeepSpeedVersion::Edaa722)),
                           std::string(deepspeed_version_name(DeepSpeedVersion::V0_14_4))}))
    meta.deepspeed_version = parse_deepspeed_version(*v).value_or(DeepSpeedVersion::Edaa722);
  if (auto v = m.get_name("optimizer")) meta.optimizer = *v;
  read_uint(m, "stage", 0, 3, meta.stage);
  const std::size_t before = d_.items().size();
  read_uint(m, "world", 1, kMaxCollectiveRanks, meta.world);
  meta_ok_ = m.has("world") && d_.items().size() == before;
  read_uint(m, "nodes", 1, kMaxCollectiveRanks, meta.nodes);
  read_uint(m, "gpus_per_node", 1, kMaxCollectiveRanks, meta.gpus_per_node);
  read_uint(m, "steps", 1, kU32Max, meta.steps);
  read_uint(m, "grad_accum", 1, kU32Max, meta.grad_accum);
  read_enum(m, "lp", names().dtype, meta.lp);
  read_enum(m, "master", names().dtype, meta.master);
  read_enum(m, "grad_accum_dtype", names().dtype, meta.grad_accum_dtype);
  read_enum(m, "comm", names().dtype, meta.comm);
  const std::size_t before_slots = d_.items().size();
  meta.slot_names = read_strings(m, "slot_names");
  slot_names_ok_ = m.has("slot_names") && d_.items().size() == before_slots;
  meta.notes = read_strings(m, "notes");
  // Optional (0 when absent: the GEMM shape is unknown and the engine's fallback efficiency
  // applies).
  read_uint(m, "hidden", 0, kMaxDimension, meta.hidden);
  read_uint(m, "tokens_per_micro_batch", 0, kMaxDimension, meta.tokens_per_micro_batch);
  std::vector<std::string> known = keys;
  known.emplace_back("hidden");
  known.emplace_back("tokens_per_micro_batch");
  m.reject_unknown(known);
}

void ScheduleReader::read_buffer(JsonReader& r, Buffer& b) {
  if (!r.expect_object()) return;
  if (auto v = r.get_string("name"))
    b.name = *v;
  else if (!r.has("name"))
    r.error("expected key \"name\", got none");
  if (auto v = r.get_string("spec_id")) b.spec_id = *v;
  read_enum(r, "category", names().category, b.category);
  read_enum(r, "pool", names().pool, b.pool);
  read_enum(r, "dtype", names().dtype, b.dtype);
  read_uint(r, "numel", 0, UINT64_MAX, b.numel);
  read_uint(r, "slot", 0, kU32Max - 1, b.slot);
  if (auto v = r.get_bool("persistent")) b.persistent = *v;
  if (auto v = r.get_bool("executor_owned")) b.executor_owned = *v;
  r.reject_unknown({"name", "spec_id", "category", "pool", "dtype", "numel", "slot", "persistent",
                    "executor_owned"});
}

// The tiling rule and comms[0] = the world are lower_schedule's (schedule_graph.h).
void ScheduleReader::read_comm(JsonReader& r, CommGroup& c) {
  if (!r.expect_object()) return;
  read_uint(r, "first", 0, kMaxCollectiveRanks - 1, c.first);
  read_uint(r, "size", 1, kMaxCollectiveRanks, c.size);
  read_uint(r, "stride", 1, kMaxCollectiveRanks, c.stride);
  r.reject_unknown({"first", "size", "stride"});
}

// An array of unsigned integers at `key` (absent: `out` unchanged); each element checked.
template <class T>
void read_uints(JsonReader& r, std::string_view key, std::uint64_t hi, std::vector<T>& out) {
  auto c = r.child(key);
  if (!c) return;
  auto items = c->elements();
  if (!items) return;
  out.clear();
  out.reserve(items->size());
  for (auto& item : *items)
    if (auto v = item.as_uint(0, hi)) out.push_back(static_cast<T>(*v));
}

// References (grad buffer, group, sub-group) and the layout's agreement with the plan are
// lower_schedule's.
void ScheduleReader::read_tensor(JsonReader& r, TensorInfo& t) {
  if (!r.expect_object()) return;
  for (const char* k : {"name", "shape", "numel"})
    if (!r.has(k)) r.error(std::string("expected key \"") + k + "\", got none");
  if (auto v = r.get_string("name")) t.name = *v;
  read_uints(r, "shape", UINT64_MAX, t.shape);
  read_uint(r, "numel", 0, UINT64_MAX, t.numel);
  t.dtype = s_.meta.lp;
  read_enum(r, "dtype", names().dtype, t.dtype);
  if (auto v = r.get_bool("trainable")) t.trainable = *v;
  read_uint(r, "grad", 0, kU32Max - 1, t.grad);
  read_uint(r, "group", 0, kU32Max - 1, t.group);
  read_uint(r, "flat", 0, UINT64_MAX, t.flat_offset);
  read_uint(r, "sub_group", 0, kU32Max - 1, t.sub_group);
  if (auto v = r.get_bool("persistent")) t.persistent = *v;
  r.reject_unknown({"name", "shape", "numel", "dtype", "trainable", "grad", "group", "flat",
                    "sub_group", "persistent"});
}

void ScheduleReader::read_layout(JsonReader& r) {
  if (!r.expect_object()) return;
  static const std::vector<std::string> keys = {"stage",
                                                "world",
                                                "round_robin",
                                                "sub_group_size",
                                                "param_persistence_threshold",
                                                "model_persistence_threshold",
                                                "groups",
                                                "sub_groups"};
  for (const auto& k : keys)
    if (!r.has(k))
      r.error("expected key " + quote(k) + " (every layout key is required), got none");
  Layout& l = s_.layout;
  read_uint(r, "stage", 0, 3, l.stage);
  read_uint(r, "world", 1, kMaxCollectiveRanks, l.world);
  if (auto v = r.get_bool("round_robin")) l.round_robin = *v;
  read_uint(r, "sub_group_size", 0, UINT64_MAX, l.sub_group_size);
  read_uint(r, "param_persistence_threshold", 0, UINT64_MAX, l.param_persistence_threshold);
  read_uint(r, "model_persistence_threshold", 0, UINT64_MAX, l.model_persistence_threshold);
  if (auto groups = r.child("groups"))
    if (auto items = groups->elements()) {
      l.groups.resize(items->size());
      for (std::size_t g = 0; g < items->size(); ++g) {
        JsonReader& gr = (*items)[g];
        GroupLayout& gl = l.groups[g];
        if (!gr.expect_object()) continue;
        if (!gr.has("params")) gr.error("expected key \"params\", got none");
        read_uints(gr, "params", kU32Max - 1, gl.params);
        gl.flat_order = gl.params;  // written only when round robin reorders them
        read_uints(gr, "flat_order", kU32Max - 1, gl.flat_order);
        read_uint(gr, "numel", 0, UINT64_MAX, gl.numel);
        read_uint(gr, "padding", 0, UINT64_MAX, gl.padding);
        read_uint(gr, "aligned", 0, UINT64_MAX, gl.aligned);
        read_uint(gr, "partition", 0, UINT64_MAX, gl.partition);
        gr.reject_unknown({"params", "flat_order", "numel", "padding", "aligned", "partition"});
      }
    }
  if (auto sgs = r.child("sub_groups"))
    if (auto items = sgs->elements()) {
      l.sub_groups.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) {
        JsonReader& sr = (*items)[i];
        SubGroupLayout& sg = l.sub_groups[i];
        if (!sr.expect_object()) continue;
        for (const char* k : {"group", "params", "partition_numel"})
          if (!sr.has(k)) sr.error(std::string("expected key \"") + k + "\", got none");
        read_uint(sr, "group", 0, kU32Max - 1, sg.group);
        read_uints(sr, "params", kU32Max - 1, sg.params);
        read_uint(sr, "partition_numel", 0, UINT64_MAX, sg.partition_numel);
        sr.reject_unknown({"group", "params", "partition_numel"});
      }
    }
  r.reject_unknown(keys);
}

void ScheduleReader::read_role(JsonReader& r, RankRole& role) {
  if (!r.expect_object()) return;
  for (const char* k : {"ranks", "representative", "slots"})
    if (!r.has(k)) r.error(std::string("expected key \"") + k + "\", got none");
  const std::uint64_t max_rank = meta_ok_ ? s_.meta.world - 1 : kMaxCollectiveRanks - 1;
  if (auto ranks = r.child("ranks")) {
    auto ranges = ranks->elements();
    if (ranges && ranges->empty())
      ranks->error("expected at least one [first, last] range, got []");
    if (ranges) {
      for (auto& range : *ranges) {
        auto pair = range.elements();
        if (!pair) continue;
        if (pair->size() != 2) {
          range.error("expected [first, last], got an array of " + std::to_string(pair->size()));
          continue;
        }
        auto first = (*pair)[0].as_uint(0, max_rank);
        auto last = (*pair)[1].as_uint(0, max_rank);
        if (first && last)
          role.ranks.emplace_back(static_cast<std::uint32_t>(*first),
                                  static_cast<std::uint32_t>(*last));
      }
    }
  }
  if (auto rep = r.get_uint("representative", 0, max_rank))
    role.representative = static_cast<std::uint32_t>(*rep);
  if (auto slots = r.child("slots")) {
    if (slots->value().is_object()) {
      read_sparse_slots(*slots, role.slots);
    } else if (slots->value().is_array()) {  // the dense form (every file before sparse slots)
      if (auto items = slots->elements())
        for (auto& item : *items)
          if (auto v = item.as_uint(0, UINT64_MAX)) role.slots.push_back(*v);
    } else {
      slots->error(std::string("expected {\"count\": N, \"nonzero\": [[slot, value], ...]} or "
                               "an array of slot values, got ") +
                   json::describe(slots->value()));
    }
  }
  r.reject_unknown({"ranks", "representative", "slots"});
}

// {"count": N, "nonzero": [[slot, value], ...]}: N is the number of meta slot_names; the pairs name
// distinct slots below N in ascending order, each with a non-zero value (a zero is not written, so
// one role has one spelling and a re-write is byte-identical).
void ScheduleReader::read_sparse_slots(JsonReader& r, SlotValues& out) {
  for (const char* k : {"count", "nonzero"})
    if (!r.has(k)) r.error(std::string("expected key \"") + k + "\", got none");
  std::optional<std::uint64_t> count;
  if (r.has("count")) {
    if (slot_names_ok_) {
      const std::uint64_t n = s_.meta.slot_names.size();
      count = r.get_uint("count", 0, kU32Max);
      if (count && *count != n) {
        r.error("expected a count of " + std::to_string(n) +
                    " (one per meta slot_names entry), got " + std::to_string(*count),
                "count");
        count.reset();
      }
    } else {
      count = r.get_uint("count", 0, kU32Max);
    }
  }
  if (count) out = SlotValues::zeros(*count);
  if (auto nonzero = r.child("nonzero"))
    if (auto pairs = nonzero->elements()) {
      std::optional<std::uint64_t> previous;
      for (auto& pr : *pairs) {
        auto pair = pr.elements();
        if (!pair) continue;
        if (pair->size() != 2) {
          pr.error("expected [slot, value], got an array of " + std::to_string(pair->size()));
          continue;
        }
        JsonReader& slot_r = (*pair)[0];
        JsonReader& value_r = (*pair)[1];
        std::optional<std::uint64_t> slot = slot_r.as_uint(0, kU32Max - 1);
        if (slot && count && *slot >= *count) {
          if (*count == 0)
            slot_r.error("expected no slot index (count is 0), got " + std::to_string(*slot));
          else
            slot_r.error("expected a slot index 0.." + std::to_string(*count - 1) + ", got " +
                         std::to_string(*slot));
          slot.reset();
        }
        if (slot && previous && *slot == *previous) {
          slot_r.error("expected each slot once, got slot " + std::to_string(*slot) + " again");
          slot.reset();
        } else if (slot && previous && *slot < *previous) {
          slot_r.error("expected slots in ascending order, got " + std::to_string(*slot) +
                       " after " + std::to_string(*previous));
          slot.reset();
        }
        std::optional<std::uint64_t> value;
        if (value_r.value().is_number() && value_r.value() == 0)
          value_r.error("expected a non-zero value (a zero slot is not written), got 0");
        else
          value = value_r.as_uint(1, UINT64_MAX);
        if (slot) previous = slot;
        if (slot && value && count) out.set(*slot, *value);
      }
    }
  r.reject_unknown({"count", "nonzero"});
}

void ScheduleReader::read_op(JsonReader& r, Op& o) {
  if (!r.expect_object()) return;
  if (!r.has("kind")) r.error("expected key \"kind\", got none");
  read_enum(r, "kind", names().kind, o.kind);
  read_enum(r, "stream", names().stream, o.stream);
  read_enum(r, "phase", names().phase, o.phase);
  read_uint(r, "step", 0, kU32Max, o.step);
  read_uint(r, "micro_step", 0, kU32Max, o.micro_step);
  read_uint(r, "bucket", 0, kU32Max - 1, o.bucket);
  if (auto v = r.get_number("flops", 0, std::numeric_limits<double>::infinity())) o.flops = *v;
  read_uint(r, "elements", 0, UINT64_MAX, o.elements);
  read_enum(r, "dtype", names().dtype, o.dtype);
  read_enum(r, "collective", names().collective, o.collective);
  read_uint(r, "numel", 0, UINT64_MAX, o.numel);
  read_uint(r, "out_numel", 0, UINT64_MAX, o.out_numel);
  read_enum(r, "reduce_op", names().reduce_op, o.reduce_op, 1);
  read_enum(r, "copy_mode", names().copy_mode, o.copy_mode);
  // Which kinds may scale, and that a scale is positive, are lower_schedule's.
  if (auto v = r.get_number("scale", -std::numeric_limits<double>::max(),
                            std::numeric_limits<double>::max()))
    o.scale = *v;
  if (auto v = r.get_bool("zero_fill")) o.zero_fill = *v;
  if (auto v = r.get_string("label")) o.label = *v;
  read_op_refs(r, o);
  static const std::vector<std::string> keys = {
      "kind",      "stream", "phase",     "step",      "micro_step", "buffer",     "zero_fill",
      "layer",     "update", "param",     "bucket",    "flops",      "elements",   "slot",
      "dtype",     "src",    "dst",       "copy_mode", "scale",      "collective", "numel",
      "out_numel", "comm",   "reduce_op", "root",      "deps",       "label"};
  r.reject_unknown(keys);
}

// An operand region; whether it lies inside its buffer is lower_schedule's.
void read_region(JsonReader& r, std::string_view key, Region& out) {
  auto c = r.child(key);
  if (!c || !c->expect_object()) return;
  if (c->has("list")) {  // a piece list stands alone
    read_uint(*c, "list", 0, kU32Max - 1, out.list);
    c->reject_unknown({"list"});
    return;
  }
  if (c->has("flush_grads")) {  // so does a flush's touching gradients
    read_uint(*c, "flush_grads", 0, kU32Max - 1, out.flush_grads);
    c->reject_unknown({"flush_grads"});
    return;
  }
  if (c->has("derived")) {  // and a derived operand
    read_uint(*c, "derived", 0, kU32Max - 1, out.derived);
    c->reject_unknown({"derived"});
    return;
  }
  if (!c->has("buffer"))
    c->error(
        "expected key \"buffer\" (a buffer index), \"list\", \"flush_grads\" or \"derived\", got "
        "none");
  read_uint(*c, "buffer", 0, kU32Max - 1, out.buffer);
  read_uint(*c, "offset", 0, UINT64_MAX, out.offset);
  read_uint(*c, "rank_stride", 0, UINT64_MAX, out.rank_stride);
  read_uint(*c, "length", 0, UINT64_MAX, out.length);
  c->reject_unknown({"buffer", "offset", "rank_stride", "length"});
}

// Indices into other parts of the file (or the model, when given).
void ScheduleReader::read_op_refs(JsonReader& r, Op& o) {
  read_uint(r, "buffer", 0, kU32Max - 1, o.buffer);
  read_uint(r, "slot", 0, kU32Max - 1, o.slot);
  read_uint(r, "layer", 0, kU32Max - 1, o.layer);
  read_uint(r, "update", 0, kU32Max - 1, o.update);
  read_uint(r, "param", 0, kU32Max - 1, o.param);
  if (model_ && o.layer != kNone)
    check_index(r, "layer", o.layer, model_->layers.size(), "layer", "the model has no layers");
  if (model_ && o.param != kNone)
    check_index(r, "param", o.param, model_->params.size(), "param", "the model has no params");
  read_uint(r, "comm", 0, kU32Max - 1, o.comm);
  read_region(r, "src", o.src);
  read_region(r, "dst", o.dst);
  read_uint(r, "root", 0, kU32Max - 1, o.root);
  auto deps = r.child("deps");
  if (!deps) return;
  auto items = deps->elements();
  if (!items) return;
  for (auto& item : *items)
    if (auto dep = item.as_uint(0, kU32Max - 1)) o.deps.push_back(static_cast<std::uint32_t>(*dep));
}

void ScheduleReader::read(JsonReader& root) {
  if (!root.expect_object() || !read_header(root)) return;
  static const std::vector<std::string> keys = {
      "format", "version",     "meta",        "comms",   "tensors", "layout", "updates",
      "lists",  "flush_plans", "grad_passes", "derived", "buffers", "roles",  "ops"};
  for (const char* k : {"meta", "comms", "tensors", "layout", "updates", "lists", "flush_plans",
                        "grad_passes", "derived", "buffers", "roles", "ops"})
    if (!root.has(k)) root.error(std::string("expected key \"") + k + "\", got none");
  if (auto meta = root.child("meta")) read_meta(*meta);
  if (auto comms = root.child("comms"))
    if (auto items = comms->elements()) {
      s_.comms.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) read_comm((*items)[i], s_.comms[i]);
    }
  if (auto tensors = root.child("tensors"))
    if (auto items = tensors->elements()) {
      s_.tensors.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) read_tensor((*items)[i], s_.tensors[i]);
    }
  if (auto layout = root.child("layout")) read_layout(*layout);
  if (auto lists = root.child("lists"))
    if (auto items = lists->elements()) {
      s_.lists.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) {
        auto pieces = (*items)[i].elements();
        if (!pieces) continue;
        for (JsonReader& pr : *pieces) {
          if (!pr.expect_object()) continue;
          Piece p;
          if (!pr.has("length")) pr.error("expected key \"length\", got none");
          read_uint(pr, "buffer", 0, kU32Max - 1, p.buffer);
          read_uint(pr, "offset", 0, UINT64_MAX, p.offset);
          read_uint(pr, "length", 0, UINT64_MAX, p.length);
          read_uint(pr, "rank_stride", 0, UINT64_MAX, p.rank_stride);
          read_uint(pr, "block", 0, UINT64_MAX, p.block);
          read_uint(pr, "block_stride", 0, UINT64_MAX, p.block_stride);
          read_uint(pr, "limit", 0, UINT64_MAX, p.limit);
          pr.reject_unknown(
              {"buffer", "offset", "length", "rank_stride", "block", "block_stride", "limit"});
          s_.lists[i].push_back(p);
        }
      }
    }
  if (auto plans = root.child("flush_plans"))
    if (auto items = plans->elements()) {
      s_.flush_plans.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) {
        auto entries = (*items)[i].elements();
        if (!entries) continue;
        for (JsonReader& er : *entries) {
          auto triple = er.elements();
          if (!triple) continue;
          if (triple->size() != 3) {
            er.error("expected [tensor, buffer, offset], got an array of " +
                     std::to_string(triple->size()));
            continue;
          }
          auto t = (*triple)[0].as_uint(0, kU32Max - 1);
          auto b = (*triple)[1].as_uint(0, kU32Max - 1);
          auto o = (*triple)[2].as_uint(0, UINT64_MAX);
          if (t && b && o)
            s_.flush_plans[i].entries.push_back(
                {static_cast<std::uint32_t>(*t), static_cast<std::uint32_t>(*b), *o});
        }
      }
    }
  if (auto passes = root.child("grad_passes"))
    if (auto items = passes->elements()) {
      s_.grad_passes.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) {
        JsonReader& gr = (*items)[i];
        if (!gr.expect_object()) continue;
        for (const char* k : {"flush_plans", "t3"})
          if (!gr.has(k)) gr.error(std::string("expected key \"") + k + "\", got none");
        GradPass& gp = s_.grad_passes[i];
        read_uints(gr, "flush_plans", kU32Max - 1, gp.flush_plans);
        if (auto t3 = gr.child("t3"))
          if (auto sets = t3->elements()) {
            gp.t3.resize(sets->size());
            for (std::size_t k = 0; k < sets->size(); ++k)
              if (auto bufs = (*sets)[k].elements())
                for (auto& b : *bufs)
                  if (auto v = b.as_uint(0, kU32Max - 1))
                    gp.t3[k].push_back(static_cast<std::uint32_t>(*v));
          }
        if (auto v = gr.get_bool("per_flush")) gp.per_flush = *v;
        gr.reject_unknown({"flush_plans", "t3", "per_flush"});
      }
    }
  if (auto derived = root.child("derived"))
    if (auto items = derived->elements()) {
      s_.derived.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) {
        JsonReader& dr = (*items)[i];
        if (!dr.expect_object()) continue;
        if (!dr.has("kind")) dr.error("expected key \"kind\", got none");
        DerivedOperand& d = s_.derived[i];
        read_enum(dr, "kind", names().derived, d.kind);
        read_uint(dr, "pass", 0, kU32Max - 1, d.pass);
        read_uint(dr, "set", 0, kU32Max - 1, d.set);
        read_uint(dr, "flush", 0, kU32Max - 1, d.flush);
        read_uint(dr, "group", 0, kU32Max - 1, d.group);
        read_uint(dr, "flat", 0, kU32Max - 1, d.flat);
        read_uint(dr, "flush_plan", 0, kU32Max - 1, d.flush_plan);
        read_uints(dr, "buffers", kU32Max - 1, d.buffers);
        read_uint(dr, "window", 0, UINT64_MAX, d.window);
        read_uint(dr, "window_length", 0, UINT64_MAX, d.window_length);
        read_uint(dr, "rank", 0, kU32Max - 1, d.rank);
        read_uint(dr, "into", 0, kU32Max - 1, d.into);
        if (auto v = dr.get_bool("packed")) d.packed = *v;
        dr.reject_unknown({"kind", "pass", "set", "flush", "group", "flat", "flush_plan", "buffers",
                           "window", "window_length", "rank", "into", "packed"});
      }
    }
  if (auto updates = root.child("updates"))
    if (auto items = updates->elements()) {
      s_.updates.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) {
        JsonReader& u = (*items)[i];
        if (!u.expect_object()) continue;
        UpdateCall& c = s_.updates[i];
        read_region(u, "master", c.master);
        read_region(u, "grad", c.grad);
        read_region(u, "exp_avg", c.exp_avg);
        read_region(u, "exp_avg_sq", c.exp_avg_sq);
        read_region(u, "lp_out", c.lp_out);
        read_region(u, "norms", c.norms);
        read_region(u, "overflow", c.overflow);
        u.reject_unknown(
            {"master", "grad", "exp_avg", "exp_avg_sq", "lp_out", "norms", "overflow"});
      }
    }
  if (auto buffers = root.child("buffers"))
    if (auto items = buffers->elements()) {
      s_.buffers.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) read_buffer((*items)[i], s_.buffers[i]);
    }
  if (auto roles = root.child("roles")) {
    if (auto items = roles->elements()) {
      s_.roles.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) read_role((*items)[i], s_.roles[i]);
    }
  }
  if (auto ops = root.child("ops"))
    if (auto items = ops->elements()) {
      s_.ops.resize(items->size());
      for (std::size_t i = 0; i < items->size(); ++i) read_op((*items)[i], s_.ops[i]);
    }
  root.reject_unknown(keys);
}

}  // namespace

Result<Schedule> read_schedule_json(const std::string& text, const std::string& source,
                                    const ModelDesc* model) {
  Diagnostics d;
  auto doc = json::parse(text, source, d);
  if (!doc) return Result<Schedule>(d);
  JsonReader root(*doc, source, "", d);
  ScheduleReader reader(model, d);
  reader.read(root);
  if (d.has_errors()) return Result<Schedule>(d);
  Schedule s = reader.take();
  // The ops say how many steps the schedule holds: a file whose meta.steps disagrees was simulated
  // as that many steps (meta.steps 10^8 over a 2-step file: 13 GB and a report of 10^8 empty
  // steps, exit 0; found by a hostile-input pass), and a file without ops as an empty run.
  if (s.ops.empty()) {
    d.error(source, "/ops", "expected the schedule's ops, got none");
    return Result<Schedule>(d);
  }
  std::uint32_t last_step = 0;
  for (const Op& op : s.ops) last_step = std::max(last_step, op.step);
  if (std::uint64_t{last_step} + 1 != s.meta.steps) {
    d.error(source, "/meta/steps",
            "expected the steps the ops hold (" + std::to_string(std::uint64_t{last_step} + 1) +
                "), got " + std::to_string(s.meta.steps));
    return Result<Schedule>(d);
  }
  // The IR's own rules (references, roles covering the ranks, collectives, lifetimes): the same
  // lowering every consumer runs, so a file and a builder are held to one standard.
  auto graph = lower_schedule(s, source);
  if (!graph.ok()) return Result<Schedule>(graph.diagnostics());
  return Result<Schedule>(std::move(s), d);
}

Result<Schedule> read_schedule_file(const std::string& path, const ModelDesc* model) {
  Diagnostics d;
  std::string text;
  if (!json::read_file(path, text, d)) return Result<Schedule>(d);
  return read_schedule_json(text, path, model);
}

}  // namespace zerosim
