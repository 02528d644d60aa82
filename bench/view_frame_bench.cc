// The viewer's frame cost on the CPU, without any GPU or rasteriser: ImGui with the null renderer
// (font atlas built, no GL) draws one full frame of `zerosim view` (lanes, memory stacks, summary)
// of GPT-2 XL, ZeRO-2, at 64 ranks measured on the host backend (`zerosim validate --gpus 64
// --no-data`, made once in setup). This is the part of a frame the viewer controls; the software
// rasteriser (llvmpipe) adds its fill time on top (README "Viewer" reports both). Target: under
// 16 ms, so 60 fps is the rasteriser's question.
//
// Run (Release build, bench and viewer on): build/bench/view_frame_bench
#include <benchmark/benchmark.h>
#include <imgui.h>

#include <cstdlib>
#include <string>

#include "draw/viewer.h"

namespace {

void BM_ViewerFrameGpt2Xl64Ranks(benchmark::State& state) {
  const std::string trace = "/tmp/zerosim_view_frame_bench_xl64.json";
  const std::string cmd = std::string(ZEROSIM_CLI_PATH) +
                          " validate --model gpt2-xl --gpus 64 --stage 2 --no-data --output " +
                          trace + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    state.SkipWithError("zerosim validate failed");
    return;
  }
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

}  // namespace

BENCHMARK_MAIN();
