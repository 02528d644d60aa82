// The viewer's frame cost on the CPU, without any GPU or rasteriser: ImGui with the null renderer
// (font atlas built, no GL) draws one full frame of `zerosim view` (lanes, memory stacks, summary)
// of GPT-2 XL, ZeRO-2, at 64 ranks measured on the host backend (`zerosim validate --gpus 64
// --no-data`, made once in setup). This is the part of a frame the viewer controls; the software
// rasteriser (llvmpipe) adds its fill time on top (README "Viewer" reports both). Target: under
// 16 ms, so 60 fps is the rasteriser's question.
// BM_ViewerRenderedFrameGpt2Xl64Ranks draws the same frame through EGL surfaceless on Mesa (no
// read-back): user_s is the process's CPU per frame, every llvmpipe thread counted (process_cpu.h);
// target under 16.7 ms (60 fps).
//
// Run (Release build, bench and viewer on): build/bench/view_frame_bench
#include <benchmark/benchmark.h>
#include <imgui.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "draw/viewer.h"
#include "process_cpu.h"
#include "render/headless_renderer.h"

namespace {

// Per process (two bench runs at once on one machine must not share or remove each other's file).
std::string bench_temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("zerosim_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// GPT-2 XL, ZeRO-2, 64 ranks measured on the host backend, written to `trace`; false if not.
bool make_xl64_trace(benchmark::State& state, const std::string& trace) {
  const std::string cmd = std::string(ZEROSIM_CLI_PATH) +
                          " validate --model gpt2-xl --gpus 64 --stage 2 --no-data --output " +
                          trace + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    state.SkipWithError("zerosim validate failed");
    return false;
  }
  return true;
}

void BM_ViewerFrameGpt2Xl64Ranks(benchmark::State& state) {
  const std::string trace = bench_temp_path("view_frame_bench_xl64.json");
  if (!make_xl64_trace(state, trace)) return;
  const zerosim::view::OpenedTrace opened = zerosim::view::open_trace(trace);
  zerosim::view::Viewer viewer(opened, nullptr);
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = ImVec2(static_cast<float>(state.range(0)), static_cast<float>(state.range(1)));
  io.DeltaTime = 1.0f / 60.0f;
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  io.MousePos = ImVec2(600, 60);  // over the first compute lane: the tooltip path runs too
  std::size_t vertices = 0;
  for (auto _ : state) {
    ImGui::NewFrame();
    viewer.frame(true);
    ImGui::Render();
    vertices = static_cast<std::size_t>(ImGui::GetDrawData()->TotalVtxCount);
  }
  state.counters["vertices"] = static_cast<double>(vertices);
  state.counters["groups"] = static_cast<double>(viewer.model()->groups().size());
  ImGui::DestroyContext();
  std::remove(trace.c_str());
}
BENCHMARK(BM_ViewerFrameGpt2Xl64Ranks)->Args({1600, 900})->Unit(benchmark::kMillisecond);

void BM_ViewerRenderedFrameGpt2Xl64Ranks(benchmark::State& state) {
  const std::string trace = bench_temp_path("view_rendered_bench_xl64.json");
  if (!make_xl64_trace(state, trace)) return;
  const zerosim::view::OpenedTrace opened = zerosim::view::open_trace(trace);
  std::remove(trace.c_str());
  zerosim::view::Viewer viewer(opened, nullptr);
  std::string error;
  auto renderer = zerosim::view::HeadlessRenderer::create(static_cast<int>(state.range(0)),
                                                          static_cast<int>(state.range(1)), error);
  if (!renderer) {
    state.SkipWithError(error.c_str());
    return;
  }
  double frame_ms = 0;
  const auto draw = [&] { viewer.frame(false); };
  renderer->draw_frames(draw, 3, frame_ms);  // llvmpipe compiles its shaders on the first frame
  const auto cpu0 = zerosim::bench::ProcessCpu::now();
  for (auto _ : state) renderer->draw_frames(draw, 1, frame_ms);
  zerosim::bench::report_process_cpu(state, cpu0);
}
BENCHMARK(BM_ViewerRenderedFrameGpt2Xl64Ranks)
    ->Args({1600, 900})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
