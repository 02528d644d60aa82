// Mixture-of-experts MLPs of the Llama-layout families (see transformer_builder.cc for the
// conventions), as declared in transformers v4.49 to v4.53:
//
// Mixtral (models/mixtral/modeling_mixtral.py): MixtralSparseMoeBlock declares `gate`
// (Linear(hidden, num_local_experts), no bias) then `experts`, a ModuleList of
// MixtralBlockSparseTop2MLP, each declaring w1 [ffn, hidden], w2 [hidden, ffn], w3 [ffn, hidden]
// and computing w2(act_fn(w1(x)) * w3(x)).
// Qwen2-MoE (models/qwen2_moe/modeling_qwen2_moe.py): Qwen2MoeSparseMoeBlock declares `gate`,
// `experts` (Qwen2MoeMLP of moe_intermediate_size: gate_proj, up_proj, down_proj), then
// `shared_expert` (Qwen2MoeMLP of shared_expert_intermediate_size) and `shared_expert_gate`
// (Linear(hidden, 1), no bias); forward runs the router, the routed experts, the shared expert
// and then its gate.
//
// Compute follows top-k routing: each token passes through the router, experts_per_token routed
// experts and the shared expert, so a layer's FLOPs per token count those and not every expert.
// The module trace calls every expert once per forward (each one receives some token, which is
// the rule for any real batch); the MoE block is marked as a stage 3 leaf (ModuleNode::z3_leaf).
#include <algorithm>
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

bool mixtral(const TransformerSpec& s) { return s.model_type == "mixtral"; }

// One gated expert MLP; `use` lists its projections in forward order.
ModuleParams expert_mlp(const TransformerSpec& s, ModelBuilder& b, const std::string& p,
                        std::uint64_t ffn) {
  if (mixtral(s)) {
    auto w1 = b.linear(p + ".w1", s.hidden, ffn, false);
    auto w2 = b.linear(p + ".w2", ffn, s.hidden, false);
    auto w3 = b.linear(p + ".w3", s.hidden, ffn, false);
    return concat({w1, w3, w2});
  }
  auto gate = b.linear(p + ".gate_proj", s.hidden, ffn, false);
  auto up = b.linear(p + ".up_proj", s.hidden, ffn, false);
  auto down = b.linear(p + ".down_proj", ffn, s.hidden, false);
  return concat({gate, up, down});
}

void trace_expert(const TransformerSpec& s, ModuleTracer& t, const std::string& p,
                  const std::string& cls, const ModuleParams& e) {
  // e.ids in use order: Mixtral w1, w3, w2; Qwen2-MoE gate_proj, up_proj, down_proj.
  const auto one = [&](std::size_t i) { return ModuleParams{{e.ids.at(i)}, 0}; };
  if (mixtral(s)) {
    t.enter(p, cls + "BlockSparseTop2MLP");
    t.leaf(p + ".w1", "Linear", one(0));
    t.leaf(p + ".act_fn", "SiLU");
    t.leaf(p + ".w3", "Linear", one(1));
    t.leaf(p + ".w2", "Linear", one(2));
  } else {
    t.enter(p, cls + "MLP");
    t.leaf(p + ".gate_proj", "Linear", one(0));
    t.leaf(p + ".act_fn", "SiLU");
    t.leaf(p + ".up_proj", "Linear", one(1));
    t.leaf(p + ".down_proj", "Linear", one(2));
  }
  t.leave();
}

}  // namespace

bool is_moe_layer(const TransformerSpec& s, std::uint64_t layer) {
  if (s.experts == 0 || s.sparse_step == 0 || (layer + 1) % s.sparse_step != 0) return false;
  return std::find(s.dense_layers.begin(), s.dense_layers.end(), layer) == s.dense_layers.end();
}

std::uint64_t per_token_ffn(const TransformerSpec& s) {
  if (s.experts == 0) return s.ffn;
  return s.experts_per_token * s.expert_ffn + s.shared_expert_ffn;
}

MoeParams add_moe_mlp(const TransformerSpec& s, ModelBuilder& b, const std::string& p) {
  MoeParams m;
  m.gate = b.linear(p + ".gate", s.hidden, s.experts, false);
  for (std::uint64_t e = 0; e < s.experts && !b.failed(); ++e)
    m.experts.push_back(expert_mlp(s, b, p + ".experts." + std::to_string(e), s.expert_ffn));
  if (s.shared_expert_ffn > 0) {
    m.shared = expert_mlp(s, b, p + ".shared_expert", s.shared_expert_ffn);
    m.shared_gate = b.linear(p + ".shared_expert_gate", s.hidden, 1, false);
  }
  std::vector<std::uint32_t> ids = m.gate.ids;
  for (const auto& e : m.experts) ids.insert(ids.end(), e.ids.begin(), e.ids.end());
  ids.insert(ids.end(), m.shared.ids.begin(), m.shared.ids.end());
  ids.insert(ids.end(), m.shared_gate.ids.begin(), m.shared_gate.ids.end());
  m.use.ids = std::move(ids);
  // What one token multiplies by: the router, its top-k experts, the shared expert and its gate.
  const Elements per_expert = m.experts.empty() ? 0 : m.experts.front().matmul_elems;
  m.use.matmul_elems = m.gate.matmul_elems + b.mul(s.experts_per_token, per_expert) +
                       m.shared.matmul_elems + m.shared_gate.matmul_elems;
  return m;
}

void trace_moe_mlp(const TransformerSpec& s, ModuleTracer& t, const std::string& p,
                   const std::string& cls, const MoeParams& m) {
  t.enter(p, cls + "SparseMoeBlock");
  t.mark_z3_leaf();
  t.leaf(p + ".gate", "Linear", m.gate);
  t.open(p + ".experts", "ModuleList");
  for (std::size_t e = 0; e < m.experts.size(); ++e)
    trace_expert(s, t, p + ".experts." + std::to_string(e), cls, m.experts[e]);
  t.close();
  if (s.shared_expert_ffn > 0) {
    trace_expert(s, t, p + ".shared_expert", cls, m.shared);
    t.leaf(p + ".shared_expert_gate", "Linear", m.shared_gate);
  }
  t.leave();
}

}  // namespace zerosim
