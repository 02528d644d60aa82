// JsonReader implementation. nlohmann/json is parsed with exceptions caught in exactly one place
// (parse), and every later access checks the type first, so no json exception escapes.
#include "base/json_reader.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "zerosim/input_file.h"

namespace zerosim::json {

namespace {
// ">= lo" when the bound is the type's; the whole range when the value is above it (1e30 is
// >= 0: "expected an integer >= 0, got 1e+30" would state a range the value satisfies).
std::string range_text(std::int64_t lo, std::int64_t hi, bool above) {
  if (hi == INT64_MAX && !above) return "an integer >= " + std::to_string(lo);
  return "an integer " + std::to_string(lo) + ".." + std::to_string(hi);
}
std::string urange_text(std::uint64_t lo, std::uint64_t hi, bool above) {
  if (hi == UINT64_MAX && !above) return "an integer >= " + std::to_string(lo);
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

// Builds the DOM from nlohmann's SAX events in one linear pass, and records keys that repeat inside
// one object: nlohmann keeps the last value silently, DeepSpeed refuses duplicate keys
// (dict_raise_error_on_duplicate_keys), and a silently dropped value is the worst kind of default.
// Each object checks a new key against its own keys (a map lookup), so the cost is linear in the
// text. (nlohmann's callback parser, used before, is quadratic: json_sax_dom_callback_parser::
// end_object scans every element of the enclosing array for a discarded value after each object,
// nlohmann 3.11.2 json_sax.hpp:470, so an array of n objects costs O(n^2).)
// Arrays that `stream` selects (by pointer) keep no elements: each complete element goes to
// `on_element` and is dropped, so a large machine-written file never exists as one DOM.
class DomBuilder {
 public:
  using json = nlohmann::json;
  DomBuilder(const StreamFilter* stream, const ElementSink* on_element)
      : stream_(stream), on_element_(on_element) {}

  bool null() { return leaf(json(nullptr)); }
  bool boolean(bool v) { return leaf(json(v)); }
  bool number_integer(json::number_integer_t v) { return leaf(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return leaf(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return leaf(json(v)); }
  bool string(json::string_t& v) { return leaf(json(std::move(v))); }
  bool binary(json::binary_t& v) { return leaf(json(json::binary_t(std::move(v)))); }
  bool start_object(std::size_t) { return open(json::object(), false); }
  bool start_array(std::size_t) { return open(json::array(), true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    Level& top = stack_.back();
    if (top.value->contains(k) && first_.empty()) {
      top.key = k;
      first_ = pointer(stack_.size());
    }
    top.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t byte, const std::string& token,
                   const nlohmann::detail::exception& e) {
    error_byte_ = byte;
    error_ = e.what();
    if (e.id == kNumberOverflow) {  // 1e309: out_of_range.406, "number overflow parsing '1e309'"
      std::string shown = token.size() > 40 ? token.substr(0, 40) + "\u2026(" +
                                                  std::to_string(token.size()) + " bytes)"
                                            : token;
      error_ = "expected a number within the range of a double (|x| < 1.8e308), got " + shown;
    }
    return false;
  }

  json& root() { return root_; }
  const std::string& first_duplicate() const { return first_; }
  const std::string& error() const { return error_; }
  std::size_t error_byte() const { return error_byte_; }

 private:
  static constexpr int kNumberOverflow = 406;

  struct Level {
    json* value;
    bool is_array;
    bool streamed = false;  // elements go to on_element_
    std::size_t count = 0;  // elements so far (arrays)
    std::string key;        // the current key (objects)
    std::string pointer;    // streamed arrays: their pointer
  };

  // Where the next value goes: the root, an array's end, an object's current key, or the element
  // being streamed (element_depth_ marks where that element began).
  json* place(json&& v) {
    if (stack_.empty()) return &(root_ = std::move(v));
    Level& top = stack_.back();
    if (!top.is_array) return &((*top.value)[top.key] = std::move(v));
    ++top.count;
    if (!top.streamed) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    element_ = std::move(v);
    return &element_;
  }
  bool leaf(json&& v) {
    place(std::move(v));
    if (!stack_.empty() && stack_.back().streamed) emit(stack_.back());
    return true;
  }
  bool open(json&& v, bool is_array) {
    const bool element = !stack_.empty() && stack_.back().streamed;
    json* at = place(std::move(v));
    if (element) element_depth_ = stack_.size();
    stack_.push_back({at, is_array, false, 0, {}, {}});
    // Only arrays outside a streamed element, near the root, are offered for streaming.
    if (is_array && stream_ && element_depth_ == 0 && stack_.size() <= 5) {
      std::string p = pointer(stack_.size() - 1);
      if ((*stream_)(p)) {
        stack_.back().streamed = true;
        stack_.back().pointer = std::move(p);
      }
    }
    return true;
  }
  bool close() {
    stack_.pop_back();
    if (element_depth_ != 0 && stack_.size() == element_depth_) {
      element_depth_ = 0;
      emit(stack_.back());
    }
    return true;
  }
  void emit(Level& array) {
    if (on_element_) (*on_element_)(array.pointer, array.count - 1, element_);
    element_ = json();
  }
  // The pointer of the value at depth `depth` (the child of stack_[depth - 1]).
  std::string pointer(std::size_t depth) const {
    std::string p;
    for (std::size_t i = 0; i < depth; ++i) {
      const Level& l = stack_[i];
      p += "/" + (l.is_array ? std::to_string(l.count - 1) : pointer_token(l.key));
    }
    return p;
  }

  const StreamFilter* stream_;
  const ElementSink* on_element_;
  json root_;
  json element_;
  std::size_t element_depth_ = 0;
  std::vector<Level> stack_;
  std::string first_;
  std::string error_;
  std::size_t error_byte_ = 0;
};

// What nlohmann would accept but zerosim refuses, found in one pass before parsing: a NUL byte
// (nlohmann's lexer takes it for the end of the input, so "{} NUL garbage" would parse) and nesting
// deeper than kMaxDepth (so nothing recursive, dump() included, ever sees deeper input). Brackets
// inside strings do not count. Adds "invalid JSON at line L, column C: ..." and returns false.
bool prescan(const std::string& text, const std::string& source, Diagnostics& diags) {
  std::size_t line = 1, col = 1, depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    std::string problem;
    if (c == '\0') {
      problem = "a NUL byte (JSON text cannot contain one)";
    } else if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        problem = "expected at most " + std::to_string(kMaxDepth) +
                  " levels of nested arrays and objects, got more";
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    if (!problem.empty()) {
      diags.error(source, "",
                  "invalid JSON at line " + std::to_string(line) + ", column " +
                      std::to_string(col) + ": " + problem);
      return false;
    }
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return true;
}

std::optional<nlohmann::json> parse_impl(const std::string& text, const std::string& source,
                                         Diagnostics& diags, const StreamFilter* stream,
                                         const ElementSink* on_element) {
  if (!prescan(text, source, diags)) return std::nullopt;
  DomBuilder dom(stream, on_element);
  if (!nlohmann::json::sax_parse(text, &dom)) {
    // The byte is 1-based; turn it into line and column.
    const std::size_t byte = dom.error_byte() == 0 ? 0 : dom.error_byte() - 1;
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 5: syntax
    // error ..."; the "[json.exception...]" id and nlohmann's position are dropped.
    const std::string& what = dom.error();
    auto pos = what.find(": ", what.find("parse error"));
    if (pos == std::string::npos && what.rfind("[json.exception.", 0) == 0) {
      pos = what.find("] ");
      if (pos != std::string::npos) ++pos;
    }
    const std::string detail = pos == std::string::npos ? what : what.substr(pos + 2);
    diags.error(source, "",
                "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) +
                    ": " + detail);
    return std::nullopt;
  }
  if (!dom.first_duplicate().empty()) {
    diags.error(source, dom.first_duplicate(), "duplicate key: a JSON object names it twice",
                "keep one; DeepSpeed refuses duplicate keys too");
    return std::nullopt;
  }
  return std::move(dom.root());
}

}  // namespace

std::optional<nlohmann::json> parse(const std::string& text, const std::string& source,
                                    Diagnostics& diags) {
  return parse_impl(text, source, diags, nullptr, nullptr);
}

std::optional<nlohmann::json> parse_streaming(const std::string& text, const std::string& source,
                                              Diagnostics& diags, const StreamFilter& stream,
                                              const ElementSink& on_element) {
  return parse_impl(text, source, diags, &stream, &on_element);
}

bool read_file(const std::string& path, std::string& out, Diagnostics& diags) {
  return read_input_file(path, out, diags);
}

std::string describe(const nlohmann::json& v) {
  if (v.is_string()) return quote(v.get<std::string>());
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

std::optional<std::string> JsonReader::get_name(std::string_view key) {
  auto v = get_string(key);
  if (!v) return v;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto c = static_cast<unsigned char>((*v)[i]);
    const bool c1 = c == 0xC2 && i + 1 < v->size() &&
                    static_cast<unsigned char>((*v)[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>((*v)[i + 1]) <= 0x9F;
    if (c < 0x20 || c == 0x7F || c1) {
      error("expected a name without control characters, got " + quote(*v), key);
      return std::nullopt;
    }
  }
  return v;
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
    error("expected " + range_text(lo, hi, iv && *iv > static_cast<long double>(hi)) + ", got " +
          describe(*value_));
    return std::nullopt;
  }
  return static_cast<std::int64_t>(*iv);
}

std::optional<std::uint64_t> JsonReader::as_uint(std::uint64_t lo, std::uint64_t hi) {
  auto iv = integral_value(*value_);
  if (!iv || *iv < static_cast<long double>(lo) || *iv > static_cast<long double>(hi)) {
    error("expected " + urange_text(lo, hi, iv && *iv > static_cast<long double>(hi)) + ", got " +
          describe(*value_));
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
