// Param-list files: the parameters of any PyTorch model, as dumped from model.named_parameters().
//
//   {"params": [[name, [shape...]], [name, [shape...], false], ...], "grad_order": [name, ...]}
//
// A third element `false` marks a frozen parameter (requires_grad=False: counted, no gradient).
// "grad_order" is optional; when present it must name every trainable parameter exactly once (the
// order recorded with register_post_accumulate_grad_hook); without it the order is the reverse of
// declaration. Optional "format": "zerosim-param-list" and "version": 1 or 2 are accepted; version
// 2 may carry a module section ("modules" and "forward", param_list_modules.cc), without which the
// modules are inferred from the names (scenarios/README.md).
// Zero-size dimensions are allowed (DeepSpeed's tests use numel-0 params); every shape and the
// total are limited to 1e15 elements.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "base/json_reader.h"
#include "config/param_list_internal.h"
#include "zerosim/model_loader.h"
#include "zerosim/units.h"

namespace zerosim {

namespace {

constexpr Elements kMax = static_cast<Elements>(kMaxParameters);
constexpr std::size_t kMaxHints = 5;  // "did you mean" costs O(params); only the first few get one

std::optional<ParamTensor> read_entry(json::JsonReader& e) {
  const auto& v = e.value();
  if (!v.is_array() || v.size() < 2 || v.size() > 3) {
    e.error("expected [name, [shape...]] or [name, [shape...], false], got " + json::describe(v));
    return std::nullopt;
  }
  auto items = *e.elements();
  ParamTensor p;
  bool ok = true;
  if (auto name = items[0].as_string()) {
    p.name = *name;
    if (name->empty()) {
      ok = false;
      items[0].error("expected a non-empty parameter name, got \"\"");
    } else if (const std::string why = param_list::name_problem(*name, "parameter"); !why.empty()) {
      ok = false;
      items[0].error(why);
    }
  } else {
    ok = false;
  }
  p.numel = 1;
  bool too_big = false;
  if (auto dims = items[1].elements()) {
    for (auto& d : *dims) {
      auto x = d.as_uint(0, kMax);
      if (!x) {
        ok = false;
        continue;
      }
      p.shape.push_back(*x);
      auto n = checked_mul(p.numel, *x);
      if (!n || *n > kMax) too_big = true;
      p.numel = n && *n <= kMax ? *n : 0;
    }
  } else {
    ok = false;
  }
  if (too_big) {
    ok = false;
    items[1].error("shape has more than 1e15 elements");
  }
  if (items.size() == 3) {
    if (items[2].value().is_boolean()) {
      p.trainable = items[2].value().get<bool>();
    } else {
      ok = false;
      items[2].error("expected true or false (requires_grad), got " +
                     json::describe(items[2].value()));
    }
  }
  if (!ok) return std::nullopt;
  return p;
}

// Validates "grad_order" against the params and returns the ids in that order.
std::vector<std::uint32_t> read_grad_order(json::JsonReader& g,
                                           const std::vector<ParamTensor>& params,
                                           const std::map<std::string, std::uint32_t>& ids) {
  std::vector<std::uint32_t> order;
  auto items = g.elements();
  if (!items) return order;
  std::vector<std::string> names;
  std::vector<long> seen_at(params.size(), -1);
  std::size_t hints = 0;
  for (std::size_t i = 0; i < items->size(); ++i) {
    auto& item = (*items)[i];
    auto name = item.as_string();
    if (!name) continue;
    auto it = ids.find(*name);
    if (it == ids.end()) {
      if (names.empty())
        for (const auto& p : params) names.push_back(p.name);
      std::string m = hints++ < kMaxHints ? closest_match(*name, names) : "";
      item.error("unknown parameter " + quote(*name), {},
                 m.empty() ? "" : "did you mean " + quote(m) + "?");
    } else if (!params[it->second].trainable) {
      item.error("parameter " + quote(*name) +
                 " is frozen (requires_grad false) and gets no gradient");
    } else if (seen_at[it->second] >= 0) {
      item.error("duplicate parameter " + quote(*name) + " (already at " + g.pointer() + "/" +
                 std::to_string(seen_at[it->second]) + ")");
    } else {
      seen_at[it->second] = static_cast<long>(i);
      order.push_back(it->second);
    }
  }
  std::vector<std::string> missing;
  for (std::size_t id = 0; id < params.size(); ++id)
    if (params[id].trainable && seen_at[id] < 0) missing.push_back(params[id].name);
  if (!missing.empty()) {
    std::string list;
    for (std::size_t i = 0; i < missing.size() && i < kMaxHints; ++i)
      list += (i ? ", " : "") + quote(missing[i]);
    if (missing.size() > kMaxHints) list += ", ...";
    g.error("missing " + std::to_string(missing.size()) + " trainable parameter" +
            (missing.size() == 1 ? "" : "s") + ": " + list);
  }
  return order;
}

}  // namespace

namespace param_list {

// Bounds far above real models' names (< 200 bytes, < 16 levels even with wrappers:
// "_fsdp_wrapped_module.base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight" is
// 91 bytes, 12 levels). The modules inferred from a parameter name hold every ancestor's full
// prefix, so a name costs up to length x depth / 2 bytes: one 60 KB name of 30000 levels took
// 3.7 GB, 400 KB of 200000 levels 12 GB (found by a hostile-input pass); at the bounds at most
// 128 KB. A listed module's parent is looked up prefix by prefix: time length x depth.
constexpr std::size_t kMaxNameBytes = 4096;
constexpr std::size_t kMaxNameLevels = 64;  // dot-separated components

std::string name_problem(const std::string& name, const char* what) {
  if (name.size() > kMaxNameBytes)
    return "expected a " + std::string(what) + " name of at most " + std::to_string(kMaxNameBytes) +
           " bytes, got " + std::to_string(name.size()) + " bytes";
  const auto levels = static_cast<std::size_t>(std::count(name.begin(), name.end(), '.')) + 1;
  if (levels > kMaxNameLevels)
    return "expected a " + std::string(what) + " name of at most " +
           std::to_string(kMaxNameLevels) + " dot-separated levels, got " + std::to_string(levels);
  return "";
}

}  // namespace param_list

Result<ModelDesc> load_param_list_text(const std::string& text, const std::string& source) {
  Diagnostics diags;
  auto j = json::parse(text, source, diags);
  if (!j) return Result<ModelDesc>(std::move(diags));
  json::JsonReader root(*j, source, "", diags);
  if (!root.expect_object()) return Result<ModelDesc>(std::move(diags));
  root.get_enum("format", {"zerosim-param-list"});
  const auto version = root.get_uint("version", 1, 2).value_or(1);
  ModelDesc m;
  m.name = source;
  m.source = source;
  std::map<std::string, std::uint32_t> ids;     // name -> param id
  std::map<std::string, std::size_t> first_at;  // name -> index of its entry in "params"
  Elements total = 0;
  if (auto list = root.child("params")) {
    if (auto entries = list->elements()) {
      if (entries->empty())
        list->error("expected at least one [name, [shape...]] entry, got an empty array");
      for (std::size_t i = 0; i < entries->size(); ++i) {
        auto p = read_entry((*entries)[i]);
        if (!p) continue;
        auto [it, fresh] = first_at.emplace(p->name, i);
        if (!fresh) {
          diags.error(source, list->pointer() + "/" + std::to_string(i) + "/0",
                      "duplicate parameter name " + quote(p->name) + " (first at " +
                          list->pointer() + "/" + std::to_string(it->second) + ")");
          continue;
        }
        ids.emplace(p->name, static_cast<std::uint32_t>(m.params.size()));
        total += p->numel;  // each <= 1e15 and checked below after every add: cannot wrap
        if (total > kMax) {
          list->error("the parameters total more than 1e15 elements");
          return Result<ModelDesc>(std::move(diags));
        }
        m.params.push_back(std::move(*p));
      }
      // Every tensor empty: torch's optimizer refuses the run ("optimizer got an empty parameter
      // list"); zerosim planned 0 parameters that fit at micro-batch 65536 (a hostile-input pass).
      if (!entries->empty() && total == 0 && !diags.has_errors())
        list->error("expected parameters with at least one element, got " +
                    std::to_string(entries->size()) +
                    " tensor(s) of 0 elements (the optimizer would get no parameters)");
    }
  } else {
    root.error("missing required key \"params\"");
  }
  if (auto g = root.child("grad_order"); g && !diags.has_errors()) {
    m.grad_order = read_grad_order(*g, m.params, ids);
    m.grad_order_recorded = true;
  } else if (!g) {
    for (std::size_t id = m.params.size(); id-- > 0;)
      if (m.params[id].trainable) m.grad_order.push_back(static_cast<std::uint32_t>(id));
  }
  const bool section = root.has("modules") || root.has("forward");
  if (section && version < 2) {
    root.error("a module section (\"modules\", \"forward\") needs \"version\": 2, got 1",
               "version");
  } else if (section && !diags.has_errors()) {
    param_list::read_module_section(root, m, ids);
  }
  root.reject_unknown({"format", "version", "params", "grad_order", "modules", "forward"});
  if (diags.has_errors()) return Result<ModelDesc>(std::move(diags));
  if (!section) param_list::infer_modules(m);
  return m;
}

Diagnostics apply_recorded_grad_order(ModelDesc& model, const std::string& path) {
  Diagnostics diags;
  std::string text;
  if (!json::read_file(path, text, diags)) return diags;
  auto j = json::parse(text, path, diags);
  if (!j) return diags;
  json::JsonReader root(*j, path, "", diags);
  if (!root.expect_object()) return diags;
  root.get_enum("format", {"zerosim-param-list"});
  root.get_uint("version", 1, 2);  // a version 2 list's module section is not read here
  if (auto list = root.child("params")) {
    if (auto entries = list->elements()) {
      std::size_t i = 0;
      for (; i < entries->size() && i < model.params.size(); ++i) {
        auto p = read_entry((*entries)[i]);
        if (!p) break;
        const ParamTensor& own = model.params[i];
        if (p->name != own.name || p->shape != own.shape) {
          (*entries)[i].error("expected the model's parameter " + std::to_string(i) + " " +
                              quote(own.name) + " " + shape_text(own.shape) + ", got " +
                              quote(p->name) + " " + shape_text(p->shape) +
                              ": a recording of another model");
          break;
        }
      }
      if (!diags.has_errors() && entries->size() != model.params.size())
        list->error("expected the model's " + std::to_string(model.params.size()) +
                    " parameters, got " + std::to_string(entries->size()) +
                    ": a recording of another model");
    }
  }
  std::map<std::string, std::uint32_t> ids;
  for (std::size_t i = 0; i < model.params.size(); ++i)
    ids.emplace(model.params[i].name, static_cast<std::uint32_t>(i));
  std::vector<std::uint32_t> order;
  if (auto g = root.child("grad_order")) {
    if (!diags.has_errors()) order = read_grad_order(*g, model.params, ids);
  } else {
    root.error("missing required key \"grad_order\" (the recorded gradient-ready order)");
  }
  root.reject_unknown({"format", "version", "params", "grad_order", "modules", "forward"});
  if (diags.has_errors()) return diags;
  model.grad_order = std::move(order);
  model.grad_order_recorded = true;
  return diags;
}

Result<ModelDesc> load_param_list_file(const std::string& path) {
  Diagnostics diags;
  std::string text;
  if (!json::read_file(path, text, diags)) return Result<ModelDesc>(std::move(diags));
  return load_param_list_text(text, path);
}

}  // namespace zerosim
