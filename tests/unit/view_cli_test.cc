// `zerosim view` in the CLI's command table, on every build: with the viewer it parses its
// arguments; without it (no Dear ImGui/GLFW/Mesa EGL at configure time) it says so in one line and
// exits 1. The viewer's own tests (pixels, null renderer) are in tests/view/.
#include <gtest/gtest.h>

#include "cli_testlib.h"

namespace zerosim {
namespace {

TEST(ViewCli, IsACommandThatFailsInOneLineWithoutATrace) {
  const clitest::CliRun help = clitest::run_cli("--help");
  EXPECT_NE(help.out.find("  view "), std::string::npos) << help.out;
  if constexpr (ZEROSIM_UI_BUILT != 0) {
    clitest::expect_one_line_error("view", "expected TRACE [TRACE2]");
  } else {
    clitest::expect_one_line_error("view trace.json --screenshot out.png",
                                   "zerosim view: the viewer is not built");
  }
}

}  // namespace
}  // namespace zerosim
