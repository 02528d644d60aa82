// Diagnostic formatting and the "did you mean" helper.
#include "zerosim/diagnostic.h"

#include <algorithm>
#include <cstddef>

namespace zerosim {

std::string Diagnostic::to_string() const {
  std::string s;
  if (severity == Severity::Warning) s += "warning: ";
  if (severity == Severity::Note) s += "note: ";
  if (!source.empty()) s += source + ": ";
  if (!pointer.empty()) s += pointer + ": ";
  s += message;
  if (!hint.empty()) s += " (" + hint + ")";
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

namespace {
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
}  // namespace

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

std::string quote(const std::string& s) { return "\"" + s + "\""; }

}  // namespace zerosim
