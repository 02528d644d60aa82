// Helpers for the viewer's render tests: traces made by the CLI from shipped scenarios,
// screenshots loaded back (Debian's libstb stb_image), and the geometry the viewer uses.
#pragma once

#include <stb_image.h>

#include <cstdint>
#include <string>
#include <vector>

#include "draw/palette.h"
#include "draw/viewer.h"
#include "unit/cli_testlib.h"

namespace zerosim::view::testing {

struct Png {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
  Rgb at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
    return (Rgb{rgb[i]} << 16) | (Rgb{rgb[i + 1]} << 8) | rgb[i + 2];
  }
  std::size_t count(Rgb c) const {
    std::size_t n = 0;
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) n += at(x, y) == c ? 1 : 0;
    }
    return n;
  }
};

inline Png load_png(const std::string& path) {
  Png p;
  int n = 0;
  unsigned char* data = stbi_load(path.c_str(), &p.width, &p.height, &n, 3);
  if (data == nullptr) return p;
  p.rgb.assign(data, data + static_cast<std::size_t>(p.width) * p.height * 3);
  stbi_image_free(data);
  return p;
}

inline std::string temp(const std::string& name) {
  return ::testing::TempDir() + "zerosim_view_" + std::to_string(getpid()) + "_" + name;
}

inline std::string scenario(const std::string& name) {
  return std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

/// Runs `zerosim simulate ARGS --trace OUT`; returns OUT ("" on failure). Exit 2 (infeasible:
/// out of memory) still writes the trace.
inline std::string simulate_trace(const std::string& args, const std::string& name) {
  const std::string out = temp(name + ".json");
  const clitest::CliRun r = clitest::run_cli("simulate " + args + " --trace " + out);
  return r.exit_code == 0 || r.exit_code == 2 ? out : "";
}

/// Where the viewer draws: the model, the rows and the time view for a WxH screenshot, exactly as
/// Viewer::reset_view and layout_rows place them.
struct Geometry {
  OpenedTrace opened;
  std::unique_ptr<Viewer> viewer;
  std::vector<Row> rows;
  explicit Geometry(const std::string& path, float width) : opened(open_trace(path)) {
    viewer = std::make_unique<Viewer>(opened, nullptr);
    viewer->reset_view(width);
    rows = layout_rows(*viewer->model(), {}, LayoutOptions{});
  }
  const TimelineModel& model() const { return *viewer->model(); }
  const TimeView& view() const { return viewer->view(); }
  int x_of(SimTime t) const { return static_cast<int>(kGutterPx + view().x_of(t)); }
  static int y(float row_y) { return static_cast<int>(kRowsTop + row_y); }
};

}  // namespace zerosim::view::testing
