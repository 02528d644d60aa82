// Loading models: the zoo (embedded models/zoo/*.json), Hugging Face config.json, a param-list
// file (dumped from model.named_parameters()), or a raw parameter count.
#pragma once

#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/model_desc.h"

namespace zerosim {

/// One zoo entry as listed by `zerosim models`.
struct ZooEntry {
  std::string name;          ///< "llama2-7b"
  std::string display_name;  ///< "Llama-2-7B"
  Elements parameters = 0;   ///< exact count (== HF model.num_parameters())
  std::string source;        ///< where the hyper-parameters come from
};

/// The zoo, sorted by name.
std::vector<ZooEntry> list_zoo();

/// A zoo model by name (case-insensitive; display names and the aliases a zoo file lists, such as
/// the Hugging Face repo id, are accepted). Unknown names fail with the closest match and a pointer
/// to `zerosim models`; a zoo file whose built count differs from its "parameters" fails loudly.
Result<ModelDesc> load_zoo_model(const std::string& name);

/// Hugging Face config.json text -> ModelDesc with exact parameter tensors (the *ForCausalLM
/// model's named_parameters(), tied weights once). `source` names the file. Supported model_type:
/// llama, mistral, qwen2, gpt2, gpt_neox, gptj, opt, bloom, falcon. Unknown keys are ignored.
Result<ModelDesc> load_hf_config_text(const std::string& text, const std::string& source);
Result<ModelDesc> load_hf_config_file(const std::string& path);

/// Param-list JSON: {"params": [[name, [shape...]], ...], "grad_order": [name, ...]} (grad_order
/// optional; when present it must name every trainable param exactly once; without it, reverse
/// declaration order). An optional third entry element `false` marks requires_grad=False. No
/// layers or ArchInfo. Names unique, dims >= 0 (numel 0 allowed), at most 1e15 elements in total.
Result<ModelDesc> load_param_list_text(const std::string& text, const std::string& source);
Result<ModelDesc> load_param_list_file(const std::string& path);

/// --grad-order FILE: replaces a model's derived gradient-ready order by a recorded one (the order
/// depends on the PyTorch version and device). FILE is {"grad_order": [name, ...]} or a param list
/// holding one (tools/zerosim_record's params.rankR.json), whose "params", when present, must be
/// the model's own (names and shapes, in order: the first difference is the error). The order must
/// name every trainable param once. On success sets grad_order_recorded.
Diagnostics apply_recorded_grad_order(ModelDesc& model, const std::string& path);

/// --z3-leaf-modules CLASS,...|none: which modules DeepSpeed stage 3 fetches as one unit
/// (deepspeed.utils.set_z3_leaf_modules, which matches a module's class name or its fully qualified
/// name). Clears every ModuleNode::z3_leaf, then sets it on the modules of the listed classes
/// (a dotted name is matched by its last component); "none" leaves them cleared. The zoo marks the
/// MoE blocks that LLaMA-Factory marks (MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock) by default.
/// Errors (source `flag`) for an empty list or a class no module of the model has, as
/// set_z3_leaf_modules raises "No modules of type ... found".
Diagnostics set_z3_leaf_modules(ModelDesc& model, const std::string& classes,
                                const std::string& flag = "--z3-leaf-modules");

/// A synthetic decoder-only transformer with exactly `parameters` elements (--params N): the width
/// of the published model nearest in size (GPT-3 Table 2.1, Megatron-LM Table 1; beyond 1T grown
/// as the cube root of the size), as GPT-2 modules, the depth that fills the count, and the
/// remainder in extra tensors no larger than the model's largest (rule in
/// sim/src/model/synthetic.cc, models/README.md).
/// Accepts whole numbers 1 .. kMaxParameters; `source` names the flag in messages.
Result<ModelDesc> synthetic_model(double parameters, const std::string& source = "--params");

inline constexpr double kMaxParameters = 1e15;  ///< larger counts are refused, not overflowed

}  // namespace zerosim
