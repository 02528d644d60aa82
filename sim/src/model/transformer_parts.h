// Pieces shared by the per-architecture builders (transformer_builder.cc and
// transformer_families.cc): the LM head, the attention FLOP rate, and the family entry points.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_builder.h"
#include "model/transformer_spec.h"

namespace zerosim {

/// Attention score + context FLOPs per token per context token: 4 x heads x head_dim.
double attn_flops_per_ctx(const TransformerSpec& s);

/// Appends the LM head layer: `before` (e.g. OPT's project_out), then the head weight. A tied head
/// reuses `embedding`'s weight (listed once in params, used twice); otherwise declares
/// `name`.weight [vocab, in]. `bias` adds `name`.bias [vocab] (GPT-J), tied or not.
void add_head(const TransformerSpec& s, ModelBuilder& b, const ModuleParams& embedding,
              const std::string& name, std::uint64_t in, bool bias, const ModuleParams& before);

void build_opt(const TransformerSpec& s, ModelBuilder& b);
void build_bloom(const TransformerSpec& s, ModelBuilder& b);
void build_falcon(const TransformerSpec& s, ModelBuilder& b);

}  // namespace zerosim
