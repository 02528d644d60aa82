// BERT as BertForMaskedLM, the class bert-base-uncased's config.json names (transformers
// models/bert/modeling_bert.py, v4.49 to v4.53; see transformer_builder.cc for the conventions).
//
// Declaration order: BertEmbeddings (word, position, token_type, LayerNorm); per BertLayer the
// self-attention query/key/value, BertSelfOutput dense + LayerNorm, BertIntermediate dense,
// BertOutput dense + LayerNorm (every Linear with a bias); then BertLMPredictionHead, whose own
// `bias` [vocab] comes before transform.dense and transform.LayerNorm; the decoder's weight is the
// word embedding and its bias is that same `bias`, so named_parameters() lists neither again.
// BertForMaskedLM builds BertModel without the pooler. Forward: the embeddings look up word, then
// token_type, then position ids; with the default sdpa attention the self-attention's dropout is
// a probability handed to the kernel (hooked, never called).
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

void bert_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = "bert.encoder.layer." + std::to_string(i);
  auto q = b.linear(p + ".attention.self.query", s.hidden, s.hidden, true);
  auto k = b.linear(p + ".attention.self.key", s.hidden, s.hidden, true);
  auto v = b.linear(p + ".attention.self.value", s.hidden, s.hidden, true);
  auto o = b.linear(p + ".attention.output.dense", s.hidden, s.hidden, true);
  auto ln1 = b.norm(p + ".attention.output.LayerNorm", s.hidden, true);
  auto up = b.linear(p + ".intermediate.dense", s.hidden, s.ffn, true);
  auto down = b.linear(p + ".output.dense", s.ffn, s.hidden, true);
  auto ln2 = b.norm(p + ".output.LayerNorm", s.hidden, true);
  t.set_layer(b.layer(p, LayerKind::Block, concat({q, k, v, o, ln1, up, down, ln2}),
                      attn_flops_per_ctx(s)));
  t.enter(p, "BertLayer");
  t.enter(p + ".attention", "BertAttention");
  t.enter(p + ".attention.self", "BertSdpaSelfAttention");
  t.leaf(p + ".attention.self.query", "Linear", q);
  t.leaf(p + ".attention.self.key", "Linear", k);
  t.leaf(p + ".attention.self.value", "Linear", v);
  t.unused(p + ".attention.self.dropout", "Dropout");
  t.leave();
  t.enter(p + ".attention.output", "BertSelfOutput");
  t.leaf(p + ".attention.output.dense", "Linear", o);
  t.leaf(p + ".attention.output.dropout", "Dropout");
  t.leaf(p + ".attention.output.LayerNorm", "LayerNorm", ln1);
  t.leave();
  t.leave();
  t.enter(p + ".intermediate", "BertIntermediate");
  t.leaf(p + ".intermediate.dense", "Linear", up);
  t.leaf(p + ".intermediate.intermediate_act_fn", "GELUActivation");
  t.leave();
  t.enter(p + ".output", "BertOutput");
  t.leaf(p + ".output.dense", "Linear", down);
  t.leaf(p + ".output.dropout", "Dropout");
  t.leaf(p + ".output.LayerNorm", "LayerNorm", ln2);
  t.leave();
  t.leave();
}

}  // namespace

void build_bert(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  const std::string e = "bert.embeddings";
  auto word = b.embedding(e + ".word_embeddings", s.vocab, s.hidden);
  auto pos = b.embedding(e + ".position_embeddings", s.positions, s.hidden);
  auto type = b.embedding(e + ".token_type_embeddings", s.type_vocab, s.hidden);
  auto emb_ln = b.norm(e + ".LayerNorm", s.hidden, true);
  t.enter("", "BertForMaskedLM", {}, ModuleGrad::OutputOnly);
  t.enter("bert", "BertModel", {}, ModuleGrad::OutputOnly);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, concat({word, type, pos, emb_ln})));
  t.enter(e, "BertEmbeddings", {}, ModuleGrad::OutputOnly);
  t.leaf(e + ".word_embeddings", "Embedding", word, ModuleGrad::OutputOnly);
  t.leaf(e + ".token_type_embeddings", "Embedding", type, ModuleGrad::OutputOnly);
  t.leaf(e + ".position_embeddings", "Embedding", pos, ModuleGrad::OutputOnly);
  t.leaf(e + ".LayerNorm", "LayerNorm", emb_ln);
  t.leaf(e + ".dropout", "Dropout");
  t.leave();
  t.set_layer(kNoLayer);
  t.enter("bert.encoder", "BertEncoder");
  t.open("bert.encoder.layer", "ModuleList");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) bert_block(s, b, t, i);
  t.set_layer(kNoLayer);
  t.close();
  t.leave();
  t.leave();
  // BertLMPredictionHead: bias, transform (dense, act, LayerNorm), decoder (tied or own weight).
  const std::string h = "cls.predictions";
  ModuleParams bias{{b.param(h + ".bias", {s.vocab})}, 0};
  auto dense = b.linear(h + ".transform.dense", s.hidden, s.hidden, true);
  auto head_ln = b.norm(h + ".transform.LayerNorm", s.hidden, true);
  ModuleParams decoder;
  if (s.tie_embeddings) {
    decoder.ids = {word.ids.front()};
    decoder.matmul_elems = b.mul(s.vocab, s.hidden);
  } else {
    decoder = b.linear(h + ".decoder", s.hidden, s.vocab, false);
  }
  decoder.ids.push_back(bias.ids.front());  // decoder.bias is the head's bias
  t.set_layer(b.layer(h, LayerKind::Head, concat({dense, head_ln, decoder})));
  t.enter("cls", "BertOnlyMLMHead");
  t.enter(h, "BertLMPredictionHead", bias);
  t.enter(h + ".transform", "BertPredictionHeadTransform");
  t.leaf(h + ".transform.dense", "Linear", dense);
  t.leaf(h + ".transform.transform_act_fn", "GELUActivation");
  t.leaf(h + ".transform.LayerNorm", "LayerNorm", head_ln);
  t.leave();
  t.leaf(h + ".decoder", "Linear", decoder);
  t.leave();
  t.leave();
  t.set_layer(kNoLayer);
  t.leave();
}

}  // namespace zerosim
