// ReportBuilder: phase bookkeeping and peak selection for MemoryReport.
#include "memory/report_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "memory/exact_math.h"

namespace zerosim::memory {

const char* layer_name(Layer layer) {
  switch (layer) {
    case Layer::Params:
      return "params";
    case Layer::Grads:
      return "grads";
    case Layer::OptimizerStates:
      return "optimizer_states";
    case Layer::Buffers:
      return "buffers";
    case Layer::Activations:
      return "activations";
  }
  return "?";
}

void ReportBuilder::persistent(Layer layer, std::string name, Bytes bytes) {
  if (bytes == 0) return;
  terms_.push_back({layer, std::move(name), bytes, kPersistent});
}

void ReportBuilder::during(const std::string& phase, Layer layer, std::string name, Bytes bytes) {
  if (std::find(phase_order_.begin(), phase_order_.end(), phase) == phase_order_.end())
    phase_order_.push_back(phase);
  if (bytes == 0) return;
  terms_.push_back({layer, std::move(name), bytes, phase});
}

void ReportBuilder::host(std::string name, Bytes bytes) {
  if (bytes == 0) return;
  host_.push_back({"host", std::move(name), bytes, kPersistent});
}

void ReportBuilder::note(std::string text) { notes_.push_back(std::move(text)); }

namespace {

void add_to_layer(MemoryReport& r, Layer layer, Bytes b) {
  switch (layer) {
    case Layer::Params:
      r.params = sat_add(r.params, b);
      break;
    case Layer::Grads:
      r.grads = sat_add(r.grads, b);
      break;
    case Layer::OptimizerStates:
      r.optimizer_states = sat_add(r.optimizer_states, b);
      break;
    case Layer::Buffers:
      r.buffers = sat_add(r.buffers, b);
      break;
    case Layer::Activations:
      r.activations = sat_add(r.activations, b);
      break;
  }
}

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", f * 100);
  return buf;
}

}  // namespace

MemoryReport ReportBuilder::finish(const OverheadParams& overheads) const {
  MemoryReport r;
  Bytes base = 0;
  for (const auto& t : terms_)
    if (t.phase == kPersistent) base = sat_add(base, t.bytes);
  r.peak_phase = kPersistent;
  Bytes peak = base;
  // Phases in time order within a step (backward, then the engine all-reduce, then step), others
  // after.
  std::vector<std::string> order;
  for (const char* known : {kBackward, kAllReduce, kStep})
    if (std::find(phase_order_.begin(), phase_order_.end(), known) != phase_order_.end())
      order.emplace_back(known);
  for (const auto& p : phase_order_)
    if (std::find(order.begin(), order.end(), p) == order.end()) order.push_back(p);
  for (const auto& p : order) {
    Bytes total = base;
    for (const auto& t : terms_)
      if (t.phase == p) total = sat_add(total, t.bytes);
    r.phases.push_back({p, total});
    if (r.phases.size() == 1 || total > peak) {  // ties keep the earlier phase
      peak = total;
      r.peak_phase = p;
    }
  }
  for (const auto& t : terms_) {
    MemoryItem item{layer_name(t.layer), t.name, t.bytes, t.phase};
    if (t.phase == kPersistent || t.phase == r.peak_phase) {
      add_to_layer(r, t.layer, t.bytes);
      r.items.push_back(std::move(item));
    } else {
      r.off_peak_items.push_back(std::move(item));
    }
  }
  // Overheads: fixed terms, then fragmentation on the tensor bytes resident at the peak.
  auto overhead = [&r](std::string name, Bytes b) {
    if (b == 0) return;
    r.overhead = sat_add(r.overhead, b);
    r.items.push_back({"overhead", std::move(name), b, kPersistent});
  };
  overhead("CUDA context, kernels and library workspaces", overheads.cuda_context);
  overhead("NCCL communicator buffers", overheads.nccl_buffers);
  overhead("bitsandbytes quantization state (absmax, codes; every rank)",
           overheads.quantization_state);
  overhead("bitsandbytes dequantized weight (largest, one backward matmul)",
           overheads.dequantized_weight);
  double frag = overheads.fragmentation;
  if (std::isfinite(frag) && frag > 0) {
    overhead("allocator fragmentation (" + percent(frag) + " of tensor bytes)",
             floor_scaled(peak, 1, frag));
  } else if (!(frag == 0)) {
    r.notes.push_back("fragmentation fraction " + std::to_string(frag) +
                      " is not a finite number >= 0; no fragmentation counted");
  }
  for (const auto& h : host_) {
    r.host_bytes = sat_add(r.host_bytes, h.bytes);
    r.items.push_back(h);
  }
  r.notes.insert(r.notes.end(), notes_.begin(), notes_.end());
  return r;
}

}  // namespace zerosim::memory
