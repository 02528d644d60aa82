// The what-if panel (ui/draw/what_if_panel.h) with the null renderer: it draws its window with
// every knob, a change re-simulates and lists what differs from the ghost, a refused change keeps
// the session's run and says why, and the save button writes a ds_config that reads back.
#include <gtest/gtest.h>
#include <imgui.h>
#include <imgui_internal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "draw/viewer.h"
#include "draw/what_if_panel.h"

namespace zerosim::view {
namespace {

class WhatIfPanelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1400, 800);
    io.DeltaTime = 1.0f / 60.0f;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    auto s = WhatIf::open(std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/gpt2-xl_zero2_8xa100.json");
    ASSERT_TRUE(s.ok()) << s.diagnostics().to_string();
    session_ = std::move(s.value());
  }
  void TearDown() override { ImGui::DestroyContext(); }
  bool frame(WhatIfPanel& p) {
    ImGui::NewFrame();
    const bool changed = p.draw(800, 40, 330, 560);
    ImGui::Render();
    return changed;
  }
  std::unique_ptr<WhatIf> session_;
};

TEST_F(WhatIfPanelTest, DrawsItsWindowAndAChangeResimulatesWithTheGhostListed) {
  WhatIfPanel p(*session_);
  EXPECT_FALSE(frame(p));  // no input: nothing changes
  ImGuiWindow* w = ImGui::FindWindowByName("what-if");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->Active);
  EXPECT_GT(ImGui::GetDrawData()->TotalVtxCount, 500);
  EXPECT_EQ(p.status().rfind("simulated in ", 0), 0u) << p.status();
  Knobs k = p.edited();
  k.stage = 3;
  k.micro_batch = 2;
  ASSERT_TRUE(p.change(k)) << p.status();
  EXPECT_EQ(p.status().rfind("re-simulated in ", 0), 0u) << p.status();
  ASSERT_TRUE(session_->ghost_knobs().has_value());
  EXPECT_EQ(knob_changes(*session_->ghost_knobs(), session_->knobs()),
            "stage 2 -> 3, micro_batch 4 -> 2");
  EXPECT_EQ(knob_changes(k, k), "");
  frame(p);
}

TEST_F(WhatIfPanelTest, ARefusedChangeSaysWhyAndKeepsTheRun) {
  WhatIfPanel p(*session_);
  Knobs k = p.edited();
  k.gpu = "no-such-gpu";
  EXPECT_FALSE(p.change(k));
  EXPECT_NE(p.status().find("no-such-gpu"), std::string::npos) << p.status();
  EXPECT_EQ(p.edited().gpu, "no-such-gpu");  // the edit stays on screen to be corrected
  EXPECT_EQ(session_->knobs().gpu, "A100-80GB");
  EXPECT_EQ(session_->ghost(), nullptr);
}

TEST_F(WhatIfPanelTest, SaveWritesADsConfigThatReadsBackToTheKnobs) {
  WhatIfPanel p(*session_);
  Knobs k = p.edited();
  k.reduce_bucket_size = 123000000;
  ASSERT_TRUE(p.change(k)) << p.status();
  const std::string path =
      ::testing::TempDir() + "zerosim_panel_" + std::to_string(getpid()) + "_ds_config.json";
  p.set_save_path(path);
  ASSERT_TRUE(p.save()) << p.status();
  EXPECT_EQ(p.status(), "wrote " + path);
  AutoValues autos;
  autos.world_size = 8;
  Result<DsConfig> back = load_ds_config_file(path, autos);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  EXPECT_EQ(knobs_of(back.value(), k), session_->knobs());
  EXPECT_EQ(back->zero.reduce_bucket_size, 123000000u);
  p.set_save_path("/nonexistent-dir/x.json");
  EXPECT_FALSE(p.save());
  EXPECT_EQ(p.status(), "/nonexistent-dir/x.json: cannot open for writing");
}

// A re-simulation replaces the viewer (a new run): what the user set up carries over through
// Viewer::state and restore, as the what-if scene (ui/app) rebuilds it: the time range and the
// scroll. (The simulator traces one rank per role, so no group of a what-if run has members to
// expand; NullRenderer.AViewersStateCarriesItsExpandedGroupsToANewRun covers those.)
TEST_F(WhatIfPanelTest, AReSimulationKeepsTheRangeAndTheScroll) {
  OpenedTrace first;
  first.trace = session_->trace();
  auto before = std::make_unique<Viewer>(first, nullptr);
  before->reset_view(1400);
  const SimTime begin = before->model()->begin_ns();
  before->view().fit(begin + 1'000'000, begin + 3'000'000);
  std::optional<ViewerState> state = before->state();
  ASSERT_TRUE(state.has_value());
  EXPECT_TRUE(state->expanded_ranks.empty());
  state->scroll_y = 40;
  before.reset();

  WhatIfPanel p(*session_);
  Knobs k = p.edited();
  k.stage = 3;
  ASSERT_TRUE(p.change(k)) << p.status();
  OpenedTrace next, ghost;
  next.trace = session_->trace();
  ghost.trace = *session_->ghost();
  Viewer fresh(next, &ghost);
  fresh.reset_view(1400);
  EXPECT_NE(fresh.view().start_ns(), state->start_ns);  // a new viewer shows the whole run
  Viewer after(next, &ghost);
  after.restore(*state, 1400);
  EXPECT_EQ(after.view().start_ns(), state->start_ns);
  EXPECT_EQ(after.view().end_ns(), state->end_ns);
  EXPECT_EQ(after.scroll_y(), 40.0f);
}

}  // namespace
}  // namespace zerosim::view
