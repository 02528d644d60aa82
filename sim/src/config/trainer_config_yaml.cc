// The trainer config's YAML reader (yaml-cpp, Debian's libyaml-cpp-dev): top-level entries of one
// mapping, each with its line and column. LLaMA-Factory and axolotl read their files with PyYAML's
// safe_load, so what it would refuse (python tags) is refused here too, with the position.
// GCC 12 reports -Wdangling-pointer inside yaml-cpp's node/impl.h for uses of a map iterator's
// key/value proxy within one expression (the proxy outlives them there). Only here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/trainer_config_internal.h"

namespace zerosim::trainercfg {

namespace {

std::string at(const std::string& path, const YAML::Mark& m) {
  if (m.is_null()) return path;
  return path + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// The core schema's tags as yaml-cpp resolves them ("!!str" -> "tag:yaml.org,2002:str"); "?" is
// an untagged plain scalar, "!" a quoted one.
bool supported_tag(const std::string& tag) {
  static const std::set<std::string> kTags = {"",
                                              "?",
                                              "!",
                                              "tag:yaml.org,2002:str",
                                              "tag:yaml.org,2002:int",
                                              "tag:yaml.org,2002:float",
                                              "tag:yaml.org,2002:bool",
                                              "tag:yaml.org,2002:null",
                                              "tag:yaml.org,2002:seq",
                                              "tag:yaml.org,2002:map"};
  return kTags.count(tag) > 0;
}

bool check_tags(const YAML::Node& n, const std::string& path, Diagnostics& d) {
  if (!supported_tag(n.Tag())) {
    d.error(at(path, n.Mark()), "",
            "unsupported YAML construct: tag " + n.Tag() +
                " (PyYAML's safe_load, which LLaMA-Factory and axolotl use, refuses it)");
    return false;
  }
  if (n.IsSequence() || n.IsMap())
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (n.IsSequence()) {
        if (!check_tags(*it, path, d)) return false;
      } else if (!check_tags(it->first, path, d) || !check_tags(it->second, path, d)) {
        return false;
      }
    }
  return true;
}

// Records where each document starts, and where the first alias is; the nodes themselves come
// from YAML::Load.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  std::optional<YAML::Mark> alias;
  void OnDocumentStart(const YAML::Mark& m) override { starts.push_back(m); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    if (!alias) alias = m;
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Finds a second document, or the place where yaml-cpp's parser stops making progress. yaml-cpp
// 0.7 (Debian 12) loops for ever in YAML::LoadAll, adding a null document each turn, when a
// document starts with a token the parser cannot place (a ',' outside a flow list: jbeder/yaml-cpp
// #1040, fixed upstream by PR #1319 in 0.8.1): each turn starts at the same position. At most three
// documents are parsed here, so this always returns. Throws what the parser throws.
bool check_documents(const std::string& text, const std::string& path, Diagnostics& d) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts h;
  while (h.starts.size() < 3 && parser.HandleNextDocument(h)) {
    const std::size_t n = h.starts.size();
    if (n >= 2 && h.starts[n - 1].pos == h.starts[n - 2].pos) {
      const YAML::Mark& m = h.starts[n - 1];
      const std::size_t pos = static_cast<std::size_t>(m.pos);
      const std::string found = pos < text.size() ? std::string(1, text[pos]) : "end of file";
      d.error(at(path, m), "",
              "invalid YAML: unexpected '" + found + "' (outside a flow list or mapping)");
      return false;
    }
  }
  // An alias makes the loaded nodes a graph: one that names itself (`a: &a [*a]`) sent the walks
  // below round for ever (a stack overflow), and ten aliases of ten aliases of ... are 10^n nodes
  // to walk from a few hundred bytes. Trainer configs write their values out; PyYAML would expand
  // the alias, zerosim refuses it before loading.
  if (h.alias) {
    d.error(at(path, *h.alias), "",
            "unsupported YAML construct: an alias (*name); expected each value written out");
    return false;
  }
  if (h.starts.size() > 1) {
    d.error(at(path, h.starts[1]), "",
            "unsupported YAML construct: a second document; expected one mapping of trainer "
            "arguments");
    return false;
  }
  return true;
}

}  // namespace

bool read_yaml_entries(const std::string& text, const std::string& path, std::vector<Entry>& out,
                       Diagnostics& d) {
  // A NUL byte: yaml-cpp reported "unknown escape character: \n" a line later; JSON inputs name
  // the byte where it is (found by a hostile-input pass).
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    const std::size_t line_start = text.rfind('\n', nul);
    const auto line = static_cast<int>(std::count(text.begin(), text.begin() + nul, '\n'));
    const std::size_t col = line_start == std::string::npos ? nul : nul - line_start - 1;
    d.error(path + ":" + std::to_string(line + 1) + ":" + std::to_string(col + 1), "",
            "invalid YAML: a NUL byte (YAML text cannot contain one)");
    return false;
  }
  YAML::Node root;
  try {
    if (!check_documents(text, path, d)) return false;
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's parser guards its own recursion (depthguard.h); its message is "bad file".
    d.error(at(path, e.mark), "",
            "unsupported YAML construct: lists or mappings nested deeper than the YAML parser's "
            "recursion limit");
    return false;
  } catch (const YAML::Exception& e) {
    d.error(at(path, e.mark), "", "invalid YAML: " + e.msg);
    return false;
  }
  if (!root.IsDefined() || root.IsNull()) {
    d.error(path, "", "expected a mapping of trainer arguments, got an empty document");
    return false;
  }
  if (!root.IsMap()) {
    d.error(at(path, root.Mark()), "",
            std::string("expected a mapping of trainer arguments, got ") +
                (root.IsSequence() ? "a list" : "a scalar"));
    return false;
  }
  if (!check_tags(root, path, d)) return false;
  std::set<std::string> seen;
  for (auto it = root.begin(); it != root.end(); ++it) {
    // Copies, not references: `it->first` is a member of a proxy that dies with the statement
    // (AddressSanitizer: stack-use-after-scope). A Node is a handle, cheap to copy.
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    if (!k.IsScalar()) {
      d.error(at(path, k.Mark()), "",
              "unsupported YAML construct: a key that is not a plain name (a list or mapping)");
      return false;
    }
    Entry e;
    e.key = k.Scalar();
    e.pointer = e.key;
    e.where = at(path, v.IsNull() ? k.Mark() : v.Mark());
    if (!seen.insert(e.key).second) {
      d.error(at(path, k.Mark()), e.key, "key written twice; expected each key once");
      return false;
    }
    if (v.IsNull()) {
      e.kind = Entry::Kind::Null;
    } else if (v.IsScalar()) {
      e.kind = v.Tag() == "!" || v.Tag() == "tag:yaml.org,2002:str" ? Entry::Kind::Quoted
                                                                    : Entry::Kind::Plain;
      e.text = v.Scalar();
    } else if (v.IsSequence()) {
      e.kind = Entry::Kind::Sequence;
      for (const auto& item : v) {
        if (item.IsScalar())
          e.items.push_back(item.Scalar());
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

}  // namespace zerosim::trainercfg
