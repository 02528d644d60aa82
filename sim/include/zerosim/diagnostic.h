// Diagnostics and Result<T>: how every input error travels to the user.
//
// An input error is one line: "<source>: <json pointer>: <message> (<hint>)", e.g.
//   ds.json: /zero_optimization/stage: expected an integer 0..3, got "three"
// Loaders collect every problem instead of stopping at the first (style.md §4.4). Library code
// never exits or throws on bad input; it returns a Result holding either a value or the
// diagnostics.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zerosim {

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string source;   ///< file name, "--flag" or "<input>"
  std::string pointer;  ///< JSON Pointer of the value ("/zero_optimization/stage"), may be empty
  std::string message;  ///< "expected ..., got ..."
  std::string hint;     ///< optional: "did you mean \"stage\"?"

  /// The one-line form shown to users (warnings are prefixed "warning: ", notes "note: "). Every
  /// part is made safe here, once: control characters become JSON escapes (\n, \u001b), so no
  /// echoed key or value can split the line or reach the terminal raw, and a long pointer,
  /// message or hint is cut with "…(N bytes)".
  std::string to_string() const;
};

/// An ordered list of diagnostics; errors make a Result fail, warnings and notes travel with
/// values.
class Diagnostics {
 public:
  void add(Diagnostic d) { items_.push_back(std::move(d)); }
  void error(std::string source, std::string pointer, std::string message, std::string hint = {});
  void warning(std::string source, std::string pointer, std::string message, std::string hint = {});
  void note(std::string source, std::string pointer, std::string message, std::string hint = {});
  void append(const Diagnostics& other);

  bool has_errors() const;
  bool empty() const { return items_.empty(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  /// Every diagnostic, one per line, each ending in '\n'.
  std::string to_string() const;

 private:
  std::vector<Diagnostic> items_;
};

/// A value or the errors that prevented it; warnings and notes may accompany a value.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose, like Expected<T>
  Result(T value, Diagnostics diags) : value_(std::move(value)), diags_(std::move(diags)) {}
  Result(Diagnostics diags) : diags_(std::move(diags)) {}  // NOLINT

  bool ok() const { return value_.has_value() && !diags_.has_errors(); }
  explicit operator bool() const { return ok(); }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  const Diagnostics& diagnostics() const { return diags_; }
  Diagnostics& diagnostics() { return diags_; }

 private:
  std::optional<T> value_;
  Diagnostics diags_;
};

/// A failed Result with one error.
template <class T>
Result<T> fail(std::string source, std::string pointer, std::string message,
               std::string hint = {}) {
  Diagnostics d;
  d.error(std::move(source), std::move(pointer), std::move(message), std::move(hint));
  return Result<T>(std::move(d));
}

/// Levenshtein distance (insertions, deletions, substitutions).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// "did you mean" helper: the closest candidate by edit distance, or "" when none is close enough.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// How much of an echoed text a message shows: a quoted value or a pointer (kMaxShownValue bytes),
/// a file name, a whole message or hint; longer text is cut with "…(N bytes)".
inline constexpr std::size_t kMaxShownValue = 120;
inline constexpr std::size_t kMaxShownSource = 1024;
inline constexpr std::size_t kMaxShownMessage = 4096;

/// Quotes a value for messages as a JSON string would ("a\nb", "\u001b[31m", quotes and
/// backslashes escaped), cut after kMaxShownValue bytes with "…(N bytes)".
std::string quote(const std::string& s);

}  // namespace zerosim
