// Diagnostic formatting and the "did you mean" helper.
#include "zerosim/diagnostic.h"

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace zerosim {

namespace {

// Control characters (C0, DEL, C1) as JSON escapes, so text echoed from the input cannot split a
// line or drive the terminal. Valid UTF-8 stays; any other byte shows as \xNN.
void append_escaped(std::string& out, std::string_view s, bool json_string) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    // U+0080..U+009F, the C1 controls, are 0xC2 0x80..0x9F in UTF-8 (0x9B is the CSI).
    const bool c1 = c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(s[i + 1]) <= 0x9F;
    if (json_string && (c == '"' || c == '\\')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c >= 0x80 && !c1) {
      // Valid UTF-8 stays; a byte that is not part of a valid sequence is shown as \xff.
      const std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
      bool valid = len != 0 && c <= 0xF4 && i + len <= s.size();
      for (std::size_t k = 1; valid && k < len; ++k)
        valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
      if (valid) {
        out.append(s.substr(i, len));
        i += len - 1;
      } else {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      }
    } else if (c < 0x20 || c == 0x7F || c1) {
      const unsigned v = c1 ? static_cast<unsigned char>(s[++i]) : c;
      out += "\\u00";
      out += kHex[v >> 4];
      out += kHex[v & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
}

// At most `limit` bytes of `s`, cut at a UTF-8 character boundary.
std::string_view utf8_prefix(std::string_view s, std::size_t limit) {
  if (s.size() <= limit) return s;
  std::size_t n = limit;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// `s` escaped, and cut after `limit` bytes with "…(N bytes)" (N: the whole length).
std::string shown(std::string_view s, std::size_t limit, bool json_string) {
  std::string out;
  append_escaped(out, utf8_prefix(s, limit), json_string);
  if (s.size() > limit) out += "\u2026(" + std::to_string(s.size()) + " bytes)";
  return out;
}

}  // namespace

std::string Diagnostic::to_string() const {
  std::string s;
  if (severity == Severity::Warning) s += "warning: ";
  if (severity == Severity::Note) s += "note: ";
  if (!source.empty()) s += shown(source, kMaxShownSource, false) + ": ";
  if (!pointer.empty()) s += shown(pointer, kMaxShownValue, false) + ": ";
  s += shown(message, kMaxShownMessage, false);
  if (!hint.empty()) s += " (" + shown(hint, kMaxShownMessage, false) + ")";
  return s;
}

void Diagnostics::error(std::string source, std::string pointer, std::string message,
                        std::string hint) {
  add({Severity::Error, std::move(source), std::move(pointer), std::move(message),
       std::move(hint)});
}
void Diagnostics::warning(std::string source, std::string pointer, std::string message,
                          std::string hint) {
  add({Severity::Warning, std::move(source), std::move(pointer), std::move(message),
       std::move(hint)});
}
void Diagnostics::note(std::string source, std::string pointer, std::string message,
                       std::string hint) {
  add({Severity::Note, std::move(source), std::move(pointer), std::move(message), std::move(hint)});
}
void Diagnostics::append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}
bool Diagnostics::has_errors() const {
  return std::any_of(items_.begin(), items_.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::Error; });
}
std::string Diagnostics::to_string() const {
  std::string s;
  for (const auto& d : items_) s += d.to_string() + "\n";
  return s;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Close enough: at most a third of the word changed (at least 2 edits allowed), or a prefix
  // match.
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  if (best_d <= limit) return best;
  for (const auto& c : candidates)
    if (!word.empty() && (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0)) return c;
  return {};
}

std::string quote(const std::string& s) { return "\"" + shown(s, kMaxShownValue, true) + "\""; }

}  // namespace zerosim
