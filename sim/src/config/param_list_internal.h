// Private pieces of the param-list loader (param_list_loader.cc): the version 2 module section
// and the modules inferred from parameter names (param_list_modules.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/json_reader.h"
#include "zerosim/model_desc.h"

namespace zerosim::param_list {

/// Why a parameter or module name (`what`) is refused, or "": at most 4096 bytes and 64
/// dot-separated levels, far above real models' (the module inference and parent lookup cost
/// length x depth).
std::string name_problem(const std::string& name, const char* what);

/// Reads the top-level "modules" (tree) and "forward" (calls) keys of `root` into m.modules and
/// m.module_calls (begin/end nesting inferred from the tree: a call ends when a call outside its
/// subtree begins). Errors, with their JSON pointers, for a duplicate module or call, a module
/// without a listed parent, an unknown module or parameter, an external param the module holds.
void read_module_section(json::JsonReader& root, ModelDesc& m,
                         const std::map<std::string, std::uint32_t>& ids);

/// Infers m.modules from the param names: `blocks.0.ln1.weight` belongs to module `blocks.0.ln1`
/// (its ancestors `blocks.0`, `blocks` and the root are created too), a name without a dot to the
/// root; every module is called once, depth-first in declaration order. Sets modules_inferred.
void infer_modules(ModelDesc& m);

}  // namespace zerosim::param_list
