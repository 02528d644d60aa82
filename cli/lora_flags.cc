// LoRA / QLoRA flags (lora_flags.h). peft's LoraConfig defaults apply to what is not given
// (r = 8, lora_alpha = 8, lora_dropout = 0.0; peft src/peft/tuners/lora/config.py:613-634).
#include "lora_flags.h"

#include <cctype>

#include "zerosim/lora.h"

namespace zerosim::cli {

namespace {

constexpr std::uint64_t kMaxRank = 65536;

// --lora-targets: comma-separated module names (letters, digits, '_', '.', '-'), at least one.
bool parse_targets(const std::string& text, std::vector<std::string>& out, Diagnostics& d) {
  std::string cur;
  auto finish = [&]() {
    if (cur.empty()) return false;
    out.push_back(cur);
    cur.clear();
    return true;
  };
  for (char c : text) {
    if (c == ',') {
      if (!finish()) break;
      continue;
    }
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '_' && c != '.' && c != '-') {
      d.error("--lora-targets", "",
              "expected comma-separated module names such as q_proj,v_proj or all-linear, got " +
                  quote(text));
      return false;
    }
    cur += c;
  }
  if (!finish() || text.back() == ',') {
    d.error("--lora-targets", "",
            "expected comma-separated module names such as q_proj,v_proj or all-linear, got " +
                quote(text));
    return false;
  }
  for (const auto& t : out)
    if (t == "all-linear" && out.size() > 1) {
      d.error("--lora-targets", "",
              "expected all-linear alone (peft's shorthand for every Linear), got " + quote(text));
      return false;
    }
  return true;
}

}  // namespace

std::vector<FlagSpec> lora_flag_specs() {
  return {
      {"--lora-rank", "R", "LoRA (peft) adapters of rank R on --lora-targets; the base is frozen"},
      {"--lora-targets", "LIST",
       "modules to adapt: names or suffixes (q_proj,v_proj) or all-linear; default: peft's for "
       "the model type"},
      {"--lora-alpha", "A", "LoRA alpha (scaling alpha/r); default 8, as peft"},
      {"--lora-dropout", "P", "LoRA dropout probability 0..1; > 0 stores masks; default 0"},
      {"--base-quantization", "Q",
       "4bit|8bit: frozen base Linear weights in bitsandbytes NF4 (double-quantized) or int8 "
       "(QLoRA; needs --lora-rank)"},
  };
}

bool has_lora_flags(const ParsedArgs& a) {
  for (const auto& f : lora_flag_specs())
    if (a.has(f.name)) return true;
  return false;
}

bool parse_lora_flags(const ParsedArgs& a, LoraFlagValues& v, Diagnostics& out) {
  Diagnostics d;
  if (a.has("--lora-rank")) {
    auto r = parse_uint("--lora-rank", *a.get("--lora-rank"), 1, kMaxRank);
    if (r.ok())
      v.rank = r.value();
    else
      d.append(r.diagnostics());
  }
  if (a.has("--lora-targets")) {
    std::vector<std::string> t;
    if (parse_targets(*a.get("--lora-targets"), t, d)) v.targets = t;
  }
  if (a.has("--lora-alpha")) {
    auto x = parse_number("--lora-alpha", *a.get("--lora-alpha"), 1e-9, 1e9);
    if (x.ok())
      v.alpha = x.value();
    else
      d.append(x.diagnostics());
  }
  if (a.has("--lora-dropout")) {
    auto x = parse_number("--lora-dropout", *a.get("--lora-dropout"), 0, 0.999999);
    if (x.ok())
      v.dropout = x.value();
    else
      d.append(x.diagnostics());
  }
  if (a.has("--base-quantization")) {
    auto q = parse_choice("--base-quantization", *a.get("--base-quantization"),
                          {"4bit", "8bit", "nf4", "int8"});
    if (q.ok())
      v.quantization = q.value() == "4bit" || q.value() == "nf4" ? BaseQuantization::Nf4
                                                                 : BaseQuantization::Int8;
    else
      d.append(q.diagnostics());
  }
  out.append(d);
  return !d.has_errors();
}

bool apply_lora_flags(const ParsedArgs& a, ModelDesc& model, DType lp, Diagnostics& out) {
  if (!has_lora_flags(a)) return true;
  LoraFlagValues v;
  if (!parse_lora_flags(a, v, out)) return false;
  if (!v.rank) {
    for (const auto& f : lora_flag_specs())
      if (a.has(f.name)) {
        out.error(f.name, "",
                  f.name == "--base-quantization"
                      ? "a quantized base is frozen and cannot be trained alone; give "
                        "--lora-rank (QLoRA)"
                      : "expected --lora-rank with it (the adapters' rank)");
        return false;
      }
  }
  LoraSpec spec;
  spec.rank = *v.rank;
  if (v.targets) spec.targets = *v.targets;
  if (v.alpha) spec.alpha = *v.alpha;
  if (v.dropout) spec.dropout = *v.dropout;
  if (v.quantization) spec.quantization = *v.quantization;
  auto adapted =
      apply_lora(model, spec, lp, a.has("--lora-targets") ? "--lora-targets" : "--lora-rank");
  out.append(adapted.diagnostics());
  if (!adapted.ok()) return false;
  model = std::move(adapted.value());
  return true;
}

std::string base_quantization_source(const ParsedArgs& a) {
  // The 8-bit stage 3 refusal named --base-quantization for a trainer config's quantization_bit:
  // a flag the user never passed (found by a new-user pass).
  if (a.has("--base-quantization")) return "--base-quantization";
  if (auto t = a.get("--trainer-config")) return *t;
  if (auto s = a.get("--scenario")) return *s + ": /model/lora/base_quantization";
  return "--base-quantization";
}

}  // namespace zerosim::cli
