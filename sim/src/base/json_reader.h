// JsonReader: the one way zerosim reads user JSON (style.md §4.4).
//
// Tracks the JSON Pointer of every value, records which keys were read, rejects unknown keys with
// a "did you mean" hint, and reports every problem as a Diagnostic instead of throwing. No
// operator[], no implicit conversions. Private to the loaders (nlohmann/json stays out of the
// public headers).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "zerosim/diagnostic.h"

namespace zerosim::json {

/// The deepest nesting of arrays and objects parse() accepts.
inline constexpr std::size_t kMaxDepth = 256;

/// Parses JSON text in linear time. A syntax error becomes "source: line L, column C: <what>" and
/// nullopt; so does a key repeated inside one object (the pointer names the second one), a NUL
/// byte anywhere, and nesting deeper than kMaxDepth.
std::optional<nlohmann::json> parse(const std::string& text, const std::string& source,
                                    Diagnostics& diags);

/// Whether the array at this JSON pointer ("/spans", "/ranks/3/memory") is streamed.
using StreamFilter = std::function<bool(const std::string& pointer)>;
/// Receives one complete element of a streamed array: the array's pointer, the element's index and
/// the element (which the callee may move from).
using ElementSink =
    std::function<void(const std::string& array_pointer, std::size_t index, nlohmann::json&)>;
/// parse(), except that arrays selected by `stream` (outside other streamed arrays, up to depth 5)
/// stay empty in the returned DOM: each element is handed to `on_element` as soon as it is complete
/// and then dropped, so memory stays near one element's DOM for machine-written files (traces).
/// Elements arrive in text order, also when the text later turns out to be invalid.
std::optional<nlohmann::json> parse_streaming(const std::string& text, const std::string& source,
                                              Diagnostics& diags, const StreamFilter& stream,
                                              const ElementSink& on_element);

/// Reads a whole file (read_input_file: regular files only, up to the input cap). Failure adds one
/// error naming the path ("cannot read file: <reason>", "expected a regular file, got a FIFO")
/// and returns false.
bool read_file(const std::string& path, std::string& out, Diagnostics& diags);

/// How a value is shown after "got": strings quoted, numbers and literals as written,
/// "an object" / "an array" for containers.
std::string describe(const nlohmann::json& v);

/// The spelling of every value first..count-1 of an enum whose values are 0..count-1, from its
/// name function (stream_name, dtype_name, ...): the `allowed` list of JsonReader::get_enum.
template <class E, class F>
std::vector<std::string> enum_names(std::size_t count, F&& name, std::size_t first = 0) {
  std::vector<std::string> out;
  for (std::size_t i = first; i < count; ++i) out.emplace_back(name(static_cast<E>(i)));
  return out;
}

/// Escapes a key for use as a JSON Pointer token (RFC 6901: "~" -> "~0", "/" -> "~1").
std::string pointer_token(std::string_view key);

class JsonReader {
 public:
  JsonReader(const nlohmann::json& value, std::string source, std::string pointer,
             Diagnostics& diags);

  const nlohmann::json& value() const { return *value_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& source() const { return source_; }
  Diagnostics& diags() { return *diags_; }
  std::string child_pointer(std::string_view key) const;

  /// Adds "<pointer>: <message>" as an error for this value (or a child key when given).
  void error(const std::string& message, std::string_view key = {}, const std::string& hint = {});
  void warning(const std::string& message, std::string_view key = {}, const std::string& hint = {});

  /// Errors unless the value is an object ("expected an object, got ...").
  bool expect_object();
  bool has(std::string_view key) const;
  /// True when the key holds the string "auto" (Hugging Face Trainer configs).
  bool is_auto(std::string_view key) const;
  void mark_used(std::string_view key) { used_.insert(std::string(key)); }

  /// A reader for a child value; marks the key used. nullopt when absent.
  std::optional<JsonReader> child(std::string_view key);
  /// Readers for the elements of an array value (pointer ".../i"); errors when not an array.
  std::optional<std::vector<JsonReader>> elements();

  // Typed getters on a key: absent -> nullopt, no error; wrong type or range -> error and nullopt.
  // Integers accept integral floating literals (5e8), as DeepSpeed's pydantic models do.
  std::optional<bool> get_bool(std::string_view key);
  std::optional<std::int64_t> get_int(std::string_view key, std::int64_t lo, std::int64_t hi);
  std::optional<std::uint64_t> get_uint(std::string_view key, std::uint64_t lo, std::uint64_t hi);
  std::optional<double> get_number(std::string_view key, double lo, double hi);
  std::optional<std::string> get_string(std::string_view key);
  /// A string printed in report headers and notes (a model, GPU or device name): one without
  /// control characters (C0, DEL, C1), else an error. Such a name from an edited file reached the
  /// terminal raw ("zerosim simulate: evil\n\e[31m..."; found by a hostile-input pass).
  std::optional<std::string> get_name(std::string_view key);
  /// A string that must be one of `allowed` (compared case-sensitively); the error lists them.
  std::optional<std::string> get_enum(std::string_view key,
                                      const std::vector<std::string>& allowed);

  // The same conversions on this reader's own value.
  std::optional<std::int64_t> as_int(std::int64_t lo, std::int64_t hi);
  std::optional<std::uint64_t> as_uint(std::uint64_t lo, std::uint64_t hi);
  std::optional<double> as_number(double lo, double hi);
  std::optional<std::string> as_string();

  /// Every key not read or marked used becomes a diagnostic ("unknown key \"x\"") with a
  /// "did you mean" hint over `known`. Severity Error for strictly validated blocks.
  void reject_unknown(const std::vector<std::string>& known, Severity severity = Severity::Error);
  /// Keys present but never read or marked used.
  std::vector<std::string> unused_keys() const;

 private:
  const nlohmann::json* value_;
  std::string source_;
  std::string pointer_;
  Diagnostics* diags_;
  std::set<std::string> used_;
};

}  // namespace zerosim::json
