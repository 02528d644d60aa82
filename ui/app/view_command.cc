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
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "cmd_view_inputs.h"
#include "commands.h"
#include "draw/palette.h"
#include "draw/viewer.h"
#include "draw/what_if_panel.h"
#include "output_file.h"
#include "render/headless_renderer.h"
#include "view_flags.h"

namespace zerosim::cli {
namespace {

// Whether a flag takes a value (a switch such as --zero-init does not), so the positional split
// below does not swallow the argument after a switch.
bool takes_value(const std::string& arg) {
  if (arg.find('=') != std::string::npos) return false;
  for (const FlagSpec& f : view_flags())
    if (f.name == arg) return !f.value_name.empty();
  return arg != "--help";  // an unknown flag: parse_args names it
}

struct ViewOptions {
  std::vector<std::string> traces;
  std::optional<std::string> screenshot;
  int width = 1600, height = 900, frames = 3;
  bool frames_given = false;
  std::optional<SimTime> at_time;
  double zoom = 1;
  std::optional<std::uint32_t> rank;
  std::optional<std::string> scenario;                   ///< what-if mode
  std::vector<std::pair<std::string, std::string>> set;  ///< --set, in order
  /// What-if mode from the planner's flags (--model, --gpus, --stage, ...): the parsed flags,
  /// resolved by the run commands' build_run (with --scenario: as its overrides).
  std::optional<ParsedArgs> planner;
  bool help = false;
};

// A scenario file is small JSON whose "format" is zerosim-scenario; a trace is read as a trace
// (and reports its own problems). Only files under 4 MiB are parsed here.
bool is_scenario_file(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > (4u << 20)) return false;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() && j.contains("format") && j["format"] == kScenarioFormat;
}

// Positional arguments (the traces) are split off first: parse_args takes flags only.
Result<ViewOptions> parse_view_args(const std::vector<std::string>& args) {
  std::vector<std::string> flags;
  ViewOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) == 0) {
      flags.push_back(a);
      if (takes_value(a) && i + 1 < args.size()) flags.push_back(args[++i]);
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
  o.scenario = p.get("--scenario");
  if (!o.scenario && o.traces.size() == 1 && is_scenario_file(o.traces[0])) {
    o.scenario = o.traces[0];
    o.traces.clear();
  }
  if (has_view_planner_flags(p)) {
    o.planner = p;
    if (o.scenario) o.planner->values["--scenario"] = *o.scenario;
  }
  if (o.planner && !o.traces.empty()) {
    d.error("zerosim view", "",
            "expected no trace with the planner's flags (what-if mode), got " +
                std::to_string(o.traces.size()) + " file names");
  } else if (o.scenario && !o.traces.empty()) {
    d.error("zerosim view", "",
            "expected no trace with a scenario (what-if mode), got " +
                std::to_string(o.traces.size()) + " file names");
  } else if (!o.scenario && !o.planner && (o.traces.empty() || o.traces.size() > 2)) {
    d.error("zerosim view", "",
            "expected TRACE [TRACE2], a scenario or the planner's flags (--model, --gpus, "
            "--stage, ...), got " +
                std::to_string(o.traces.size()) + " file names");
  }
  if (auto v = p.get("--set")) {
    if (!o.scenario && !o.planner)
      d.error("--set", "", "expected a scenario (what-if mode) to change, got none");
    std::size_t at = 0;
    while (at <= v->size()) {
      const std::size_t comma = std::min(v->find(',', at), v->size());
      const std::string item = v->substr(at, comma - at);
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        d.error("--set", "", "expected KNOB=VALUE[,KNOB=VALUE...], got \"" + *v + "\"");
        break;
      }
      // A knob twice (stage=2,stage=3): the last one won without a word.
      const std::string knob = item.substr(0, eq);
      if (std::any_of(o.set.begin(), o.set.end(),
                      [&](const auto& kv) { return kv.first == knob; })) {
        d.error("--set", "", "expected each knob once, got " + knob + " twice in \"" + *v + "\"");
        break;
      }
      o.set.emplace_back(knob, item.substr(eq + 1));
      at = comma + 1;
    }
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
  // The screenshot may not replace what it shows, a trace or the scenario: `view T.json
  // --screenshot T.json` turned the trace into a PNG and exited 0.
  if (o.screenshot) {
    struct stat shot {};
    if (::stat(o.screenshot->c_str(), &shot) == 0 && S_ISREG(shot.st_mode)) {
      std::vector<std::string> inputs = o.traces;
      if (o.scenario) inputs.push_back(*o.scenario);
      for (const std::string& in : inputs)
        if (output_detail::same_regular_file(shot, in))
          d.error("--screenshot", "",
                  "expected a file other than the input " + quote(in) + ", got " +
                      quote(*o.screenshot) + " (it would be replaced by the picture)");
    }
  }
  if (d.has_errors()) return d;
  return o;
}

// What a what-if run is called in its lanes' titles and errors.
std::string what_if_source(const ViewOptions& o) {
  if (o.planner)
    return o.scenario ? *o.scenario + " with the planner's flags" : "the planner's flags";
  return o.scenario.value_or("");
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
    err << "zerosim view: --rank: expected a traced rank of "
        << (o.traces.empty() ? what_if_source(o) : o.traces[0]) << " (" << traced << "), got "
        << *o.rank << "\n";
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

// What a frame draws: a viewer of traces, or a what-if session's viewer plus its panel (which
// replaces the viewer when a change re-simulates).
class Scene {
 public:
  virtual ~Scene() = default;
  virtual view::Viewer& viewer() = 0;
  virtual void frame(bool interactive) = 0;
};

class TraceScene : public Scene {
 public:
  explicit TraceScene(view::Viewer& v) : viewer_(&v) {}
  view::Viewer& viewer() override { return *viewer_; }
  void frame(bool interactive) override { viewer_->frame(interactive); }

 private:
  view::Viewer* viewer_;
};

class WhatIfScene : public Scene {
 public:
  WhatIfScene(std::unique_ptr<view::WhatIf> session, std::string path)
      : session_(std::move(session)), panel_(*session_), path_(std::move(path)) {
    rebuild();
  }
  view::WhatIfPanel& panel() { return panel_; }
  view::Viewer& viewer() override { return *viewer_; }
  // The viewer of the session's current run, the previous run as its ghost, the view, the
  // expanded groups and the scroll kept.
  void rebuild() {
    const std::optional<view::ViewerState> keep = viewer_ ? viewer_->state() : std::nullopt;
    viewer_.reset();
    main_.path = path_ + " (what-if: current)";
    main_.trace = session_->trace();
    ghost_.path = path_ + " (what-if: previous)";
    ghost_.trace.reset();
    if (session_->ghost() != nullptr) ghost_.trace = *session_->ghost();
    viewer_ = std::make_unique<view::Viewer>(main_, ghost_.trace ? &ghost_ : nullptr);
    if (rank_) viewer_->show_only_rank(*rank_);  // --rank holds across re-simulations
    if (keep) viewer_->restore(*keep, width_);
  }
  void set_width(float w) { width_ = w; }
  void set_rank(std::optional<std::uint32_t> rank) { rank_ = rank; }
  void frame(bool interactive) override {
    viewer_->frame(interactive);
    const ImVec2 size = ImGui::GetIO().DisplaySize;
    const float w = 350, x = view::Viewer::lanes_right(size.x) - w - 10;
    if (panel_.draw(x, 40, w, std::min(size.y - 50, 560.0f))) rebuild();
  }

 private:
  std::unique_ptr<view::WhatIf> session_;
  view::WhatIfPanel panel_;
  std::string path_;
  view::OpenedTrace main_, ghost_;
  std::unique_ptr<view::Viewer> viewer_;
  float width_ = 1600;
  std::optional<std::uint32_t> rank_;
};

int screenshot(Scene& scene, const ViewOptions& o, std::ostream& out, std::ostream& err) {
  view::Viewer& viewer = scene.viewer();
  std::string error;
  auto renderer = view::HeadlessRenderer::create(o.width, o.height, error);
  if (!renderer) {
    err << "zerosim view: --screenshot: " << error << "\n";
    return kExitInvalidInput;
  }
  double frame_ms = 0;
  place_view(viewer, o, static_cast<float>(o.width));
  const view::Image img = renderer->render([&] { scene.frame(false); }, o.frames, frame_ms);
  std::string png;
  if (!view::encode_png(img, png, error)) {
    err << "zerosim view: --screenshot: " << error << "\n";
    return kExitInvalidInput;
  }
  // Through a temporary file renamed over the target, every write checked: /dev/full said
  // "wrote" and exited 0, and a failed write left half a file (output_file.h). Its own "wrote"
  // line follows; only a failure's line is passed on.
  std::ostringstream written;
  if (!write_file("--screenshot", *o.screenshot, written, [&](std::ostream& f) {
        f.write(png.data(), static_cast<std::streamsize>(png.size()));
        return static_cast<bool>(f);
      })) {
    err << "zerosim view: " << written.str();
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

int window(Scene& scene, const ViewOptions& o, std::ostream& out, std::ostream& err) {
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
  place_view(scene.viewer(), o, static_cast<float>(o.width));
  int frames = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (glfwWindowShouldClose(w) == 0 && (!o.frames_given || frames < o.frames)) {
    ++frames;
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    scene.frame(true);
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(w, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(view::channel(view::kBackdropColor, 16), view::channel(view::kBackdropColor, 8),
                 view::channel(view::kBackdropColor, 0), 1);
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

// What-if mode: the scenario simulated, --set applied (the scenario's run becomes the ghost),
// then the screenshot or the window with the knobs panel.
int run_what_if(const ViewOptions& o, std::ostream& out, std::ostream& err) {
  Result<std::unique_ptr<view::WhatIf>> session = Diagnostics{};
  if (o.planner) {
    Result<Scenario> s = view_scenario_from_flags(*o.planner);
    if (!s.ok()) {
      report(s.diagnostics(), err);
      return kExitInvalidInput;
    }
    // The notes of overridden scenario values, as simulate prints them.
    report(s.diagnostics(), err);
    session = view::WhatIf::open(std::move(s.value()), o.scenario.value_or(what_if_source(o)));
  } else {
    session = view::WhatIf::open(*o.scenario);
  }
  if (!session.ok()) {
    report(session.diagnostics(), err);
    return kExitInvalidInput;
  }
  WhatIfScene scene(std::move(session.value()), what_if_source(o));
  scene.set_width(static_cast<float>(o.width));
  if (o.screenshot) scene.panel().set_deterministic(true);  // no wall times in the image
  if (!o.set.empty()) {
    view::Knobs k = scene.panel().edited();
    for (const auto& [key, value] : o.set) {
      const std::string why = view::set_knob(k, key, value);
      if (!why.empty()) {
        err << "--set: " << key << ": " << why << "\n";
        return kExitInvalidInput;
      }
    }
    if (!scene.panel().change(k)) {
      err << "--set: " << scene.panel().status() << "\n";
      return kExitInvalidInput;
    }
    scene.rebuild();
  }
  if (!apply_view_options(scene.viewer(), o, err)) return kExitInvalidInput;
  scene.set_rank(o.rank);
  if (o.screenshot) return screenshot(scene, o, out, err);
  return window(scene, o, out, err);
}

}  // namespace

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
  if (o.scenario || o.planner) return run_what_if(o, out, err);
  const view::OpenedTrace main = view::open_trace(o.traces[0]);
  std::optional<view::OpenedTrace> ghost;
  if (o.traces.size() == 2) ghost = view::open_trace(o.traces[1]);
  view::Viewer viewer(main, ghost ? &*ghost : nullptr);
  if (!apply_view_options(viewer, o, err)) return kExitInvalidInput;
  TraceScene scene(viewer);
  if (o.screenshot) return screenshot(scene, o, out, err);
  const int rc = window(scene, o, out, err);
  if (rc == kExitOk && viewer.failed()) {
    err << "zerosim view: " << viewer.errors().front() << "\n";
    return kExitInvalidInput;
  }
  return rc;
}

}  // namespace zerosim::cli
