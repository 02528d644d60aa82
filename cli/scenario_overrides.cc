// Flags on top of a scenario file (see scenario_overrides.h). The edit happens on the scenario's
// JSON, not on the loaded Scenario, because most values feed others: the world size and the
// micro-batch feed DeepSpeed's batch rule, the model's hidden size feeds the "auto" bucket sizes,
// the stage feeds overlap_comm's default. Loading the edited text runs all of that once, in the
// one place that already does it.
#include "scenario_overrides.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "inputs.h"
#include "lora_flags.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/input_file.h"
#include "zerosim/model_loader.h"

namespace zerosim::cli {

namespace {

using nlohmann::json;
using Ptr = json::json_pointer;

/// One edit: the flag (with its value as typed), where it lands, and the value written there
/// (nullopt: the key is removed).
struct Edit {
  std::string flag;
  Ptr where;
  std::optional<json> value;
  std::string was = "absent";  ///< the value before, as JSON text (filled by apply)
};

/// The flag's value as a checked integer, or an error naming the flag (as inputs.cc checks it).
std::optional<std::uint64_t> checked_uint(const ParsedArgs& a, const std::string& f,
                                          std::uint64_t lo, std::uint64_t hi, Diagnostics& d) {
  if (!a.has(f)) return std::nullopt;
  auto r = parse_uint(f, *a.get(f), lo, hi);
  if (!r.ok()) {
    d.append(r.diagnostics());
    return std::nullopt;
  }
  return r.value();
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

/// The model flag, as the scenario's "model" object.
void model_edit(const ParsedArgs& a, std::vector<Edit>& edits, Diagnostics& d) {
  std::vector<std::string> given;
  for (const char* f : {"--model", "--hf-config", "--params", "--param-list"})
    if (a.has(f)) given.push_back(f);
  if (given.empty()) return;
  if (given.size() > 1) {
    d.error("zerosim", "",
            "give one of --model, --hf-config, --params, --param-list (got " + given[0] + " and " +
                given[1] + ")");
    return;
  }
  const std::string& f = given[0];
  const std::string v = *a.get(f);
  json model;
  if (f == "--model") {
    auto m = load_zoo_model(v);  // names the flag's value in one line when it is not in the zoo
    if (!m.ok()) {
      d.append(m.diagnostics());
      return;
    }
    model = {{"zoo", v}};
  } else if (f == "--params") {
    auto n = parse_number("--params", v, -1e300, 1e300);
    if (n.ok()) {
      auto m = synthetic_model(n.value(), "--params");
      if (!m.ok()) d.append(m.diagnostics());
    } else {
      d.append(n.diagnostics());
    }
    if (d.has_errors()) return;
    model = {{"params", n.value()}};
  } else {
    // Loaded here first so that a bad file is one line naming it, as without a scenario.
    auto m = f == "--hf-config" ? load_hf_config_file(v) : load_param_list_file(v);
    if (!m.ok()) {
      d.append(m.diagnostics());
      return;
    }
    // Flag paths are relative to the working directory, scenario paths to the scenario's folder.
    model = {{f == "--hf-config" ? "hf_config" : "param_list", absolute(v)}};
  }
  edits.push_back({f, Ptr("/model"), model});
}

/// --gpus/--world-size, --nodes, --gpus-per-node against the scenario's cluster shape, with the
/// rules of the flag-only path (inputs.cc resolve_cluster).
void cluster_edits(const ParsedArgs& a, const json& doc, std::vector<Edit>& edits, Diagnostics& d) {
  if (a.has("--world-size") && a.has("--gpus")) {
    d.error("--world-size", "", "give --world-size or --gpus, not both");
    return;
  }
  const std::string gflag = a.has("--world-size") ? "--world-size" : "--gpus";
  auto gpus = checked_uint(a, gflag, 1, kMaxGpus, d);
  auto nodes = checked_uint(a, "--nodes", 1, kMaxGpus, d);
  auto per_flag = checked_uint(a, "--gpus-per-node", 1, 1024, d);
  if (d.has_errors() || (!gpus && !nodes && !per_flag)) return;
  const json& c = doc.value("cluster", json::object());
  std::uint64_t per = per_flag.value_or(c.value("gpus_per_node", std::uint64_t{8}));
  std::uint64_t n = nodes.value_or(c.value("nodes", std::uint64_t{1}));
  const std::string who = nodes ? "--nodes" : per_flag ? "--gpus-per-node" : gflag;
  if (gpus && nodes && *gpus != n * per) {
    d.error(gflag, "",
            "expected " + std::to_string(n * per) + " (--nodes x gpus per node), got " +
                std::to_string(*gpus));
    return;
  }
  if (gpus && !nodes) {
    if (*gpus <= per && !per_flag) {
      n = 1;
      per = *gpus;
    } else if (*gpus % per == 0) {
      n = *gpus / per;
    } else {
      d.error(gflag, "",
              "expected a multiple of the scenario's gpus_per_node (" + std::to_string(per) +
                  ") or at most that many, got " + std::to_string(*gpus));
      return;
    }
  }
  if (n * per > kMaxGpus) {
    d.error(who, "",
            "expected at most " + std::to_string(kMaxGpus) + " GPUs in total, got " +
                std::to_string(n) + " x " + std::to_string(per));
    return;
  }
  const std::string f = gpus ? gflag : who;
  edits.push_back({f, Ptr("/cluster/nodes"), json(n)});
  edits.push_back({f, Ptr("/cluster/gpus_per_node"), json(per)});
}

void training_edits(const ParsedArgs& a, std::vector<Edit>& edits, Diagnostics& d) {
  if (auto gpu = a.get("--gpu")) {
    auto g = find_gpu(*gpu, "--gpu");
    if (g.ok())
      edits.push_back({"--gpu", Ptr("/cluster/gpu"), json(*gpu)});
    else
      d.append(g.diagnostics());
  }
  if (auto s = checked_uint(a, "--seq-len", 1, 1u << 24, d))
    edits.push_back({"--seq-len", Ptr("/training/seq_len"), json(*s)});
  if (a.has("--activation-checkpointing"))
    edits.push_back(
        {"--activation-checkpointing", Ptr("/training/activation_checkpointing"), json(true)});
  if (a.has("--attention")) {
    auto c = parse_choice("--attention", *a.get("--attention"), {"flash", "eager"});
    if (c.ok())
      edits.push_back({"--attention", Ptr("/training/attention"), json(c.value())});
    else
      d.append(c.diagnostics());
  }
  // The version decides how the scenario's ds_config is resolved (DsConfig::version), so it is
  // written before the file is loaded, not set on the loaded scenario.
  if (a.has("--deepspeed-version")) {
    auto v = parse_deepspeed_version_flag(*a.get("--deepspeed-version"));
    if (v.ok())
      edits.push_back({"--deepspeed-version", Ptr("/deepspeed_version"),
                       json(std::string(deepspeed_version_name(v.value())))});
    else
      d.append(v.diagnostics());
  }
}

/// Edits of the DeepSpeed config; `base` is where its object lives ("/deepspeed").
void deepspeed_edits(const ParsedArgs& a, const json& ds, std::vector<Edit>& edits,
                     Diagnostics& d) {
  const Ptr base("/deepspeed");
  auto micro = checked_uint(a, "--micro-batch", 1, 1u << 20, d);
  auto gas = checked_uint(a, "--grad-accum", 1, 1u << 20, d);
  if (micro) edits.push_back({"--micro-batch", base / "train_micro_batch_size_per_gpu", *micro});
  if (gas) edits.push_back({"--grad-accum", base / "gradient_accumulation_steps", *gas});
  // train_batch_size = micro x GAS x world size (DeepSpeed's rule, runtime/config.py
  // _batch_assertion): with one of the factors changed, a written total would contradict it, so
  // it goes and DeepSpeed derives it again.
  if ((micro || gas) && ds.contains("train_batch_size"))
    edits.push_back({micro ? "--micro-batch" : "--grad-accum", base / "train_batch_size", {}});
  if (a.has("--precision")) {
    auto p = parse_choice("--precision", *a.get("--precision"), {"fp16", "bf16", "fp32"});
    if (!p.ok()) {
      d.append(p.diagnostics());
    } else {
      // DeepSpeed reads "bf16", else the old spelling "bfloat16" (runtime/config.py
      // get_bfloat16_config). A block is created only to enable it; an absent one is off.
      const std::string bf = ds.contains("bf16") || !ds.contains("bfloat16") ? "bf16" : "bfloat16";
      for (const auto& [block, on] :
           {std::pair<std::string, bool>{"fp16", p.value() == "fp16"}, {bf, p.value() == "bf16"}})
        if (on || ds.contains(block))
          edits.push_back({"--precision", base / block / "enabled", json(on)});
    }
  }
  if (a.has("--gradient-clipping")) {
    auto c = parse_number("--gradient-clipping", *a.get("--gradient-clipping"), 0, 1e9);
    if (c.ok())
      edits.push_back({"--gradient-clipping", base / "gradient_clipping", json(c.value())});
    else
      d.append(c.diagnostics());
  }
  if (auto s = checked_uint(a, "--stage", 0, 3, d)) {
    if (ds.contains("zero_optimization") && ds["zero_optimization"].is_object())
      edits.push_back({"--stage", base / "zero_optimization" / "stage", json(*s)});
    else  // absent, or the deprecated true/false form
      edits.push_back({"--stage", base / "zero_optimization", json{{"stage", *s}}});
  }
}

/// The LoRA flags, as the scenario's "model": {"lora": {...}} keys (scenario_lora.h).
void lora_edits(const ParsedArgs& a, std::vector<Edit>& edits, Diagnostics& d) {
  LoraFlagValues v;
  if (!parse_lora_flags(a, v, d)) return;
  const Ptr lora("/model/lora");
  if (v.rank) edits.push_back({"--lora-rank", lora / "rank", json(*v.rank)});
  if (v.targets)
    edits.push_back({"--lora-targets", lora / "targets",
                     v.targets->size() == 1 && v.targets->front() == "all-linear"
                         ? json("all-linear")
                         : json(*v.targets)});
  if (v.alpha) edits.push_back({"--lora-alpha", lora / "alpha", json(*v.alpha)});
  if (v.dropout) edits.push_back({"--lora-dropout", lora / "dropout", json(*v.dropout)});
  if (v.quantization)
    edits.push_back({"--base-quantization", lora / "base_quantization",
                     json(*v.quantization == BaseQuantization::Nf4 ? "4bit" : "8bit")});
}

void apply(std::vector<Edit>& edits, json& doc) {
  for (auto& e : edits) {
    if (doc.contains(e.where)) e.was = doc.at(e.where).dump();
    if (e.value)
      doc[e.where] = *e.value;
    else if (doc.contains(e.where))
      doc.at(e.where.parent_pointer()).erase(e.where.back());
  }
}

}  // namespace

const std::vector<std::string>& scenario_override_flags() {
  static const std::vector<std::string> kFlags = {"--model",
                                                  "--hf-config",
                                                  "--params",
                                                  "--param-list",
                                                  "--gpus",
                                                  "--world-size",
                                                  "--nodes",
                                                  "--gpus-per-node",
                                                  "--gpu",
                                                  "--ds-config",
                                                  "--micro-batch",
                                                  "--grad-accum",
                                                  "--seq-len",
                                                  "--precision",
                                                  "--gradient-clipping",
                                                  "--activation-checkpointing",
                                                  "--attention",
                                                  "--stage",
                                                  "--deepspeed-version",
                                                  "--lora-rank",
                                                  "--lora-targets",
                                                  "--lora-alpha",
                                                  "--lora-dropout",
                                                  "--base-quantization"};
  return kFlags;
}

Result<Scenario> load_scenario_with_overrides(const ParsedArgs& a) {
  const std::string path = *a.get("--scenario");
  if (a.has("--trainer-config"))
    return fail<Scenario>("--trainer-config", "",
                          "give --trainer-config or --scenario, not both (a scenario holds its own "
                          "model and training settings)");
  bool any = false;
  for (const auto& f : scenario_override_flags()) any = any || a.has(f);
  // The file as written first: its own errors are reported against it, and without flags this is
  // the whole job. Under --deepspeed-version it is read as that release resolves it (each release
  // refuses configs the other runs: DsConfig::version).
  std::optional<DeepSpeedVersion> version;
  if (auto v = a.get("--deepspeed-version")) {
    auto parsed = parse_deepspeed_version_flag(*v);
    if (!parsed.ok()) return Result<Scenario>(parsed.diagnostics());
    version = parsed.value();
  }
  auto plain = load_scenario_file(path, version);
  if (!any) return plain;
  // A ds_config "auto" that only a flag resolves (micro-batch, precision, ...) is an error in the
  // file as written, and the flag given for it is the override below: returning here refused the
  // flags the message asks for. Any other error is the file's own and is reported against it.
  if (!plain.ok()) {
    for (const Diagnostic& e : plain.diagnostics().items())
      if (e.severity == Severity::Error && e.message.rfind(kAutoNeedsValue, 0) != 0) return plain;
  }
  Diagnostics d;
  std::string text;
  if (!read_input_file(path, text, d)) return Result<Scenario>(d);
  json doc = json::parse(text, nullptr, false);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  // A referenced ds_config is inlined so that its keys can be edited like an inline block's.
  if (!a.has("--ds-config") && doc.contains("deepspeed_config")) {
    const std::string ds_path = doc["deepspeed_config"].get<std::string>();
    std::string ds_text;
    const auto resolved = (std::filesystem::path(dir) / ds_path).string();
    if (!read_input_file(dir.empty() ? ds_path : resolved, ds_text, d)) return Result<Scenario>(d);
    doc.erase("deepspeed_config");
    doc["deepspeed"] = json::parse(ds_text, nullptr, false);
  }
  std::vector<Edit> edits;
  model_edit(a, edits, d);
  cluster_edits(a, doc, edits, d);
  training_edits(a, edits, d);
  lora_edits(a, edits, d);
  if (auto f = a.get("--ds-config")) {
    std::string ds_text;
    if (read_input_file(*f, ds_text, d)) {
      auto ds = json::parse(ds_text, nullptr, false);
      // An object is inlined (the DeepSpeed flags below may edit it); anything else is referenced
      // by path so that the loader reports the file's own error against the file.
      const bool inline_it = ds.is_object();
      edits.push_back({"--ds-config", Ptr(inline_it ? "/deepspeed_config" : "/deepspeed"), {}});
      edits.push_back({"--ds-config", Ptr(inline_it ? "/deepspeed" : "/deepspeed_config"),
                       inline_it ? ds : json(absolute(*f))});
    }
  }
  if (!d.has_errors()) {
    // The DeepSpeed edits see the config as the model/--ds-config edits leave it.
    apply(edits, doc);
    if (doc.contains("deepspeed") && doc["deepspeed"].is_object()) {
      std::vector<Edit> ds_edits;
      deepspeed_edits(a, doc["deepspeed"], ds_edits, d);
      apply(ds_edits, doc);
      edits.insert(edits.end(), ds_edits.begin(), ds_edits.end());
    } else if (!a.has("--ds-config") &&  // a broken --ds-config file reports its own error
               (a.has("--micro-batch") || a.has("--grad-accum") || a.has("--precision") ||
                a.has("--gradient-clipping") || a.has("--stage"))) {
      d.error(path, "/deepspeed", "expected a DeepSpeed config object to override, got none");
    }
  }
  if (d.has_errors()) return Result<Scenario>(d);
  for (const auto& e : edits) {
    if (e.value && e.was == e.value->dump()) continue;  // e.g. gpus_per_node kept by --gpus
    if (e.flag == "--ds-config") {
      if (e.value) d.note("--ds-config", "", "replaces " + path + "'s DeepSpeed config");
      continue;
    }
    d.note(e.flag, "",
           "overrides " + path + " " + e.where.to_string() + " (was " + e.was + ", now " +
               (e.value ? e.value->dump() : std::string("removed")) + ")");
  }
  auto s = load_scenario_text(doc.dump(), path, dir);
  d.append(s.diagnostics());
  if (!s.ok()) return Result<Scenario>(d);
  return Result<Scenario>(std::move(s.value()), d);
}

}  // namespace zerosim::cli
