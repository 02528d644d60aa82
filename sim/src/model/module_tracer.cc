// ModuleTracer implementation: appends ModuleNodes in pre-forward order and the matching
// begin/end ModuleCall events.
#include "model/module_tracer.h"

namespace zerosim {

std::uint32_t ModuleTracer::add(const std::string& name, const std::string& type,
                                const ModuleParams& direct, ModuleGrad grad, bool called) {
  ModuleNode node;
  node.name = name;
  node.type = type;
  if (!stack_.empty()) {
    node.parent = stack_.back();
    node.depth = m_.modules[node.parent].depth + 1;
  } else if (!m_.modules.empty()) {
    failed_ = true;  // a second root: every module but the first needs an open parent
  }
  node.param_ids = direct.ids;
  node.layer = layer_;
  node.grad = grad;
  node.called = called;
  m_.modules.push_back(std::move(node));
  return static_cast<std::uint32_t>(m_.modules.size() - 1);
}

void ModuleTracer::enter(const std::string& name, const std::string& type,
                         const ModuleParams& direct, ModuleGrad grad) {
  const auto id = add(name, type, direct, grad, true);
  m_.module_calls.push_back({id, true});
  stack_.push_back(id);
}

void ModuleTracer::mark_z3_leaf() {
  if (stack_.empty()) {
    failed_ = true;
    return;
  }
  m_.modules[stack_.back()].z3_leaf = true;
}

void ModuleTracer::leave() {
  if (stack_.empty() || !m_.modules[stack_.back()].called) {
    failed_ = true;
    return;
  }
  m_.module_calls.push_back({stack_.back(), false});
  stack_.pop_back();
}

void ModuleTracer::leaf(const std::string& name, const std::string& type,
                        const ModuleParams& direct, ModuleGrad grad) {
  enter(name, type, direct, grad);
  leave();
}

void ModuleTracer::open(const std::string& name, const std::string& type) {
  stack_.push_back(add(name, type, {}, ModuleGrad::None, false));
}

void ModuleTracer::close() {
  if (stack_.empty() || m_.modules[stack_.back()].called) {
    failed_ = true;
    return;
  }
  stack_.pop_back();
}

void ModuleTracer::unused(const std::string& name, const std::string& type) {
  add(name, type, {}, ModuleGrad::None, false);
}

bool ModuleTracer::add_direct_param(ModelDesc& m, const std::string& name, std::uint32_t param) {
  for (auto& node : m.modules)
    if (node.name == name) {
      node.param_ids.push_back(param);
      return true;
    }
  return false;
}

}  // namespace zerosim
