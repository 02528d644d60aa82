// ModelBuilder implementation: checked element counts and torch-like module helpers.
#include "model/model_builder.h"

#include <utility>

#include "zerosim/model_loader.h"
#include "zerosim/units.h"

namespace zerosim {

namespace {
constexpr Elements kMaxElements = static_cast<Elements>(kMaxParameters);
}  // namespace

ModuleParams concat(std::initializer_list<ModuleParams> parts) {
  ModuleParams out;
  for (const auto& p : parts) {
    out.ids.insert(out.ids.end(), p.ids.begin(), p.ids.end());
    out.matmul_elems += p.matmul_elems;
  }
  return out;
}

std::uint64_t ModelBuilder::mul(std::uint64_t a, std::uint64_t b) {
  auto r = checked_mul(a, b);
  if (!r) {
    if (error_.empty()) error_ = "a tensor width overflows 64 bits";
    return 0;
  }
  return *r;
}

std::uint32_t ModelBuilder::param(const std::string& name, std::vector<std::uint64_t> shape) {
  Elements numel = 1;
  for (auto d : shape) {
    auto r = checked_mul(numel, d);
    if (!r || *r > kMaxElements) {
      if (error_.empty())
        error_ = "parameter \"" + name + "\" of shape " + shape_text(shape) +
                 " has more than 1e15 elements";
      numel = 0;
      break;
    }
    numel = *r;
  }
  total_ += numel;  // both terms are <= 1e15, so the sum cannot wrap
  if (total_ > kMaxElements && error_.empty())
    error_ = "the model has more than 1e15 parameters (the limit zerosim accepts)";
  auto id = static_cast<std::uint32_t>(m_.params.size());
  m_.params.push_back(ParamTensor{name, std::move(shape), numel, true});
  return id;
}

ModuleParams ModelBuilder::linear(const std::string& prefix, std::uint64_t in, std::uint64_t out,
                                  bool bias) {
  ModuleParams p;
  p.ids.push_back(param(prefix + ".weight", {out, in}));
  p.matmul_elems = m_.params[p.ids.back()].numel;
  if (bias) p.ids.push_back(param(prefix + ".bias", {out}));
  return p;
}

ModuleParams ModelBuilder::conv1d(const std::string& prefix, std::uint64_t in, std::uint64_t out) {
  ModuleParams p;
  p.ids.push_back(param(prefix + ".weight", {in, out}));
  p.matmul_elems = m_.params[p.ids.back()].numel;
  p.ids.push_back(param(prefix + ".bias", {out}));
  return p;
}

ModuleParams ModelBuilder::norm(const std::string& prefix, std::uint64_t dim, bool bias,
                                bool affine) {
  ModuleParams p;
  if (!affine) return p;
  p.ids.push_back(param(prefix + ".weight", {dim}));
  if (bias) p.ids.push_back(param(prefix + ".bias", {dim}));
  return p;
}

ModuleParams ModelBuilder::embedding(const std::string& prefix, std::uint64_t rows,
                                     std::uint64_t dim) {
  return ModuleParams{{param(prefix + ".weight", {rows, dim})}, 0};
}

std::uint32_t ModelBuilder::layer(const std::string& name, LayerKind kind, const ModuleParams& use,
                                  double attn_flops_per_ctx) {
  Layer l;
  l.name = name;
  l.kind = kind;
  l.param_ids = use.ids;
  l.fwd_flops_per_token = 2.0 * static_cast<double>(use.matmul_elems);
  l.attn_flops_per_token_per_ctx = attn_flops_per_ctx;
  m_.layers.push_back(std::move(l));
  return static_cast<std::uint32_t>(m_.layers.size() - 1);
}

}  // namespace zerosim
