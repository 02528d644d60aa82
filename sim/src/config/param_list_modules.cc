// The module section of a param list (version 2) and, without one, modules inferred from the
// parameter names. Both fill ModelDesc::modules / module_calls, which the stage 3 walk fetches by.
//
//   "modules": [{"name": "", "type": "Tiny", "params": ["frozen"]},
//               {"name": "emb", "type": "Embedding", "params": ["emb.weight"]}, ...],
//   "forward": [{"module": "", "params": ["emb.weight", "frozen"], "external": ["emb.weight"]},
//               ...]
//
// "modules" is the nn.Module tree as named_modules() lists it (a parent before its children; the
// parent of `a.b` is the longest listed prefix `a`, the root "" first) with each module's direct
// params (parameters(recurse=False)); "forward" the module pre-forward hooks of one forward pass in
// call order, with the params each call's forward reads ("params") and those it does not hold
// directly ("external"; without it, "params" minus the module's own). These are the keys of the
// recorder's module map (tools/zerosim_record/modules.py), copied as they are.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/param_list_internal.h"

namespace zerosim::param_list {

namespace {

constexpr std::size_t kMaxHints = 5;

// The parent of `name` among the listed modules: its longest proper prefix at a '.', or the root.
std::optional<std::uint32_t> parent_of(const std::string& name,
                                       const std::map<std::string, std::uint32_t>& modules) {
  if (name.empty()) return std::nullopt;
  for (auto dot = name.rfind('.'); dot != std::string::npos; dot = name.rfind('.', dot - 1)) {
    auto it = modules.find(name.substr(0, dot));
    if (it != modules.end()) return it->second;
    if (dot == 0) break;
  }
  auto root = modules.find("");
  if (root == modules.end()) return std::nullopt;
  return root->second;
}

class SectionReader {
 public:
  SectionReader(ModelDesc& m, const std::map<std::string, std::uint32_t>& ids) : m_(m), ids_(ids) {}

  // A list of param names; unknown names are reported with a did-you-mean.
  std::vector<std::uint32_t> names(json::JsonReader& list) {
    std::vector<std::uint32_t> out;
    auto items = list.elements();
    if (!items) return out;
    for (auto& item : *items) {
      auto name = item.as_string();
      if (!name) continue;
      auto it = ids_.find(*name);
      if (it != ids_.end()) {
        out.push_back(it->second);
        continue;
      }
      if (all_names_.empty())
        for (const auto& p : m_.params) all_names_.push_back(p.name);
      const std::string hint = hints_++ < kMaxHints ? closest_match(*name, all_names_) : "";
      item.error("unknown parameter " + quote(*name), {},
                 hint.empty() ? "" : "did you mean " + quote(hint) + "?");
    }
    return out;
  }

  void tree(json::JsonReader& list) {
    auto entries = list.elements();
    if (!entries) return;
    if (entries->empty()) list.error("expected at least the root module {\"name\": \"\"}, got []");
    for (std::size_t i = 0; i < entries->size(); ++i) {
      auto& e = (*entries)[i];
      if (!e.expect_object()) continue;
      ModuleNode node;
      auto name = e.get_string("name");
      if (auto type = e.get_string("type")) node.type = *type;
      if (auto leaf = e.get_bool("z3_leaf")) node.z3_leaf = *leaf;
      if (auto params = e.child("params")) node.param_ids = names(*params);
      e.reject_unknown({"name", "type", "params", "z3_leaf"});
      if (!name) {
        if (!e.has("name")) e.error("missing required key \"name\"");
        continue;
      }
      if (const std::string why = name_problem(*name, "module"); !why.empty()) {
        e.error(why, "name");
        continue;
      }
      node.name = *name;
      if (i == 0 && !name->empty()) {
        e.error("expected the root module (\"name\": \"\") first, got " + quote(*name), "name");
        continue;
      }
      if (auto [it, fresh] = index_.emplace(*name, static_cast<std::uint32_t>(m_.modules.size()));
          !fresh) {
        e.error("duplicate module " + quote(*name) + " (first at " + list.pointer() + "/" +
                    std::to_string(at_[it->second]) + ")",
                "name");
        continue;
      }
      if (i > 0) {
        auto parent = parent_of(*name, index_);
        if (!parent || *parent == index_.at(*name)) {
          e.error("module " + quote(*name) + " has no parent among the modules listed before it",
                  "name");
          index_.erase(*name);
          continue;
        }
        node.parent = *parent;
        node.depth = m_.modules[*parent].depth + 1;
      }
      node.called = false;
      at_.push_back(i);
      m_.modules.push_back(std::move(node));
    }
  }

  void forward(json::JsonReader& list) {
    auto entries = list.elements();
    if (!entries) return;
    if (entries->empty()) list.error("expected at least the root module's call, got []");
    std::vector<long> called_at(m_.modules.size(), -1);
    // Calls whose forward is running, with the index of the last call inside each (kOpen when
    // the entry has no "inner": the call then ends when a call outside its subtree begins).
    struct Running {
      std::uint32_t module;
      std::size_t last;
    };
    constexpr std::size_t kOpen = static_cast<std::size_t>(-1);
    std::vector<Running> open;
    for (std::size_t i = 0; i < entries->size(); ++i) {
      auto& e = (*entries)[i];
      if (!e.expect_object()) continue;
      auto name = e.get_string("module");
      std::vector<std::uint32_t> used, external;
      bool has_external = false;
      if (auto p = e.child("params")) used = names(*p);
      if (auto x = e.child("external")) {
        has_external = true;
        external = names(*x);
      }
      std::size_t last = kOpen;
      if (auto inner = e.get_uint("inner", 0, entries->size() - 1 - i)) last = i + *inner;
      e.reject_unknown({"module", "params", "external", "inner"});
      if (!name) {
        if (!e.has("module")) e.error("missing required key \"module\"");
        continue;
      }
      auto it = index_.find(*name);
      if (it == index_.end()) {
        e.error("unknown module " + quote(*name) + " (not in \"modules\")", "module");
        continue;
      }
      const auto id = it->second;
      if (i == 0 && id != 0) e.error("expected the root module's call first", "module");
      if (called_at[id] >= 0) {
        e.error("module " + quote(*name) + " is called twice (first at " + list.pointer() + "/" +
                    std::to_string(called_at[id]) + "); one call per module per forward",
                "module");
        continue;
      }
      called_at[id] = static_cast<long>(i);
      ModuleNode& node = m_.modules[id];
      node.called = true;
      const auto& own = node.param_ids;
      auto held = [&](std::uint32_t p) {
        for (auto q : own)
          if (q == p) return true;
        return false;
      };
      if (has_external) {
        for (auto p : external)
          if (held(p)) {
            e.error("parameter " + quote(m_.params[p].name) + " is a direct param of module " +
                        quote(*name) + ", not an external one",
                    "external");
          }
      } else {
        for (auto p : used)
          if (!held(p)) external.push_back(p);
      }
      std::sort(external.begin(), external.end());
      external.erase(std::unique(external.begin(), external.end()), external.end());
      node.external_ids = std::move(external);
      // Close the calls that ended before this one began: by their "inner" count, or, without
      // one, when this call is outside their subtree.
      while (!open.empty() && (open.back().last == kOpen ? !ancestor(open.back().module, id)
                                                         : open.back().last < i)) {
        m_.module_calls.push_back({open.back().module, false});
        open.pop_back();
      }
      if (open.empty() && i > 0)
        e.error("call after the root module's forward ended (its \"inner\" calls end earlier)",
                "module");
      if (!open.empty() && open.back().last != kOpen && last != kOpen && last > open.back().last)
        e.error("call ends after the call of " + quote(m_.modules[open.back().module].name) +
                    " that it runs in (its calls end at " + list.pointer() + "/" +
                    std::to_string(open.back().last) + ")",
                "inner");
      m_.module_calls.push_back({id, true});
      open.push_back({id, last});
    }
    while (!open.empty()) {
      m_.module_calls.push_back({open.back().module, false});
      open.pop_back();
    }
  }

 private:
  bool ancestor(std::uint32_t a, std::uint32_t b) const {
    for (auto x = m_.modules[b].parent; x != kNoModule; x = m_.modules[x].parent)
      if (x == a) return true;
    return false;
  }

  ModelDesc& m_;
  const std::map<std::string, std::uint32_t>& ids_;
  std::map<std::string, std::uint32_t> index_;  ///< module name -> index
  std::vector<std::size_t> at_;                 ///< per module: its entry in "modules"
  std::vector<std::string> all_names_;
  std::size_t hints_ = 0;
};

}  // namespace

void read_module_section(json::JsonReader& root, ModelDesc& m,
                         const std::map<std::string, std::uint32_t>& ids) {
  SectionReader r(m, ids);
  auto tree = root.child("modules");
  auto calls = root.child("forward");
  if (!tree) {
    root.error("missing required key: \"forward\" needs the module tree", "modules");
    return;
  }
  r.tree(*tree);
  if (!calls) {
    root.error("missing required key: \"modules\" needs the forward calls", "forward");
    return;
  }
  if (root.diags().has_errors()) return;
  r.forward(*calls);
}

void infer_modules(ModelDesc& m) {
  std::map<std::string, std::uint32_t> index;
  m.modules.clear();
  m.module_calls.clear();
  ModuleNode root;
  root.type = "(inferred)";
  m.modules.push_back(root);
  index.emplace("", 0);
  std::vector<std::vector<std::uint32_t>> children(1);
  // The module holding `path`, created with its ancestors on first sight (declaration order).
  auto module = [&](const std::string& path) {
    std::uint32_t parent = 0;
    std::size_t from = 0;
    while (true) {
      const auto dot = path.find('.', from);
      const std::string prefix = path.substr(0, dot);
      auto [it, fresh] = index.emplace(prefix, static_cast<std::uint32_t>(m.modules.size()));
      if (fresh) {
        ModuleNode node;
        node.name = prefix;
        node.type = "(inferred)";
        node.parent = parent;
        node.depth = m.modules[parent].depth + 1;
        m.modules.push_back(std::move(node));
        children.emplace_back();
        children[parent].push_back(it->second);
      }
      parent = it->second;
      if (dot == std::string::npos) return parent;
      from = dot + 1;
    }
  };
  for (std::uint32_t p = 0; p < m.params.size(); ++p) {
    const auto& name = m.params[p].name;
    const auto dot = name.rfind('.');
    // A name without a module path, or an empty component (".w", "a..b"), belongs to the root.
    const std::string path = dot == std::string::npos ? "" : name.substr(0, dot);
    const bool plain = !path.empty() && path.front() != '.' && path.back() != '.' &&
                       path.find("..") == std::string::npos;
    m.modules[plain ? module(path) : 0].param_ids.push_back(p);
  }
  // Calls: depth-first in declaration order, each module once, properly nested.
  std::vector<std::pair<std::uint32_t, std::size_t>> stack{{0, 0}};
  m.module_calls.push_back({0, true});
  while (!stack.empty()) {
    auto& [id, next] = stack.back();
    if (next < children[id].size()) {
      const auto child = children[id][next++];
      m.module_calls.push_back({child, true});
      stack.emplace_back(child, 0);
    } else {
      m.module_calls.push_back({id, false});
      stack.pop_back();
    }
  }
  m.modules_inferred = true;
}

}  // namespace zerosim::param_list
