// Zoo file loading, exposed for tests: the same checks load_zoo_model applies to an embedded file
// (format/version/name fields, the hf_config import, built count == "parameters").
#pragma once

#include <string>

#include "zerosim/diagnostic.h"
#include "zerosim/model_desc.h"

namespace zerosim {

/// Loads a zoo file's text as if it were embedded as models/zoo/`file_name`.
Result<ModelDesc> load_zoo_file_text(const std::string& file_name, const std::string& text);

}  // namespace zerosim
