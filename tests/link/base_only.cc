// Links against zerosim_base alone, every object of it (WHOLE_ARCHIVE, tests/CMakeLists.txt), so a
// base source that calls into the trace format or the core fails the build with an undefined
// reference: the base layer sees the standard library and nlohmann/json only (sim/README.md). Run
// as ctest layering.base_links_alone: it also checks one name of the IR's enums.
#include <iostream>

#include "zerosim/ir_types.h"

int main() {
  if (zerosim::op_kind_name(zerosim::OpKind::Marker) != "marker") {
    std::cerr << "op_kind_name(Marker) is not \"marker\"\n";
    return 1;
  }
  std::cout << "base target links alone\n";
  return 0;
}
