// ModelBuilder: declares parameter tensors and layers the way torch modules do, so that the
// per-architecture builders read like the transformers modeling files they mirror.
//
// Parameters are appended in declaration order (what named_parameters() yields); a layer lists the
// ids in forward use order. Element counts are checked: a shape whose product does not fit in 64
// bits, or a running total above kMaxParameters, marks the builder failed instead of wrapping.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "zerosim/model_desc.h"

namespace zerosim {

/// Ids of one module's params in use order, plus the weight elements its matmuls multiply by
/// (what the 2 x params FLOP rule counts; biases and norms are not matmuls).
struct ModuleParams {
  std::vector<std::uint32_t> ids;
  Elements matmul_elems = 0;
};

/// Concatenates modules in forward use order.
ModuleParams concat(std::initializer_list<ModuleParams> parts);

class ModelBuilder {
 public:
  explicit ModelBuilder(ModelDesc& m) : m_(m) {}

  /// Declares one parameter; returns its id.
  std::uint32_t param(const std::string& name, std::vector<std::uint64_t> shape);
  /// torch.nn.Linear(in, out, bias): weight [out, in], then bias [out].
  ModuleParams linear(const std::string& prefix, std::uint64_t in, std::uint64_t out, bool bias);
  /// transformers' Conv1D(nf = out, nx = in) used by GPT-2: weight [in, out], then bias [out].
  ModuleParams conv1d(const std::string& prefix, std::uint64_t in, std::uint64_t out);
  /// LayerNorm (weight, bias) when `bias`, RMSNorm (weight) otherwise; nothing when !affine.
  ModuleParams norm(const std::string& prefix, std::uint64_t dim, bool bias, bool affine = true);
  /// torch.nn.Embedding(rows, dim): weight [rows, dim]; a lookup, so no matmul elements.
  ModuleParams embedding(const std::string& prefix, std::uint64_t rows, std::uint64_t dim);

  /// Appends a layer using `use` (forward order); forward FLOPs per token = 2 x matmul elements.
  /// Returns the layer's index.
  std::uint32_t layer(const std::string& name, LayerKind kind, const ModuleParams& use,
                      double attn_flops_per_ctx = 0);

  /// True once a shape overflowed or the total passed kMaxParameters; builders stop early.
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  /// a * b, or 0 with the builder failed when it overflows (for derived widths).
  std::uint64_t mul(std::uint64_t a, std::uint64_t b);

 private:
  ModelDesc& m_;
  Elements total_ = 0;
  std::string error_;
};

}  // namespace zerosim
