// The flags of `zerosim view` (view_flags.cc): its own, then the planner's for what-if mode.
#pragma once

#include <vector>

#include "args.h"

namespace zerosim::cli {

const std::vector<FlagSpec>& view_flags();

}  // namespace zerosim::cli
