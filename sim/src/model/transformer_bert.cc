// BERT as BertForMaskedLM, the class bert-base-uncased's config.json names (transformers
// models/bert/modeling_bert.py, v4.49 to v4.53; see transformer_builder.cc for the conventions).
//
// Declaration order: BertEmbeddings (word, position, token_type, LayerNorm); per BertLayer the
// self-attention query/key/value, BertSelfOutput dense + LayerNorm, BertIntermediate dense,
// BertOutput dense + LayerNorm (every Linear with a bias); then BertLMPredictionHead, whose own
// `bias` [vocab] comes before transform.dense and transform.LayerNorm; the decoder's weight is the
// word embedding and its bias is that same `bias`, so named_parameters() lists neither again.
// BertForMaskedLM builds BertModel without the pooler. RoBERTa (modeling_roberta.py,
// RobertaForMaskedLM) is the same encoder under roberta.* with Roberta* classes; its RobertaLMHead
// declares dense, layer_norm, decoder and then its own `bias` (listed first all the same, since
// named_parameters() yields a module's own tensors before its children's) and applies gelu as a
// function, not a module. Forward: the embeddings look up word, then
// token_type, then position ids; with the default sdpa attention the self-attention's dropout is
// a probability handed to the kernel (hooked, never called).
#include <string>

#include "model/transformer_parts.h"

namespace zerosim {

namespace {

bool roberta(const TransformerSpec& s) { return s.model_type == "roberta"; }
std::string root(const TransformerSpec& s) { return roberta(s) ? "roberta" : "bert"; }
std::string cls(const TransformerSpec& s) { return roberta(s) ? "Roberta" : "Bert"; }

// BertSelfOutput and BertOutput (RobertaSelfOutput, RobertaOutput) are one module shape:
// forward calls dense, dropout, then LayerNorm(x + input).
void trace_dense_dropout_norm(ModuleTracer& t, const std::string& p, const std::string& cls,
                              const ModuleParams& dense, const ModuleParams& norm) {
  t.enter(p, cls);
  t.leaf(p + ".dense", "Linear", dense);
  t.leaf(p + ".dropout", "Dropout");
  t.leaf(p + ".LayerNorm", "LayerNorm", norm);
  t.leave();
}

void bert_block(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t, std::uint64_t i) {
  const std::string p = root(s) + ".encoder.layer." + std::to_string(i);
  const std::string c = cls(s);
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
  t.enter(p, c + "Layer");
  t.enter(p + ".attention", c + "Attention");
  t.enter(p + ".attention.self", c + "SdpaSelfAttention");
  t.leaf(p + ".attention.self.query", "Linear", q);
  t.leaf(p + ".attention.self.key", "Linear", k);
  t.leaf(p + ".attention.self.value", "Linear", v);
  t.unused(p + ".attention.self.dropout", "Dropout");
  t.leave();
  trace_dense_dropout_norm(t, p + ".attention.output", c + "SelfOutput", o, ln1);
  t.leave();
  t.enter(p + ".intermediate", c + "Intermediate");
  t.leaf(p + ".intermediate.dense", "Linear", up);
  t.leaf(p + ".intermediate.intermediate_act_fn", "GELUActivation");
  t.leave();
  trace_dense_dropout_norm(t, p + ".output", c + "Output", down, ln2);
  t.leave();
}

// The MLM head: BERT's cls.predictions (bias, transform.dense, act, transform.LayerNorm,
// decoder) or RoBERTa's lm_head (bias, dense, layer_norm, decoder); a tied decoder reuses the word
// embedding, and the decoder's bias is the head's own.
void mlm_head(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t,
              const ModuleParams& word) {
  const bool r = roberta(s);
  const std::string h = r ? "lm_head" : "cls.predictions";
  const std::string dense_name = h + (r ? ".dense" : ".transform.dense");
  const std::string norm_name = h + (r ? ".layer_norm" : ".transform.LayerNorm");
  ModuleParams bias{{b.param(h + ".bias", {s.vocab})}, 0};
  auto dense = b.linear(dense_name, s.hidden, s.hidden, true);
  auto norm = b.norm(norm_name, s.hidden, true);
  ModuleParams decoder;
  if (s.tie_embeddings) {
    decoder.ids = {word.ids.front()};
    decoder.matmul_elems = b.mul(s.vocab, s.hidden);
  } else {
    decoder = b.linear(h + ".decoder", s.hidden, s.vocab, false);
  }
  decoder.ids.push_back(bias.ids.front());
  t.set_layer(b.layer(h, LayerKind::Head, concat({dense, norm, decoder})));
  if (r) {
    t.enter(h, "RobertaLMHead", bias);
    t.leaf(dense_name, "Linear", dense);
    t.leaf(norm_name, "LayerNorm", norm);
  } else {
    t.enter("cls", "BertOnlyMLMHead");
    t.enter(h, "BertLMPredictionHead", bias);
    t.enter(h + ".transform", "BertPredictionHeadTransform");
    t.leaf(dense_name, "Linear", dense);
    t.leaf(h + ".transform.transform_act_fn", "GELUActivation");
    t.leaf(norm_name, "LayerNorm", norm);
    t.leave();
  }
  t.leaf(h + ".decoder", "Linear", decoder);
  t.leave();
  if (!r) t.leave();
  t.set_layer(kNoLayer);
}

}  // namespace

void build_bert(const TransformerSpec& s, ModelBuilder& b, ModuleTracer& t) {
  const std::string c = cls(s);
  const std::string e = root(s) + ".embeddings";
  auto word = b.embedding(e + ".word_embeddings", s.vocab, s.hidden);
  auto pos = b.embedding(e + ".position_embeddings", s.positions, s.hidden);
  auto type = b.embedding(e + ".token_type_embeddings", s.type_vocab, s.hidden);
  auto emb_ln = b.norm(e + ".LayerNorm", s.hidden, true);
  t.enter("", c + "ForMaskedLM", {}, ModuleGrad::OutputOnly);
  t.enter(root(s), c + "Model", {}, ModuleGrad::OutputOnly);
  t.set_layer(b.layer("embeddings", LayerKind::Embedding, concat({word, type, pos, emb_ln})));
  t.enter(e, c + "Embeddings", {}, ModuleGrad::OutputOnly);
  t.leaf(e + ".word_embeddings", "Embedding", word, ModuleGrad::OutputOnly);
  t.leaf(e + ".token_type_embeddings", "Embedding", type, ModuleGrad::OutputOnly);
  t.leaf(e + ".position_embeddings", "Embedding", pos, ModuleGrad::OutputOnly);
  t.leaf(e + ".LayerNorm", "LayerNorm", emb_ln);
  t.leaf(e + ".dropout", "Dropout");
  t.leave();
  t.set_layer(kNoLayer);
  t.enter(root(s) + ".encoder", c + "Encoder");
  t.open(root(s) + ".encoder.layer", "ModuleList");
  for (std::uint64_t i = 0; i < s.layers && !b.failed(); ++i) bert_block(s, b, t, i);
  t.set_layer(kNoLayer);
  t.close();
  t.leave();
  t.leave();
  mlm_head(s, b, t, word);
  t.leave();
}

}  // namespace zerosim
