// ModelDesc queries (counts, DeepSpeed's "largest layer") and the derived gradient-ready order.
#include "zerosim/model_desc.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace zerosim {

Elements ModelDesc::num_parameters() const {
  Elements total = 0;
  for (const auto& p : params) total += p.numel;
  return total;
}

Elements ModelDesc::num_trainable() const {
  Elements total = 0;
  for (const auto& p : params)
    if (p.trainable) total += p.numel;
  return total;
}

Elements ModelDesc::num_logical_parameters() const {
  Elements total = 0;
  for (const auto& p : params) total += p.quant_bits != 0 ? p.logical_numel : p.numel;
  return total;
}

Elements ModelDesc::largest_param() const {
  Elements best = 0;
  for (const auto& p : params) best = std::max(best, p.numel);
  return best;
}

Elements ModelDesc::largest_module_params() const {
  // DeepSpeed's stage-3 model_to_params sums m.parameters(recurse=False) for every module; a
  // module's direct params are exactly the names that share its prefix up to the last dot. A
  // tied weight is listed once here, under the module that declared it first; the module that
  // reuses it (e.g. lm_head) has the same sum when that weight is its only param.
  std::map<std::string, Elements> per_module;  // ordered: deterministic, though only max is used
  for (const auto& p : params) {
    auto dot = p.name.rfind('.');
    per_module[dot == std::string::npos ? std::string() : p.name.substr(0, dot)] += p.numel;
  }
  Elements best = 0;
  for (const auto& [module, n] : per_module) best = std::max(best, n);
  return best;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<std::uint32_t> derive_grad_order(const ModelDesc& m) {
  // The backward sequence is the forward use sequence reversed, so a param's gradient is ready at
  // its last backward use = its first forward use. Rank params by first forward use, then reverse.
  const auto n = static_cast<std::uint32_t>(m.params.size());
  std::vector<bool> seen(n, false);
  std::vector<std::uint32_t> first_use;
  for (const auto& layer : m.layers)
    for (auto id : layer.param_ids)
      if (id < n && !seen[id]) {
        seen[id] = true;
        first_use.push_back(id);
      }
  std::vector<std::uint32_t> order;
  order.reserve(n);
  for (auto it = first_use.rbegin(); it != first_use.rend(); ++it)
    if (m.params[*it].trainable) order.push_back(*it);
  for (std::uint32_t id = n; id-- > 0;)
    if (!seen[id] && m.params[id].trainable) order.push_back(id);
  // nn.LayerNorm is the one module whose gradients autograd readies against the reversed use
  // order: native_layer_norm's backward fires its weight's AccumulateGrad before its bias's, while
  // Linear (addmm) and GPT-2's Conv1D ready the bias first, as reversal gives. Recorded with
  // Debian's torch 1.13 on replicas of GPT-2 and Llama (tests/recorder/zoo_replicas.py,
  // tests/data/recordings/grad_order/); other PyTorch versions may order them differently, which
  // a recorded grad_order overrides (--grad-order).
  std::vector<std::size_t> at(n, order.size());
  for (std::size_t i = 0; i < order.size(); ++i) at[order[i]] = i;
  for (const ModuleNode& mod : m.modules) {
    if (mod.type != "LayerNorm" || mod.param_ids.size() != 2) continue;
    const auto w = mod.param_ids[0], b = mod.param_ids[1];  // declaration order: weight, bias
    if (w >= n || b >= n || at[w] == order.size() || at[b] == order.size() || at[b] > at[w])
      continue;
    std::swap(order[at[w]], order[at[b]]);
    std::swap(at[w], at[b]);
  }
  return order;
}

}  // namespace zerosim
