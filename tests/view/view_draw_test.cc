// The ImGui layer with the null renderer (no GL): frames run on a built font atlas with a fixed
// display and scripted mouse/keys, and the tests read what the viewer put up: the tooltip's text
// over a known span, the memory tooltip, the draw lists, wheel zoom around the cursor, drag pan,
// measure, click details, WASD, search highlight, the bucket fill row (tooltip, click details,
// flow line), the stage 3 parameter row, and folding/expanding rank groups by click and key.
#include <gtest/gtest.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>

#include "draw/palette.h"
#include "draw/viewer.h"
#include "model/timeline_model.h"

namespace zerosim::view {
namespace {

// One rank: forward "layer 0" [0, 40 us), an all-reduce of 64 MiB on the reduce stream
// [40, 60 us), backward [60, 100 us); memory rising to 3 GiB.
OpenedTrace small_trace() {
  OpenedTrace o;
  o.path = "small.json";
  Trace t;
  TraceRank r;
  r.memory.push_back(MemorySample{0, 1u << 30, {}});
  r.memory.back().by_category[0] = 1u << 30;
  r.memory.push_back(MemorySample{50'000, 3u << 30, {}});
  r.memory.back().by_category[0] = 1u << 30;
  r.memory.back().by_category[4] = 2u << 30;
  t.ranks.push_back(r);
  t.meta.device_capacity = 4ull << 30;
  Span f;
  f.name = "forward layer 0";
  f.category = "forward";
  f.dur_ns = 40'000;
  Span c;
  c.name = "flush 0: AR(33554432)";
  c.category = "collective";
  c.stream = Stream::Reduce;
  c.op = 1;
  c.start_ns = 40'000;
  c.dur_ns = 20'000;
  c.comm = 0;
  Span b;
  b.name = "backward layer 0";
  b.category = "backward";
  b.op = 2;
  b.start_ns = 60'000;
  b.dur_ns = 40'000;
  t.spans = {f, c, b};
  CommRecord cr;
  cr.op = 1;
  cr.kind = CollectiveKind::AllReduce;
  cr.bytes = 64ull << 20;
  cr.group_size = 8;
  cr.algbw_gbps = 3.36;
  cr.busbw_gbps = 5.87;
  t.comms = {cr};
  o.trace = std::move(t);
  return o;
}

// small_trace() plus two gradient copies into bucket 0 on the compute stream at [10, 12) and
// [20, 22) us, which the all-reduce (bucket 0) flushes.
OpenedTrace bucket_trace() {
  OpenedTrace o = small_trace();
  Trace& t = *o.trace;
  for (int i = 0; i < 2; ++i) {
    Span c;
    c.name = std::string("copy p") + std::to_string(i + 1) + " into ipg[0]";
    c.category = "copy_to_bucket";
    c.op = 10 + static_cast<std::uint32_t>(i);
    c.start_ns = 10'000 + 10'000 * i;
    c.dur_ns = 2'000;
    c.bucket = 0;
    c.bytes = 1u << 20;
    t.spans.push_back(c);
  }
  t.spans[1].bucket = 0;  // the all-reduce
  return o;
}

// Vertices of the last frame drawn in colour `rgb`.
std::size_t vertices_of(Rgb rgb) {
  const ImU32 c = IM_COL32((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, 0xFF);
  std::size_t n = 0;
  const ImDrawData* d = ImGui::GetDrawData();
  for (int i = 0; i < d->CmdListsCount; ++i) {
    for (const ImDrawVert& vx : d->CmdLists[i]->VtxBuffer) n += vx.col == c ? 1 : 0;
  }
  return n;
}

// ImGui 1.86 indexes KeysDown by the platform's key code; GLFW's letter codes are upper-case ASCII.
constexpr int kKeyW = 'W', kKeyD = 'D', kKeyF = 'F', kKeyE = 'E';

class NullRenderer : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1000, 600);
    io.DeltaTime = 1.0f / 60.0f;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  }
  void TearDown() override { ImGui::DestroyContext(); }
  // Runs `n` frames with the mouse at `mouse`.
  static void frames(Viewer& v, int n, ImVec2 mouse) {
    for (int i = 0; i < n; ++i) {
      ImGui::GetIO().MousePos = mouse;
      ImGui::NewFrame();
      v.frame(true);
      ImGui::Render();
    }
  }
  // Screen position of time t in a lane row of `v`.
  static ImVec2 at(const Viewer& v, SimTime t, std::size_t row) {
    const Row& r = v.rows().at(row);
    return ImVec2(kGutterPx + static_cast<float>(v.view().x_of(t)), kRowsTop + (r.y0 + r.y1) / 2);
  }
  static bool tooltip_window_open() {
    for (ImGuiWindow* w : ImGui::GetCurrentContext()->Windows) {
      if ((w->Flags & ImGuiWindowFlags_Tooltip) != 0 && w->Active) return true;
    }
    return false;
  }
};

TEST_F(NullRenderer, ATooltipNamesTheSpanUnderTheMouse) {
  const OpenedTrace o = small_trace();
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  ASSERT_EQ(v.rows().size(), 4u);  // header, compute, reduce, memory
  EXPECT_TRUE(v.tooltip().empty());
  EXPECT_FALSE(tooltip_window_open());
  frames(v, 3, at(v, 50'000, 2));  // the all-reduce
  EXPECT_NE(v.tooltip().find("flush 0: AR(33554432)"), std::string::npos) << v.tooltip();
  EXPECT_NE(v.tooltip().find("all_reduce 64.0 MiB, 8 ranks"), std::string::npos) << v.tooltip();
  EXPECT_NE(v.tooltip().find("busbw 5.9 GB/s"), std::string::npos) << v.tooltip();
  EXPECT_TRUE(tooltip_window_open());
  frames(v, 2, at(v, 80'000, 1));  // backward on the compute lane
  EXPECT_EQ(v.tooltip().rfind("backward layer 0", 0), 0u) << v.tooltip();
  frames(v, 2, at(v, 50'000, 1));  // nothing on the compute lane at 50 us
  EXPECT_TRUE(v.tooltip().empty()) << v.tooltip();
  frames(v, 2, at(v, 70'000, 3));  // the memory stack
  EXPECT_NE(v.tooltip().find("3.00 GiB"), std::string::npos) << v.tooltip();
  EXPECT_NE(v.tooltip().find("activation 2.00 GiB"), std::string::npos) << v.tooltip();
  // The frame drew something: the main window's draw list holds the lanes' rectangles.
  ASSERT_NE(ImGui::GetDrawData(), nullptr);
  EXPECT_GE(ImGui::GetDrawData()->CmdListsCount, 2);
  EXPECT_GT(ImGui::GetDrawData()->TotalVtxCount, 200);
}

TEST_F(NullRenderer, WheelZoomsAroundTheCursorAndDragPans) {
  const OpenedTrace o = small_trace();
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  const ImVec2 p = at(v, 30'000, 1);
  const double scale = v.view().px_per_ns();
  ImGui::GetIO().MouseWheel = 2;
  frames(v, 1, p);
  EXPECT_NEAR(v.view().px_per_ns(), scale * 1.5625, 1e-12);
  EXPECT_NEAR(static_cast<double>(v.view().t_at(p.x - kGutterPx)), 30'000, 2);
  const SimTime start = v.view().start_ns();
  ImGui::GetIO().MouseDown[1] = true;  // right-drag 100 px to the left: later times
  frames(v, 1, p);
  frames(v, 1, ImVec2(p.x - 50, p.y));
  frames(v, 1, ImVec2(p.x - 100, p.y));
  ImGui::GetIO().MouseDown[1] = false;
  frames(v, 1, ImVec2(p.x - 100, p.y));
  EXPECT_GT(v.view().start_ns(), start);
}

TEST_F(NullRenderer, LeftDragMeasuresAndAClickSelects) {
  const OpenedTrace o = small_trace();
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  const ImVec2 a = at(v, 10'000, 1), b = at(v, 30'000, 1);
  ImGui::GetIO().MouseDown[0] = true;
  frames(v, 1, a);
  frames(v, 2, b);
  EXPECT_EQ(v.measure_label(), "20 us");
  ImGui::GetIO().MouseDown[0] = false;
  frames(v, 1, b);
  EXPECT_TRUE(v.details().empty());  // a drag is not a click
  const ImVec2 c = at(v, 50'000, 2);
  ImGui::GetIO().MouseDown[0] = true;
  frames(v, 1, c);
  ImGui::GetIO().MouseDown[0] = false;
  frames(v, 1, c);
  EXPECT_NE(v.details().find("flush 0: AR(33554432)"), std::string::npos) << v.details();
}

TEST_F(NullRenderer, WasdZoomsAndPansAndFFits) {
  const OpenedTrace o = small_trace();
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  const double scale = v.view().px_per_ns();
  ImGui::GetIO().KeysDown[kKeyW] = true;
  frames(v, 10, ImVec2(-100, -100));
  ImGui::GetIO().KeysDown[kKeyW] = false;
  EXPECT_GT(v.view().px_per_ns(), scale * 1.3);
  const SimTime start = v.view().start_ns();
  ImGui::GetIO().KeysDown[kKeyD] = true;
  frames(v, 5, ImVec2(-100, -100));
  ImGui::GetIO().KeysDown[kKeyD] = false;
  EXPECT_GT(v.view().start_ns(), start);
  ImGui::GetIO().KeysDown[kKeyF] = true;
  frames(v, 1, ImVec2(-100, -100));
  ImGui::GetIO().KeysDown[kKeyF] = false;
  EXPECT_DOUBLE_EQ(v.view().px_per_ns(), scale);
  EXPECT_EQ(v.view().start_ns(), 0);
}

TEST_F(NullRenderer, SearchOutlinesMatchingSpans) {
  const OpenedTrace o = small_trace();
  Viewer v(o, nullptr);
  const auto outline_vertices = [&] {
    frames(v, 1, ImVec2(-100, -100));
    std::size_t n = 0;
    const ImDrawData* d = ImGui::GetDrawData();
    for (int i = 0; i < d->CmdListsCount; ++i) {
      for (const ImDrawVert& vx : d->CmdLists[i]->VtxBuffer) {
        n += vx.col == IM_COL32(0xFF, 0xFF, 0x00, 0xFF) ? 1 : 0;
      }
    }
    return n;
  };
  EXPECT_EQ(outline_vertices(), 0u);
  v.set_search("layer 0");  // forward and backward
  const std::size_t two = outline_vertices();
  v.set_search("backward");
  const std::size_t one = outline_vertices();
  EXPECT_GT(one, 0u);
  EXPECT_EQ(two, 2 * one);
}

// The summary panel cut long lines at its right edge (a param list's path as the model name, a
// long trace path; found by a new-user pass): every line wraps inside the panel.
TEST_F(NullRenderer, TheSummaryPanelWrapsLongLines) {
  OpenedTrace o = small_trace();
  o.path = "/a/long/folder/of/traces/" + std::string(120, 'p') + ".json";
  o.trace->meta.model = "/home/someone/models/" + std::string(120, 'm') + "/params.json";
  Viewer v(o, nullptr);
  frames(v, 2, ImVec2(10, 10));
  const ImGuiWindow* panel = nullptr;
  for (ImGuiWindow* w : ImGui::GetCurrentContext()->Windows)
    if (std::string(w->Name).find("/summary") != std::string::npos) panel = w;
  ASSERT_NE(panel, nullptr);
  EXPECT_LE(panel->ContentSize.x, panel->Size.x)
      << "content " << panel->ContentSize.x << " px in a panel of " << panel->Size.x;
}

TEST_F(NullRenderer, AnUnreadableTraceShowsTheErrorPanel) {
  OpenedTrace bad;
  bad.path = "bad.json";
  bad.errors = {"bad.json: /version: expected 1 or 2, got 99"};
  Viewer v(bad, nullptr);
  EXPECT_TRUE(v.failed());
  frames(v, 2, ImVec2(500, 300));
  EXPECT_TRUE(v.tooltip().empty());
  EXPECT_GT(ImGui::GetDrawData()->TotalVtxCount, 100);
}

TEST_F(NullRenderer, TheBucketRowNamesItsParamsAndFlowsToItsCollective) {
  const OpenedTrace o = bucket_trace();
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  ASSERT_EQ(v.rows().size(), 5u);  // header, compute, reduce, bucket fill, memory
  ASSERT_EQ(v.rows()[3].kind, Row::Kind::Buckets);
  EXPECT_GT(vertices_of(kBucketFillColor), 0u);
  EXPECT_GT(vertices_of(kBucketFlushColor), 0u);
  EXPECT_GT(vertices_of(kFlowColor), 0u);  // the line and its tip
  frames(v, 3, at(v, 15'000, 3));
  EXPECT_EQ(v.tooltip().rfind("bucket 0: 2 params, 2.00 MiB (step 0, micro-step 0)", 0), 0u)
      << v.tooltip();
  EXPECT_NE(v.tooltip().find("flushed at 40 us"), std::string::npos) << v.tooltip();
  EXPECT_NE(v.tooltip().find("feeds flush 0: AR(33554432) (all_reduce 64.0 MiB)"),
            std::string::npos)
      << v.tooltip();
  EXPECT_NE(v.tooltip().find("params: p1, p2"), std::string::npos) << v.tooltip();
  frames(v, 2, at(v, 30'000, 3));  // past the fill's end (22 us)
  EXPECT_TRUE(v.tooltip().empty()) << v.tooltip();
  const ImVec2 c = at(v, 15'000, 3);
  ImGui::GetIO().MouseDown[0] = true;
  frames(v, 1, c);
  ImGui::GetIO().MouseDown[0] = false;
  frames(v, 1, c);
  EXPECT_NE(v.details().find("params:\n  p1\n  p2"), std::string::npos) << v.details();
  // Without the collective's bucket there is nothing to flow to.
  OpenedTrace unflushed = bucket_trace();
  unflushed.trace->spans[1].bucket = kNone;
  Viewer u(unflushed, nullptr);
  frames(u, 1, ImVec2(-100, -100));
  EXPECT_GT(vertices_of(kBucketFillColor), 0u);
  EXPECT_EQ(vertices_of(kFlowColor), 0u);
  EXPECT_EQ(vertices_of(kBucketFlushColor), 0u);
}

TEST_F(NullRenderer, TheStage3ParamRowShowsGathersAndReleases) {
  OpenedTrace o = small_trace();
  Trace& t = *o.trace;
  t.meta.stage = 3;
  t.spans[1].stream = Stream::Gather;  // the collective becomes a parameter all-gather
  t.comms[0].kind = CollectiveKind::AllGather;
  constexpr auto kGathered = static_cast<std::size_t>(BufferCategory::GatheredParam);
  t.ranks[0].memory[1].by_category[kGathered] = 64u << 20;
  t.ranks[0].memory[1].total += 64u << 20;
  MemorySample freed = t.ranks[0].memory[1];
  freed.t = 90'000;
  freed.by_category[kGathered] = 0;
  freed.total -= 64u << 20;
  t.ranks[0].memory.push_back(freed);
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  ASSERT_EQ(v.rows().size(), 5u);  // header, compute, gather, params, memory
  ASSERT_EQ(v.rows()[3].kind, Row::Kind::Params);
  EXPECT_GT(vertices_of(kGatherColor), 0u);
  EXPECT_GT(vertices_of(kReleaseColor), 0u);
  frames(v, 3, at(v, 60'000, 3));  // the gather ends at 60 us
  EXPECT_EQ(
      v.tooltip().rfind(
          "gather flush 0: AR(33554432)\nall_gather 64.0 MiB, usable at 60 us (took 20 us)", 0),
      0u)
      << v.tooltip();
  frames(v, 2, at(v, 90'000, 3));
  // The release names what it frees: the parameters of the all-gather that filled those bytes.
  EXPECT_EQ(v.tooltip(),
            "release 64.0 MiB of gathered parameters at 90 us\n  flush 0: AR(33554432)\n0 B "
            "still gathered");
  frames(v, 2, at(v, 75'000, 3));
  EXPECT_TRUE(v.tooltip().empty()) << v.tooltip();
}

// Ranks 1 and 2 run the same ops, rank 0 a longer one: two groups, the second of two ranks.
OpenedTrace folded_trace() {
  OpenedTrace o;
  o.path = "folded.json";
  Trace t;
  for (std::uint32_t r = 0; r < 3; ++r) {
    TraceRank tr;
    tr.rank = r;
    tr.role = r;
    t.ranks.push_back(tr);
    Span s;
    s.rank = r;
    s.name = "forward";
    s.category = "forward";
    s.dur_ns = r == 0 ? 20'000 : 10'000;
    t.spans.push_back(s);
  }
  o.trace = std::move(t);
  return o;
}

TEST_F(NullRenderer, AClickOnAGroupHeaderOrEExpandsAndFoldsIt) {
  const OpenedTrace o = folded_trace();
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  ASSERT_EQ(v.model()->groups().size(), 2u);
  const std::size_t folded_rows = v.rows().size();
  ASSERT_EQ(folded_rows, 6u);  // (header, compute, memory) x 2
  const Row header = v.rows()[3];
  ASSERT_EQ(header.kind, Row::Kind::Header);
  ASSERT_EQ(header.group, 1u);
  const ImVec2 on_header(40, kRowsTop + (header.y0 + header.y1) / 2);  // in the label gutter
  auto click = [&](ImVec2 p) {
    ImGui::GetIO().MouseDown[0] = true;
    frames(v, 1, p);
    ImGui::GetIO().MouseDown[0] = false;
    frames(v, 1, p);
  };
  click(on_header);
  EXPECT_TRUE(v.model()->expanded(1));
  EXPECT_EQ(v.rows().size(), folded_rows + 1 + 3);  // a header per member, their rows
  EXPECT_TRUE(v.details().empty());                 // a header click selects nothing
  // The member rows name their rank in the tooltip.
  frames(v, 2, at(v, 5'000, 5));
  EXPECT_NE(v.tooltip().find("compute, rank 1"), std::string::npos) << v.tooltip();
  click(on_header);
  EXPECT_FALSE(v.model()->expanded(1));
  EXPECT_EQ(v.rows().size(), folded_rows);
  // E over no group toggles every group; over a group, that group.
  auto press_e = [&](ImVec2 p) {
    ImGui::GetIO().KeysDown[kKeyE] = true;
    frames(v, 1, p);
    ImGui::GetIO().KeysDown[kKeyE] = false;
    frames(v, 1, p);
  };
  press_e(ImVec2(-100, -100));
  EXPECT_TRUE(v.model()->expanded(1));
  press_e(on_header);
  EXPECT_FALSE(v.model()->expanded(1));
}

// A new run of the same ranks (a what-if re-simulation, a re-opened trace) in a new viewer keeps
// what the user expanded: the group that now holds the expanded group's first rank, even when the
// new run folds the ranks differently.
TEST_F(NullRenderer, AViewersStateCarriesItsExpandedGroupsToANewRun) {
  const OpenedTrace o = folded_trace();  // rank 0 alone, ranks 1-2 folded
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  ASSERT_TRUE(v.model()->set_expanded(1, true));
  const std::optional<ViewerState> state = v.state();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->expanded_ranks, std::vector<std::uint32_t>{1});
  OpenedTrace next = folded_trace();
  next.trace->spans[0].dur_ns = 10'000;  // now every rank runs alike: one group of three
  Viewer fresh(next, nullptr);
  ASSERT_EQ(fresh.model()->groups().size(), 1u);
  EXPECT_FALSE(fresh.model()->expanded(0));
  Viewer kept(next, nullptr);
  kept.restore(*state, 1000);
  EXPECT_TRUE(kept.model()->expanded(0));
  frames(kept, 1, ImVec2(-100, -100));
  std::size_t member_headers = 0;
  for (const Row& r : kept.rows()) {
    member_headers += r.kind == Row::Kind::Header && r.member != kAllMembers ? 1 : 0;
  }
  EXPECT_EQ(member_headers, 3u);
  // A rank the new run does not trace expands nothing.
  ViewerState gone = *state;
  gone.expanded_ranks = {7};
  Viewer other(next, nullptr);
  other.restore(gone, 1000);
  EXPECT_FALSE(other.model()->expanded(0));
}

// A window drawn over the timeline (the what-if panel) takes the mouse: the wheel over it does not
// zoom the timeline, the wheel beside it does.
TEST_F(NullRenderer, AWindowOverTheLanesTakesTheWheel) {
  const OpenedTrace o = small_trace();
  Viewer v(o, nullptr);
  auto frame_with_panel = [&](ImVec2 mouse, float wheel) {
    ImGui::GetIO().MousePos = mouse;
    ImGui::GetIO().MouseWheel = wheel;
    ImGui::NewFrame();
    v.frame(true);
    ImGui::SetNextWindowPos(ImVec2(400, 100));
    ImGui::SetNextWindowSize(ImVec2(200, 200));
    ImGui::Begin("panel over the lanes");
    ImGui::End();
    ImGui::Render();
  };
  frame_with_panel(ImVec2(-100, -100), 0);
  frame_with_panel(ImVec2(-100, -100), 0);
  const double scale = v.view().px_per_ns();
  frame_with_panel(ImVec2(500, 200), 1);  // over the panel
  EXPECT_DOUBLE_EQ(v.view().px_per_ns(), scale);
  frame_with_panel(ImVec2(300, 60), 1);  // over the lanes, beside it
  EXPECT_GT(v.view().px_per_ns(), scale);
}

// An expanded group of many ranks is taller than the screen: the arrow and page keys scroll the
// rows, and the tooltip follows the scrolled layout.
TEST_F(NullRenderer, ArrowAndPageKeysScrollTheRows) {
  OpenedTrace o = folded_trace();
  for (std::uint32_t r = 3; r < 64; ++r) {  // 63 identical ranks in group 1
    TraceRank tr;
    tr.rank = r;
    tr.role = r;
    o.trace->ranks.push_back(tr);
    Span s = o.trace->spans[1];
    s.rank = r;
    o.trace->spans.push_back(s);
  }
  // The GLFW backend maps these keys; the test maps them the same way (GLFW key codes).
  ImGuiIO& io = ImGui::GetIO();
  io.KeyMap[ImGuiKey_DownArrow] = 264;
  io.KeyMap[ImGuiKey_UpArrow] = 265;
  io.KeyMap[ImGuiKey_PageUp] = 266;
  io.KeyMap[ImGuiKey_PageDown] = 267;
  Viewer v(o, nullptr);
  frames(v, 1, ImVec2(-100, -100));
  ASSERT_TRUE(v.model()->set_expanded(1, true));
  frames(v, 1, ImVec2(-100, -100));
  ASSERT_GT(v.rows().back().y1, 600.0f);  // taller than the 600-pixel display
  EXPECT_EQ(v.scroll_y(), 0.0f);
  const int down = ImGui::GetKeyIndex(ImGuiKey_PageDown);
  ImGui::GetIO().KeysDown[down] = true;
  frames(v, 1, ImVec2(-100, -100));
  ImGui::GetIO().KeysDown[down] = false;
  frames(v, 1, ImVec2(-100, -100));
  const float scrolled = v.scroll_y();
  EXPECT_GT(scrolled, 400.0f);
  // A lane scrolled into view answers the mouse where it is drawn now.
  const auto it = std::find_if(v.rows().begin(), v.rows().end(), [&](const Row& r) {
    return r.kind == Row::Kind::Lane && r.y0 - scrolled > 100 && r.member != kAllMembers;
  });
  ASSERT_NE(it, v.rows().end());
  const Row* lane = &*it;
  const Row copy = *lane;  // frames() lays the rows out again
  lane = &copy;
  const float y = kRowsTop + (lane->y0 + lane->y1) / 2 - scrolled;
  ASSERT_LT(y, 600.0f);
  frames(v, 2, ImVec2(kGutterPx + static_cast<float>(v.view().x_of(5'000)), y));
  EXPECT_NE(v.tooltip().find("compute, " + block_label(*v.model(), *lane)), std::string::npos)
      << v.tooltip();
  EXPECT_GT(kRowsTop + lane->y0, 600.0f);  // a rank below the first screen
  const int up = ImGui::GetKeyIndex(ImGuiKey_UpArrow);
  for (int i = 0; i < 100; ++i) {  // far past the top: clamped at 0
    ImGui::GetIO().KeysDown[up] = true;
    frames(v, 1, ImVec2(-100, -100));
    ImGui::GetIO().KeysDown[up] = false;
    frames(v, 1, ImVec2(-100, -100));
  }
  EXPECT_EQ(v.scroll_y(), 0.0f);
}

// Pixels of the last frame filled in colour `rgb` (rectangles: each triangle is half its clipped
// bounding box), over every draw list.
double area_of(Rgb rgb) {
  const ImU32 c = IM_COL32((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, 0xFF);
  double area = 0;
  const ImDrawData* d = ImGui::GetDrawData();
  for (int i = 0; i < d->CmdListsCount; ++i) {
    const ImDrawList& l = *d->CmdLists[i];
    for (const ImDrawCmd& cmd : l.CmdBuffer) {
      for (unsigned e = 0; e + 2 < cmd.ElemCount; e += 3) {
        const ImDrawVert* v[3];
        for (unsigned k = 0; k < 3; ++k) {
          v[k] = &l.VtxBuffer[static_cast<int>(cmd.VtxOffset + l.IdxBuffer[cmd.IdxOffset + e + k])];
        }
        if (v[0]->col != c || v[1]->col != c || v[2]->col != c) continue;
        const float x0 =
            std::max(cmd.ClipRect.x, std::min({v[0]->pos.x, v[1]->pos.x, v[2]->pos.x}));
        const float x1 =
            std::min(cmd.ClipRect.z, std::max({v[0]->pos.x, v[1]->pos.x, v[2]->pos.x}));
        const float y0 =
            std::max(cmd.ClipRect.y, std::min({v[0]->pos.y, v[1]->pos.y, v[2]->pos.y}));
        const float y1 =
            std::min(cmd.ClipRect.w, std::max({v[0]->pos.y, v[1]->pos.y, v[2]->pos.y}));
        if (x1 > x0 && y1 > y0) area += static_cast<double>((x1 - x0) * (y1 - y0)) / 2;
      }
    }
  }
  return area;
}

// The 60 fps work (issue #9): llvmpipe pays for every filled pixel, so the backgrounds are filled
// at most once per pixel: the renderer clears to the lanes' colour (kBackdropColor) and the frame
// paints the background colour only where no lane is (the host window has no background of its
// own). Before, the window's background covered the display and each lane filled its row again.
TEST_F(NullRenderer, TheBackgroundsAreFilledAtMostOncePerPixel) {
  EXPECT_EQ(kBackdropColor, kLaneBackgroundColor);
  const OpenedTrace o = bucket_trace();
  const OpenedTrace ghost = small_trace();
  for (const OpenedTrace* g : {static_cast<const OpenedTrace*>(nullptr), &ghost}) {
    Viewer v(o, g);
    frames(v, 2, ImVec2(-100, -100));
    const double display = 1000.0 * 600.0;
    const double background = area_of(kBackgroundColor);
    EXPECT_EQ(area_of(kLaneBackgroundColor), 0.0);
    EXPECT_LE(background, display);
    // The gutter and the summary column alone are (170 + 300) x 600 pixels of background.
    EXPECT_GE(background, (kGutterPx + kSummaryPx) * 600.0);
  }
}

}  // namespace
}  // namespace zerosim::view
