// `zerosim validate --recording DIR` (validate_recording.cc).
#pragma once

#include <ostream>

#include "args.h"

namespace zerosim::cli {

/// Builds the prediction from the recording's param list, ds_config and world size and compares
/// it with the recording. Exit 0 agree, 1 invalid input, 2 differ.
int run_validate_recording(const ParsedArgs& args, std::ostream& out, std::ostream& err);

}  // namespace zerosim::cli
