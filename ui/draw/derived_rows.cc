// The bucket fill and stage 3 parameter rows: see derived_rows.h. Bars and ticks are rectangles
// (no anti-aliasing), so the pixel tests find palette.h's exact colours.
#include "draw/derived_rows.h"

#include <algorithm>
#include <cmath>

#include "draw/palette.h"
#include "draw/text_format.h"

namespace zerosim::view {
namespace {

ImU32 col(Rgb rgb) { return IM_COL32((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, 255); }

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string fill_title(const BucketFill& f) {
  return "bucket " + std::to_string(f.bucket) + ": " + plural(f.copies.size(), "param", "params") +
         ", " + format_bytes(f.bytes);
}

std::string describe_event(const Trace& trace, const ParamEvent& e) {
  if (e.kind == ParamEvent::Kind::Release) {
    // The parameters freed, named by the all-gathers that fetched them (a few, then a count).
    constexpr std::size_t kNamed = 4;
    std::string params;
    for (std::size_t i = 0; i < e.released.size() && i < kNamed; ++i) {
      params += "\n  " + gathered_params_name(trace.spans[e.released[i]]);
    }
    if (e.released.size() > kNamed) {
      params += "\n  and " + plural(e.released.size() - kNamed, "more gather", "more gathers");
    }
    return "release " + format_bytes(e.bytes) + " of gathered parameters at " +
           format_duration(e.t) + params + "\n" + format_bytes(e.gathered_after) +
           " still gathered";
  }
  const Span& s = trace.spans[e.span];
  return "gather " + s.name + "\nall_gather " + format_bytes(e.bytes) + ", usable at " +
         format_duration(e.t) + " (took " + format_duration(s.dur_ns) + ")";
}

}  // namespace

const BucketFill* fill_at(const RankGroup& group, const TimeView& view, double x) {
  const SimTime lo = view.t_at(x - 2), hi = view.t_at(x + 2);
  const BucketFill* best = nullptr;
  for (const BucketFill& f : group.buckets) {  // a few per step: a scan is enough
    if (f.start_ns > hi || f.end_ns < lo) continue;
    // Prefer the fill actually under x over one only within the slop.
    const SimTime t = view.t_at(x);
    if (best == nullptr || (f.start_ns <= t && t <= f.end_ns)) best = &f;
  }
  return best;
}

void draw_bucket_row(ImDrawList* dl, const Trace& trace, const RankGroup& group,
                     const TimeView& view, RowBox box,
                     const std::function<float(const Span&)>& collective_y,
                     std::vector<FlowLine>& flows) {
  const SimTime lo = view.start_ns(), hi = view.end_ns();
  const float mid = std::floor((box.y0 + box.y1) / 2);
  for (const BucketFill& f : group.buckets) {
    const bool fill_visible = f.end_ns >= lo && f.start_ns <= hi;
    const Span* coll = f.collective == kNone ? nullptr : &trace.spans[f.collective];
    if (fill_visible) {
      const float x0 = box.left + static_cast<float>(std::max(view.x_of(f.start_ns), -1.0));
      const float x1 = box.left + static_cast<float>(std::min(view.x_of(f.end_ns), 1e6));
      // One pixel of background between back-to-back fills, so each flush reads as its own bar.
      const float bx0 = std::floor(x0), bx1 = std::floor(x1) - (x1 - x0 > 4 ? 1 : 0);
      dl->AddRectFilled(ImVec2(bx0, box.y0 + 2), ImVec2(std::max(bx1, bx0 + 1), box.y1 - 3),
                        col(kBucketFillColor));
      const float tx0 = std::max(x0, box.left), tx1 = std::min(x1, box.right);
      if (tx1 - tx0 > 40) {
        const std::string title = fill_title(f);
        const ImVec4 clip(tx0 + 2, box.y0, tx1 - 2, box.y1);
        dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(tx0 + 2, box.y0 + 1),
                    col(0xF0F0F0), title.c_str(), nullptr, 0.0f, &clip);
      }
    }
    if (f.flush_ns != kNoTime && f.flush_ns >= lo && f.flush_ns <= hi) {
      const float xf = std::floor(box.left + static_cast<float>(view.x_of(f.flush_ns)));
      dl->AddRectFilled(ImVec2(xf, box.y0), ImVec2(xf + 2, box.y1 - 1), col(kBucketFlushColor));
    }
    if (coll == nullptr) continue;
    // The flow runs from the fill's end to the collective's start: show it when either end is
    // on screen (a line to an off-screen end is clipped by the lane area).
    const bool coll_visible = coll->start_ns >= lo && coll->start_ns <= hi;
    if (!fill_visible && !coll_visible) continue;
    const float ty = collective_y(*coll);
    if (ty < 0) continue;
    flows.push_back(
        {ImVec2(box.left + static_cast<float>(std::clamp(view.x_of(f.end_ns), -1e5, 1e5)), mid),
         ImVec2(box.left + static_cast<float>(std::clamp(view.x_of(coll->start_ns), -1e5, 1e5)),
                ty)});
  }
}

void draw_flows(ImDrawList* dl, const std::vector<FlowLine>& flows) {
  for (const FlowLine& f : flows) {
    dl->AddLine(f.from, f.to, col(kFlowColor), 1.5f);
    const float h = kFlowTipPx / 2;
    const ImVec2 tip(std::floor(f.to.x), std::floor(f.to.y));
    dl->AddRectFilled(ImVec2(tip.x - h, tip.y - h), ImVec2(tip.x + h, tip.y + h), col(kFlowColor));
  }
}

void draw_params_row(ImDrawList* dl, const RankGroup& group, const TimeView& view, RowBox box) {
  const float mid = std::floor((box.y0 + box.y1) / 2);
  const auto& ev = group.params;
  std::size_t i = first_at_or_after(ev, view.start_ns(), [](const ParamEvent& e) { return e.t; });
  // Per pixel column, one tick per kind: a burst of thousands of gathers costs one rectangle.
  float last_x[2] = {-1e9f, -1e9f};
  for (; i < ev.size() && ev[i].t <= view.end_ns(); ++i) {
    const int k = ev[i].kind == ParamEvent::Kind::Gather ? 0 : 1;
    const float x = std::floor(box.left + static_cast<float>(view.x_of(ev[i].t)));
    if (x == last_x[k]) continue;
    last_x[k] = x;
    if (k == 0) {
      dl->AddRectFilled(ImVec2(x, box.y0 + 1), ImVec2(x + 1, mid), col(kGatherColor));
    } else {
      dl->AddRectFilled(ImVec2(x, mid), ImVec2(x + 1, box.y1 - 2), col(kReleaseColor));
    }
  }
}

std::string describe_bucket_at(const Trace& trace, const RankGroup& group, const TimeView& view,
                               double x, bool full) {
  const BucketFill* f = fill_at(group, view, x);
  if (f == nullptr) return {};
  std::string s = fill_title(*f) + " (step " + std::to_string(f->step) + ", micro-step " +
                  std::to_string(f->micro_step) + ")\nfilled " + format_duration(f->start_ns) +
                  " to " + format_duration(f->end_ns) + " (" +
                  format_duration(f->end_ns - f->start_ns) + ")";
  if (f->flush_ns != kNoTime) s += ", flushed at " + format_duration(f->flush_ns);
  if (f->collective != kNone) {
    const Span& c = trace.spans[f->collective];
    s += "\nfeeds " + c.name;
    if (c.comm != kNone && c.comm < trace.comms.size()) {
      s += " (" + std::string(collective_name(trace.comms[c.comm].kind)) + " " +
           format_bytes(trace.comms[c.comm].bytes) + ")";
    }
  }
  const std::size_t shown = std::min<std::size_t>(f->copies.size(), full ? 64 : 8);
  s += "\nparams:";
  for (std::size_t i = 0; i < shown; ++i) {
    s += (full ? "\n  " : (i == 0 ? " " : ", ")) + bucket_param_name(trace.spans[f->copies[i]]);
  }
  if (shown < f->copies.size()) {
    s += (full ? "\n  " : ", ") + std::string("... ") + std::to_string(f->copies.size() - shown) +
         " more";
  }
  return s;
}

std::string describe_params_at(const Trace& trace, const RankGroup& group, const TimeView& view,
                               double x) {
  const SimTime lo = view.t_at(x - 2), hi = view.t_at(x + 2) + 1;
  const auto& ev = group.params;
  std::size_t i = first_at_or_after(ev, lo, [](const ParamEvent& e) { return e.t; });
  std::size_t gathers = 0, releases = 0;
  Bytes gathered = 0, released = 0;
  const std::size_t first = i;
  for (; i < ev.size() && ev[i].t <= hi; ++i) {
    if (ev[i].kind == ParamEvent::Kind::Gather) {
      ++gathers;
      gathered += ev[i].bytes;
    } else {
      ++releases;
      released += ev[i].bytes;
    }
  }
  if (gathers + releases == 0) return {};
  if (gathers + releases == 1) return describe_event(trace, ev[first]);
  return plural(gathers, "gather", "gathers") + " (" + format_bytes(gathered) + "), " +
         plural(releases, "release", "releases") + " (" + format_bytes(released) + ") within " +
         format_duration(hi - lo) + ": zoom in\nfirst: " + describe_event(trace, ev[first]);
}

}  // namespace zerosim::view
