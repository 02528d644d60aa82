// synthetic_model (`--params N`): a GPT-style decoder with exactly N parameters.
//
// Shape source: GPT-3 paper (Brown et al. 2020, "Language Models are Few-Shot Learners") Table 2.1,
// built as GPT-2 modules (learned positions, 4h GELU MLP, tied head) with vocab 50257 and context
// 2048. Two rows are inconsistent in the table and follow its d_head: XL lists 24 heads of 128 for
// d_model 2048 (zerosim: 16 heads of 128), 13B lists d_model 5140 with 40 heads of 128 (zerosim:
// d_model 5120). Neither change alters the paper's rounded parameter counts.
//
// The rule (deterministic, documented in models/README.md):
//   N(L, h) = L (12h^2 + 13h) + (50257 + 2048 + 2) h   elements of a GPT-2-style model.
//   1. Take the row whose own N(L_row, h_row) is nearest to P on a log scale.
//   2. Depth: keep its width and heads, L = floor((P - N(0, h)) / (12h^2 + 13h)), if 1 <= L <= 128.
//   3. Width: otherwise keep its L and heads a, and take the largest h (a multiple of a) with
//      N(L, h) <= P.
//   4. The remainder R = P - N(L, h) is one extra trainable tensor "transformer.remainder" of shape
//      [R], declared last and used by the embedding layer (no FLOPs); absent when R = 0. In the
//      module tree it is a direct param of "transformer" (GPT2Model), as its name says, so
//      stage 3 fetches it with that module.
//   5. Below the smallest such model (P < N(12, 12) = 650292) the model is one tensor
//      "synthetic.weight" [P] in one layer, without ArchInfo.
#include <cmath>
#include <cstdio>
#include <string>

#include "model/module_tracer.h"
#include "model/transformer_spec.h"
#include "zerosim/model_loader.h"

namespace zerosim {

namespace {

struct Gpt3Row {
  const char* name;
  std::uint64_t layers, hidden, heads;
};
constexpr Gpt3Row kRows[] = {
    {"Small (125M)", 12, 768, 12}, {"Medium (350M)", 24, 1024, 16}, {"Large (760M)", 24, 1536, 16},
    {"XL (1.3B)", 24, 2048, 16},   {"2.7B", 32, 2560, 32},          {"6.7B", 32, 4096, 32},
    {"13B", 40, 5120, 40},         {"175B", 96, 12288, 96},
};
constexpr std::uint64_t kVocab = 50257;
constexpr std::uint64_t kContext = 2048;
constexpr std::uint64_t kMaxDepth = 128;

// Elements of one block and of the rest (wte, wpe, ln_f). All callers keep h <= 2^26, so no wrap.
std::uint64_t block_elems(std::uint64_t h) { return 12 * h * h + 13 * h; }
std::uint64_t fixed_elems(std::uint64_t h) { return (kVocab + kContext + 2) * h; }
std::uint64_t total_elems(std::uint64_t l, std::uint64_t h) {
  return l * block_elems(h) + fixed_elems(h);
}

const Gpt3Row& nearest_row(std::uint64_t p) {
  const Gpt3Row* best = &kRows[0];
  double best_d = INFINITY;
  for (const auto& r : kRows) {
    double d = std::fabs(std::log(static_cast<double>(p)) -
                         std::log(static_cast<double>(total_elems(r.layers, r.hidden))));
    if (d < best_d) {
      best_d = d;
      best = &r;
    }
  }
  return *best;
}

// Largest multiple of `a` with total_elems(l, h) <= p, or 0.
std::uint64_t widest(std::uint64_t p, std::uint64_t l, std::uint64_t a) {
  const long double qa = 12.0L * static_cast<long double>(l);
  const long double qb =
      13.0L * static_cast<long double>(l) + static_cast<long double>(kVocab + kContext + 2);
  const long double root =
      (-qb + std::sqrt(qb * qb + 4.0L * qa * static_cast<long double>(p))) / (2.0L * qa);
  std::uint64_t h = static_cast<std::uint64_t>(root) / a * a;
  while (total_elems(l, h + a) <= p) h += a;  // correct floating-point rounding either way
  while (h > 0 && total_elems(l, h) > p) h -= a;
  return h;
}

std::string compact(std::uint64_t p) {
  int zeros = 0;
  while (p >= 10 && p % 10 == 0) {
    p /= 10;
    ++zeros;
  }
  return std::to_string(p) + (zeros ? "e" + std::to_string(zeros) : "");
}

ModelDesc single_tensor(std::uint64_t p, const std::string& name) {
  ModelDesc m;
  m.name = name;
  m.source = "synthetic: one tensor (smaller than any GPT-3-shaped model)";
  m.params.push_back(ParamTensor{"synthetic.weight", {p}, p, true});
  Layer l{"synthetic", LayerKind::Other, {0}, 2.0 * static_cast<double>(p), 0};
  m.layers.push_back(std::move(l));
  m.grad_order = derive_grad_order(m);
  return m;
}

}  // namespace

Result<ModelDesc> synthetic_model(double parameters, const std::string& source) {
  char got[64];
  std::snprintf(got, sizeof got, "%.15g", parameters);
  if (!(parameters >= 1.0 && parameters <= kMaxParameters) || std::floor(parameters) != parameters)
    return fail<ModelDesc>(
        source, "",
        std::string("expected a whole number of parameters from 1 to 1e15, got ") + got);
  const auto p = static_cast<std::uint64_t>(parameters);
  const std::string name = "synthetic-" + compact(p);
  const Gpt3Row& row = nearest_row(p);
  std::uint64_t layers = 0, hidden = row.hidden, heads = row.heads;
  if (p >= fixed_elems(hidden) + block_elems(hidden))
    layers = (p - fixed_elems(hidden)) / block_elems(hidden);
  if (layers < 1 || layers > kMaxDepth) {
    layers = row.layers;
    hidden = widest(p, layers, heads);
    if (hidden == 0) return single_tensor(p, name);
  }
  TransformerSpec s;
  s.model_type = "gpt2";
  s.family = ArchFamily::Gpt2;
  s.vocab = kVocab;
  s.hidden = hidden;
  s.layers = layers;
  s.heads = s.kv_heads = heads;
  s.head_dim = hidden / heads;
  s.ffn = 4 * hidden;
  s.positions = s.max_seq = kContext;
  s.tie_embeddings = true;
  s.dropout = true;
  const std::uint64_t remainder = p - total_elems(layers, hidden);
  const std::string src = "synthetic: GPT-3 paper Table 2.1 row " + std::string(row.name) +
                          " as a GPT-2-style model, " + std::to_string(layers) +
                          " layers, d_model " + std::to_string(hidden) + ", " +
                          std::to_string(heads) + " heads, remainder " + std::to_string(remainder);
  auto built = build_transformer(s, name, src);
  if (!built.ok()) return built;
  ModelDesc m = std::move(built.value());
  if (remainder > 0) {
    auto id = static_cast<std::uint32_t>(m.params.size());
    m.params.push_back(ParamTensor{"transformer.remainder", {remainder}, remainder, true});
    m.layers.front().param_ids.push_back(id);
    ModuleTracer::add_direct_param(m, "transformer", id);
    m.grad_order = derive_grad_order(m);
  }
  return m;
}

}  // namespace zerosim
