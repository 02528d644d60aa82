// apply_lora: a ModelDesc rebuilt as peft's get_peft_model wraps it (peft 5d602fd, 2026-08).
//
// - Which modules: peft's check_target_module_exists (src/peft/tuners/tuners_utils.py:2328-2332)
//   takes a module whose name equals a target or ends with "." + target; "all-linear"
//   (_maybe_include_all_linear_layers, tuners_utils.py:2382-2440) takes every nn.Linear/Conv1D
//   but the model's output embedding. Without targets, peft's per-model_type default
//   (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING, src/peft/utils/constants.py:68-104).
// - The wrapper: lora.Linear registers base_layer first, then the ModuleDicts lora_dropout,
//   lora_A, lora_B (src/peft/tuners/lora/layer.py:129-135); update_layer adds
//   lora_dropout[name] = Dropout(p) or Identity (layer.py:256-258), lora_A[name] =
//   Linear(in, r, bias=False) and lora_B[name] = Linear(r, out) (layer.py:263-264), so
//   named_parameters() lists base_layer.weight, base_layer.bias, lora_A.default.weight [r, in],
//   lora_B.default.weight [out, r] in that order. Its forward runs base_layer(x), then
//   lora_B(lora_A(dropout(x))) * scaling (layer.py:1063).
// - Names: PeftModelForCausalLM holds the LoraModel as base_model, which holds the model as model
//   (peft_model.py:176), hence the "base_model.model." prefix. LoraModel.forward calls
//   self.model.forward (tuners_utils.py:346-347), bypassing the wrapped model's own hooks.
// - Everything else is frozen: peft's _mark_only_adapters_as_trainable sets requires_grad=False on
//   every non-adapter param (bias="none", the default).
// Activations: lora_B saves its rank-r input (lora_A's output); with p > 0 the dropout keeps its
// mask and lora_A saves the dropout's output, both input-wide. With p = 0 lora_A's input is x,
// which the base model's activations already count.
#include "zerosim/lora.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "model/lora_internal.h"
#include "zerosim/model_loader.h"
#include "zerosim/units.h"

namespace zerosim {

namespace {

const std::string kPrefix = "base_model.model";
constexpr Elements kMaxElements = static_cast<Elements>(kMaxParameters);

ParamTensor adapter_param(std::string name, std::uint64_t rows, std::uint64_t cols, Elements n) {
  ParamTensor t;
  t.name = std::move(name);
  t.shape = {rows, cols};
  t.numel = n;
  t.trainable = true;
  return t;
}

// constants.py:68-104, the families zerosim builds.
const std::map<std::string, std::vector<std::string>>& default_targets() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"bert", {"query", "value"}},      {"bloom", {"query_key_value"}},
      {"falcon", {"query_key_value"}},   {"gemma", {"q_proj", "v_proj"}},
      {"gemma2", {"q_proj", "v_proj"}},  {"gpt2", {"c_attn"}},
      {"gpt_neox", {"query_key_value"}}, {"gptj", {"q_proj", "v_proj"}},
      {"llama", {"q_proj", "v_proj"}},   {"mistral", {"q_proj", "v_proj"}},
      {"mixtral", {"q_proj", "v_proj"}}, {"opt", {"q_proj", "v_proj"}},
      {"qwen2", {"q_proj", "v_proj"}},   {"qwen3", {"q_proj", "v_proj"}},
      {"roberta", {"query", "value"}},   {"t5", {"q", "v"}},
  };
  return k;
}

bool matches(const std::string& name, const std::string& target) {
  return name == target || (name.size() > target.size() &&
                            name.compare(name.size() - target.size(), target.size(), target) == 0 &&
                            name[name.size() - target.size() - 1] == '.');
}

// The distinct last name components of the Linear/Conv1D modules ("q_proj, k_proj, ..."), in
// first-seen order: what a target can name.
std::string linear_names(const ModelDesc& m) {
  std::vector<std::string> seen;
  for (const auto& mod : m.modules) {
    if (!is_linear(mod)) continue;
    const auto dot = mod.name.rfind('.');
    std::string last = dot == std::string::npos ? mod.name : mod.name.substr(dot + 1);
    if (std::find(seen.begin(), seen.end(), last) == seen.end()) seen.push_back(std::move(last));
  }
  std::string out;
  for (const auto& s : seen) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The share of tokens an adapter's module sees: top-k / experts for a routed expert of a
// mixture-of-experts layer (Mixtral's block_sparse_moe.experts.N.*, Qwen2-MoE's mlp.experts.N.*;
// not the router or the shared expert), 1 otherwise.
double routed_share(const ModelDesc& m, const LoraAdapter& a) {
  if (!m.arch || m.arch->experts == 0) return 1.0;
  if (m.modules[a.module].name.find(".experts.") == std::string::npos) return 1.0;
  return static_cast<double>(m.arch->experts_per_token) / static_cast<double>(m.arch->experts);
}

std::string prefixed(const std::string& name) {
  return name.empty() ? kPrefix : kPrefix + "." + name;
}

// The targeted module indices, or an error text.
std::string select_targets(const ModelDesc& m, const std::vector<std::string>& targets,
                           std::vector<std::uint32_t>& out) {
  const std::uint32_t n = static_cast<std::uint32_t>(m.modules.size());
  const std::set<std::uint32_t> heads = output_embedding_modules(m);
  std::vector<bool> picked(n, false);
  if (targets.size() == 1 && targets[0] == "all-linear") {
    for (std::uint32_t i = 0; i < n; ++i)
      picked[i] = is_linear(m.modules[i]) && heads.count(i) == 0;
  } else {
    for (const auto& t : targets) {
      bool any = false;
      for (std::uint32_t i = 0; i < n; ++i) {
        if (!matches(m.modules[i].name, t)) continue;
        any = true;
        if (!is_linear(m.modules[i]))
          return "target \"" + t + "\" matches " + m.modules[i].name + " (" + m.modules[i].type +
                 "): zerosim models LoRA on Linear/Conv1D modules only";
        picked[i] = true;
      }
      if (!any)
        return "target \"" + t + "\" matches no module of " + m.name +
               " (peft raises \"Target modules not found in the base model\"); its Linear "
               "modules: " +
               linear_names(m);
    }
  }
  // A tied weight (GPT-2's lm_head shares wte) would need peft's tied-module handling.
  std::map<std::uint32_t, std::uint32_t> holders;
  for (const auto& mod : m.modules)
    for (auto p : mod.param_ids) ++holders[p];
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!picked[i]) continue;
    const auto& mod = m.modules[i];
    if (mod.param_ids.empty() || m.params[mod.param_ids[0]].shape.size() != 2)
      return "target module " + mod.name + " has no 2-D weight";
    if (holders[mod.param_ids[0]] > 1)
      return "target module " + mod.name +
             "'s weight is tied to another module; zerosim does not "
             "model LoRA on tied weights";
    out.push_back(i);
  }
  if (out.empty()) return "the targets match no Linear module of " + m.name;
  return "";
}

}  // namespace

std::set<std::uint32_t> output_embedding_modules(const ModelDesc& m) {
  std::set<std::uint32_t> out;
  for (std::uint32_t i = 0; i < m.modules.size(); ++i) {
    const auto& mod = m.modules[i];
    if (mod.layer < m.layers.size() && m.layers[mod.layer].kind == LayerKind::Head &&
        is_linear(mod))
      out.insert(i);
  }
  return out;
}

Result<ModelDesc> apply_lora(const ModelDesc& base, const LoraSpec& spec, DType lp,
                             const std::string& source) {
  if (base.modules.empty() || !base.arch)
    return fail<ModelDesc>(source, "",
                           "LoRA needs the model's module tree (a zoo model, --hf-config or "
                           "--params); " +
                               base.name + " has none (a param list only names tensors)");
  if (spec.rank == 0) return fail<ModelDesc>(source, "", "expected a LoRA rank >= 1, got 0");
  std::vector<std::string> targets = spec.targets;
  if (targets.empty()) {
    auto it = default_targets().find(base.arch->family);
    if (it == default_targets().end())
      return fail<ModelDesc>(source, "",
                             "peft has no default target_modules for model_type \"" +
                                 base.arch->family + "\"; give --lora-targets");
    targets = it->second;
  }
  std::vector<std::uint32_t> picked;
  if (auto why = select_targets(base, targets, picked); !why.empty())
    return fail<ModelDesc>(source, "", why);

  // Old param id -> the adapter declared after it (the targeted module's last direct param).
  std::map<std::uint32_t, std::size_t> adapter_after;
  std::set<std::uint32_t> wrapped_params;
  std::vector<LoraAdapter> adapters;
  for (auto i : picked) {
    const ModuleNode& mod = base.modules[i];
    const ParamTensor& w = base.params[mod.param_ids[0]];
    LoraAdapter a;
    a.module = i;
    // Linear weight [out, in]; Conv1D [in, out] (peft reads Conv1D's shape as (in, out)).
    a.out = is_conv1d(mod) ? w.shape[1] : w.shape[0];
    a.in = is_conv1d(mod) ? w.shape[0] : w.shape[1];
    adapter_after[*std::max_element(mod.param_ids.begin(), mod.param_ids.end())] = adapters.size();
    wrapped_params.insert(mod.param_ids.begin(), mod.param_ids.end());
    adapters.push_back(a);
  }

  ModelDesc m;
  {
    // What the plan JSON's model.source says about the adapters (alpha only scales them).
    std::ostringstream o;
    o << base.source << "; LoRA r=" << spec.rank << ", alpha=" << spec.alpha
      << ", dropout=" << spec.dropout << " on ";
    for (std::size_t i = 0; i < targets.size(); ++i) o << (i ? "," : "") << targets[i];
    o << " as peft builds it";
    m.source = o.str();
  }
  m.arch = base.arch;
  std::vector<std::uint32_t> remap(base.params.size());
  for (std::uint32_t p = 0; p < base.params.size(); ++p) {
    ParamTensor t = base.params[p];
    if (wrapped_params.count(p)) {
      const auto dot = t.name.rfind('.');
      t.name = t.name.substr(0, dot) + ".base_layer" + t.name.substr(dot);
    }
    t.name = prefixed(t.name);
    t.trainable = false;
    remap[p] = static_cast<std::uint32_t>(m.params.size());
    m.params.push_back(std::move(t));
    auto it = adapter_after.find(p);
    if (it == adapter_after.end()) continue;
    LoraAdapter& a = adapters[it->second];
    const std::string name = prefixed(base.modules[a.module].name);
    const auto na = checked_mul(spec.rank, a.in);
    const auto nb = checked_mul(a.out, spec.rank);
    if (!na || !nb || *na > kMaxElements || *nb > kMaxElements)
      return fail<ModelDesc>(source, "",
                             "LoRA rank " + std::to_string(spec.rank) + " on " + name +
                                 " gives an adapter of more than 1e15 elements");
    a.a = static_cast<std::uint32_t>(m.params.size());
    m.params.push_back(adapter_param(name + ".lora_A.default.weight", spec.rank, a.in, *na));
    a.b = static_cast<std::uint32_t>(m.params.size());
    m.params.push_back(adapter_param(name + ".lora_B.default.weight", a.out, spec.rank, *nb));
  }
  if (m.num_parameters() > kMaxElements)
    return fail<ModelDesc>(source, "", "the adapted model has more than 1e15 parameters");

  // Layers: ids remapped, each adapter used right after its base module, its matmuls counted.
  // Every base weight is frozen, so backward skips all of the base's weight-gradient GEMMs: the
  // base layer's forward matmul FLOPs (attention's s^2 terms have no weight and stay).
  for (const Layer& l : base.layers) {
    Layer n = l;
    n.frozen_weight_grad_flops_per_token = l.fwd_flops_per_token;
    n.param_ids.clear();
    for (auto p : l.param_ids) {
      n.param_ids.push_back(remap[p]);
      auto it = adapter_after.find(p);
      if (it == adapter_after.end()) continue;
      const LoraAdapter& a = adapters[it->second];
      n.param_ids.push_back(a.a);
      n.param_ids.push_back(a.b);
      n.fwd_flops_per_token += 2.0 * static_cast<double>(spec.rank) *
                               static_cast<double>(a.in + a.out) * routed_share(base, a);
    }
    m.layers.push_back(std::move(n));
  }

  // Adapter activations per token (ArchInfo::AdapterActivations). A routed expert's adapters see
  // only the tokens routed to it: their sum over the experts is scaled by top-k / experts (the
  // experts of a layer are equal, so the product divides exactly).
  auto& act = m.arch->adapters;
  act = {};
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> per_block;
  const bool dropout = spec.dropout > 0;
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> routed;  // per layer, unscaled
  for (const LoraAdapter& a : adapters) {
    const std::uint64_t lp_elems = spec.rank + (dropout ? a.in : 0);
    const std::uint64_t mask = dropout ? a.in : 0;
    const std::uint32_t layer = base.modules[a.module].layer;
    if (routed_share(base, a) < 1.0) {
      routed[layer].first += lp_elems;
      routed[layer].second += mask;
      continue;
    }
    if (layer < base.layers.size() && base.layers[layer].kind == LayerKind::Block) {
      per_block[layer].first += lp_elems;
      per_block[layer].second += mask;
      act.lp_blocks += lp_elems;
      act.mask_blocks += mask;
    } else {
      act.lp_outside += lp_elems;
      act.mask_outside += mask;
    }
  }
  const std::uint64_t k = base.arch->experts_per_token, e = base.arch->experts;
  for (const auto& [layer, v] : routed) {
    const std::uint64_t lp_elems = v.first / e * k, mask = v.second / e * k;
    const bool block = layer < base.layers.size() && base.layers[layer].kind == LayerKind::Block;
    (block ? act.lp_blocks : act.lp_outside) += lp_elems;
    (block ? act.mask_blocks : act.mask_outside) += mask;
    if (block) {
      per_block[layer].first += lp_elems;
      per_block[layer].second += mask;
    }
  }
  for (const auto& [layer, v] : per_block) {
    act.lp_block_max = std::max(act.lp_block_max, v.first);
    act.mask_block_max = std::max(act.mask_block_max, v.second);
  }

  build_lora_module_tree(base, adapters, remap, spec.dropout, m);
  if (spec.quantization != BaseQuantization::None) {
    quantize_base(spec.quantization, lp, m);
    m.source += spec.quantization == BaseQuantization::Nf4
                    ? "; frozen Linear weights in bitsandbytes NF4, double-quantized"
                    : "; frozen Linear weights in bitsandbytes int8 (LLM.int8)";
  }
  m.grad_order = derive_grad_order(m);
  m.name = base.name + "+lora-r" + std::to_string(spec.rank) +
           (spec.quantization == BaseQuantization::Nf4    ? "-nf4"
            : spec.quantization == BaseQuantization::Int8 ? "-int8"
                                                          : "");
  return m;
}

bool is_linear(const ModuleNode& n) {
  // peft's dispatch and bitsandbytes' replacement test isinstance(module, nn.Linear): Falcon's
  // FalconLinear subclasses it (modeling_falcon.py), so --lora-targets query_key_value applies.
  return n.type == "Linear" || n.type == "FalconLinear" || n.type == "Conv1D";
}

}  // namespace zerosim
