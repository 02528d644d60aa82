// JsonReader implementation. nlohmann/json is parsed with exceptions caught in exactly one place
// (parse), and every later access checks the type first, so no json exception escapes.
#include "base/json_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace zerosim::json {

namespace {
std::string range_text(std::int64_t lo, std::int64_t hi) {
  if (hi == INT64_MAX) return "an integer >= " + std::to_string(lo);
  return "an integer " + std::to_string(lo) + ".." + std::to_string(hi);
}
std::string urange_text(std::uint64_t lo, std::uint64_t hi) {
  if (hi == UINT64_MAX) return "an integer >= " + std::to_string(lo);
  return "an integer " + std::to_string(lo) + ".." + std::to_string(hi);
}
std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
// Integral value of a JSON number, if it has one (5e8 -> 500000000; 2.5 -> nullopt).
std::optional<long double> integral_value(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<std::int64_t>());
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d) return static_cast<long double>(d);
  }
  return std::nullopt;
}
}  // namespace

namespace {
// Tracks the JSON Pointer during a callback parse and records keys that repeat inside one object:
// nlohmann keeps the last value silently, DeepSpeed refuses duplicate keys
// (dict_raise_error_on_duplicate_keys), and a silently dropped value is the worst kind of default.
class DuplicateKeyFinder {
 public:
  bool on_event(nlohmann::json::parse_event_t ev, const nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    const bool starts_element = ev == E::object_start || ev == E::array_start || ev == E::value;
    if (starts_element && !stack_.empty() && stack_.back().is_array) ++stack_.back().index;
    switch (ev) {
      case E::object_start:
        stack_.push_back({false, -1, {}, {}});
        break;
      case E::array_start:
        stack_.push_back({true, -1, {}, {}});
        break;
      case E::object_end:
      case E::array_end:
        if (!stack_.empty()) stack_.pop_back();
        break;
      case E::key: {
        auto& top = stack_.back();
        top.key = parsed.get<std::string>();
        if (!top.seen.insert(top.key).second && first_.empty()) first_ = pointer();
        break;
      }
      case E::value:
        break;
    }
    return true;
  }
  const std::string& first_duplicate() const { return first_; }

 private:
  struct Level {
    bool is_array;
    long index;
    std::string key;
    std::set<std::string> seen;
  };
  std::string pointer() const {
    std::string p;
    for (const auto& l : stack_)
      p += "/" + (l.is_array ? std::to_string(l.index) : pointer_token(l.key));
    return p;
  }
  std::vector<Level> stack_;
  std::string first_;
};
}  // namespace

std::optional<nlohmann::json> parse(const std::string& text, const std::string& source,
                                    Diagnostics& diags) {
  try {
    DuplicateKeyFinder dups;
    auto j =
        nlohmann::json::parse(text, [&dups](int, nlohmann::json::parse_event_t ev,
                                            nlohmann::json& v) { return dups.on_event(ev, v); });
    if (!dups.first_duplicate().empty()) {
      diags.error(source, dups.first_duplicate(), "duplicate key: a JSON object names it twice",
                  "keep one; DeepSpeed refuses duplicate keys too");
      return std::nullopt;
    }
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based; turn it into line and column.
    std::size_t byte = e.byte == 0 ? 0 : e.byte - 1;
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string what = e.what();
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 5: syntax
    // error ..."
    auto pos = what.find(": ", what.find("parse error"));
    std::string detail = pos == std::string::npos ? what : what.substr(pos + 2);
    diags.error(source, "",
                "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) +
                    ": " + detail);
    return std::nullopt;
  }
}

bool read_file(const std::string& path, std::string& out, Diagnostics& diags) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags.error(path, "", std::string("cannot read file: ") + std::strerror(errno));
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

std::string describe(const nlohmann::json& v) {
  if (v.is_string()) return "\"" + v.get<std::string>() + "\"";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return v.dump();
}

std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

JsonReader::JsonReader(const nlohmann::json& value, std::string source, std::string pointer,
                       Diagnostics& diags)
    : value_(&value), source_(std::move(source)), pointer_(std::move(pointer)), diags_(&diags) {}

std::string JsonReader::child_pointer(std::string_view key) const {
  return pointer_ + "/" + pointer_token(key);
}

void JsonReader::error(const std::string& message, std::string_view key, const std::string& hint) {
  diags_->error(source_, key.empty() ? (pointer_.empty() ? "/" : pointer_) : child_pointer(key),
                message, hint);
}
void JsonReader::warning(const std::string& message, std::string_view key,
                         const std::string& hint) {
  diags_->warning(source_, key.empty() ? (pointer_.empty() ? "/" : pointer_) : child_pointer(key),
                  message, hint);
}

bool JsonReader::expect_object() {
  if (value_->is_object()) return true;
  error("expected an object, got " + describe(*value_));
  return false;
}

bool JsonReader::has(std::string_view key) const {
  return value_->is_object() && value_->contains(std::string(key));
}

bool JsonReader::is_auto(std::string_view key) const {
  if (!has(key)) return false;
  const auto& v = (*value_)[std::string(key)];
  return v.is_string() && v.get<std::string>() == "auto";
}

std::optional<JsonReader> JsonReader::child(std::string_view key) {
  if (!has(key)) return std::nullopt;
  mark_used(key);
  return JsonReader((*value_)[std::string(key)], source_, child_pointer(key), *diags_);
}

std::optional<std::vector<JsonReader>> JsonReader::elements() {
  if (!value_->is_array()) {
    error("expected an array, got " + describe(*value_));
    return std::nullopt;
  }
  std::vector<JsonReader> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.emplace_back((*value_)[i], source_, pointer_ + "/" + std::to_string(i), *diags_);
  return out;
}

std::optional<bool> JsonReader::get_bool(std::string_view key) {
  auto c = child(key);
  if (!c) return std::nullopt;
  if (!c->value().is_boolean()) {
    c->error("expected true or false, got " + describe(c->value()));
    return std::nullopt;
  }
  return c->value().get<bool>();
}

std::optional<std::int64_t> JsonReader::get_int(std::string_view key, std::int64_t lo,
                                                std::int64_t hi) {
  auto c = child(key);
  if (!c) return std::nullopt;
  return c->as_int(lo, hi);
}

std::optional<std::uint64_t> JsonReader::get_uint(std::string_view key, std::uint64_t lo,
                                                  std::uint64_t hi) {
  auto c = child(key);
  if (!c) return std::nullopt;
  return c->as_uint(lo, hi);
}

std::optional<double> JsonReader::get_number(std::string_view key, double lo, double hi) {
  auto c = child(key);
  if (!c) return std::nullopt;
  return c->as_number(lo, hi);
}

std::optional<std::string> JsonReader::get_string(std::string_view key) {
  auto c = child(key);
  if (!c) return std::nullopt;
  return c->as_string();
}

std::optional<std::string> JsonReader::get_enum(std::string_view key,
                                                const std::vector<std::string>& allowed) {
  auto c = child(key);
  if (!c) return std::nullopt;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + quote(a);
  if (!c->value().is_string()) {
    c->error("expected one of " + list + ", got " + describe(c->value()));
    return std::nullopt;
  }
  std::string s = c->value().get<std::string>();
  for (const auto& a : allowed)
    if (a == s) return s;
  std::string m = closest_match(s, allowed);
  c->error("expected one of " + list + ", got " + describe(c->value()), {},
           m.empty() ? "" : "did you mean " + quote(m) + "?");
  return std::nullopt;
}

std::optional<std::int64_t> JsonReader::as_int(std::int64_t lo, std::int64_t hi) {
  auto iv = integral_value(*value_);
  if (!iv || *iv < static_cast<long double>(lo) || *iv > static_cast<long double>(hi)) {
    error("expected " + range_text(lo, hi) + ", got " + describe(*value_));
    return std::nullopt;
  }
  return static_cast<std::int64_t>(*iv);
}

std::optional<std::uint64_t> JsonReader::as_uint(std::uint64_t lo, std::uint64_t hi) {
  auto iv = integral_value(*value_);
  if (!iv || *iv < static_cast<long double>(lo) || *iv > static_cast<long double>(hi)) {
    error("expected " + urange_text(lo, hi) + ", got " + describe(*value_));
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(*iv);
}

std::optional<double> JsonReader::as_number(double lo, double hi) {
  if (!value_->is_number() || !std::isfinite(value_->get<double>()) || value_->get<double>() < lo ||
      value_->get<double>() > hi) {
    std::string range = std::isinf(hi)
                            ? "a number >= " + number_text(lo)
                            : "a number in [" + number_text(lo) + ", " + number_text(hi) + "]";
    error("expected " + range + ", got " + describe(*value_));
    return std::nullopt;
  }
  return value_->get<double>();
}

std::optional<std::string> JsonReader::as_string() {
  if (!value_->is_string()) {
    error("expected a string, got " + describe(*value_));
    return std::nullopt;
  }
  return value_->get<std::string>();
}

std::vector<std::string> JsonReader::unused_keys() const {
  std::vector<std::string> out;
  if (!value_->is_object()) return out;
  for (auto it = value_->begin(); it != value_->end(); ++it)
    if (!used_.count(it.key())) out.push_back(it.key());
  return out;
}

void JsonReader::reject_unknown(const std::vector<std::string>& known, Severity severity) {
  for (const auto& k : unused_keys()) {
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string m = closest_match(k, known);
    Diagnostic d{severity, source_, child_pointer(k), "unknown key " + quote(k),
                 m.empty() ? "" : "did you mean " + quote(m) + "?"};
    diags_->add(std::move(d));
  }
}

}  // namespace zerosim::json
