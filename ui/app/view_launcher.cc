// `zerosim view` in the zerosim executable: runs the viewer, the zerosim-view executable beside
// it (ui/CMakeLists.txt), with the same arguments. The viewer's libraries (GLFW, EGL, OpenGL, X11
// and theirs: 11 shared objects) are linked into zerosim-view only, so no other command loads
// them: `zerosim --help` took 2.8 ms of wall time with them, 1.8 ms without (medians of 9), and
// zerosim starts on a machine that lacks them. The help text is the viewer's (view_flags.cc).
#include <unistd.h>

#include <climits>
#include <ostream>
#include <string>
#include <vector>

#include "commands.h"
#include "companion.h"

namespace zerosim::cli {
namespace {

// zerosim-view in the directory of the running executable; empty when that cannot be read.
std::string companion_path() {
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  const std::string path(self, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + ZEROSIM_VIEW_COMPANION;
}

}  // namespace

int run_view(const std::vector<std::string>& args, std::ostream& /*out*/, std::ostream& err) {
  const std::string companion = companion_path();
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
