// Pieces shared by the per-architecture builders (transformer_builder.cc, transformer_gpt.cc and
// transformer_families.cc): the LM head, the attention FLOP rate, and the family entry points.
//
// Every family builder does two things in one pass, mirroring its transformers modeling file:
// declares parameters in __init__ registration order (named_parameters()) with the Layer structure
// (forward use order, FLOPs), and traces the nn.Module tree in the order forward() calls modules
// (ModuleTracer), which is the order DeepSpeed stage 3's hooks fire in.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_builder.h"
#include "model/module_tracer.h"
#include "model/transformer_spec.h"

namespace zerosim {

/// Attention score + context FLOPs per token per context token: 4 x heads x head_dim.
double attn_flops_per_ctx(const TransformerSpec& s);

/// The LM head module's direct params and the index of the head Layer.
struct HeadParams {
  ModuleParams head;
  std::uint32_t layer = kNoLayer;
};

/// Appends the LM head layer: `before` (e.g. OPT's project_out), then the head weight. A tied head
/// reuses `embedding`'s weight (listed once in params, used twice); otherwise declares
/// `name`.weight [vocab, in]. `bias` adds `name`.bias [vocab] (GPT-J), tied or not.
HeadParams add_head(const TransformerSpec& s, ModelBuilder& b, const ModuleParams& embedding,
                    const std::string& name, std::uint64_t in, bool bias,
                    const ModuleParams& before);

void build_gpt2(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_gptj(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_gpt_neox(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_opt(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_bloom(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_falcon(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);

}  // namespace zerosim
