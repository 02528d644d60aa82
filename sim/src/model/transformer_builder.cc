// build_transformer: one function per transformers modeling file, each declaring parameters in the
// order the module's __init__ registers them (so the list equals named_parameters()), listing
// each layer's params in the order its forward() uses them (which drives the gradient order), and
// tracing the nn.Module tree in the order forward() calls the modules.
//
// Parameter sources checked (transformers main, 2024-2025): models/llama/modeling_llama.py (also
// mistral, qwen2), gpt2/modeling_gpt2.py, gptj/modeling_gptj.py, gpt_neox/modular_gpt_neox.py,
// opt/modeling_opt.py, bloom/modeling_bloom.py, falcon/modeling_falcon.py; gemma, gemma2, qwen3,
// mixtral, qwen2_moe and phi3 from the same releases (modeling_<family>.py).
// Module trees and call orders follow the same files as released in 2025 (transformers v4.49 to
// v4.53): the default attention implementation (sdpa where the model supports it, else eager),
// training mode, no cache, labels passed so the loss is computed inside the root's forward.
// FLOPs: 2 x matmul weight elements per token; attention scores and context add
// 4 x heads x head_dim per context token (QK^T and AV, 2 FLOPs per multiply-add each).
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

double attn_flops_per_ctx(const TransformerSpec& s) {
  return 4.0 * static_cast<double>(s.heads) * static_cast<double>(s.head_dim);
}

HeadParams add_head(const TransformerSpec& s, ModelBuilder& b, const ModuleParams& embedding,
                    const std::string& name, std::uint64_t in, bool bias,
                    const ModuleParams& before) {
  HeadParams h;
  if (s.tie_embeddings) {
    h.head.ids = {embedding.ids.front()};
    h.head.matmul_elems = b.mul(s.vocab, in);
  } else {
    h.head = b.linear(name, in, s.vocab, false);
  }
  if (bias) h.head.ids.push_back(b.param(name + ".bias", {s.vocab}));
  h.layer = b.layer(name, LayerKind::Head, concat({before, h.head}));
  return h;
}

void trace_head(ModuleTracer& t, const std::string& name, const HeadParams& head) {
  t.set_layer(head.layer);
  t.leaf(name, "Linear", head.head);
  t.set_layer(kNoLayer);
  t.leave();
}

void close_base_model(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t,
                      const std::string& name, const std::string& cls, bool bias) {
  t.set_layer(kNoLayer);
  t.close();
  auto norm = b.norm(name, s.hidden, bias);
  t.set_layer(b.layer(name, LayerKind::Norm, norm));
  t.leaf(name, cls, norm);
  t.set_layer(kNoLayer);
  t.leave();
}

ModuleParams open_llama_layout(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t,
                               const std::string& c) {
  t.enter("", c + "ForCausalLM", {}, ModuleGrad::OutputOnly);
  t.enter("model", c + "Model", {}, ModuleGrad::OutputOnly);
  auto emb = b.embedding("model.embed_tokens", s.vocab, s.hidden);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, emb));
  t.leaf("model.embed_tokens", "Embedding", emb, ModuleGrad::OutputOnly);
  t.leaf("model.rotary_emb", c + "RotaryEmbedding", {}, ModuleGrad::None);
  t.set_layer(kNoLayer);
  t.open("model.layers", "ModuleList");
  return emb;
}

namespace {

// Class-name prefix of the Llama-layout model types (LlamaDecoderLayer, MistralRMSNorm, ...).
std::string llama_class(const std::string& model_type) {
  if (model_type == "mistral") return "Mistral";
  if (model_type == "qwen2") return "Qwen2";
  if (model_type == "qwen3") return "Qwen3";
  if (model_type == "gemma") return "Gemma";
  if (model_type == "gemma2") return "Gemma2";
  if (model_type == "mixtral") return "Mixtral";
  if (model_type == "qwen2_moe") return "Qwen2Moe";
  if (model_type == "starcoder2") return "Starcoder2";
  return "Llama";
}

// GemmaMLP / Gemma2MLP use hidden_activation "gelu_pytorch_tanh" (PytorchGELUTanh); the others
// ACT2FN["silu"].
std::string mlp_act(const TransformerSpec& s) {
  const auto& t = s.model_type;
  return t == "gemma" || t == "gemma2" || t == "starcoder2" ? "PytorchGELUTanh" : "SiLU";
}

// Starcoder2 uses nn.LayerNorm (weight and bias) where the others use their RMSNorm class.
std::string norm_class(const TransformerSpec& s, const std::string& c) {
  return s.layer_norm ? "LayerNorm" : c + "RMSNorm";
}

// LlamaDecoderLayer.forward: input_layernorm, self_attn (q, k, v, o), post_attention_layernorm,
// mlp: down_proj(act_fn(gate_proj(x)) * up_proj(x)) evaluates gate_proj, act_fn, up_proj,
// down_proj. Variants: Qwen3Attention declares q_norm/k_norm after o_proj and applies them right
// after q_proj and k_proj; Gemma2DecoderLayer declares pre_/post_feedforward_layernorm after the
// two Llama norms and runs post_attention_layernorm, pre_feedforward_layernorm, mlp,
// post_feedforward_layernorm; Starcoder2 (modular_starcoder2.py: Mistral's layout) has biased
// LayerNorms and a plain MLP c_fc -> act -> c_proj, biases on every Linear when use_bias;
// Mixtral's block_sparse_moe and Qwen2-MoE's sparse mlp replace the
// MLP (transformer_moe.cc).
void build_llama_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t,
                       const std::string& c, std::uint64_t i) {
  const std::string p = "model.layers." + std::to_string(i);
  const auto q_out = b.mul(s.heads, s.head_dim);
  const auto kv_out = b.mul(s.kv_heads, s.head_dim);
  auto q = b.linear(p + ".self_attn.q_proj", s.hidden, q_out, s.qkv_bias);
  auto k = b.linear(p + ".self_attn.k_proj", s.hidden, kv_out, s.qkv_bias);
  auto v = b.linear(p + ".self_attn.v_proj", s.hidden, kv_out, s.qkv_bias);
  auto o = b.linear(p + ".self_attn.o_proj", q_out, s.hidden, s.o_bias);
  ModuleParams q_norm, k_norm;
  if (s.qk_norm) {
    q_norm = b.norm(p + ".self_attn.q_norm", s.head_dim, false);
    k_norm = b.norm(p + ".self_attn.k_norm", s.head_dim, false);
  }
  const bool moe = is_moe_layer(s, i);
  const std::string mlp = p + (s.model_type == "mixtral" ? ".block_sparse_moe" : ".mlp");
  ModuleParams gate, up, down, mlp_use;
  MoeParams experts;
  if (moe) {
    experts = add_moe_mlp(s, b, mlp);
    mlp_use = experts.use;
  } else {
    if (s.plain_mlp) {  // Starcoder2MLP: c_proj(act(c_fc(x)))
      up = b.linear(mlp + ".c_fc", s.hidden, s.ffn, s.mlp_bias);
      down = b.linear(mlp + ".c_proj", s.ffn, s.hidden, s.mlp_bias);
    } else {
      gate = b.linear(mlp + ".gate_proj", s.hidden, s.ffn, s.mlp_bias);
      up = b.linear(mlp + ".up_proj", s.hidden, s.ffn, s.mlp_bias);
      down = b.linear(mlp + ".down_proj", s.ffn, s.hidden, s.mlp_bias);
    }
    mlp_use = concat({gate, up, down});
  }
  auto ln1 = b.norm(p + ".input_layernorm", s.hidden, s.layer_norm);
  auto ln2 = b.norm(p + ".post_attention_layernorm", s.hidden, s.layer_norm);
  ModuleParams pre_ff, post_ff;
  if (s.sandwich_norms) {
    pre_ff = b.norm(p + ".pre_feedforward_layernorm", s.hidden, false);
    post_ff = b.norm(p + ".post_feedforward_layernorm", s.hidden, false);
  }
  t.set_layer(b.layer(p, LayerKind::Block,
                      concat({ln1, q, q_norm, k, k_norm, v, o, ln2, pre_ff, mlp_use, post_ff}),
                      attn_flops_per_ctx(s)));
  t.enter(p, c + "DecoderLayer");
  t.leaf(p + ".input_layernorm", norm_class(s, c), ln1);
  t.enter(p + ".self_attn", c + "Attention");
  t.leaf(p + ".self_attn.q_proj", "Linear", q);
  if (s.qk_norm) t.leaf(p + ".self_attn.q_norm", c + "RMSNorm", q_norm);
  t.leaf(p + ".self_attn.k_proj", "Linear", k);
  if (s.qk_norm) t.leaf(p + ".self_attn.k_norm", c + "RMSNorm", k_norm);
  t.leaf(p + ".self_attn.v_proj", "Linear", v);
  t.leaf(p + ".self_attn.o_proj", "Linear", o);
  t.leave();
  t.leaf(p + ".post_attention_layernorm", norm_class(s, c), ln2);
  if (s.sandwich_norms) t.leaf(p + ".pre_feedforward_layernorm", c + "RMSNorm", pre_ff);
  if (moe) {
    trace_moe_mlp(s, t, mlp, c, experts);
  } else if (s.plain_mlp) {
    t.enter(mlp, c + "MLP");
    t.leaf(mlp + ".c_fc", "Linear", up);
    t.leaf(mlp + ".act", mlp_act(s));
    t.leaf(mlp + ".c_proj", "Linear", down);
    t.leave();
  } else {
    t.enter(mlp, c + "MLP");
    t.leaf(mlp + ".gate_proj", "Linear", gate);
    t.leaf(mlp + ".act_fn", mlp_act(s));
    t.leaf(mlp + ".up_proj", "Linear", up);
    t.leaf(mlp + ".down_proj", "Linear", down);
    t.leave();
  }
  if (s.sandwich_norms) t.leaf(p + ".post_feedforward_layernorm", c + "RMSNorm", post_ff);
  t.leave();
}

// LlamaForCausalLM -> LlamaModel: embed_tokens, rotary_emb, layers, norm; then lm_head.
void build_llama(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  const std::string c = llama_class(s.model_type);
  const auto emb = open_llama_layout(s, b, t, c);
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) build_llama_block(s, b, t, c, i);
  close_base_model(s, b, t, "model.norm", norm_class(s, c), s.layer_norm);
  trace_head(t, "lm_head", add_head(s, b, emb, "lm_head", s.hidden, false, {}));
}

ArchInfo arch_info(const TransformerSpec& s) {
  ArchInfo a;
  a.family = s.model_type;
  a.hidden = s.hidden;
  a.layers = s.layers;
  a.heads = s.heads;
  a.kv_heads = s.kv_heads;
  a.ffn = per_token_ffn(s);
  a.experts = s.experts;
  a.experts_per_token = s.experts_per_token;
  a.vocab = s.vocab;
  a.max_seq = s.max_seq;
  a.gated_mlp = (s.family == ArchFamily::Llama && !s.plain_mlp) || s.family == ArchFamily::Phi3;
  a.tied_embeddings = s.tie_embeddings;
  a.dropout = s.dropout;
  a.head_dim = s.head_dim;
  if (s.family == ArchFamily::Deepseek) {
    // MLA: values and the attention output are v_head_dim wide per head; the latent tensors the
    // backward keeps (q_a_proj output and q_a_layernorm output, kv_a_proj_with_mqa output and
    // kv_a_layernorm output) are per-token extras of every block.
    a.v_head_dim = s.v_head_dim;
    a.gated_mlp = true;  // DeepseekV*MLP: down_proj(act_fn(gate_proj(x)) * up_proj(x))
    a.attn_extra = 2 * s.q_lora_rank + (s.kv_lora_rank + s.qk_rope_dim) + s.kv_lora_rank;
  } else if (s.family == ArchFamily::T5) {
    a.layers = s.layers + s.decoder_layers;
    a.gated_mlp = s.gated_ffn;
    a.cross_attention_layers = s.decoder_layers;
    a.mlp_inner_dropout = s.dropout;  // T5DenseActDense drops out the activation output
  }
  return a;
}

void build_family(const TransformerSpec& spec, ModelBuilder& b, ModuleTracer& t) {
  switch (spec.family) {
    case ArchFamily::Llama:
      return build_llama(spec, b, t);
    case ArchFamily::Gpt2:
      return build_gpt2(spec, b, t);
    case ArchFamily::Gptj:
      return build_gptj(spec, b, t);
    case ArchFamily::GptNeox:
      return build_gpt_neox(spec, b, t);
    case ArchFamily::Opt:
      return build_opt(spec, b, t);
    case ArchFamily::Bloom:
      return build_bloom(spec, b, t);
    case ArchFamily::Falcon:
      return build_falcon(spec, b, t);
    case ArchFamily::Phi3:
      return build_phi3(spec, b, t);
    case ArchFamily::Bert:
      return build_bert(spec, b, t);
    case ArchFamily::Deepseek:
      return build_deepseek(spec, b, t);
    case ArchFamily::T5:
      return build_t5(spec, b, t);
  }
}

}  // namespace

Result<ModelDesc> build_transformer(const TransformerSpec& spec, const std::string& name,
                                    const std::string& source) {
  ModelDesc m;
  m.name = name;
  m.source = source;
  ModelBuilder b(m);
  ModuleTracer t(m);
  build_family(spec, b, t);
  if (b.failed()) return fail<ModelDesc>(source, "", b.error());
  if (t.failed())  // a builder defect, never a property of the input
    return fail<ModelDesc>(source, "", "internal error: unbalanced module tree");
  m.arch = arch_info(spec);
  m.grad_order = derive_grad_order(m);
  return m;
}

}  // namespace zerosim
