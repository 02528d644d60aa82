// The trainer config's JSON reader and the typed reads shared by every format
// (trainer_config_internal.h). Scalars follow PyYAML's safe_load (YAML 1.1), which LLaMA-Factory
// and axolotl use: yes/no/on/off are booleans too; in JSON only true/false are.
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/json_reader.h"
#include "config/trainer_config_internal.h"

namespace zerosim::trainercfg {

std::string Entry::shown() const {
  switch (kind) {
    case Kind::Null:
      return "null";
    case Kind::Quoted:
      return quote(text);
    case Kind::Plain:
    case Kind::Bool:
    case Kind::Number:
      return text.empty() ? "an empty value" : text;
    case Kind::Sequence:
      return "a list";
    case Kind::Mapping:
      return "a mapping";
  }
  return text;
}

bool read_json_entries(const std::string& text, const std::string& path, std::vector<Entry>& out,
                       Diagnostics& d) {
  auto root = json::parse(text, path, d);
  if (!root) return false;
  if (!root->is_object()) {
    d.error(path, "/",
            "expected an object of TrainingArguments fields, got " + json::describe(*root));
    return false;
  }
  for (const auto& [key, v] : root->items()) {
    Entry e;
    e.key = key;
    e.where = path;
    e.pointer = "/" + json::pointer_token(key);
    if (v.is_null()) {
      e.kind = Entry::Kind::Null;
    } else if (v.is_boolean()) {
      e.kind = Entry::Kind::Bool;
      e.text = v.get<bool>() ? "true" : "false";
    } else if (v.is_number()) {
      e.kind = Entry::Kind::Number;
      e.text = v.dump();
    } else if (v.is_string()) {
      e.kind = Entry::Kind::Quoted;
      e.text = v.get<std::string>();
    } else if (v.is_array()) {
      e.kind = Entry::Kind::Sequence;
      for (const auto& item : v) {
        if (item.is_string())
          e.items.push_back(item.get<std::string>());
        else
          e.items_scalar = false;
      }
    } else {
      e.kind = Entry::Kind::Mapping;
    }
    out.push_back(std::move(e));
  }
  return true;
}

std::optional<bool> as_bool(const Entry& e, Diagnostics& d) {
  if (e.kind == Entry::Kind::Bool) return e.text == "true";
  if (e.kind == Entry::Kind::Plain) {
    // PyYAML's YAML 1.1 boolean resolver (resolver.py: yes/no/true/false/on/off in three cases).
    static const char* kTrue[] = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
    static const char* kFalse[] = {"no",    "No",  "NO",  "false", "False",
                                   "FALSE", "off", "Off", "OFF"};
    for (const char* t : kTrue)
      if (e.text == t) return true;
    for (const char* f : kFalse)
      if (e.text == f) return false;
  }
  d.error(e.where, e.pointer, "expected true or false, got " + e.shown());
  return std::nullopt;
}

std::optional<std::uint64_t> as_uint(const Entry& e, std::uint64_t lo, std::uint64_t hi,
                                     Diagnostics& d) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  if (e.kind == Entry::Kind::Plain || e.kind == Entry::Kind::Number) {
    const std::string& t = e.text;
    bool digits = !t.empty() && t.size() <= 19;
    for (char c : t) digits = digits && c >= '0' && c <= '9';
    // PyYAML (YAML 1.1), which LLaMA-Factory, axolotl and HfArgumentParser's YAML read with,
    // takes a plain 010 as octal 8; zerosim read 10 (found by a hostile-input pass).
    if (digits && e.kind == Entry::Kind::Plain && t.size() > 1 && t[0] == '0') {
      d.error(e.where, e.pointer,
              "expected an integer " + range + " without a leading 0, got " + e.shown() +
                  ": PyYAML, which the trainers read YAML with, takes it as octal");
      return std::nullopt;
    }
    if (digits) {
      const std::uint64_t v = std::strtoull(t.c_str(), nullptr, 10);
      if (v >= lo && v <= hi) return v;
    }
  }
  d.error(e.where, e.pointer, "expected an integer " + range + ", got " + e.shown());
  return std::nullopt;
}

std::optional<double> as_number(const Entry& e, double lo, double hi, const std::string& range,
                                Diagnostics& d) {
  if (e.kind == Entry::Kind::Plain || e.kind == Entry::Kind::Number) {
    const char* s = e.text.c_str();
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s, &end);
    const bool plain_digits =
        !e.text.empty() && (e.text[0] == '-' || e.text[0] == '+' || e.text[0] == '.' ||
                            (e.text[0] >= '0' && e.text[0] <= '9'));
    if (plain_digits && end && *end == '\0' && errno == 0 && v >= lo && v <= hi) return v;
  }
  d.error(e.where, e.pointer, "expected a number " + range + ", got " + e.shown());
  return std::nullopt;
}

std::optional<std::string> as_string(const Entry& e, Diagnostics& d) {
  if ((e.kind == Entry::Kind::Plain || e.kind == Entry::Kind::Quoted) && !e.text.empty())
    return e.text;
  d.error(e.where, e.pointer, "expected a non-empty string, got " + e.shown());
  return std::nullopt;
}

}  // namespace zerosim::trainercfg
