// The module mapping of the stage 3 builder (stage3_internal.h): which hooked modules a ModelDesc
// has, which params each fetches, and the order in which their forward and backward hooks fire in
// one iteration. The sequence is the same in every iteration, so it is built once and replayed.
// Three mappings: the model's nn.Module tree when it has one, else one module per Layer, else
// (a param list) one module per param.
#include <algorithm>
#include <string>
#include <vector>

#include "schedule/stage3_internal.h"

namespace zerosim::schedule::s3 {
namespace {

constexpr const char* kSource = "model";

void push(Walk& w, HookKind k, bool bwd, std::uint32_t index) {
  HookEvent e;
  e.kind = k;
  e.backward = bwd;
  e.index = index;
  w.events.push_back(e);
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
               m.layers[l].kind != LayerKind::Embedding, true};
    for (auto p : mod.params) in_layer[p] = true;
    w.modules.push_back(std::move(mod));
  }
  Module root{"<root>", {}, kNone, !embedding_first, true};
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

// Module tree: module i of the walk is model.modules[i] (see stage3_internal.h for the mapping).
class ModuleWalk {
 public:
  ModuleWalk(const ModelDesc& m, bool checkpointing, const std::vector<bool>& persistent)
      : m_(m), ckpt_(checkpointing), persistent_(persistent) {}

  Walk build() {
    add_modules();
    forward();
    backward_sequence();
    merge_gradients();
    for (std::uint32_t i = 0; i < w_.modules.size(); ++i)
      if (m_.modules[i].called && hooked_[i] && w_.modules[i].bwd_fetch_fires &&
          !w_.modules[i].bwd_release_fires)
        w_.leftover.push_back(i);
    w_.mapping = mapping_note();
    return std::move(w_);
  }

 private:
  std::string mapping_note() const {
    std::string note =
        m_.modules_inferred
            ? "hooked modules: inferred from the param names, an inference and not a recording "
              "(no module section: `a.b.weight` belongs to module `a.b`, every module called once "
              "in declaration order; "
            : "hooked modules: the model's nn.Module tree (";
    note += std::to_string(m_.modules.size()) + " modules), each fetching its direct params";
    if (externals_ > 0)
      note += " and the " + std::to_string(externals_) +
              " external params registered on the module whose forward reads them";
    if (leaves_ > 0)
      note += "; " + std::to_string(leaves_) +
              " z3 leaf modules fetch every descendant's params and hook none of their children "
              "(set_z3_leaf_modules)";
    if (!m_.layers.empty())
      note +=
          "; a layer's compute runs in pieces, one after the fetch of each of its modules "
          "holding params, in proportion to their param elements";
    return note;
  }

  // The module's own fetch set: direct params, plus the external params its forward reads that
  // are not persistent (a persistent param is AVAILABLE when read, and DeepSpeed registers only a
  // NOT_AVAILABLE one: parameter_offload.py ZeROOrderedDict.__getitem__).
  std::vector<std::uint32_t> own_set(const ModuleNode& node) {
    std::vector<std::uint32_t> v = node.param_ids;
    for (auto p : node.external_ids)
      if (p < persistent_.size() ? !persistent_[p] : true) {
        v.push_back(p);
        ++externals_;
      }
    return v;
  }

  void add_modules() {
    // A z3 leaf's descendants are not registered (parameter_offload.py _register_deepspeed_module
    // recurses only into non-leaf modules): no hooks, and the leaf fetches their params
    // (partitioned_param_coordinator.py iter_params(recurse=z3_leaf_module(m))).
    const auto n_mod = static_cast<std::uint32_t>(m_.modules.size());
    std::vector<std::uint32_t> leaf_of(n_mod, kNone);  // the leaf above a module, if any
    hooked_.assign(n_mod, true);
    for (std::uint32_t i = 1; i < n_mod; ++i) {
      const auto parent = m_.modules[i].parent;
      leaf_of[i] = leaf_of[parent] != kNone     ? leaf_of[parent]
                   : m_.modules[parent].z3_leaf ? parent
                                                : kNone;
      hooked_[i] = leaf_of[i] == kNone;
    }
    std::vector<std::vector<std::uint32_t>> sets(n_mod);
    for (std::uint32_t i = 0; i < n_mod; ++i) {
      auto own = own_set(m_.modules[i]);
      auto& into = hooked_[i] ? sets[i] : sets[leaf_of[i]];
      into.insert(into.end(), own.begin(), own.end());
      if (hooked_[i] && m_.modules[i].z3_leaf) ++leaves_;
    }
    std::vector<bool> held(m_.params.size(), false);
    for (std::uint32_t i = 0; i < n_mod; ++i) {
      const auto& node = m_.modules[i];
      Module mod{node.name.empty() ? "(root) " + node.type : node.name,
                 sorted_unique(std::move(sets[i])), node.layer, node.grad == ModuleGrad::Both,
                 node.grad != ModuleGrad::None};
      for (auto p : mod.params) held[p] = true;
      w_.modules.push_back(std::move(mod));
    }
    for (const auto& c : m_.module_calls)
      if (hooked_[c.module]) calls_.push_back(c);
    auto& root = w_.modules.front().params;  // params no module holds: fetched with the root
    for (std::uint32_t p = 0; p < m_.params.size(); ++p)
      if (!held[p]) root.push_back(p);
    root = sorted_unique(root);
    calls_of_layer_.assign(m_.layers.size(), {});
    for (const auto& c : calls_) {
      const auto l = m_.modules[c.module].layer;
      if (l < m_.layers.size()) calls_of_layer_[l].push_back(c);
    }
    // Compute weights: a module's direct param elements (a Linear's FLOPs are 2 x tokens x its
    // params; attention scores and activations are spread the same way, an approximation). A
    // layer's forward total counts every forward call, its backward total every call whose
    // backward FETCH fires, so each pass's pieces add up to the whole layer.
    weight_.assign(w_.modules.size(), 0.0);
    for (std::uint32_t i = 0; i < m_.modules.size(); ++i)
      if (m_.modules[i].layer < m_.layers.size())
        for (auto p : w_.modules[i].params) weight_[i] += static_cast<double>(m_.params[p].numel);
    fwd_total_.assign(m_.layers.size(), 0.0);
    bwd_total_.assign(m_.layers.size(), 0.0);
    for (const auto& c : calls_) {
      const auto l = m_.modules[c.module].layer;
      if (!c.begin || l >= m_.layers.size()) continue;
      fwd_total_[l] += weight_[c.module];
      if (w_.modules[c.module].bwd_fetch_fires) bwd_total_[l] += weight_[c.module];
    }
  }

  // Appends the compute piece of `module` (layer l) to `out` if it has one: its share of the pass's
  // total, or the whole layer at the layer's first module when no module of it holds params.
  // `started` tells whether the layer already had a piece in this pass; returns whether it has now.
  bool piece(std::vector<HookEvent>& out, HookKind k, bool bwd, std::uint32_t l,
             std::uint32_t module, double total, bool started) {
    const bool whole = total <= 0;
    if (whole ? started : weight_[module] <= 0) return started;
    HookEvent e;
    e.kind = k;
    e.backward = bwd;
    e.index = l;
    e.share = whole ? 1.0 : weight_[module] / total;
    e.module = whole ? kNone : module;
    e.first = !started;
    e.last = whole;
    out.push_back(e);
    return true;
  }

  // Replays the pre-/post-forward hooks; each Forward piece follows its module's FETCH.
  void forward() {
    std::vector<bool> started(m_.layers.size(), false);
    for (const auto& c : calls_) {
      push(w_, c.begin ? HookKind::Fetch : HookKind::Release, false, c.module);
      const auto l = m_.modules[c.module].layer;
      if (c.begin && l < started.size()) {
        started[l] =
            piece(w_.events, HookKind::Forward, false, l, c.module, fwd_total_[l], started[l]);
      }
    }
    for (std::uint32_t l = 0; l < started.size(); ++l)  // layers no module belongs to
      if (!started[l]) push(w_, HookKind::Forward, false, l);
    mark_last(w_.events, 0, HookKind::Forward);
  }

  // Sets `last` on the final piece of each layer among events [from, end) of kind k.
  void mark_last(std::vector<HookEvent>& ev, std::size_t from, HookKind k) const {
    std::vector<bool> seen(m_.layers.size(), false);
    for (std::size_t i = ev.size(); i-- > from;) {
      HookEvent& e = ev[i];
      if (e.kind != k || e.index >= seen.size()) continue;
      e.last = !seen[e.index];
      seen[e.index] = true;
    }
  }

  // Backward hooks without gradients: reverse forward order, a post-forward becoming a FETCH and a
  // pre-forward a RELEASE. slot_[m] is the position right after module m's backward FETCH.
  void backward_sequence() {
    std::vector<bool> started(m_.layers.size(), false), recomputed(m_.layers.size(), false);
    slot_.assign(m_.modules.size(), kNone);
    for (auto it = calls_.rbegin(); it != calls_.rend(); ++it) {
      const Module& mod = w_.modules[it->module];
      if (it->begin) {
        if (mod.bwd_release_fires) seq_.push_back(event(HookKind::Release, it->module));
        continue;
      }
      if (!mod.bwd_fetch_fires) continue;
      const auto l = mod.layer;
      const bool first = l < started.size() && !recomputed[l];
      if (first) recomputed[l] = true;
      if (first && ckpt_ && m_.layers[l].kind == LayerKind::Block) recompute(l);
      seq_.push_back(event(HookKind::Fetch, it->module));
      if (l < started.size()) {
        started[l] =
            piece(seq_, HookKind::Backward, true, l, it->module, bwd_total_[l], started[l]);
      }
      slot_[it->module] = static_cast<std::uint32_t>(seq_.size());
    }
    for (std::uint32_t l = static_cast<std::uint32_t>(started.size()); l-- > 0;)
      if (!started[l]) seq_.push_back(event(HookKind::Backward, l));
    mark_last(seq_, 0, HookKind::Backward);
  }

  static HookEvent event(HookKind k, std::uint32_t index) {
    HookEvent e;
    e.kind = k;
    e.backward = true;
    e.index = index;
    return e;
  }

  // The checkpointed block's forward runs again inside backward, hooks included.
  void recompute(std::uint32_t layer) {
    bool started = false;
    for (const auto& c : calls_of_layer_[layer]) {
      seq_.push_back(event(c.begin ? HookKind::Fetch : HookKind::Release, c.module));
      if (c.begin)
        started =
            piece(seq_, HookKind::Recompute, true, layer, c.module, fwd_total_[layer], started);
    }
  }

  // Walks grad_order: before a param's GradReady, the backward sequence runs up to the slot of the
  // last module (in backward order) holding the param; the rest runs after the last gradient.
  void merge_gradients() {
    std::vector<std::uint32_t> ready(m_.params.size(), kNone);
    for (std::uint32_t i = 0; i < w_.modules.size(); ++i)
      for (auto p : w_.modules[i].params)
        if (slot_[i] != kNone && (ready[p] == kNone || slot_[i] > ready[p])) ready[p] = slot_[i];
    std::size_t cursor = 0;
    auto run_to = [&](std::size_t to) {
      for (; cursor < to && cursor < seq_.size(); ++cursor) w_.events.push_back(seq_[cursor]);
    };
    for (auto p : hooked_grad_order(m_)) {
      if (ready[p] != kNone) run_to(ready[p]);
      push(w_, HookKind::GradReady, true, p);
    }
    run_to(seq_.size());
  }

  const ModelDesc& m_;
  bool ckpt_;
  const std::vector<bool>& persistent_;
  Walk w_;
  std::vector<bool> hooked_;       ///< per module: registered (not below a z3 leaf)
  std::vector<ModuleCall> calls_;  ///< model.module_calls of hooked modules
  std::size_t externals_ = 0;      ///< external params registered, over all modules
  std::size_t leaves_ = 0;         ///< hooked z3 leaf modules
  std::vector<std::vector<ModuleCall>> calls_of_layer_;  ///< forward calls of each Layer's modules
  std::vector<HookEvent> seq_;                           ///< backward events without GradReady
  std::vector<std::uint32_t> slot_;
  std::vector<double> weight_;  ///< per module: direct param elements (layer modules)
  std::vector<double> fwd_total_, bwd_total_;  ///< per layer: weights of its forward/backward calls
};

// A param list: one module per param. Backward visits the params of grad_order first (each one's
// module fetched right before its gradient), then the others in reverse declaration order.
Walk param_walk(const ModelDesc& m) {
  Walk w;
  const auto n = static_cast<std::uint32_t>(m.params.size());
  for (std::uint32_t p = 0; p < n; ++p)
    w.modules.push_back({m.params[p].name, {p}, kNone, true, true});
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

std::string expected_below(std::size_t n, std::uint64_t got) {
  return "expected an index below " + std::to_string(n) + ", got " + std::to_string(got);
}

// Module indices, layers and params in range; module_calls properly nested, each module at most
// once, and the root (module 0, the only one without a parent) called first.
void check_modules(const ModelDesc& m, Diagnostics& d) {
  const auto n_mod = m.modules.size();
  for (std::size_t i = 0; i < n_mod; ++i) {
    const auto& node = m.modules[i];
    const std::string at = "/modules/" + std::to_string(i);
    if ((i == 0) != (node.parent == kNoModule) || (i > 0 && node.parent >= i))
      d.error(kSource, at + "/parent",
              "expected an earlier module (none for module 0), got " + std::to_string(node.parent));
    if (node.layer != kNoLayer && node.layer >= m.layers.size())
      d.error(kSource, at + "/layer", expected_below(m.layers.size(), node.layer));
    for (std::size_t j = 0; j < node.param_ids.size(); ++j)
      if (node.param_ids[j] >= m.params.size())
        d.error(kSource, at + "/param_ids/" + std::to_string(j),
                expected_below(m.params.size(), node.param_ids[j]));
    for (std::size_t j = 0; j < node.external_ids.size(); ++j)
      if (node.external_ids[j] >= m.params.size())
        d.error(kSource, at + "/external_ids/" + std::to_string(j),
                expected_below(m.params.size(), node.external_ids[j]));
  }
  if (n_mod > 0 && (m.module_calls.empty() || m.module_calls.front().module != 0))
    d.error(kSource, "/module_calls/0", "expected the root module's pre-forward first");
  std::vector<std::uint32_t> open;
  std::vector<bool> seen(n_mod, false);
  for (std::size_t i = 0; i < m.module_calls.size(); ++i) {
    const auto& c = m.module_calls[i];
    const std::string at = "/module_calls/" + std::to_string(i);
    if (c.module >= n_mod) {
      d.error(kSource, at + "/module", expected_below(n_mod, c.module));
      return;
    }
    if (c.begin && !seen[c.module]) {
      seen[c.module] = true;
      open.push_back(c.module);
    } else if (!c.begin && !open.empty() && open.back() == c.module) {
      open.pop_back();
    } else {
      d.error(kSource, at, "expected properly nested begin/end events, one pair per module");
      return;
    }
  }
  if (!open.empty())
    d.error(kSource, "/module_calls",
            "expected every begin to have its end, got " + std::to_string(open.size()) +
                " modules left open");
}

}  // namespace

Result<Walk> build_walk(const ModelDesc& m, bool activation_checkpointing,
                        const std::vector<bool>& persistent) {
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
  check_modules(m, d);
  if (d.has_errors()) return d;
  if (!m.modules.empty()) return ModuleWalk(m, activation_checkpointing, persistent).build();
  Walk w = m.layers.empty() ? param_walk(m) : layer_walk(m, activation_checkpointing);
  w.mapping = m.layers.empty()
                  ? "hooked modules: one per param (the model has no layer structure)"
                  : "hooked modules: one per layer (its param_ids), the root for params no layer "
                    "lists; embedding layers' post-backward hooks never fire (token-id inputs)";
  return w;
}

}  // namespace zerosim::schedule::s3
