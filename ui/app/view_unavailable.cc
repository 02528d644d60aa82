// `zerosim view` on a build without the viewer (ui/CMakeLists.txt found no Dear ImGui, GLFW or
// Mesa EGL): one line naming what is missing and exit 1, so scripts can tell.
#include <ostream>
#include <string>
#include <vector>

#include "commands.h"

namespace zerosim::cli {

std::string view_help() {
  return "usage: zerosim view TRACE [TRACE2] [--screenshot out.png --width W --height H ...]\n\n"
         "This zerosim was built without the viewer: install libimgui-dev, libglfw3-dev,\n"
         "libstb-dev and Mesa EGL (scripts/install_deps.sh), then reconfigure.\n";
}

int run_view(const std::vector<std::string>& /*args*/, std::ostream& /*out*/, std::ostream& err) {
  err << "zerosim view: the viewer is not built (needs libimgui-dev, libglfw3-dev, libstb-dev and "
         "Mesa EGL: run scripts/install_deps.sh and reconfigure)\n";
  return kExitInvalidInput;
}

}  // namespace zerosim::cli
