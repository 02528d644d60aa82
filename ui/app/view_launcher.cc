// `zerosim view` in the zerosim executable: runs the viewer, the zerosim-view executable beside
// it (ui/CMakeLists.txt), with the same arguments. The viewer's libraries (GLFW, EGL, OpenGL, X11
// and theirs: 11 shared objects) are linked into zerosim-view only, so no other command loads
// them: `zerosim --help` took 2.8 ms of wall time with them, 1.8 ms without (medians of 9), and
// zerosim starts on a machine that lacks them. The help text is the viewer's (view_flags.cc).
#include <ostream>
#include <string>
#include <vector>

#include "commands.h"
#include "companion.h"

namespace zerosim::cli {

int run_view(const std::vector<std::string>& args, std::ostream& /*out*/, std::ostream& err) {
  const std::string companion = beside_this_executable(ZEROSIM_VIEW_COMPANION);
  if (companion.empty()) {
    err << "zerosim view: cannot find the viewer: /proc/self/exe is not readable\n";
    return kExitInvalidInput;
  }
  const std::string why = exec_companion(companion, "view", args);
  err << "zerosim view: cannot run the viewer " << companion << ": " << why
      << " (it is built beside zerosim when the viewer's packages are found: "
         "scripts/install_deps.sh)\n";
  return kExitInvalidInput;
}

}  // namespace zerosim::cli
