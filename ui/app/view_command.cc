// `zerosim view`: opens one or two traces in the viewer. With --screenshot it renders without any
// display (EGL surfaceless) and writes a PNG; otherwise it opens a GLFW window (needs a display;
// Xvfb is fine). A trace that cannot be read shows an error panel; the screenshot command then
// writes the panel and exits 1 with the reason in one line.
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "draw/viewer.h"
#include "render/headless_renderer.h"

namespace zerosim::cli {
namespace {

const std::vector<FlagSpec>& view_flags() {
  static const std::vector<FlagSpec> kFlags = {
      {"--screenshot", "FILE", "render without a display (EGL surfaceless) and write a PNG"},
      {"--width", "W", "image/window width in pixels, 400..8192; default 1600"},
      {"--height", "H", "image/window height in pixels, 200..8192; default 900"},
      {"--at-time", "T", "centre the view on time T (ns from the trace's start)"},
      {"--zoom", "Z", "zoom factor over the whole run, 1..1e9; default 1 (everything)"},
      {"--rank", "R", "show only the lane group of traced rank R"},
      {"--frames", "N",
       "frames to render, 1..1000; screenshot: the last is saved (default 3); window: closes after "
       "N"},
  };
  return kFlags;
}

struct ViewOptions {
  std::vector<std::string> traces;
  std::optional<std::string> screenshot;
  int width = 1600, height = 900, frames = 3;
  bool frames_given = false;
  std::optional<SimTime> at_time;
  double zoom = 1;
  std::optional<std::uint32_t> rank;
  bool help = false;
};

// Positional arguments (the traces) are split off first: parse_args takes flags only.
Result<ViewOptions> parse_view_args(const std::vector<std::string>& args) {
  std::vector<std::string> flags;
  ViewOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) == 0) {
      flags.push_back(a);
      const bool takes_value = a.find('=') == std::string::npos && a != "--help";
      if (takes_value && i + 1 < args.size()) flags.push_back(args[++i]);
    } else {
      o.traces.push_back(a);
    }
  }
  Result<ParsedArgs> parsed = parse_args(flags, view_flags(), "view");
  if (!parsed) return parsed.diagnostics();
  const ParsedArgs& p = parsed.value();
  o.help = p.help;
  if (o.help) return o;
  Diagnostics d;
  if (o.traces.empty() || o.traces.size() > 2) {
    d.error("zerosim view", "",
            "expected TRACE [TRACE2], got " + std::to_string(o.traces.size()) + " file names");
  }
  o.screenshot = p.get("--screenshot");
  auto uint_flag = [&](const char* flag, std::uint64_t lo, std::uint64_t hi, auto& out) {
    if (auto v = p.get(flag)) {
      Result<std::uint64_t> r = parse_uint(flag, *v, lo, hi);
      if (r) {
        out = static_cast<std::remove_reference_t<decltype(out)>>(r.value());
      } else {
        d.append(r.diagnostics());
      }
    }
  };
  uint_flag("--width", 400, 8192, o.width);
  uint_flag("--height", 200, 8192, o.height);
  uint_flag("--frames", 1, 1000, o.frames);
  o.frames_given = p.has("--frames");
  if (auto v = p.get("--at-time")) {
    Result<std::uint64_t> r = parse_uint("--at-time", *v, 0, std::uint64_t{1} << 62);
    if (r) {
      o.at_time = static_cast<SimTime>(r.value());
    } else {
      d.append(r.diagnostics());
    }
  }
  if (auto v = p.get("--rank")) {
    Result<std::uint64_t> r = parse_uint("--rank", *v, 0, 0xFFFFFFFEu);
    if (r) {
      o.rank = static_cast<std::uint32_t>(r.value());
    } else {
      d.append(r.diagnostics());
    }
  }
  if (auto v = p.get("--zoom")) {
    Result<double> r = parse_number("--zoom", *v, 1, 1e9);
    if (r) {
      o.zoom = r.value();
    } else {
      d.append(r.diagnostics());
    }
  }
  if (d.has_errors()) return d;
  return o;
}

// Applies --rank, --zoom and --at-time; false (and one error line) when --rank is not traced.
bool apply_view_options(view::Viewer& viewer, const ViewOptions& o, std::ostream& err) {
  if (viewer.failed()) return true;
  if (o.rank && !viewer.show_only_rank(*o.rank)) {
    std::string traced;
    for (const TraceRank& r : viewer.model()->trace().ranks) {
      if (!traced.empty()) traced += ", ";
      traced += std::to_string(r.rank);
      if (traced.size() > 60) {
        traced += ", ...";
        break;
      }
    }
    err << "zerosim view: --rank: expected a traced rank of " << o.traces[0] << " (" << traced
        << "), got " << *o.rank << "\n";
    return false;
  }
  return true;
}

void place_view(view::Viewer& viewer, const ViewOptions& o, float width) {
  if (viewer.failed()) return;
  viewer.reset_view(width);
  view::TimeView& v = viewer.view();
  const view::TimelineModel& m = *viewer.model();
  if (o.zoom != 1) v.zoom_at(v.width_px() / 2, o.zoom);
  if (o.at_time) v.center_on(m.begin_ns() + *o.at_time);
}

int screenshot(view::Viewer& viewer, const ViewOptions& o, std::ostream& out, std::ostream& err) {
  std::string error;
  auto renderer = view::HeadlessRenderer::create(o.width, o.height, error);
  if (!renderer) {
    err << "zerosim view: --screenshot: " << error << "\n";
    return kExitInvalidInput;
  }
  double frame_ms = 0;
  place_view(viewer, o, static_cast<float>(o.width));
  const view::Image img = renderer->render([&] { viewer.frame(false); }, o.frames, frame_ms);
  if (!view::write_png(*o.screenshot, img, error)) {
    err << "zerosim view: --screenshot: " << error << "\n";
    return kExitInvalidInput;
  }
  if (viewer.failed()) {
    err << "zerosim view: " << viewer.errors().front() << "\n";
    return kExitInvalidInput;
  }
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.2f", frame_ms);
  out << "wrote " << *o.screenshot << " (" << o.width << "x" << o.height << ", " << o.frames
      << " frames, " << ms << " ms per frame)\n";
  return kExitOk;
}

int window(view::Viewer& viewer, const ViewOptions& o, std::ostream& out, std::ostream& err) {
  if (glfwInit() != GLFW_TRUE) {
    err << "zerosim view: cannot open a window (no display: set DISPLAY, run under xvfb-run, or "
           "use --screenshot)\n";
    return kExitInvalidInput;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* w = glfwCreateWindow(o.width, o.height, "zerosim view", nullptr, nullptr);
  if (w == nullptr) {
    glfwTerminate();
    err << "zerosim view: cannot create an OpenGL 3.3 window\n";
    return kExitInvalidInput;
  }
  glfwMakeContextCurrent(w);
  glfwSwapInterval(1);
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(w, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  place_view(viewer, o, static_cast<float>(o.width));
  int frames = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (glfwWindowShouldClose(w) == 0 && (!o.frames_given || frames < o.frames)) {
    ++frames;
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    viewer.frame(true);
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(w, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0, 0, 0, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    glfwSwapBuffers(w);
  }
  if (o.frames_given) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    char line[96];
    std::snprintf(line, sizeof line, "%d frames in a window, %.2f ms per frame (vsync on)\n",
                  frames, ms / std::max(frames, 1));
    out << line;
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(w);
  glfwTerminate();
  return kExitOk;
}

}  // namespace

std::string view_help() {
  return format_help(
      "view",
      "arguments: TRACE [TRACE2], zerosim trace JSON files\n\n"
      "Opens a zerosim trace (zerosim simulate --trace, zerosim validate --output) as a timeline:\n"
      "lanes per rank (compute, reduce/gather streams, h2d/d2h, optimizer), collectives coloured\n"
      "by kind and labelled with their size, the memory stack per rank by category with the\n"
      "device capacity, the peak and any OOM, and a summary panel. Ranks with identical timelines\n"
      "fold into one group. TRACE2 (e.g. the prediction of a measured TRACE) is drawn as a ghost\n"
      "strip under each lane, paired op by op. Keys in the window: wheel zoom, right-drag pan,\n"
      "left-drag measure, click details, W/S/A/D zoom and pan, F fit, search box.",
      view_flags());
}

int run_view(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Result<ViewOptions> parsed = parse_view_args(args);
  if (!parsed) {
    report(parsed.diagnostics(), err);
    return kExitInvalidInput;
  }
  const ViewOptions& o = parsed.value();
  if (o.help) {
    out << view_help();
    return kExitOk;
  }
  const view::OpenedTrace main = view::open_trace(o.traces[0]);
  std::optional<view::OpenedTrace> ghost;
  if (o.traces.size() == 2) ghost = view::open_trace(o.traces[1]);
  view::Viewer viewer(main, ghost ? &*ghost : nullptr);
  if (!apply_view_options(viewer, o, err)) return kExitInvalidInput;
  if (o.screenshot) return screenshot(viewer, o, out, err);
  const int rc = window(viewer, o, out, err);
  if (rc == kExitOk && viewer.failed()) {
    err << "zerosim view: " << viewer.errors().front() << "\n";
    return kExitInvalidInput;
  }
  return rc;
}

}  // namespace zerosim::cli
