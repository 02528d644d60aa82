// GPU catalog loader: reads the embedded models/gpu_catalog.json through JsonReader (every field
// typed and range-checked, unknown keys rejected) and looks GPUs up by name or alias.
#include "zerosim/gpu_catalog.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "base/json_reader.h"
#include "zerosim/embedded_data.h"

namespace zerosim {

namespace {

constexpr double kMaxRate = 1e7;  // TFLOP/s or GB/s: generous upper bound, catches unit mistakes

// Lower case, with '_' and ' ' read as '-', so "h100_sxm" and "H100 SXM" find "h100-sxm".
std::string normalise(const std::string& s) {
  std::string out;
  for (char c : s) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += (l == '_' || l == ' ') ? '-' : l;
  }
  return out;
}

// Reads one required non-negative rate; records a "missing key" error when absent.
double required_rate(json::JsonReader& r, const char* key) {
  if (!r.has(key)) {
    r.error("missing required key " + quote(key));
    return 0;
  }
  return r.get_number(key, 0, kMaxRate).value_or(0);
}

constexpr GpuGeneration kGenerations[] = {GpuGeneration::Volta,     GpuGeneration::Ampere,
                                          GpuGeneration::Ada,       GpuGeneration::Hopper,
                                          GpuGeneration::Blackwell, GpuGeneration::Cdna3};

std::optional<GpuSpec> read_gpu(json::JsonReader& r) {
  if (!r.expect_object()) return std::nullopt;
  GpuSpec g;
  if (!r.has("name")) r.error("missing required key \"name\"");
  g.name = r.get_string("name").value_or("");
  g.description = r.get_string("description").value_or("");
  if (auto a = r.child("aliases")) {
    if (auto els = a->elements())
      for (auto& e : *els)
        if (auto s = e.as_string()) g.aliases.push_back(*s);
  }
  if (!r.has("memory_bytes")) r.error("missing required key \"memory_bytes\"");
  g.memory_bytes = r.get_uint("memory_bytes", 1, UINT64_MAX).value_or(0);
  g.bf16_tflops = required_rate(r, "bf16_tflops");
  g.fp16_tflops = required_rate(r, "fp16_tflops");
  g.fp32_tflops = required_rate(r, "fp32_tflops");
  g.hbm_gbps = required_rate(r, "hbm_gbps");
  g.intra_node_gbps = required_rate(r, "intra_node_gbps");
  g.network_gbps = required_rate(r, "network_gbps");
  g.pcie_gbps = required_rate(r, "pcie_gbps");
  if (r.has("generation")) {
    std::vector<std::string> names;
    for (GpuGeneration x : kGenerations) names.emplace_back(gpu_generation_name(x));
    if (auto v = r.get_enum("generation", names))
      for (GpuGeneration x : kGenerations)
        if (*v == gpu_generation_name(x)) g.generation = x;
  }
  g.nvswitch = r.get_bool("nvswitch").value_or(false);
  if (!r.has("source"))
    r.error("missing required key \"source\" (every entry names its data sheet)");
  g.source = r.get_string("source").value_or("");
  g.notes = r.get_string("notes").value_or("");
  r.reject_unknown({"name", "description", "aliases", "memory_bytes", "bf16_tflops", "fp16_tflops",
                    "fp32_tflops", "hbm_gbps", "intra_node_gbps", "network_gbps", "pcie_gbps",
                    "generation", "nvswitch", "source", "notes"});
  return g;
}

struct LoadedCatalog {
  std::vector<GpuSpec> gpus;
  std::vector<AmbiguousGpuName> ambiguous;
  Diagnostics diags;
};

const LoadedCatalog& embedded() {
  static const LoadedCatalog kCatalog = [] {
    LoadedCatalog c;
    auto files = gpu_catalog_files();
    if (files.empty()) {
      c.diags.error("gpu_catalog.json", "", "the GPU catalog is not embedded in this build");
      return c;
    }
    auto r = load_gpu_catalog_text(std::string(files[0].content), std::string(files[0].name),
                                   &c.ambiguous);
    c.diags = r.diagnostics();
    if (r.ok()) c.gpus = r.value();
    return c;
  }();
  return kCatalog;
}

}  // namespace

const char* gpu_generation_name(GpuGeneration g) {
  switch (g) {
    case GpuGeneration::Volta:
      return "volta";
    case GpuGeneration::Ampere:
      return "ampere";
    case GpuGeneration::Ada:
      return "ada";
    case GpuGeneration::Hopper:
      return "hopper";
    case GpuGeneration::Blackwell:
      return "blackwell";
    case GpuGeneration::Cdna3:
      return "cdna3";
    case GpuGeneration::Unknown:
      break;
  }
  return "unknown";
}

namespace {

// "ambiguous": [{"name": "A100", "choices": ["A100-40GB", "A100-80GB"]}, ...]: a bare product name
// sold in several versions. Each name must be no GPU's name or alias and each choice a GPU's name.
void read_ambiguous(json::JsonReader& root, const std::vector<GpuSpec>& gpus,
                    const std::set<std::string>& names, std::vector<AmbiguousGpuName>& out) {
  auto list = root.child("ambiguous");
  if (!list) return;
  auto els = list->elements();
  if (!els) return;
  for (auto& e : *els) {
    if (!e.expect_object()) continue;
    AmbiguousGpuName a;
    if (!e.has("name")) e.error("missing required key \"name\"");
    a.name = e.get_string("name").value_or("");
    if (names.count(normalise(a.name)))
      e.error("ambiguous name " + quote(a.name) + " is also a GPU's name or alias", "name");
    if (auto c = e.child("choices")) {
      if (auto cs = c->elements()) {
        for (auto& x : *cs) {
          auto s = x.as_string();
          if (!s) continue;
          const bool known =
              std::any_of(gpus.begin(), gpus.end(), [&](const GpuSpec& g) { return g.name == *s; });
          if (!known) x.error("expected the name of a GPU in \"gpus\", got " + quote(*s));
          a.choices.push_back(*s);
        }
      }
    }
    if (a.choices.size() < 2) e.error("expected at least two choices", "choices");
    e.reject_unknown({"name", "choices"});
    out.push_back(std::move(a));
  }
}

}  // namespace

Result<std::vector<GpuSpec>> load_gpu_catalog_text(const std::string& text,
                                                   const std::string& source,
                                                   std::vector<AmbiguousGpuName>* ambiguous) {
  Diagnostics diags;
  auto doc = json::parse(text, source, diags);
  if (!doc) return diags;
  json::JsonReader root(*doc, source, "", diags);
  if (!root.expect_object()) return diags;
  auto format = root.get_string("format");
  if (format && *format != "zerosim-gpu-catalog")
    root.error("expected \"zerosim-gpu-catalog\", got " + quote(*format), "format");
  if (!root.has("format")) root.error("missing required key \"format\"");
  if (!root.has("version")) root.error("missing required key \"version\"");
  root.get_uint("version", 1, 1);
  root.get_string("conventions");
  std::vector<GpuSpec> gpus;
  std::set<std::string> seen;
  if (auto list = root.child("gpus")) {
    if (auto els = list->elements()) {
      for (auto& e : *els) {
        auto g = read_gpu(e);
        if (!g) continue;
        std::vector<std::string> names{g->name};
        names.insert(names.end(), g->aliases.begin(), g->aliases.end());
        for (const auto& n : names)
          if (!seen.insert(normalise(n)).second)
            e.error("name or alias " + quote(n) + " is used by more than one GPU");
        gpus.push_back(std::move(*g));
      }
    }
  } else {
    root.error("missing required key \"gpus\"");
  }
  std::vector<AmbiguousGpuName> names;
  read_ambiguous(root, gpus, seen, names);
  root.reject_unknown({"format", "version", "conventions", "gpus", "ambiguous"});
  if (diags.has_errors()) return diags;
  if (ambiguous) *ambiguous = std::move(names);
  return Result<std::vector<GpuSpec>>(std::move(gpus), std::move(diags));
}

const std::vector<GpuSpec>& gpu_catalog() { return embedded().gpus; }

const std::vector<AmbiguousGpuName>& ambiguous_gpu_names() { return embedded().ambiguous; }

Result<GpuSpec> find_gpu(const std::string& name, const std::string& source) {
  const LoadedCatalog& c = embedded();
  if (c.diags.has_errors()) return c.diags;
  const std::string key = normalise(name);
  std::vector<std::string> candidates;
  std::string known;
  for (const auto& g : c.gpus) {
    if (normalise(g.name) == key) return g;
    for (const auto& a : g.aliases)
      if (normalise(a) == key) return g;
    candidates.push_back(normalise(g.name));
    for (const auto& a : g.aliases) candidates.push_back(normalise(a));
    known += (known.empty() ? "" : ", ") + g.name;
  }
  // A bare product name sold in several versions is never read as one of them ("A100" once meant
  // the 80 GB part silently): the user picks, seeing what differs.
  for (const auto& amb : c.ambiguous) {
    if (normalise(amb.name) != key) continue;
    std::string choices;
    for (const auto& n : amb.choices) {
      for (const auto& g : c.gpus)
        if (g.name == n)
          choices += (choices.empty() ? "" : ", ") + g.name + " (" + format_gib(g.memory_bytes) +
                     ", " + g.description + ")";
    }
    return fail<GpuSpec>(source, "",
                         quote(name) + " names more than one GPU; give one of: " + choices);
  }
  std::string hint;
  std::string m = closest_match(key, candidates);
  if (!m.empty()) {
    // Show the spelling the catalog uses, not the normalised one.
    for (const auto& g : c.gpus) {
      if (normalise(g.name) == m) hint = g.name;
      for (const auto& a : g.aliases)
        if (normalise(a) == m && hint.empty()) hint = a;
    }
    hint = "did you mean " + quote(hint) + "? A GPU not in the catalog: --gpu-memory SIZE";
  } else {
    hint = "a GPU not in the catalog: --gpu-memory SIZE [--gpu-tflops X] [--gpu-bandwidth X]";
  }
  return fail<GpuSpec>(source, "", "unknown GPU " + quote(name) + "; known GPUs: " + known, hint);
}

}  // namespace zerosim
