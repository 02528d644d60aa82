// The module mapping of the stage 3 builder (stage3_internal.h): which hooked modules a ModelDesc
// has, which params each fetches, and the order in which their forward and backward hooks fire in
// one iteration. The sequence is the same in every iteration, so it is built once and replayed.
#include <algorithm>
#include <string>
#include <vector>

#include "schedule/stage3_internal.h"

namespace zerosim::schedule::s3 {
namespace {

constexpr const char* kSource = "model";

void push(Walk& w, HookKind k, bool bwd, std::uint32_t index) {
  w.events.push_back({k, bwd, index});
}

// Backward over layers, driven by grad_order the way emit_forward_backward drives it: before a
// param's GradReady, every not-yet-run layer down to the param's ready layer runs its backward; a
// layer's RELEASE(bwd) fires once the next layer's backward starts (its grads are ready by then).
class LayerBackward {
 public:
  LayerBackward(const ModelDesc& m, Walk& w, bool checkpointing)
      : m_(m), w_(w), ckpt_(checkpointing), next_(static_cast<std::uint32_t>(m.layers.size())) {}

  void run_down_to(std::uint32_t target) {
    while (next_ > target) {
      close_pending();
      --next_;
      if (ckpt_ && m_.layers[next_].kind == LayerKind::Block) {
        // The checkpointed block's forward runs again inside backward, hooks included.
        push(w_, HookKind::Fetch, true, next_);
        push(w_, HookKind::Recompute, true, next_);
        push(w_, HookKind::Release, true, next_);
      }
      push(w_, HookKind::Fetch, true, next_);
      push(w_, HookKind::Backward, true, next_);
      pending_ = next_;
    }
  }
  void close_pending() {
    if (pending_ == kNone) return;
    if (w_.modules[pending_].bwd_release_fires) push(w_, HookKind::Release, true, pending_);
    pending_ = kNone;
  }

 private:
  const ModelDesc& m_;
  Walk& w_;
  bool ckpt_;
  std::uint32_t next_;
  std::uint32_t pending_ = kNone;
};

std::vector<std::uint32_t> sorted_unique(std::vector<std::uint32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Trainable params in grad_order, first occurrence only.
std::vector<std::uint32_t> hooked_grad_order(const ModelDesc& m) {
  std::vector<bool> seen(m.params.size(), false);
  std::vector<std::uint32_t> out;
  for (auto p : m.grad_order) {
    if (p >= m.params.size() || seen[p] || !m.params[p].trainable) continue;
    seen[p] = true;
    out.push_back(p);
  }
  return out;
}

Walk layer_walk(const ModelDesc& m, bool checkpointing) {
  Walk w;
  const auto n_layers = static_cast<std::uint32_t>(m.layers.size());
  std::vector<bool> in_layer(m.params.size(), false);
  const bool embedding_first = m.layers.front().kind == LayerKind::Embedding;
  for (std::uint32_t l = 0; l < n_layers; ++l) {
    Module mod{m.layers[l].name, sorted_unique(m.layers[l].param_ids), l,
               m.layers[l].kind != LayerKind::Embedding};
    for (auto p : mod.params) in_layer[p] = true;
    w.modules.push_back(std::move(mod));
  }
  Module root{"<root>", {}, kNone, !embedding_first};
  for (std::uint32_t p = 0; p < m.params.size(); ++p)
    if (!in_layer[p]) root.params.push_back(p);
  const bool has_root = !root.params.empty();
  const std::uint32_t root_id = n_layers;
  if (has_root) w.modules.push_back(std::move(root));

  if (has_root) push(w, HookKind::Fetch, false, root_id);
  for (std::uint32_t l = 0; l < n_layers; ++l) {
    push(w, HookKind::Fetch, false, l);
    push(w, HookKind::Forward, false, l);
    push(w, HookKind::Release, false, l);
  }
  if (has_root) push(w, HookKind::Release, false, root_id);

  if (has_root) push(w, HookKind::Fetch, true, root_id);
  const auto ready = grad_ready_layer(m);
  LayerBackward bwd(m, w, checkpointing);
  for (auto p : hooked_grad_order(m)) {
    if (ready[p] != kNone) bwd.run_down_to(ready[p]);
    push(w, HookKind::GradReady, true, p);
  }
  bwd.run_down_to(0);
  bwd.close_pending();
  if (has_root && w.modules[root_id].bwd_release_fires) push(w, HookKind::Release, true, root_id);
  for (std::uint32_t i = 0; i < w.modules.size(); ++i)
    if (!w.modules[i].bwd_release_fires) w.leftover.push_back(i);
  return w;
}

// A param list: one module per param. Backward visits the params of grad_order first (each one's
// module fetched right before its gradient), then the others in reverse declaration order.
Walk param_walk(const ModelDesc& m) {
  Walk w;
  const auto n = static_cast<std::uint32_t>(m.params.size());
  for (std::uint32_t p = 0; p < n; ++p) w.modules.push_back({m.params[p].name, {p}, kNone, true});
  for (std::uint32_t p = 0; p < n; ++p) {
    push(w, HookKind::Fetch, false, p);
    push(w, HookKind::Release, false, p);
  }
  std::vector<bool> done(n, false);
  for (auto p : hooked_grad_order(m)) {
    done[p] = true;
    push(w, HookKind::Fetch, true, p);
    push(w, HookKind::GradReady, true, p);
    push(w, HookKind::Release, true, p);
  }
  for (std::uint32_t i = n; i-- > 0;) {
    if (done[i]) continue;
    push(w, HookKind::Fetch, true, i);
    push(w, HookKind::Release, true, i);
  }
  return w;
}

}  // namespace

Result<Walk> build_walk(const ModelDesc& m, bool activation_checkpointing) {
  Diagnostics d;
  const auto n = m.params.size();
  for (std::size_t l = 0; l < m.layers.size(); ++l)
    for (std::size_t j = 0; j < m.layers[l].param_ids.size(); ++j)
      if (m.layers[l].param_ids[j] >= n)
        d.error(kSource, "/layers/" + std::to_string(l) + "/param_ids/" + std::to_string(j),
                "expected a param index below " + std::to_string(n) + ", got " +
                    std::to_string(m.layers[l].param_ids[j]));
  for (std::size_t i = 0; i < m.grad_order.size(); ++i)
    if (m.grad_order[i] >= n)
      d.error(kSource, "/grad_order/" + std::to_string(i),
              "expected a param index below " + std::to_string(n) + ", got " +
                  std::to_string(m.grad_order[i]));
  if (d.has_errors()) return d;
  return m.layers.empty() ? param_walk(m) : layer_walk(m, activation_checkpointing);
}

}  // namespace zerosim::schedule::s3
