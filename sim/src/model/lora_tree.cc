// The nn.Module tree of a peft-wrapped model (lora_internal.h build_lora_module_tree).
//
// PeftModelForCausalLM ("") > LoraModel ("base_model") > the base model ("base_model.model"),
// whose own hooks never fire: LoraModel.forward calls self.model.forward (peft
// src/peft/tuners/tuners_utils.py:346-347), so it is listed as a module that is not called.
// Each adapted module becomes peft's lora.Linear with, in registration order (layer.py:129-135,
// 256-264), base_layer (the original module and its params), the ModuleDict lora_dropout holding
// "default" (Dropout, or Identity when p = 0), lora_A holding "default" and lora_B holding
// "default". Its forward calls base_layer, the dropout, lora_A, lora_B in that order
// (layer.py:1063); the ModuleDicts themselves are never called. The base tree is otherwise kept:
// its nodes are walked in list order (pre-forward order, a parent before its children), so the
// hook events come out in the same order as the base model's.
#include <map>
#include <string>
#include <vector>

#include "model/lora_internal.h"

namespace zerosim {

namespace {

class TreeCopy {
 public:
  TreeCopy(const ModelDesc& base, const std::vector<std::uint32_t>& remap, ModelDesc& out)
      : base_(base), remap_(remap), out_(out) {
    children_.resize(base.modules.size());
    for (std::uint32_t i = 0; i < base.modules.size(); ++i)
      if (base.modules[i].parent != kNoModule) children_[base.modules[i].parent].push_back(i);
  }

  std::map<std::uint32_t, const LoraAdapter*> adapted;
  std::string dropout_type = "Identity";

  // A new node under `parent`; returns its index. Events are the caller's.
  std::uint32_t node(const std::string& name, const std::string& type, std::uint32_t parent,
                     std::uint32_t layer, ModuleGrad grad, bool called) {
    ModuleNode n;
    n.name = name;
    n.type = type;
    n.parent = parent;
    n.depth = parent == kNoModule ? 0 : out_.modules[parent].depth + 1;
    n.layer = layer;
    n.grad = grad;
    n.called = called;
    out_.modules.push_back(std::move(n));
    return static_cast<std::uint32_t>(out_.modules.size() - 1);
  }

  void call(std::uint32_t id, bool begin) { out_.module_calls.push_back({id, begin}); }

  // A called leaf with `params`.
  void leaf(const std::string& name, const std::string& type, std::uint32_t parent,
            std::uint32_t layer, std::vector<std::uint32_t> params) {
    const auto id = node(name, type, parent, layer, ModuleGrad::Both, true);
    out_.modules[id].param_ids = std::move(params);
    call(id, true);
    call(id, false);
  }

  // Copies base module `i` (and its subtree) under `parent`, its name prefixed.
  void copy(std::uint32_t i, std::uint32_t parent, bool force_uncalled = false) {
    const ModuleNode& b = base_.modules[i];
    const std::string name = b.name.empty() ? "base_model.model" : "base_model.model." + b.name;
    const bool called = b.called && !force_uncalled;
    auto it = adapted.find(i);
    if (it != adapted.end()) {
      wrap(b, name, parent, *it->second);
      return;
    }
    const auto id = node(name, b.type, parent, b.layer, b.grad, called);
    out_.modules[id].z3_leaf = b.z3_leaf;
    for (auto p : b.param_ids) out_.modules[id].param_ids.push_back(remap_[p]);
    if (called) call(id, true);
    for (auto c : children_[i]) copy(c, id);
    if (called) call(id, false);
  }

  void copy_roots(std::uint32_t parent) {
    for (std::uint32_t i = 0; i < base_.modules.size(); ++i)
      if (base_.modules[i].parent == kNoModule) copy(i, parent, true);
  }

 private:
  void wrap(const ModuleNode& b, const std::string& name, std::uint32_t parent,
            const LoraAdapter& a) {
    const auto id = node(name, "Linear", parent, b.layer, b.grad, b.called);
    call(id, true);
    std::vector<std::uint32_t> direct;
    for (auto p : b.param_ids) direct.push_back(remap_[p]);
    leaf(name + ".base_layer", b.type, id, b.layer, direct);
    for (const char* dict : {"lora_dropout", "lora_A", "lora_B"}) {
      const std::string d = name + "." + dict;
      const auto dict_id = node(d, "ModuleDict", id, b.layer, ModuleGrad::None, false);
      const std::string what = dict;
      if (what == "lora_dropout")
        leaf(d + ".default", dropout_type, dict_id, b.layer, {});
      else
        leaf(d + ".default", "Linear", dict_id, b.layer, {what == "lora_A" ? a.a : a.b});
    }
    call(id, false);
  }

  const ModelDesc& base_;
  const std::vector<std::uint32_t>& remap_;
  ModelDesc& out_;
  std::vector<std::vector<std::uint32_t>> children_;
};

}  // namespace

void build_lora_module_tree(const ModelDesc& base, const std::vector<LoraAdapter>& adapters,
                            const std::vector<std::uint32_t>& remap, double dropout,
                            ModelDesc& out) {
  out.modules.clear();
  out.module_calls.clear();
  TreeCopy t(base, remap, out);
  for (const auto& a : adapters) t.adapted[a.module] = &a;
  if (dropout > 0) t.dropout_type = "Dropout";
  const auto root =
      t.node("", "PeftModelForCausalLM", kNoModule, kNoLayer, ModuleGrad::OutputOnly, true);
  t.call(root, true);
  const auto lora = t.node("base_model", "LoraModel", root, kNoLayer, ModuleGrad::OutputOnly, true);
  t.call(lora, true);
  t.copy_roots(lora);
  t.call(lora, false);
  t.call(root, false);
}

}  // namespace zerosim
