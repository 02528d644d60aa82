// Hugging Face config.json -> TransformerSpec -> ModelDesc. Private to the loaders: the zoo loader
// reads its embedded "hf_config" objects through the same path as `--hf-config` files.
#pragma once

#include <optional>
#include <string>

#include "base/json_reader.h"
#include "model/transformer_spec.h"
#include "zerosim/diagnostic.h"
#include "zerosim/model_desc.h"

namespace zerosim {

/// Reads the config object at `r` (model_type, sizes, bias/tie/norm flags; unknown keys are
/// ignored, as transformers ignores them). Missing or ill-typed fields become diagnostics at their
/// JSON pointers; nullopt when any error was added. Defaults are transformers' own config-class
/// defaults for the optional flags (models/README.md lists them).
std::optional<TransformerSpec> read_hf_config(json::JsonReader& r);

/// read_hf_config + build_transformer. The model is named after `_name_or_path` when the config
/// carries one, else `fallback_name`.
Result<ModelDesc> model_from_hf_config(json::JsonReader& r, const std::string& fallback_name);

}  // namespace zerosim
