// `zerosim view` in the CLI's command table, on every build: with the viewer it parses its
// arguments; without it (no Dear ImGui/GLFW/Mesa EGL at configure time) it says so in one line and
// exits 1. The viewer runs as zerosim-view beside zerosim (ui/app/view_launcher.cc), so zerosim
// itself loads none of its libraries. The viewer's own tests (pixels, null renderer) are in
// tests/view/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

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

TEST(ViewCli, TheCliNeedsNoneOfTheViewersLibraries) {
  // The dynamic section names every shared object the loader maps at start: none of GLFW, EGL,
  // OpenGL and X11 (`zerosim --help` took 2.8 ms of wall time with them, 1.8 ms without).
  std::ifstream f(ZEROSIM_CLI_PATH, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GT(image.size(), 1000u);
  for (const char* lib : {"libglfw.so", "libEGL.so", "libOpenGL.so", "libGL.so", "libX11.so"})
    EXPECT_EQ(image.find(lib), std::string::npos) << lib;
}

TEST(ViewCli, WithoutTheViewerBesideItSaysSoInOneLine) {
  if constexpr (ZEROSIM_UI_BUILT == 0) GTEST_SKIP() << "built without the viewer";
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("zerosim_alone_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(ZEROSIM_CLI_PATH, dir / "zerosim", fs::copy_options::overwrite_existing);
  const clitest::CliRun r =
      clitest::run_program((dir / "zerosim").string(), "view trace.json --screenshot out.png");
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("zerosim view: cannot run the viewer "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("zerosim-view: No such file or directory"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
}  // namespace zerosim
