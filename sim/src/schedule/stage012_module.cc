// EngineModule (stage012_pieces.h): DeepSpeedEngine.module as the stage 0/1/2 optimizers see it.
// The module's params start as separate storage, are broadcast from rank 0 (engine.py:1715
// _broadcast_model at edaa722) and are then flattened by the optimizer wrapper into its flat
// buffers; autograd's p.grad (T1), the GA-attribute p.grad_accum and the layers' activations are
// allocated and freed here on behalf of whoever drives the micro-step.
#include <string>
#include <utility>
#include <vector>

#include "schedule/stage012_pieces.h"

namespace zerosim::schedule::s12 {
namespace {

Buffer module_buffer(std::string name, std::string spec, BufferCategory cat, DType dt,
                     Elements numel, bool persistent) {
  return make_buffer(std::move(name), std::move(spec), cat, MemoryPool::Device, dt, numel,
                     persistent);
}

}  // namespace

EngineModule::EngineModule(const Config& cfg, Emitter& e)
    : cfg_(cfg),
      e_(e),
      home_(cfg.m.params.size()),
      grad_buf_(cfg.m.params.size(), kNone),
      grad_accum_buf_(cfg.m.params.size(), kNone),
      grad_live_(cfg.m.params.size(), false),
      grad_accum_live_(cfg.m.params.size(), false) {
  const ModelDesc& m = cfg.m;
  for (std::uint32_t p = 0; p < m.params.size(); ++p) {
    const ParamTensor& t = m.params[p];
    if (!t.trainable || t.numel == 0) continue;
    grad_buf_[p] = e.buffer(
        module_buffer("grad:" + t.name, "T1", BufferCategory::Grad, cfg.lp, t.numel, false));
    if (cfg.ga_attr)
      grad_accum_buf_[p] = e.buffer(
          module_buffer("grad_accum:" + t.name, "", BufferCategory::Grad, cfg.ga, t.numel, false));
  }
  const auto bytes = layer_activation_bytes(m, cfg.in.training, cfg.lp);
  activation_.assign(m.layers.size(), kNone);
  for (std::size_t l = 0; l < bytes.size() && l < m.layers.size(); ++l)
    if (bytes[l] > 0)
      activation_[l] =
          e.buffer(module_buffer("activations:" + m.layers[l].name, "", BufferCategory::Activation,
                                 DType::UInt8, bytes[l], false));
  ready_layer_ = grad_ready_layer(m);
}

void EngineModule::alloc_grad(std::uint32_t p, bool zero_fill) {
  if (grad_buf_[p] == kNone || grad_live_[p]) return;
  e_.alloc(grad_buf_[p], Stream::Compute, kNone, zero_fill);
  grad_live_[p] = true;
}

void EngineModule::free_grad(std::uint32_t p, Stream st) {
  if (grad_buf_[p] == kNone || !grad_live_[p]) return;
  e_.free(grad_buf_[p], st);
  grad_live_[p] = false;
}

void EngineModule::zero_grad() {
  for (std::uint32_t p = 0; p < cfg_.m.params.size(); ++p) free_grad(p);
}

void EngineModule::alloc_grad_accum(std::uint32_t p) {
  if (grad_accum_live_[p]) return;
  e_.alloc(grad_accum_buf_[p]);
  grad_accum_live_[p] = true;
}

void EngineModule::free_grad_accums() {
  for (std::uint32_t p = 0; p < cfg_.m.params.size(); ++p)
    if (grad_accum_live_[p]) {
      e_.free(grad_accum_buf_[p]);
      grad_accum_live_[p] = false;
    }
}

void EngineModule::flatten_into(const FlatGroup& fg, std::uint32_t flat, bool aligned,
                                const std::string& name) {
  const Elements n = aligned ? fg.aligned : fg.numel;
  if (n == 0) return;
  // The module's tensors in flat order, each at its flat offset, then the zero padding
  // (flatten_dense_tensors_aligned pads with torch.zeros; FP16_Optimizer's plain
  // _flatten_dense_tensors has none).
  std::vector<Piece> from, into;
  for (std::size_t i = 0; i < fg.flat_order.size(); ++i) {
    const std::uint32_t p = fg.flat_order[i];
    const Elements np = cfg_.m.params[p].numel;
    from.push_back({home_[p].buffer, home_[p].offset, np});
    into.push_back({flat, fg.flat_offset[i], np});
    home_[p] = region(flat, fg.flat_offset[i], np);  // p's 16-bit values now live in `flat`
  }
  if (aligned && fg.padding > 0) {
    from.push_back({kNone, 0, fg.padding});
    into.push_back({flat, fg.numel, fg.padding});
  }
  e_.copy({.dtype = cfg_.lp,
           .elements = n,
           .src = list_region(e_.list(std::move(from))),
           .dst = list_region(e_.list(std::move(into))),
           .label = "flatten module params into " + name});
}

std::uint32_t EngineModule::emit_params(bool trainable_persistent) {
  const ModelDesc& m = cfg_.m;
  const Elements flattened = cfg_.grads_in_groups();
  Elements total = 0;
  for (const ParamTensor& p : m.params) total += p.numel;
  const std::uint32_t module =
      e_.buffer(module_buffer("module params (optimized)", "", BufferCategory::Param16, cfg_.lp,
                              flattened, trainable_persistent));
  e_.alloc(module);
  std::uint32_t rest = kNone;
  if (total > flattened) {  // frozen params and params in no optimizer group keep their storage
    rest = e_.buffer(module_buffer("module params (not optimized)", "", BufferCategory::Param16,
                                   cfg_.lp, total - flattened, true));
    e_.alloc(rest);
  }
  // The module's storage as two concatenations: group params in group order, then the others in
  // declaration order.
  Elements at = 0, rest_at = 0;
  std::vector<bool> grouped(m.params.size(), false);
  for (const FlatGroup& fg : cfg_.plan.groups)
    for (std::uint32_t p : fg.params) {
      grouped[p] = true;
      home_[p] = region(module, at, m.params[p].numel);
      at += m.params[p].numel;
    }
  for (std::uint32_t p = 0; p < m.params.size(); ++p)
    if (!grouped[p]) {
      home_[p] = region(rest, rest_at, m.params[p].numel);
      rest_at += m.params[p].numel;
    }
  // engine _broadcast_model: every param from rank 0, in module.parameters() order (§7.1 item 1).
  for (std::uint32_t p = 0; p < m.params.size(); ++p)
    e_.collective({.kind = CollectiveKind::Broadcast,
                   .dtype = cfg_.lp,
                   .numel = m.params[p].numel,
                   .out_numel = m.params[p].numel,
                   .root = 0,
                   .src = home_[p],
                   .label = e_.labels() ? collective_label("broadcast " + cfg_.pname(p),
                                                           CollectiveKind::Broadcast,
                                                           m.params[p].numel, m.params[p].numel, 0)
                                        : std::string()});
  return module;
}

}  // namespace zerosim::schedule::s12
