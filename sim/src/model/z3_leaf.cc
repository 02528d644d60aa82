// set_z3_leaf_modules (model_loader.h): DeepSpeed's leaf-module marking by class name
// (deepspeed/utils/z3_leaf_module.py _do_set_z3_leaf_modules: a module matches when its class
// __name__ or its fully qualified name equals the given string; none found raises ValueError).
#include <set>
#include <string>
#include <vector>

#include "zerosim/model_loader.h"

namespace zerosim {

Diagnostics set_z3_leaf_modules(ModelDesc& model, const std::string& classes,
                                const std::string& flag) {
  Diagnostics d;
  std::vector<std::string> wanted;
  if (classes != "none") {
    std::size_t from = 0;
    while (true) {
      const auto comma = classes.find(',', from);
      std::string item = classes.substr(from, comma == std::string::npos ? comma : comma - from);
      if (const auto dot = item.rfind('.'); dot != std::string::npos) item = item.substr(dot + 1);
      if (item.empty()) {
        d.error(flag, "",
                "expected a comma-separated list of module class names (or none), got " +
                    quote(classes));
        return d;
      }
      wanted.push_back(item);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
  }
  std::set<std::string> types;
  for (const auto& node : model.modules) types.insert(node.type);
  for (const auto& w : wanted)
    if (!types.count(w)) {
      const std::vector<std::string> all(types.begin(), types.end());
      const std::string near = closest_match(w, all);
      d.error(flag, "",
              "no module of class " + quote(w) + " in " +
                  (model.modules.empty() ? "a model without a module tree" : model.name),
              near.empty() ? "" : "did you mean " + quote(near) + "?");
    }
  if (d.has_errors()) return d;
  for (auto& node : model.modules) {
    node.z3_leaf = false;
    for (const auto& w : wanted)
      if (node.type == w) node.z3_leaf = true;
  }
  return d;
}

}  // namespace zerosim
