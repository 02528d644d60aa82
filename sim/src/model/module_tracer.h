// ModuleTracer: records a model's nn.Module tree and the forward hook events of one pass while a
// builder "runs" the model's forward in the order its transformers modeling file calls modules.
//
// enter()/leave() bracket a module whose forward runs (pre-forward and post-forward hooks), leaf()
// is a module with no children called once, open()/close() bracket a container whose forward never
// runs (nn.ModuleList, or OPTModel, which OPTForCausalLM bypasses), and unused() lists a leaf that
// exists but is never called. Every module entered while a Layer index is set belongs to that
// Layer's compute. A misuse (leave() with nothing open, modules left open) marks the tracer failed;
// builders turn that into a diagnostic instead of a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_builder.h"
#include "zerosim/model_desc.h"

namespace zerosim {

class ModuleTracer {
 public:
  explicit ModuleTracer(ModelDesc& m) : m_(m) {}

  /// Pre-forward of `name` (a child of the innermost open module) with its direct params.
  void enter(const std::string& name, const std::string& type, const ModuleParams& direct = {},
             ModuleGrad grad = ModuleGrad::Both);
  /// Post-forward of the innermost called module.
  void leave();
  /// enter() + leave(): a module without children.
  void leaf(const std::string& name, const std::string& type, const ModuleParams& direct = {},
            ModuleGrad grad = ModuleGrad::Both);
  /// A container whose forward never runs; its children are entered until close().
  void open(const std::string& name, const std::string& type);
  void close();
  /// A leaf that is hooked but never called (no hook events).
  void unused(const std::string& name, const std::string& type);
  /// Marks the innermost open module as a DeepSpeed stage 3 leaf (ModuleNode::z3_leaf).
  void mark_z3_leaf();
  /// Modules added from now on belong to Layer `layer` (kNoLayer: to none).
  void set_layer(std::uint32_t layer) { layer_ = layer; }

  /// Appends `param` to the direct params of the module called `name` (false if there is none).
  static bool add_direct_param(ModelDesc& m, const std::string& name, std::uint32_t param);

  /// True once the tracer was misused or a module is still open.
  bool failed() const { return failed_ || !stack_.empty(); }

 private:
  std::uint32_t add(const std::string& name, const std::string& type, const ModuleParams& direct,
                    ModuleGrad grad, bool called);

  ModelDesc& m_;
  std::vector<std::uint32_t> stack_;  ///< open modules, innermost last
  std::uint32_t layer_ = kNoLayer;
  bool failed_ = false;
};

}  // namespace zerosim
