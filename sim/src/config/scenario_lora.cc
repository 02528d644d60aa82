// "model": {"lora": {...}} of a scenario file (scenario_lora.h). Defaults are peft's LoraConfig
// (r has none here: a LoRA block names its rank).
#include "config/scenario_lora.h"

#include <string>

namespace zerosim {

std::optional<LoraSpec> read_scenario_lora(json::JsonReader& model) {
  auto l = model.child("lora");
  if (!l) return std::nullopt;
  if (!l->expect_object()) return std::nullopt;
  bool ok = true;
  LoraSpec spec;
  if (auto r = l->get_uint("rank", 1, 65536))
    spec.rank = *r;
  else {
    if (!l->has("rank")) l->error("expected key \"rank\" (the adapters' rank, 1..65536), got none");
    ok = false;
  }
  if (l->has("targets")) {
    auto t = l->child("targets");
    if (t && t->value().is_string()) {
      auto s = t->as_string();
      if (s && *s == "all-linear")
        spec.targets = {*s};
      else {
        t->error("expected a list of module names or \"all-linear\", got " + t->value().dump());
        ok = false;
      }
    } else if (auto items = t ? t->elements() : std::nullopt) {
      for (auto& e : *items) {
        auto s = e.as_string();
        if (s && s->empty()) e.error("expected a module name, got \"\"");
        if (!s || s->empty()) {
          ok = false;
          continue;
        }
        spec.targets.push_back(*s);
      }
      if (items->empty()) {
        t->error("expected at least one module name, got []");
        ok = false;
      }
    } else {
      ok = false;
    }
  }
  if (l->has("alpha")) {
    if (auto a = l->get_number("alpha", 1e-9, 1e9))
      spec.alpha = *a;
    else
      ok = false;
  }
  if (l->has("dropout")) {
    if (auto p = l->get_number("dropout", 0, 0.999999))
      spec.dropout = *p;
    else
      ok = false;
  }
  if (l->has("base_quantization")) {
    if (auto q = l->get_enum("base_quantization", {"none", "4bit", "8bit"}))
      spec.quantization = *q == "4bit"   ? BaseQuantization::Nf4
                          : *q == "8bit" ? BaseQuantization::Int8
                                         : BaseQuantization::None;
    else
      ok = false;
  }
  l->reject_unknown({"rank", "targets", "alpha", "dropout", "base_quantization"});
  if (!l->unused_keys().empty()) ok = false;
  if (!ok) return std::nullopt;
  return spec;
}

}  // namespace zerosim
