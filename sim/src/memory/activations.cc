// Activation memory of a decoder transformer: Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models" (arXiv:2205.05198), §4.1, generalised.
//
// The paper's per-layer count (16-bit activations, no tensor/sequence parallelism, eager attention
// with dropout, MHA, ffn = 4h) is s·b·h·(34 + 5·a·s/h) bytes:
//   attention block 11sbh + 5as²b:
//     QKV projection input 2sbh; Q and K for QKᵀ 4sbh; softmax output 2as²b; softmax dropout mask
//     as²b (1 byte/element); dropout output 2as²b and V 2sbh for attention-over-values; output
//     projection input 2sbh; hidden dropout mask sbh.
//   MLP block 19sbh: first linear input 2sbh; GeLU input 8sbh; second linear input 8sbh; dropout
//     mask sbh.
//   two layer norms 4sbh (their inputs).
// Generalisation, with e = bytes per LP element, q = heads·head_dim (= h unless the config sets
// head_dim), kv = kv_heads·head_dim (GQA), f = ffn size:
//   e·sbh each for LN1 input, QKV input, LN2 input, MLP input                           (4e·sbh)
//   e·sb·q each for Q and the output-projection input (the attention output)            (2e·sb·q)
//   e·sb·kv each for K and V                                                             (2e·sb·kv)
//   MLP: two f-sized tensors (activation input and output) = 2e·sbf; gated MLPs (SwiGLU/GeGLU)
//        keep four: gate output (activation input), activation output and up output (the product's
//        operands) and the product (down-projection input) = 4e·sbf
//   dropout (ArchInfo::dropout): hidden masks 2sbh (1 byte each); without dropout no masks and no
//        separate dropout output of the scores (attention-over-values reads the softmax output)
//   eager attention: softmax output e·as²b, plus with dropout the mask as²b and its output e·as²b
//   flash attention (Dao et al. 2022): no s² tensor is stored; the kernel keeps the softmax
//        log-sum-exp, fp32, 4·asb (and an RNG offset instead of a dropout mask)
// With e = 2, MHA, f = 4h, dropout and eager attention this is exactly 34sbh + 5as²b (a unit test
// checks it). Outside the blocks (paper §4.3, output layer): the embedding dropout mask sbh (with
// dropout), the final norm input e·sbh, the LM-head input e·sbh, and the logits: e·sbV in LP plus
// an fp32 copy 4·sbV that the cross-entropy keeps (HF upcasts logits to fp32 for the loss).
// Full checkpointing (paper §5, "full activation recomputation"): each block keeps only its input
// e·sbh; during the backward of one block its full activations are recomputed and alive at once.
// Multi-head latent attention (DeepSeek, ArchInfo::v_head_dim / attn_extra): V and the
// output-projection input are heads·v_head_dim wide, and each block also keeps its latent tensors
// (q_a_proj and q_a_layernorm outputs, kv_a_proj_with_mqa and kv_a_layernorm outputs), e each.
// Encoder-decoder (T5, ArchInfo::cross_attention_layers): every decoder block adds a second
// attention sub-block (norm input, Q input, Q, K, V, output-projection input, residual dropout
// mask, scores) with the target and source lengths both s; T5's MLP also drops out its activation
// output (mask and output, f wide). With checkpointing a decoder block is the largest recompute.
// LoRA adapters (ArchInfo::adapters, sim/src/model/lora.cc) add per token e x (their rank-r
// intermediates + dropout outputs) + their 1-byte dropout masks: every block's without
// checkpointing, the largest block's (its recompute) with it; adapters outside the blocks always.
#include "memory/exact_math.h"
#include "zerosim/memory_model.h"

namespace zerosim {

namespace {

using memory::add128;
using memory::mul128;
using memory::U128;

struct Dims {
  U128 s, b, h, a, q, kv, vo, vv, f, v, e, extra;
  bool dropout, gated, flash, inner_dropout;
};

// Bytes of one attention sub-block: its norm input, projection input, Q, K, V, the output
// projection input, the latent extras (MLA), the residual dropout mask and the score tensors.
U128 attention_bytes(const Dims& d) {
  const U128 sb = mul128(d.s, d.b);
  const U128 sbh = mul128(sb, d.h);
  U128 total = mul128(mul128(2, d.e), sbh);                            // LN input, QKV in
  total = add128(total, mul128(d.e, mul128(sb, add128(d.q, d.kv))));   // Q, K
  total = add128(total, mul128(d.e, mul128(sb, add128(d.vv, d.vo))));  // V, output-proj in
  total = add128(total, mul128(d.e, mul128(sb, d.extra)));             // MLA latents
  if (d.dropout) total = add128(total, sbh);                           // residual dropout mask
  const U128 asb = mul128(d.a, sb);
  if (d.flash) {
    total = add128(total, mul128(4, asb));  // fp32 log-sum-exp
  } else {
    const U128 as2b = mul128(asb, d.s);
    total = add128(total, mul128(d.e, as2b));                            // softmax output
    if (d.dropout) total = add128(total, mul128(add128(1, d.e), as2b));  // mask + dropout output
  }
  return total;
}

// Bytes of one transformer block's stored activations (no checkpointing).
U128 block_bytes(const Dims& d) {
  const U128 sb = mul128(d.s, d.b);
  const U128 sbh = mul128(sb, d.h);
  U128 total = add128(attention_bytes(d), mul128(mul128(2, d.e), sbh));  // + LN2, MLP in
  total =
      add128(total, mul128(mul128(d.gated ? 4 : 2, d.e), mul128(sb, d.f)));  // MLP inner tensors
  if (d.dropout) total = add128(total, sbh);                                 // MLP dropout mask
  // T5DenseActDense: dropout on the activation output (mask and output, f wide).
  if (d.dropout && d.inner_dropout) total = add128(total, mul128(add128(1, d.e), mul128(sb, d.f)));
  return total;
}

// Bytes outside the blocks: embedding dropout mask, final norm input, LM-head input, logits.
U128 outside_bytes(const Dims& d) {
  const U128 sb = mul128(d.s, d.b);
  const U128 sbh = mul128(sb, d.h);
  U128 total = mul128(mul128(2, d.e), sbh);
  if (d.dropout) total = add128(total, sbh);
  return add128(total, mul128(add128(d.e, 4), mul128(sb, d.v)));
}

}  // namespace

Bytes activation_bytes(const ModelDesc& model, const TrainingSettings& t, DType lp) {
  if (!model.arch) return 0;
  const ArchInfo& arch = *model.arch;
  const std::uint64_t heads = arch.heads;
  const std::uint64_t kv_heads = arch.kv_heads == 0 ? heads : arch.kv_heads;
  Dims d{};
  d.s = t.seq_len;
  d.b = t.micro_batch;
  d.h = arch.hidden;
  d.a = heads;
  if (arch.head_dim != 0) {
    d.q = mul128(heads, arch.head_dim);
    d.kv = mul128(kv_heads, arch.head_dim);
  } else {
    // head_dim = h / heads: K/V width h·kv_heads/heads (exact for every real GQA model).
    d.q = d.h;
    d.kv = heads == 0 ? d.h : mul128(d.h, kv_heads) / heads;
  }
  // Values and the attention output: v_head_dim per head where the config sets it (MLA).
  d.vo = arch.v_head_dim != 0 ? mul128(heads, arch.v_head_dim) : d.q;
  d.vv = arch.v_head_dim != 0 ? mul128(kv_heads, arch.v_head_dim) : d.kv;
  d.extra = arch.attn_extra;
  d.f = arch.ffn;
  d.v = arch.vocab;
  d.e = dtype_size(lp);
  d.dropout = arch.dropout;
  d.gated = arch.gated_mlp;
  d.flash = t.flash_attention;
  d.inner_dropout = arch.mlp_inner_dropout;
  const U128 block = arch.layers == 0 ? 0 : block_bytes(d);
  // Encoder-decoder: each decoder block adds a cross-attention sub-block (target = source = s).
  const U128 cross = arch.cross_attention_layers == 0 ? 0 : attention_bytes(d);
  U128 blocks = 0;
  if (t.activation_checkpointing) {
    // Stored block inputs for every layer, plus one block's activations during its recompute.
    blocks = add128(mul128(arch.layers, mul128(d.e, mul128(mul128(d.s, d.b), d.h))),
                    add128(block, cross));
  } else {
    blocks = add128(mul128(arch.layers, block), mul128(arch.cross_attention_layers, cross));
  }
  // LoRA adapters: LP elements and 1-byte masks per token.
  const auto& ad = arch.adapters;
  const U128 sb = mul128(d.s, d.b);
  const U128 lp_elems =
      add128(t.activation_checkpointing ? ad.lp_block_max : ad.lp_blocks, ad.lp_outside);
  const U128 masks =
      add128(t.activation_checkpointing ? ad.mask_block_max : ad.mask_blocks, ad.mask_outside);
  const U128 adapters = mul128(sb, add128(mul128(d.e, lp_elems), masks));
  return memory::clamp64(add128(add128(blocks, outside_bytes(d)), adapters));
}

}  // namespace zerosim
