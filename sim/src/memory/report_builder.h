// ReportBuilder: collects memory terms by layer and phase and turns them into a MemoryReport
// (private to sim/src/memory).
//
// Every accounting (DeepSpeed stage 0/1/2/3, BF16_Optimizer, paper) only states which terms exist,
// how large they are and when they are alive; picking the peak phase, adding the overheads and
// filling the per-layer totals happens here once.
#pragma once

#include <string>
#include <vector>

#include "zerosim/memory_model.h"

namespace zerosim::memory {

enum class Layer { Params, Grads, OptimizerStates, Buffers, Activations };

inline constexpr const char* kPersistent = "persistent";
inline constexpr const char* kBackward = "backward";
inline constexpr const char* kAllReduce = "allreduce";
inline constexpr const char* kStep = "step";

class ReportBuilder {
 public:
  /// A GPU term resident for the whole run (at every candidate peak). Zero-byte terms are dropped.
  void persistent(Layer layer, std::string name, Bytes bytes);
  /// A GPU term resident only during `phase`. A term alive in several phases is added to each.
  void during(const std::string& phase, Layer layer, std::string name, Bytes bytes);
  /// A host (CPU) term; not part of the GPU total.
  void host(std::string name, Bytes bytes);
  void note(std::string text);

  /// Picks the phase with the most GPU bytes (the first one on ties, in time order: backward,
  /// allreduce, step, then other phases in first-use order), adds the overheads (fragmentation as a
  /// fraction of the peak tensor bytes) and fills the report.
  MemoryReport finish(const OverheadParams& overheads) const;

 private:
  struct Term {
    Layer layer;
    std::string name;
    Bytes bytes;
    std::string phase;
  };
  std::vector<Term> terms_;
  std::vector<std::string> phase_order_;
  std::vector<MemoryItem> host_;
  std::vector<std::string> notes_;
};

/// "model_states"-style layer name used in MemoryItem::layer.
const char* layer_name(Layer layer);

}  // namespace zerosim::memory
