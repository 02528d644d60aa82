// Helpers shared by the schedule builders: per-layer compute and activation sizes, and the layer at
// which each gradient becomes ready.
#include <algorithm>

#include "schedule/builders.h"

namespace zerosim::schedule {

double layer_forward_flops(const ModelDesc& m, std::uint32_t layer, const TrainingSettings& t) {
  const Layer& l = m.layers[layer];
  const double tokens = static_cast<double>(t.micro_batch) * static_cast<double>(t.seq_len);
  // Causal attention sees on average about half the context; the layer description gives FLOPs per
  // token per context token, so the full-context value is used (Korthikanti et al. count s^2 terms
  // without the causal discount, as does Megatron's FLOPs formula).
  return l.fwd_flops_per_token * tokens +
         l.attn_flops_per_token_per_ctx * tokens * static_cast<double>(t.seq_len);
}

double layer_backward_flops(const ModelDesc& m, std::uint32_t layer, const TrainingSettings& t) {
  const double tokens = static_cast<double>(t.micro_batch) * static_cast<double>(t.seq_len);
  const double skipped = m.layers[layer].frozen_weight_grad_flops_per_token * tokens;
  return std::max(0.0, 2 * layer_forward_flops(m, layer, t) - skipped);
}

std::vector<Bytes> layer_activation_bytes(const ModelDesc& m, const TrainingSettings& t, DType lp) {
  std::vector<Bytes> out(m.layers.size(), 0);
  if (!m.arch || m.layers.empty()) return out;
  const Bytes total = activation_bytes(m, t, lp);
  std::vector<std::size_t> blocks;
  std::size_t head = m.layers.size() - 1;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    if (m.layers[i].kind == LayerKind::Block) blocks.push_back(i);
    if (m.layers[i].kind == LayerKind::Head) head = i;
  }
  if (blocks.empty()) {
    out[head] = total;
    return out;
  }
  // Each block holds an equal share (the per-block formula is the same for every block); the
  // remainder (embedding output, logits, rounding) is held by the head until its backward.
  const Bytes per_block = total / (blocks.size() + 1);
  Bytes assigned = 0;
  for (auto i : blocks) {
    out[i] = per_block;
    assigned += per_block;
  }
  out[head] += total - assigned;
  return out;
}

std::vector<std::uint32_t> grad_ready_layer(const ModelDesc& m) {
  std::vector<std::uint32_t> ready(m.params.size(), kNone);
  for (std::uint32_t l = 0; l < m.layers.size(); ++l)
    for (auto p : m.layers[l].param_ids)
      if (p < ready.size() && ready[p] == kNone) ready[p] = l;  // earliest forward use
  return ready;
}

std::string overflow_note(const std::vector<std::uint32_t>& overflow_steps) {
  if (overflow_steps.empty())
    return "no overflow assumed: every step updates (--overflow-steps marks steps whose overflow "
           "check fails)";
  std::string list;
  for (std::uint32_t s : overflow_steps) list += (list.empty() ? "" : ", ") + std::to_string(s);
  return "overflow steps " + list +
         ": the check finds inf/nan, step() returns (no norm, update or "
         "parameter all-gather)";
}

}  // namespace zerosim::schedule
