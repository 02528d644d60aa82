// synthetic_model (`--params N`): a GPT-style decoder with exactly N parameters, shaped like the
// published model of its size: depth and width both grow with N, as they do across real families,
// so no tensor is larger than the largest tensor of a real model of that size.
//
// Shape sources (rows as (layers, d_model, heads)):
//   - GPT-3 paper (Brown et al. 2020, "Language Models are Few-Shot Learners") Table 2.1, 125M to
//     13B and 175B. Two rows are inconsistent in the table and follow its d_head: XL lists 24 heads
//     of 128 for d_model 2048 (zerosim: 16 heads of 128), 13B lists d_model 5140 with 40 heads of
//     128 (zerosim: d_model 5120). Neither change alters the paper's rounded parameter counts.
//   - Megatron-LM (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
//     Clusters Using Megatron-LM", Table 1): 18.4B (40, 6144, 48), 39.1B (48, 8192, 64), 76.1B
//     (60, 10240, 80), 145.6B (80, 12288, 96), 310.1B (96, 16384, 128), 529.6B (105, 20480, 128),
//     1008B (128, 25600, 160). They fill GPT-3's gap between 13B and 175B and go to 1T.
// All are built as GPT-2 modules (learned positions, 4h GELU MLP, tied head), vocab 50257 and
// context 2048 (the GPT-3 paper's; Megatron's 51200-token vocab is not used).
//
// The rule (deterministic, documented in models/README.md):
//   N(L, h) = L (12h^2 + 13h) + (50257 + 2048 + 2) h   elements of a GPT-2-style model.
//   1. Width: up to the largest row's own N, the row whose N(L_row, h_row) is nearest to P on a log
//      scale gives h and the heads. Beyond it, width grows as the cube root of the size, as the
//      rows' do (h ~ N^(1/3) keeps d_model / layers near the 1T row's 200): h = 25600 (P /
//      N_1T)^(1/3) rounded down to a multiple of 160 (heads of 160, the 1T row's head size).
//   2. Depth: L = floor((P - N(0, h)) / (12h^2 + 13h)), if L >= 1.
//   3. Otherwise (P below one block of the smallest row) keep the small row's 12 layers and 12
//      heads and take the largest h (a multiple of 12) with N(12, h) <= P.
//   4. The remainder R = P - N(L, h) < one block is extra trainable tensors declared last and used
//      by the embedding layer (no FLOPs), each at most as large as the model's largest tensor:
//      "transformer.remainder" when one is enough, else "transformer.remainder.0", ".1", ...
//      In the module tree they are direct params of "transformer" (GPT2Model), as their names
//      say, so stage 3 fetches them with that module.
//   5. Below the smallest such model (P < N(12, 12) = 650292) the model is one tensor
//      "synthetic.weight" [P] in one layer, without ArchInfo.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "model/module_tracer.h"
#include "model/transformer_spec.h"
#include "zerosim/model_loader.h"

namespace zerosim {

namespace {

struct ShapeRow {
  const char* name;
  std::uint64_t layers, hidden, heads;
};
constexpr ShapeRow kRows[] = {
    {"GPT-3 Small (125M)", 12, 768, 12},
    {"GPT-3 Medium (350M)", 24, 1024, 16},
    {"GPT-3 Large (760M)", 24, 1536, 16},
    {"GPT-3 XL (1.3B)", 24, 2048, 16},
    {"GPT-3 2.7B", 32, 2560, 32},
    {"GPT-3 6.7B", 32, 4096, 32},
    {"GPT-3 13B", 40, 5120, 40},
    {"Megatron-LM 18.4B", 40, 6144, 48},
    {"Megatron-LM 39.1B", 48, 8192, 64},
    {"Megatron-LM 76.1B", 60, 10240, 80},
    {"Megatron-LM 145.6B", 80, 12288, 96},
    {"GPT-3 175B", 96, 12288, 96},
    {"Megatron-LM 310.1B", 96, 16384, 128},
    {"Megatron-LM 529.6B", 105, 20480, 128},
    {"Megatron-LM 1008B", 128, 25600, 160},
};
constexpr std::uint64_t kVocab = 50257;
constexpr std::uint64_t kContext = 2048;
constexpr std::uint64_t kBeyondHeadDim = 160;  ///< head size of the largest row

// Elements of one block and of the rest (wte, wpe, ln_f). All callers keep h <= 2^26, so no wrap.
std::uint64_t block_elems(std::uint64_t h) { return 12 * h * h + 13 * h; }
std::uint64_t fixed_elems(std::uint64_t h) { return (kVocab + kContext + 2) * h; }
std::uint64_t total_elems(std::uint64_t l, std::uint64_t h) {
  return l * block_elems(h) + fixed_elems(h);
}

const ShapeRow& nearest_row(std::uint64_t p) {
  const ShapeRow* best = &kRows[0];
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
  const ShapeRow& last = kRows[std::size(kRows) - 1];
  const std::uint64_t last_n = total_elems(last.layers, last.hidden);
  std::string shape_from;
  std::uint64_t layers = 0, hidden = 0, heads = 0;
  if (p > last_n) {
    const double scale = std::cbrt(static_cast<double>(p) / static_cast<double>(last_n));
    hidden = static_cast<std::uint64_t>(static_cast<double>(last.hidden) * scale) / kBeyondHeadDim *
             kBeyondHeadDim;
    hidden = std::max(hidden, last.hidden);
    heads = hidden / kBeyondHeadDim;
    shape_from = "the " + std::string(last.name) + " shape widened by (N / N_1T)^(1/3)";
  } else {
    const ShapeRow& row = nearest_row(p);
    hidden = row.hidden;
    heads = row.heads;
    shape_from = "the " + std::string(row.name) + " shape";
  }
  if (p >= fixed_elems(hidden) + block_elems(hidden))
    layers = (p - fixed_elems(hidden)) / block_elems(hidden);
  if (layers < 1) {
    layers = kRows[0].layers;
    heads = kRows[0].heads;
    hidden = widest(p, layers, heads);
    if (hidden == 0) return single_tensor(p, name);
    shape_from = "the " + std::string(kRows[0].name) + " shape narrowed";
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
  const std::string src = "synthetic: " + shape_from + " as GPT-2-style modules, " +
                          std::to_string(layers) + " layers, d_model " + std::to_string(hidden) +
                          ", " + std::to_string(heads) + " heads, remainder " +
                          std::to_string(remainder);
  auto built = build_transformer(s, name, src);
  if (!built.ok()) return built;
  ModelDesc m = std::move(built.value());
  if (remainder > 0) {
    // Split so that no remainder tensor is larger than the model's own largest tensor: a stage-3
    // fetch of one oversized remainder would decide the answer for the largest sizes.
    Elements largest = 0;
    for (const auto& t : m.params) largest = std::max(largest, t.numel);
    const std::uint64_t pieces = (remainder + largest - 1) / largest;
    for (std::uint64_t i = 0; i < pieces; ++i) {
      const Elements n = i + 1 < pieces ? largest : remainder - (pieces - 1) * largest;
      const std::string pname =
          pieces == 1 ? "transformer.remainder" : "transformer.remainder." + std::to_string(i);
      auto id = static_cast<std::uint32_t>(m.params.size());
      m.params.push_back(ParamTensor{pname, {n}, n, true});
      m.layers.front().param_ids.push_back(id);
      ModuleTracer::add_direct_param(m, "transformer", id);
    }
    m.grad_order = derive_grad_order(m);
  }
  return m;
}

}  // namespace zerosim
