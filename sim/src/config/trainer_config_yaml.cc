// The trainer config's YAML reader (yaml-cpp, Debian's libyaml-cpp-dev): top-level entries of one
// mapping, each with its line and column. LLaMA-Factory and axolotl read their files with PyYAML's
// safe_load, so what it would refuse (python tags) is refused here too, with the position.
// GCC 12 reports -Wdangling-pointer inside yaml-cpp's node/impl.h for uses of a map iterator's
// key/value proxy within one expression (the proxy outlives them there). Only here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <set>
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

}  // namespace

bool read_yaml_entries(const std::string& text, const std::string& path, std::vector<Entry>& out,
                       Diagnostics& d) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
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
  if (docs.size() > 1) {
    d.error(at(path, docs[1].Mark()), "",
            "unsupported YAML construct: a second document; expected one mapping of trainer "
            "arguments");
    return false;
  }
  if (docs.empty() || docs[0].IsNull()) {
    d.error(path, "", "expected a mapping of trainer arguments, got an empty document");
    return false;
  }
  const YAML::Node& root = docs[0];
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
