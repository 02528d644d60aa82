// The model zoo: models/zoo/*.json compiled into the binary (embedded_data.h). Each file carries
// metadata plus the model's real Hugging Face config.json fields under "hf_config"; the model is
// built through the same import path as `--hf-config`, and loading fails loudly when the built
// parameter count differs from the file's "parameters" (the exact HF num_parameters()).
#include "config/zoo_loader.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "base/json_reader.h"
#include "config/hf_config_loader.h"
#include "zerosim/embedded_data.h"
#include "zerosim/model_loader.h"

namespace zerosim {

namespace {

struct ZooHeader {
  ZooEntry entry;
  std::vector<std::string> aliases;  ///< other accepted names, e.g. the Hugging Face repo id
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The digit runs of a name ("qwen/qwen2-72b" -> {"2", "72"}), which a misspelling keeps.
std::vector<std::string> name_numbers(const std::string& name) {
  std::vector<std::string> out;
  std::string run;
  for (char c : name) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      run += c;
    } else if (!run.empty()) {
      out.push_back(run);
      run.clear();
    }
  }
  if (!run.empty()) out.push_back(run);
  return out;
}

std::string zoo_source(const EmbeddedFile& f) { return "models/zoo/" + std::string(f.name); }

std::string stem(std::string_view file) {
  auto dot = file.rfind('.');
  return std::string(file.substr(0, dot));
}

// Reads and validates everything but "hf_config" (which is only marked used here).
std::optional<ZooHeader> read_header(json::JsonReader& r, const EmbeddedFile& f) {
  if (!r.expect_object()) return std::nullopt;
  auto& d = r.diags();
  const bool had_errors = d.has_errors();
  ZooHeader h;
  auto format = r.get_enum("format", {"zerosim-model"});
  auto version = r.get_uint("version", 1, 1);
  auto name = r.get_string("name");
  auto display = r.get_string("display_name");
  auto source = r.get_string("source");
  auto params = r.get_uint("parameters", 1, static_cast<std::uint64_t>(kMaxParameters));
  for (const char* key :
       {"format", "version", "name", "display_name", "source", "parameters", "hf_config"})
    if (!r.has(key)) r.error("missing required key " + quote(key));
  if (name && *name != stem(f.name))
    r.error("name " + quote(*name) + " must match the file name " + quote(stem(f.name)), "name");
  if (auto aliases = r.child("aliases")) {
    if (auto items = aliases->elements())
      for (auto& item : *items)
        if (auto a = item.as_string()) h.aliases.push_back(*a);
  }
  r.get_string("notes");
  r.mark_used("hf_config");
  r.reject_unknown({"format", "version", "name", "display_name", "source", "parameters",
                    "hf_config", "aliases", "notes"});
  if ((d.has_errors() && !had_errors) || !format || !version || !name || !display || !source ||
      !params)
    return std::nullopt;
  h.entry = ZooEntry{*name, *display, *params, *source};
  return h;
}

// Parses one zoo file; `model` asks for the built model too.
Result<ModelDesc> load_file(const EmbeddedFile& f, ZooHeader* header_out, bool model) {
  Diagnostics diags;
  const std::string src = zoo_source(f);
  auto j = json::parse(std::string(f.content), src, diags);
  if (!j) return Result<ModelDesc>(std::move(diags));
  json::JsonReader root(*j, src, "", diags);
  auto header = read_header(root, f);
  if (!header) return Result<ModelDesc>(std::move(diags));
  if (header_out) *header_out = *header;
  if (!model) return ModelDesc{};
  auto cfg = root.child("hf_config");
  auto m = model_from_hf_config(*cfg, header->entry.name);
  if (!m.ok()) return m;
  const Elements built = m->num_parameters();
  if (built != header->entry.parameters)
    return fail<ModelDesc>(src, "/parameters",
                           "the model built from hf_config has " + std::to_string(built) +
                               " parameters, the file says " +
                               std::to_string(header->entry.parameters));
  m->name = header->entry.name;
  m->source = header->entry.source;
  return m;
}

}  // namespace

Result<ModelDesc> load_zoo_file_text(const std::string& file_name, const std::string& text) {
  return load_file(EmbeddedFile{file_name, text}, nullptr, true);
}

std::vector<ZooEntry> list_zoo() {
  std::vector<ZooEntry> out;
  for (const auto& f : zoo_files()) {
    ZooHeader h;
    // A broken embedded file is a build defect caught by model_zoo_test; it is left out here.
    if (load_file(f, &h, false).ok()) out.push_back(h.entry);
  }
  std::sort(out.begin(), out.end(),
            [](const ZooEntry& a, const ZooEntry& b) { return a.name < b.name; });
  return out;
}

Result<ModelDesc> load_zoo_model(const std::string& name) {
  const std::string want = lower(name);
  // Fast path: zoo names equal their file names, so most lookups parse a single file.
  for (const auto& f : zoo_files())
    if (stem(f.name) == want) return load_file(f, nullptr, true);
  std::vector<std::string> candidates;  // lower-cased accepted names
  std::vector<std::string> owners;      // the zoo name each candidate belongs to
  for (const auto& f : zoo_files()) {
    ZooHeader h;
    if (!load_file(f, &h, false).ok()) continue;
    std::vector<std::string> names = {h.entry.name, h.entry.display_name};
    names.insert(names.end(), h.aliases.begin(), h.aliases.end());
    for (const auto& n : names) {
      if (lower(n) == want) return load_file(f, nullptr, true);
      candidates.push_back(lower(n));
      owners.push_back(h.entry.name);
    }
  }
  // A suggestion only where it is plausibly the same model: the numbers in the names (family
  // version, size) must agree, so Qwen/Qwen2-72B never suggests qwen2-7b.
  std::vector<std::string> plausible;
  for (const auto& c : candidates)
    if (name_numbers(c) == name_numbers(want)) plausible.push_back(c);
  const std::string m = closest_match(want, plausible);
  std::string hint;
  for (std::size_t i = 0; i < candidates.size() && !m.empty(); ++i)
    if (candidates[i] == m) {
      hint = "did you mean " + quote(owners[i]) + "?";
      break;
    }
  return fail<ModelDesc>("--model", "",
                         "model " + quote(name) +
                             " is not in the zoo; pass its config.json with --hf-config "
                             "(`zerosim models` lists the zoo)",
                         hint);
}

}  // namespace zerosim
