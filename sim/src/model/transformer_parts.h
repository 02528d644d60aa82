// Pieces shared by the per-architecture builders (transformer_builder.cc, transformer_gpt.cc,
// transformer_families.cc, transformer_phi3.cc, transformer_deepseek.cc, transformer_t5.cc, ...):
// the LM head, the base model's final norm, the Llama-layout root, the attention FLOP rate, and the
// family entry points.
//
// Every family builder does two things in one pass, mirroring its transformers modeling file:
// declares parameters in __init__ registration order (named_parameters()) with the Layer structure
// (forward use order, FLOPs), and traces the nn.Module tree in the order forward() calls modules
// (ModuleTracer), which is the order DeepSpeed stage 3's hooks fire in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

/// Traces the head module `name` (a Linear of the root, in the head Layer) and leaves the root: the
/// last module every causal LM's forward calls.
void trace_head(ModuleTracer& t, const std::string& name, const HeadParams& head);

/// Closes the base model's block list, declares and traces its final norm `name` (class `cls`;
/// `bias` for a LayerNorm) as a Norm layer, and leaves the base model (T5: the stack).
void close_base_model(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t,
                      const std::string& name, const std::string& cls, bool bias);

/// Opens a Llama-layout causal LM (`c`ForCausalLM -> model: `c`Model): embed_tokens as the
/// embedding layer, rotary_emb (its cos/sin computed once, under no_grad, for all layers) and the
/// model.layers ModuleList. Returns embed_tokens' params, which a tied head reuses.
ModuleParams open_llama_layout(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t,
                               const std::string& c);

void build_gpt2(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_gptj(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_gpt_neox(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_opt(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_bloom(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_falcon(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_phi3(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_bert(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_deepseek(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);
void build_t5(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t);

/// True when Llama-layout block `layer` has a mixture-of-experts MLP (Qwen2MoeDecoderLayer's
/// decoder_sparse_step rule; every layer for Mixtral).
bool is_moe_layer(const TransformerSpec& s, std::uint64_t layer);

/// Declares the MoE MLP of block prefix `p` (Mixtral's block_sparse_moe, Qwen2-MoE's mlp) and
/// returns its params in use order with matmul_elems counting what one token multiplies by: the
/// router, experts_per_token routed experts and the shared expert (FLOPs under top-k routing).
/// `trace` is called afterwards with the same declarations to record the module tree.
struct MoeParams {
  ModuleParams use;
  ModuleParams gate, shared_gate;
  std::vector<ModuleParams> experts;  ///< per expert: its three projections, use order
  ModuleParams shared;                ///< shared expert's three projections (Qwen2-MoE)
};
MoeParams add_moe_mlp(const TransformerSpec& s, ModelBuilder& b, const std::string& p);
void trace_moe_mlp(const TransformerSpec& s, ModuleTracer& t, const std::string& p,
                   const std::string& cls, const MoeParams& m);

/// The MLP width one token passes through (ArchInfo::ffn): ffn for dense models, top-k x expert
/// width + shared expert width for MoE.
std::uint64_t per_token_ffn(const TransformerSpec& s);

}  // namespace zerosim
