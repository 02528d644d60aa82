// `zerosim view --screenshot` end to end: traces of shipped scenarios rendered headless (EGL
// surfaceless) and checked pixel by pixel against the layout the view model computes and the
// colours of palette.h: lanes where the layout puts them, collective colours, the memory curve,
// the capacity line's height, the OOM marker, the ghost of a second trace, the bucket fill (bar,
// flush tick, flow to its collective), stage 3 gathers and releases, determinism, and
// one-line errors for bad traces and flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "view/view_testlib.h"

namespace zerosim::view {
namespace {

using testing::Geometry;
using testing::load_png;
using testing::Png;
using testing::temp;

constexpr int kW = 1600, kH = 900;

struct Shot {
  clitest::CliRun run;
  Png png;
};

Shot shoot(const std::string& traces, const std::string& name, const std::string& flags = "") {
  const std::string out = temp(name + ".png");
  Shot s;
  s.run = clitest::run_cli("view " + traces + " --screenshot " + out + " --width " +
                           std::to_string(kW) + " --height " + std::to_string(kH) + " " + flags);
  s.png = load_png(out);
  return s;
}

class ViewRender : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    zero2_ = new std::string(testing::simulate_trace(
        "--scenario " + testing::scenario("gpt2-xl_zero2_8xa100"), "zero2"));
    zero3_ = new std::string(testing::simulate_trace(
        "--scenario " + testing::scenario("gpt2-xl_zero3_8xa100"), "zero3"));
    offload_ = new std::string(testing::simulate_trace(
        "--scenario " + testing::scenario("llama2-13b_zero2_offload_8xa100"), "offload"));
    oom_ = new std::string(testing::simulate_trace("--model llama2-7b --gpus 8 --stage 0", "oom"));
  }
  static void TearDownTestSuite() {
    delete zero2_;
    delete zero3_;
    delete offload_;
    delete oom_;
  }
  static std::string* zero2_;
  static std::string* zero3_;
  static std::string* offload_;
  static std::string* oom_;
};
std::string* ViewRender::zero2_ = nullptr;
std::string* ViewRender::zero3_ = nullptr;
std::string* ViewRender::offload_ = nullptr;
std::string* ViewRender::oom_ = nullptr;

// The colour the viewer gives a span (palette.h), for the spans the checks pick.
Rgb expected_color(const Trace& t, const Span& s) {
  if (s.comm != kNone) return kCollectiveColor[static_cast<std::size_t>(t.comms[s.comm].kind)];
  if (s.category == "forward") return kForwardColor;
  if (s.category == "backward") return kBackwardColor;
  if (s.category == "optimizer_step") return kOptimizerColor;
  return 0x000000;  // not checked
}

TEST_F(ViewRender, LanesAreWhereTheLayoutPutsThemInTheirSpansColours) {
  ASSERT_FALSE(zero2_->empty());
  const Shot shot = shoot(*zero2_, "lanes");
  ASSERT_EQ(shot.run.exit_code, 0) << shot.run.err;
  ASSERT_EQ(shot.png.width, kW);
  const Geometry g(*zero2_, kW);
  const Trace& t = g.model().trace();
  std::size_t checked = 0;
  for (const Row& row : g.rows) {
    if (row.kind != Row::Kind::Lane) continue;
    const Lane& lane = g.model().groups()[row.group].lanes[row.lane];
    // The lane's widest span with a checked colour.
    const Span* best = nullptr;
    for (std::uint32_t i : lane.spans) {
      const Span& s = t.spans[i];
      if (expected_color(t, s) != 0 && (best == nullptr || s.dur_ns > best->dur_ns)) best = &s;
    }
    if (best == nullptr ||
        g.view().x_of(best->start_ns + best->dur_ns) - g.view().x_of(best->start_ns) < 8) {
      continue;
    }
    const int x = g.x_of(best->start_ns + best->dur_ns / 2);
    const int y_span = Geometry::y(row.y0 + kSpanTopPx) + 1;
    const int y_below = Geometry::y(row.y1 - kSpanBottomPx) + 1;  // under the span: background
    EXPECT_EQ(shot.png.at(x, y_span), expected_color(t, *best))
        << lane_kind_name(lane.kind) << " lane of group " << row.group << ": " << best->name;
    EXPECT_EQ(shot.png.at(x, y_below), kLaneBackgroundColor) << lane_kind_name(lane.kind);
    EXPECT_EQ(shot.png.at(x, Geometry::y(row.y0) - 1 > 0 ? Geometry::y(row.y0) - 1 : 0) ==
                  expected_color(t, *best),
              false)
        << "the span reaches above its lane";
    ++checked;
  }
  EXPECT_GE(checked, 8u);  // compute, reduce and optimizer lanes of 4 role groups
}

TEST_F(ViewRender, CollectivesAreColouredByKind) {
  ASSERT_FALSE(zero2_->empty());
  ASSERT_FALSE(zero3_->empty());
  const Shot z2 = shoot(*zero2_, "kinds2");
  const Shot z3 = shoot(*zero3_, "kinds3");
  ASSERT_EQ(z2.run.exit_code, 0) << z2.run.err;
  ASSERT_EQ(z3.run.exit_code, 0) << z3.run.err;
  const auto color = [](CollectiveKind k) { return kCollectiveColor[static_cast<std::size_t>(k)]; };
  // Stage 2 all-reduces its buckets; stage 3 gathers parameters and reduce-scatters gradients.
  EXPECT_GT(z2.png.count(color(CollectiveKind::AllReduce)), 200u);
  EXPECT_EQ(z2.png.count(color(CollectiveKind::ReduceScatter)), 0u);
  EXPECT_GT(z3.png.count(color(CollectiveKind::AllGather)), 200u);
  EXPECT_GT(z3.png.count(color(CollectiveKind::ReduceScatter)), 200u);
}

TEST_F(ViewRender, TheMemoryCurveAndTheCapacityLineAreAtTheirHeights) {
  ASSERT_FALSE(offload_->empty());
  const Shot shot = shoot(*offload_, "memory");
  ASSERT_EQ(shot.run.exit_code, 0) << shot.run.err;
  const Geometry g(*offload_, kW);
  const auto mem = std::find_if(g.rows.begin(), g.rows.end(),
                                [](const Row& r) { return r.kind == Row::Kind::Memory; });
  ASSERT_NE(mem, g.rows.end());
  const MemoryStack& stack = g.viewer->stack_of_group(mem->group);
  ASSERT_GE(stack.peak_bytes(), stack.capacity() / 4);  // so the capacity is on the plot
  const float bottom = kRowsTop + mem->y1;
  const int yc = static_cast<int>(capacity_line_y(kRowsTop + mem->y0, bottom, stack));
  // The capacity line spans the lane area at its height, and only there.
  int on_line = 0, columns = 0;  // left of the "capacity" label
  for (int x = static_cast<int>(kGutterPx) + 2; x < kW - static_cast<int>(kSummaryPx) - 200; ++x) {
    on_line += shot.png.at(x, yc) == kCapacityColor ? 1 : 0;
    ++columns;
  }
  EXPECT_EQ(on_line, columns);
  EXPECT_NE(shot.png.at(static_cast<int>(kGutterPx) + 400, yc - 1), kCapacityColor);
  EXPECT_NE(shot.png.at(static_cast<int>(kGutterPx) + 400, yc + 2), kCapacityColor);
  // The curve: in the column of the peak's time, stacked category colours from the bottom up to
  // the peak (a column shows the largest sample in it, so even a 1 ns spike is there).
  const int xp = g.x_of(stack.peak_t());
  const int y_bottom = static_cast<int>(bottom) - 2;
  const Rgb* first = std::begin(kCategoryColor);
  const Rgb* last = std::end(kCategoryColor);
  EXPECT_NE(std::find(first, last, shot.png.at(xp, y_bottom)), last);
  const double h = bottom - 1 - (kRowsTop + mem->y0 + kMemoryTopPx);
  const int y_half = static_cast<int>(bottom - 1 -
                                      0.5 * h * static_cast<double>(stack.peak_bytes()) /
                                          static_cast<double>(stack.y_max()));
  EXPECT_NE(std::find(first, last, shot.png.at(xp, y_half)), last) << "no curve at the peak";
}

TEST_F(ViewRender, AnOutOfMemoryIsMarkedWhereItHappens) {
  ASSERT_FALSE(oom_->empty());
  const Shot shot = shoot(*oom_, "oom");
  ASSERT_EQ(shot.run.exit_code, 0) << shot.run.err;
  const Geometry g(*oom_, kW);
  const auto mem = std::find_if(g.rows.begin(), g.rows.end(),
                                [](const Row& r) { return r.kind == Row::Kind::Memory; });
  ASSERT_NE(mem, g.rows.end());
  const auto& oom = g.viewer->stack_of_group(mem->group).oom();
  ASSERT_TRUE(oom.has_value());
  const int xo = g.x_of(oom->t);
  EXPECT_EQ(shot.png.at(xo, Geometry::y(mem->y0) + 4), kOomColor);
  EXPECT_EQ(shot.png.at(xo, Geometry::y(mem->y1) - 3), kOomColor);
  // The zero-2 run has no OOM: no marker colour anywhere.
  const Shot fine = shoot(*zero2_, "no_oom");
  EXPECT_EQ(fine.png.count(kOomColor), 0u);
}

TEST_F(ViewRender, ASecondTraceIsDrawnAsAGhostInTheSameLanes) {
  const std::string measured = temp("measured.json");
  const clitest::CliRun v = clitest::run_cli(
      "validate --model gpt2-small --gpus 4 --gpus-per-node 4 --stage 2 --precision fp16 "
      "--no-data --output " +
      measured);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const std::string predicted = testing::simulate_trace(
      "--model gpt2-small --gpus 4 --gpus-per-node 4 --stage 2 --precision fp16", "predicted");
  ASSERT_FALSE(predicted.empty());
  const Shot alone = shoot(measured, "alone");
  const Shot both = shoot(measured + " " + predicted, "ghost");
  ASSERT_EQ(both.run.exit_code, 0) << both.run.err;
  EXPECT_EQ(alone.png.count(kGhostColor), 0u);
  EXPECT_GT(both.png.count(kGhostColor), 500u);
  // The ghost strip lies at the bottom of the lanes, under the measured spans.
  const Geometry g(measured, kW);
  const Row& compute = g.rows[1];
  ASSERT_EQ(compute.kind, Row::Kind::Lane);
  int strip = 0, span_band = 0;
  for (int x = static_cast<int>(kGutterPx); x < kW - static_cast<int>(kSummaryPx); ++x) {
    strip += both.png.at(x, Geometry::y(compute.y1) - 3) == kGhostColor ? 1 : 0;
    span_band += both.png.at(x, Geometry::y(compute.y0 + kSpanTopPx) + 1) == kGhostColor ? 1 : 0;
  }
  EXPECT_GT(strip, 20);
  EXPECT_EQ(span_band, 0);
}

// The first row of `kind` in the layout, or nullptr.
const Row* first_row(const Geometry& g, Row::Kind kind) {
  const auto it =
      std::find_if(g.rows.begin(), g.rows.end(), [&](const Row& r) { return r.kind == kind; });
  return it == g.rows.end() ? nullptr : &*it;
}

TEST_F(ViewRender, BucketFillsTheirFlushAndTheFlowToTheCollectiveArePainted) {
  ASSERT_FALSE(zero2_->empty());
  const Shot shot = shoot(*zero2_, "buckets");
  ASSERT_EQ(shot.run.exit_code, 0) << shot.run.err;
  const Geometry g(*zero2_, kW);
  const Row* row = first_row(g, Row::Kind::Buckets);
  ASSERT_NE(row, nullptr);
  const RankGroup& group = g.model().groups()[row->group];
  ASSERT_FALSE(group.buckets.empty());
  const BucketFill& f = group.buckets.front();
  ASSERT_NE(f.collective, kNone);
  ASSERT_NE(f.flush_ns, kNoTime);
  // The bar: mostly fill colour (its label's glyphs take the rest) between its ends.
  const int x0 = g.x_of(f.start_ns) + 1, x1 = g.x_of(f.end_ns) - 2;
  ASSERT_GT(x1 - x0, 20) << "the first fill is too narrow to check at this width";
  const int y0 = Geometry::y(row->y0) + 2, y1 = Geometry::y(row->y1) - 3;
  std::size_t fill = 0, area = 0;
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      fill += shot.png.at(x, y) == kBucketFillColor ? 1 : 0;
      ++area;
    }
  }
  EXPECT_GT(fill, area / 2);
  // Nothing of it before the first copy.
  for (int x = static_cast<int>(kGutterPx); x < g.x_of(f.start_ns) - 1; ++x) {
    ASSERT_NE(shot.png.at(x, y0 + 3), kBucketFillColor) << "x " << x;
  }
  // The flush tick, on the row's bottom pixels (below every bar; the flow line rises from the
  // row's middle, so its anti-aliased edge stays above).
  const int xf = g.x_of(f.flush_ns);
  EXPECT_EQ(shot.png.at(xf, Geometry::y(row->y1) - 2), kBucketFlushColor);
  // The flow's tip: centred on the collective's start, in the middle of the collective's lane.
  const Span& coll = g.model().trace().spans[f.collective];
  const Row* lane = nullptr;
  for (const Row& r : g.rows) {
    if (r.kind == Row::Kind::Lane && r.group == row->group &&
        group.lanes[r.lane].kind == lane_of(coll)) {
      lane = &r;
    }
  }
  ASSERT_NE(lane, nullptr);
  const int tip_x = g.x_of(coll.start_ns);
  const int tip_y = static_cast<int>(kRowsTop + (lane->y0 + lane->y1) / 2);
  EXPECT_EQ(shot.png.at(tip_x - 1, tip_y - 1), kFlowColor);
  EXPECT_EQ(shot.png.at(tip_x, tip_y), kFlowColor);
  // The stage 2 run has no stage 3 parameter row.
  EXPECT_EQ(first_row(g, Row::Kind::Params), nullptr);
  EXPECT_EQ(shot.png.count(kGatherColor), 0u);
}

TEST_F(ViewRender, Stage3GathersAndReleasesAreMarkedInTheirRow) {
  ASSERT_FALSE(zero3_->empty());
  const Shot shot = shoot(*zero3_, "params");
  ASSERT_EQ(shot.run.exit_code, 0) << shot.run.err;
  const Geometry g(*zero3_, kW);
  const Row* row = first_row(g, Row::Kind::Params);
  ASSERT_NE(row, nullptr);
  const RankGroup& group = g.model().groups()[row->group];
  const auto gather = std::find_if(group.params.begin(), group.params.end(), [](const auto& e) {
    return e.kind == ParamEvent::Kind::Gather;
  });
  const auto release = std::find_if(group.params.begin(), group.params.end(), [](const auto& e) {
    return e.kind == ParamEvent::Kind::Release;
  });
  ASSERT_NE(gather, group.params.end());
  ASSERT_NE(release, group.params.end());
  // Gathers in the top half, releases in the bottom half, at their times.
  const int top = Geometry::y(row->y0) + 2, bottom = Geometry::y(row->y1) - 3;
  EXPECT_EQ(shot.png.at(g.x_of(gather->t), top), kGatherColor);
  EXPECT_EQ(shot.png.at(g.x_of(release->t), bottom), kReleaseColor);
  EXPECT_NE(shot.png.at(g.x_of(gather->t), bottom), kGatherColor);
  // Both only in that row.
  std::size_t in_row = 0;
  for (int y = Geometry::y(row->y0); y < Geometry::y(row->y1); ++y) {
    for (int x = 0; x < kW; ++x) in_row += shot.png.at(x, y) == kGatherColor ? 1 : 0;
  }
  EXPECT_GT(in_row, 20u);
  EXPECT_EQ(in_row, shot.png.count(kGatherColor));
}

// On a real stage 3 run (GPT-2 XL at 8 ranks), releases name the parameters they free: most are
// matched to the all-gather that fetched them, each such gather started before the release, and
// the first layer's attention weights are released by name.
TEST_F(ViewRender, Stage3ReleasesNameTheParametersOfARealRun) {
  ASSERT_FALSE(zero3_->empty());
  const Geometry g(*zero3_, kW);
  const Row* row = first_row(g, Row::Kind::Params);
  ASSERT_NE(row, nullptr);
  const RankGroup& group = g.model().groups()[row->group];
  const Trace& t = g.model().trace();
  std::size_t releases = 0, named = 0;
  bool c_attn = false;
  for (const ParamEvent& e : group.params) {
    if (e.kind != ParamEvent::Kind::Release) continue;
    ++releases;
    named += e.released.empty() ? 0 : 1;
    for (const std::uint32_t s : e.released) {
      EXPECT_LE(t.spans[s].start_ns, e.t) << t.spans[s].name;
      c_attn = c_attn || t.spans[s].name == "fetch fwd transformer.h.0.attn.c_attn: 2 params";
    }
  }
  ASSERT_GT(releases, 100u);
  EXPECT_GT(named * 4, releases * 3) << named << " of " << releases << " releases named";
  EXPECT_TRUE(c_attn);
}

TEST_F(ViewRender, ScreenshotsAreDeterministic) {
  const Shot a = shoot(*zero3_, "det_a", "--zoom 8 --at-time 100000000");
  const Shot b = shoot(*zero3_, "det_b", "--zoom 8 --at-time 100000000 --frames 5");
  ASSERT_EQ(a.run.exit_code, 0) << a.run.err;
  EXPECT_EQ(clitest::read_all(temp("det_a.png")), clitest::read_all(temp("det_b.png")));
  const Shot whole = shoot(*zero3_, "det_whole");
  EXPECT_NE(clitest::read_all(temp("det_a.png")), clitest::read_all(temp("det_whole.png")));
}

TEST_F(ViewRender, RankSelectsOneLaneGroup) {
  const Shot one = shoot(*zero2_, "rank2", "--rank 2");
  ASSERT_EQ(one.run.exit_code, 0) << one.run.err;
  const Shot all = shoot(*zero2_, "ranks");
  EXPECT_LT(one.png.count(kLaneBackgroundColor), all.png.count(kLaneBackgroundColor) / 3);
  clitest::expect_one_line_error("view " + *zero2_ + " --screenshot " + temp("x.png") + " --rank 7",
                                 "--rank: expected a traced rank of");
}

TEST_F(ViewRender, ABadTraceRendersAnErrorPanelAndExitsWithOneLine) {
  const std::string bad = temp("bad.json");
  {
    std::ofstream f(bad);
    f << "{\"format\": \"zerosim-trace\", \"version\": 99}";
  }
  const Shot shot = shoot(bad, "bad");
  EXPECT_EQ(shot.run.exit_code, 1);
  EXPECT_EQ(std::count(shot.run.err.begin(), shot.run.err.end(), '\n'), 1) << shot.run.err;
  EXPECT_NE(shot.run.err.find("version"), std::string::npos) << shot.run.err;
  EXPECT_GT(shot.png.count(0x3A1E1E), 10000u);  // the error panel
  const Shot missing = shoot(temp("does_not_exist.json"), "missing");
  EXPECT_EQ(missing.run.exit_code, 1);
  EXPECT_EQ(std::count(missing.run.err.begin(), missing.run.err.end(), '\n'), 1);
  const Shot garbage = shoot(std::string(ZEROSIM_SOURCE_DIR) + "/README.md", "garbage");
  EXPECT_EQ(garbage.run.exit_code, 1);
}

// The picture never replaces what it shows, and a failed write is an error: `view T.json
// --screenshot T.json` turned the trace into a PNG, and --screenshot /dev/full said "wrote", both
// with exit 0.
TEST_F(ViewRender, AScreenshotNeitherReplacesItsInputNorHidesAFailedWrite) {
  const std::string trace = temp("own_input.json");
  std::filesystem::copy_file(*zero2_, trace, std::filesystem::copy_options::overwrite_existing);
  const auto before = std::filesystem::file_size(trace);
  const clitest::CliRun self = clitest::run_cli("view " + trace + " --screenshot " + trace);
  EXPECT_EQ(self.exit_code, 1) << self.err;
  EXPECT_EQ(self.err, "--screenshot: expected a file other than the input \"" + trace +
                          "\", got \"" + trace + "\" (it would be replaced by the picture)\n");
  EXPECT_EQ(std::filesystem::file_size(trace), before);
  const clitest::CliRun full = clitest::run_cli("view " + trace + " --screenshot /dev/full");
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(full.err,
            "zerosim view: --screenshot: write to /dev/full failed: No space left on device\n");
  EXPECT_TRUE(full.out.empty()) << full.out;
}

TEST_F(ViewRender, TheWindowRunsUnderXvfbAndWithoutADisplaySaysSo) {
  if (std::system("command -v xvfb-run >/dev/null 2>&1") != 0) GTEST_SKIP() << "no xvfb-run";
  // Without a display the window cannot open: one line, non-zero. Under Xvfb it runs and closes.
  const std::string cli = ZEROSIM_CLI_PATH;
  const int rc = std::system(("env -u DISPLAY " + cli + " view " + *zero2_ +
                              " --frames 2 >/dev/null 2>" + temp("nodisplay.err"))
                                 .c_str());
  EXPECT_NE(rc, 0);
  const std::string err = clitest::read_all(temp("nodisplay.err"));
  EXPECT_NE(err.find("cannot open a window"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  const int ok = std::system(
      ("xvfb-run -a " + cli + " view " + *zero2_ + " --frames 5 >" + temp("xvfb.out") + " 2>&1")
          .c_str());
  EXPECT_EQ(ok, 0) << clitest::read_all(temp("xvfb.out"));
  EXPECT_NE(clitest::read_all(temp("xvfb.out")).find("5 frames in a window"), std::string::npos)
      << clitest::read_all(temp("xvfb.out"));
}

TEST_F(ViewRender, GarbageFlagsAreOneLineErrors) {
  const std::string shot = " --screenshot " + temp("g.png");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --width abc", "--width");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --width 10", "--width");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --height 99999", "--height");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --zoom 0", "--zoom");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --zoom nan", "--zoom");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --at-time -5", "--at-time");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --frames 0", "--frames");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --rank x", "--rank");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --bogus 1", "--bogus");
  clitest::expect_one_line_error("view" + shot, "expected TRACE [TRACE2]");
  clitest::expect_one_line_error("view a b c" + shot, "expected TRACE [TRACE2]");
  // What-if mode's flags.
  const std::string sc = testing::scenario("gpt2-xl_zero2_8xa100");
  clitest::expect_one_line_error("view " + sc + shot + " --set stage=4",
                                 "--set: stage: expected an integer 0..3, got \"4\"");
  clitest::expect_one_line_error("view " + sc + shot + " --set stage",
                                 "--set: expected KNOB=VALUE");
  clitest::expect_one_line_error("view " + sc + shot + " --set =3", "--set: expected KNOB=VALUE");
  // A knob twice: the last one won without a word (a hostile-input pass).
  clitest::expect_one_line_error(
      "view " + sc + shot + " --set stage=2,stage=3",
      "--set: expected each knob once, got stage twice in \"stage=2,stage=3\"");
  clitest::expect_one_line_error("view " + sc + shot + " --set stages=1",
                                 "--set: stages: expected a knob (stage, ");
  clitest::expect_one_line_error("view " + sc + shot + " --set offload_param=true",
                                 "/zero_optimization/offload_param: expected stage 3");
  clitest::expect_one_line_error("view " + sc + shot + " --set gpu=A100-81GB", "A100-81GB");
  clitest::expect_one_line_error("view " + *zero2_ + shot + " --set stage=1",
                                 "--set: expected a scenario (what-if mode) to change, got none");
  clitest::expect_one_line_error("view --scenario " + sc + " " + *zero2_ + shot,
                                 "expected no trace with a scenario (what-if mode)");
  clitest::expect_one_line_error("view --scenario /nonexistent.json" + shot, "/nonexistent.json");
  // What-if mode from the planner's flags: refused as simulate refuses them, in one line.
  const std::string xl = " --model gpt2-xl --gpus 8";
  clitest::expect_one_line_error("view" + xl + " --stage 5" + shot,
                                 "--stage: expected an integer 0..3, got \"5\"");
  clitest::expect_one_line_error("view" + xl + shot, "which ZeRO stage?");
  clitest::expect_one_line_error("view --model gpt2-xxl --gpus 8 --stage 2" + shot, "gpt2-xxl");
  clitest::expect_one_line_error("view --model gpt2-xl --gpus 0 --stage 2" + shot, "--gpus");
  clitest::expect_one_line_error("view" + xl + " --stage 2 --micro-batch x" + shot,
                                 "--micro-batch");
  clitest::expect_one_line_error("view" + xl + " --stage 2 --zero-init" + shot,
                                 "--zero-init: expected ZeRO stage 3");
  clitest::expect_one_line_error("view" + xl + " --stage 2 --steps 0" + shot, "--steps");
  clitest::expect_one_line_error("view" + xl + " --stage 2 --set stage=9" + shot,
                                 "--set: stage: expected an integer 0..3");
  clitest::expect_one_line_error("view " + *zero2_ + xl + " --stage 2" + shot,
                                 "expected no trace with the planner's flags (what-if mode)");
  const clitest::CliRun help = clitest::run_cli("view --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--screenshot FILE"), std::string::npos);
  EXPECT_NE(help.out.find("--set KNOB=V,..."), std::string::npos);
  EXPECT_NE(help.out.find("--model NAME"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--micro-batch"), std::string::npos);
  EXPECT_NE(help.out.find("--zero-init "), std::string::npos);
}

// What-if mode from the planner's flags (`plan`/`simulate`'s, through their parser): the run they
// describe opens with the knobs panel; a switch (--zero-init) takes no value, so the flag after it
// is still read; --set changes it with the flags' run as the ghost; with a scenario the flags
// override its values and say so, as simulate does.
TEST_F(ViewRender, WhatIfModeOpensFromThePlannersFlags) {
  const std::string xl = "--model gpt2-xl --gpus 8 --gpu A100-80GB --micro-batch 4";
  const Shot s2 = shoot(xl + " --stage 2", "flags_zero2");
  ASSERT_EQ(s2.run.exit_code, 0) << s2.run.err;
  EXPECT_TRUE(s2.run.err.empty()) << s2.run.err;
  EXPECT_EQ(s2.png.count(kGhostColor), 0u);
  EXPECT_EQ(s2.png.count(kGatherColor), 0u);
  const Shot s3 = shoot(xl + " --stage 3 --zero-init --steps 2", "flags_zero3");
  ASSERT_EQ(s3.run.exit_code, 0) << s3.run.err;
  EXPECT_GT(s3.png.count(kGatherColor), 20u);
  const Shot changed = shoot(xl + " --stage 2", "flags_changed", "--set stage=3");
  ASSERT_EQ(changed.run.exit_code, 0) << changed.run.err;
  EXPECT_GT(changed.png.count(kGhostColor), 500u);
  EXPECT_GT(changed.png.count(kGatherColor), 20u);
  const std::string sc = testing::scenario("gpt2-xl_zero2_8xa100");
  const Shot plain = shoot(sc, "flags_scenario");
  const Shot over = shoot(sc, "flags_override", "--gpus 16");
  ASSERT_EQ(over.run.exit_code, 0) << over.run.err;
  EXPECT_NE(over.run.err.find("note: --gpus: overrides"), std::string::npos) << over.run.err;
  EXPECT_NE(clitest::read_all(temp("flags_override.png")),
            clitest::read_all(temp("flags_scenario.png")));
}

// What-if mode: a scenario opens the knobs panel over its simulated run; --set re-simulates and
// the scenario's own run becomes the ghost in the same lanes.
TEST_F(ViewRender, WhatIfModeDrawsThePreviousConfigurationAsAGhost) {
  const std::string sc = testing::scenario("gpt2-xl_zero2_8xa100");
  const Shot alone = shoot(sc, "whatif_alone");
  ASSERT_EQ(alone.run.exit_code, 0) << alone.run.err;
  EXPECT_EQ(alone.png.count(kGhostColor), 0u);
  const Shot changed = shoot("--scenario " + sc, "whatif_changed", "--set stage=3");
  ASSERT_EQ(changed.run.exit_code, 0) << changed.run.err;
  EXPECT_GT(changed.png.count(kGhostColor), 500u);
  // Stage 3 now: the parameter row's gathers are drawn (stage 2 had none).
  EXPECT_EQ(alone.png.count(kGatherColor), 0u);
  EXPECT_GT(changed.png.count(kGatherColor), 20u);
  EXPECT_NE(clitest::read_all(temp("whatif_alone.png")),
            clitest::read_all(temp("whatif_changed.png")));
  // Deterministic: the panel shows no wall times in a screenshot.
  const Shot again = shoot("--scenario " + sc, "whatif_again", "--set stage=3");
  EXPECT_EQ(clitest::read_all(temp("whatif_again.png")),
            clitest::read_all(temp("whatif_changed.png")));
}

}  // namespace
}  // namespace zerosim::view
