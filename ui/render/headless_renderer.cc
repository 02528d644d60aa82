// EGL surfaceless rendering: see headless_renderer.h.
#include "render/headless_renderer.h"

#include "draw/palette.h"

#define EGL_EGLEXT_PROTOTYPES
#define GL_GLEXT_PROTOTYPES
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/gl.h>
#include <GL/glext.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <chrono>
#include <cstring>

namespace zerosim::view {

struct HeadlessRenderer::State {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
  GLuint fbo = 0;
  GLuint color = 0;
  ImGuiContext* imgui = nullptr;
  bool backend = false;
};

std::unique_ptr<HeadlessRenderer> HeadlessRenderer::create(int width, int height,
                                                           std::string& error) {
  std::unique_ptr<HeadlessRenderer> r(new HeadlessRenderer());
  r->state_ = std::make_unique<State>();
  r->width_ = width;
  r->height_ = height;
  State& s = *r->state_;
  auto get_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (get_display == nullptr) {
    error = "EGL has no eglGetPlatformDisplayEXT (install Mesa's libegl-mesa0)";
    return nullptr;
  }
  s.display = get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
  EGLint major = 0, minor = 0;
  if (s.display == EGL_NO_DISPLAY || eglInitialize(s.display, &major, &minor) != EGL_TRUE) {
    error = "cannot open Mesa's surfaceless EGL display (install libegl-mesa0, libgl1-mesa-dri)";
    return nullptr;
  }
  if (eglBindAPI(EGL_OPENGL_API) != EGL_TRUE) {
    error = "EGL cannot bind the OpenGL API";
    return nullptr;
  }
  // EGL_SURFACE_TYPE defaults to EGL_WINDOW_BIT, which a surfaceless display never offers.
  const EGLint config_attrs[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE,
                                 EGL_OPENGL_BIT, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint n = 0;
  if (eglChooseConfig(s.display, config_attrs, &config, 1, &n) != EGL_TRUE || n < 1) {
    error = "EGL offers no OpenGL configuration";
    return nullptr;
  }
  const EGLint context_attrs[] = {EGL_CONTEXT_MAJOR_VERSION,
                                  3,
                                  EGL_CONTEXT_MINOR_VERSION,
                                  3,
                                  EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                  EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
                                  EGL_NONE};
  s.context = eglCreateContext(s.display, config, EGL_NO_CONTEXT, context_attrs);
  if (s.context == EGL_NO_CONTEXT ||
      eglMakeCurrent(s.display, EGL_NO_SURFACE, EGL_NO_SURFACE, s.context) != EGL_TRUE) {
    error = "cannot create an OpenGL 3.3 core context on the surfaceless EGL display";
    return nullptr;
  }
  glGenFramebuffers(1, &s.fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, s.fbo);
  glGenRenderbuffers(1, &s.color);
  glBindRenderbuffer(GL_RENDERBUFFER, s.color);
  glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, s.color);
  if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
    error =
        "cannot create a " + std::to_string(width) + "x" + std::to_string(height) + " framebuffer";
    return nullptr;
  }
  IMGUI_CHECKVERSION();
  s.imgui = ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini: nothing on disk may change the next picture
  io.LogFilename = nullptr;
  io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
  io.DeltaTime = 1.0f / 60.0f;
  ImGui::StyleColorsDark();
  if (!ImGui_ImplOpenGL3_Init("#version 330 core")) {
    error = "Dear ImGui's OpenGL3 backend failed to initialise";
    return nullptr;
  }
  s.backend = true;
  return r;
}

HeadlessRenderer::~HeadlessRenderer() {
  if (!state_) return;
  State& s = *state_;
  if (s.backend) ImGui_ImplOpenGL3_Shutdown();
  if (s.imgui != nullptr) ImGui::DestroyContext(s.imgui);
  if (s.context != EGL_NO_CONTEXT) {
    if (s.fbo != 0) glDeleteFramebuffers(1, &s.fbo);
    if (s.color != 0) glDeleteRenderbuffers(1, &s.color);
    eglMakeCurrent(s.display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(s.display, s.context);
  }
  if (s.display != EGL_NO_DISPLAY) eglTerminate(s.display);
}

void HeadlessRenderer::draw_frames(const std::function<void()>& draw, int frames,
                                   double& frame_ms) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int f = 0; f < frames; ++f) {
    ImGui_ImplOpenGL3_NewFrame();
    ImGui::NewFrame();
    draw();
    ImGui::Render();
    glBindFramebuffer(GL_FRAMEBUFFER, state_->fbo);
    glViewport(0, 0, width_, height_);
    glClearColor(channel(kBackdropColor, 16), channel(kBackdropColor, 8),
                 channel(kBackdropColor, 0), 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    glFinish();
  }
  const auto t1 = std::chrono::steady_clock::now();
  frame_ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / std::max(frames, 1);
}

Image HeadlessRenderer::render(const std::function<void()>& draw, int frames, double& frame_ms) {
  draw_frames(draw, frames, frame_ms);
  std::vector<std::uint8_t> rgba(static_cast<std::size_t>(width_) * height_ * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  Image img;
  img.width = width_;
  img.height = height_;
  img.rgb.resize(static_cast<std::size_t>(width_) * height_ * 3);
  for (int y = 0; y < height_; ++y) {  // GL's origin is bottom-left: flip, drop alpha
    const std::uint8_t* src = rgba.data() + static_cast<std::size_t>(height_ - 1 - y) * width_ * 4;
    std::uint8_t* dst = img.rgb.data() + static_cast<std::size_t>(y) * width_ * 3;
    for (std::size_t x = 0; x < static_cast<std::size_t>(width_); ++x) {
      std::memcpy(dst + 3 * x, src + 4 * x, 3);
    }
  }
  return img;
}

bool encode_png(const Image& image, std::string& png, std::string& error) {
  png.clear();
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                               static_cast<std::size_t>(size));
  };
  if (stbi_write_png_to_func(append, &png, image.width, image.height, 3, image.rgb.data(),
                             image.width * 3) == 0) {
    error = "cannot encode the PNG image";
    return false;
  }
  return true;
}

}  // namespace zerosim::view
