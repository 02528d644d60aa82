// Rendering ImGui frames without any display: an EGL context on Mesa's surfaceless platform
// (EGL_MESA_platform_surfaceless, llvmpipe; no X server, no GLFW), an RGBA8 framebuffer object,
// Dear ImGui's OpenGL3 backend, glReadPixels (ecosystem.md §1.5). The same inputs give the same
// pixels on every run, so screenshots are deterministic. PNG writing uses Debian's libstb
// (stb_image_write, compiled in libstb; no stb code in this tree).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace zerosim::view {

/// An RGB image, rows top to bottom.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  ///< width × height × 3
};

class HeadlessRenderer {
 public:
  /// Creates the EGL context, the framebuffer and an ImGui context with the OpenGL3 backend.
  /// On failure returns nullptr and sets `error` (one line).
  static std::unique_ptr<HeadlessRenderer> create(int width, int height, std::string& error);
  ~HeadlessRenderer();
  HeadlessRenderer(const HeadlessRenderer&) = delete;
  HeadlessRenderer& operator=(const HeadlessRenderer&) = delete;

  /// Runs `frames` ImGui frames (each calls `draw` between NewFrame and Render; later frames let
  /// auto-sized windows settle) and reads the last one back. `frame_ms` receives the mean wall
  /// time per frame (ImGui + GL + glFinish), in ms.
  Image render(const std::function<void()>& draw, int frames, double& frame_ms);
  /// The frames of render() without the read-back (bench/view_frame_bench times them).
  void draw_frames(const std::function<void()>& draw, int frames, double& frame_ms);

 private:
  HeadlessRenderer() = default;
  struct State;
  std::unique_ptr<State> state_;
  int width_ = 0;
  int height_ = 0;
};

/// `image` as the bytes of a PNG file; false (and `error`: one line) when it cannot be encoded.
/// The caller writes them (cli/output_file.h write_file: atomic, every write checked).
bool encode_png(const Image& image, std::string& png, std::string& error);

}  // namespace zerosim::view
