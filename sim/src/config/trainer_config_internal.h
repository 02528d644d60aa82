// Private plumbing of the trainer config loader (trainer_config*.cc): the file's top-level
// entries in one form for YAML and JSON, so that the key mapping and the typed reads are written
// once. A YAML entry is located by "file:line:column", a JSON entry by its pointer "/key".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"

namespace zerosim::trainercfg {

struct Entry {
  enum class Kind { Null, Plain, Quoted, Bool, Number, Sequence, Mapping };
  std::string key;
  Kind kind = Kind::Null;
  std::string text;                ///< the scalar as written (Plain, Quoted, Bool, Number)
  std::vector<std::string> items;  ///< a sequence of scalars
  bool items_scalar = true;        ///< false when a sequence holds a list or mapping
  std::string where;               ///< "file:12:5" (YAML) or "file" (JSON)
  std::string pointer;             ///< the key (YAML) or "/key" (JSON): the diagnostic's pointer
  /// How the value is shown after "got": strings quoted, other scalars as written, "a list" /
  /// "a mapping" / "null".
  std::string shown() const;
};

/// Top-level entries of a YAML mapping (yaml-cpp). Refused, one error each with line and column:
/// a syntax error, more than one document, a root that is not a mapping, a key that is not a
/// scalar, a repeated key, a tag other than the core schema's (!!str, !!int, ...).
bool read_yaml_entries(const std::string& text, const std::string& path, std::vector<Entry>& out,
                       Diagnostics& d);

/// Top-level entries of a JSON object (json::parse: syntax errors with line and column).
bool read_json_entries(const std::string& text, const std::string& path, std::vector<Entry>& out,
                       Diagnostics& d);

}  // namespace zerosim::trainercfg

namespace zerosim::trainercfg {

// Typed reads of one entry; a wrong type or range is one error ("expected ..., got ...") at the
// entry's position and nullopt.
std::optional<bool> as_bool(const Entry& e, Diagnostics& d);
std::optional<std::uint64_t> as_uint(const Entry& e, std::uint64_t lo, std::uint64_t hi,
                                     Diagnostics& d);
/// `range` is how the allowed range is written in the message ("0..1", ">= 0").
std::optional<double> as_number(const Entry& e, double lo, double hi, const std::string& range,
                                Diagnostics& d);
/// A non-empty scalar string (plain or quoted in YAML, a string in JSON).
std::optional<std::string> as_string(const Entry& e, Diagnostics& d);

}  // namespace zerosim::trainercfg
