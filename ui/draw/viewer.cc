// One frame of the viewer: see viewer.h. Geometry and colours come from palette.h, so the pixel
// tests can find what this file draws.
#include "draw/viewer.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "draw/derived_rows.h"
#include "draw/palette.h"
#include "draw/text_format.h"

namespace zerosim::view {
namespace {

ImU32 col(Rgb rgb, int alpha = 255) {
  return IM_COL32((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, alpha);
}

const char* kind_abbrev(CollectiveKind k) {
  static constexpr const char* kNames[kCollectiveKindCount] = {"AR", "R", "BC", "AG", "RS"};
  return kNames[static_cast<std::size_t>(k)];
}

std::optional<CollectiveKind> collective_of(const Trace& t, const Span& s) {
  if (s.comm == kNone || s.comm >= t.comms.size()) return std::nullopt;
  return t.comms[s.comm].kind;
}

Rgb span_color(const Trace& t, const Span& s) {
  if (auto k = collective_of(t, s)) return kCollectiveColor[static_cast<std::size_t>(*k)];
  if (s.category == "forward") return kForwardColor;
  if (s.category == "backward") return kBackwardColor;
  if (s.category == "recompute") return kRecomputeColor;
  if (s.category == "optimizer_step") return kOptimizerColor;
  if (s.category == "copy" || s.category == "copy_to_bucket" || s.category == "write_back" ||
      s.category == "host_to_device" || s.category == "device_to_host") {
    return kCopyColor;
  }
  return kOtherColor;
}

std::string span_label(const Trace& t, const Span& s) {
  // The comm record's S: a count-only measured run leaves the span's own bytes at 0.
  if (auto k = collective_of(t, s)) {
    return std::string(kind_abbrev(*k)) + " " + format_bytes(t.comms[s.comm].bytes);
  }
  return s.name;
}

// Text clipped to [x0, x1]; nothing when not even a few characters fit.
void clipped_text(ImDrawList* dl, float x0, float x1, float y, ImU32 c, const std::string& text) {
  if (x1 - x0 < 12) return;
  const ImVec4 clip(x0 + 2, y, x1 - 2, y + ImGui::GetFontSize());
  dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(x0 + 2, y), c, text.c_str(), nullptr,
              0.0f, &clip);
}

// ": activation 12.0 GiB, param16 2.90 GiB": the two largest categories of a breakdown.
std::string top_categories(const CategoryBytes& by_category) {
  std::array<std::size_t, kCategoryCount> order{};
  for (std::size_t k = 0; k < kCategoryCount; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return by_category[a] > by_category[b]; });
  std::string s;
  for (std::size_t i = 0; i < 2 && by_category[order[i]] > 0; ++i) {
    s += (i == 0 ? ": " : ", ") +
         std::string(category_name(static_cast<BufferCategory>(order[i]))) + " " +
         format_bytes(by_category[order[i]]);
  }
  return s;
}

}  // namespace

float capacity_line_y(float row_top, float row_bottom, const MemoryStack& stack) {
  const float h = row_bottom - 1 - (row_top + kMemoryTopPx);
  const double frac = static_cast<double>(stack.capacity()) / static_cast<double>(stack.y_max());
  return std::round(row_bottom - 1 - static_cast<float>(frac * static_cast<double>(h)));
}

OpenedTrace open_trace(const std::string& path) {
  OpenedTrace o;
  o.path = path;
  Result<Trace> r = read_trace_file(path);
  if (r.ok()) {
    o.trace = std::move(r.value());
  } else {
    for (const Diagnostic& d : r.diagnostics().items()) o.errors.push_back(d.to_string());
    if (o.errors.empty()) o.errors.push_back(path + ": cannot read the trace");
  }
  return o;
}

Viewer::Viewer(const OpenedTrace& main, const OpenedTrace* ghost) : main_(&main), ghost_(ghost) {
  errors_ = main.errors;
  if (ghost != nullptr) errors_.insert(errors_.end(), ghost->errors.begin(), ghost->errors.end());
  if (!main.trace || !errors_.empty()) return;
  model_ = std::make_unique<TimelineModel>(*main.trace);
  for (const RankGroup& g : model_->groups()) {
    stacks_.emplace_back(main.trace->ranks[g.members.front()], main.trace->meta.device_capacity);
  }
  summary_ = summarize(*main.trace);
  if (ghost != nullptr && ghost->trace) {
    ghost_model_ = std::make_unique<TimelineModel>(*ghost->trace);
    pairing_ = pair_spans(*main.trace, *ghost->trace);
    ghost_offset_ns_ = model_->begin_ns() - ghost_model_->begin_ns();
  }
}

bool Viewer::show_only_rank(std::uint32_t rank) {
  if (!model_) return false;
  const int g = model_->group_of_rank(rank);
  if (g < 0) return false;
  shown_ = {static_cast<std::uint32_t>(g)};
  return true;
}

std::optional<ViewerState> Viewer::state() const {
  if (!model_) return std::nullopt;
  ViewerState s;
  s.start_ns = view_.start_ns();
  s.end_ns = view_.end_ns();
  for (std::uint32_t g = 0; g < model_->groups().size(); ++g) {
    if (model_->expanded(g)) {
      s.expanded_ranks.push_back(model_->trace().ranks[model_->groups()[g].members.front()].rank);
    }
  }
  s.scroll_y = scroll_y_;
  return s;
}

void Viewer::restore(const ViewerState& state, float display_width) {
  if (!model_) return;
  reset_view(display_width);
  view_.fit(state.start_ns, state.end_ns);
  for (const std::uint32_t rank : state.expanded_ranks) {
    const int g = model_->group_of_rank(rank);
    if (g >= 0) model_->set_expanded(static_cast<std::uint32_t>(g), true);
  }
  scroll_y_ = state.scroll_y;  // draw_timeline clamps it to the new rows
}

float Viewer::lanes_right(float display_width) {
  return std::max(kGutterPx + 50, display_width - kSummaryPx);
}

void Viewer::set_search(const std::string& text) {
  search_.fill('\0');
  text.copy(search_.data(), search_.size() - 1);
}

void Viewer::reset_view(float display_width) {
  if (!model_) return;
  view_.set_width(lanes_right(display_width) - kGutterPx);
  view_.set_bounds(model_->begin_ns(), model_->end_ns());
  view_.fit(model_->begin_ns(), model_->end_ns());
  view_initialised_ = true;
}

const MemoryStack& Viewer::stack_of_group(std::uint32_t group) const { return stacks_.at(group); }

void Viewer::frame(bool interactive) {
  const ImVec2 size = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(size);
  ImGui::PushStyleColor(ImGuiCol_WindowBg, col(kBackgroundColor));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0.0f);
  // No window background: the renderer clears to kBackdropColor (the lanes' background) and the
  // frame paints kBackgroundColor only where no lane is, so no pixel is filled twice for a
  // background (llvmpipe pays several ns per filled pixel: issue #9's 60 fps).
  ImGui::Begin("zerosim", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus |
                   ImGuiWindowFlags_NoBackground);
  if (failed()) {
    draw_errors(size.x, size.y);
  } else {
    draw_timeline(size.x, size.y, interactive);
    draw_summary(lanes_right(size.x), size.y);
    tooltip_.clear();
    if (interactive) draw_tooltip(size.x);
  }
  ImGui::End();
  ImGui::PopStyleVar();
  ImGui::PopStyleColor();
}

void Viewer::draw_errors(float width, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(ImVec2(0, 0), ImVec2(width, height), false);  // the window has no background
  dl->AddRectFilled(ImVec2(0, 0), ImVec2(width, height), col(kBackgroundColor));
  dl->PopClipRect();
  const float x0 = width * 0.1f, y0 = height * 0.2f;
  dl->AddRectFilled(ImVec2(x0, y0), ImVec2(width * 0.9f, height * 0.8f), col(0x3A1E1E));
  dl->AddRect(ImVec2(x0, y0), ImVec2(width * 0.9f, height * 0.8f), col(kCapacityColor));
  ImGui::SetCursorPos(ImVec2(x0 + 12, y0 + 12));
  ImGui::PushTextWrapPos(width * 0.9f - 12);
  ImGui::TextColored(ImVec4(1, 0.5f, 0.5f, 1), "Cannot open the trace");
  for (const std::string& e : errors_) ImGui::TextUnformatted(e.c_str());
  ImGui::PopTextWrapPos();
}

void Viewer::draw_timeline(float width, float height, bool interactive) {
  const Trace& trace = model_->trace();
  const float left = kGutterPx;
  const float right = lanes_right(width);
  if (!view_initialised_) reset_view(width);
  view_.set_width(right - left);
  if (interactive) handle_input();
  LayoutOptions layout;
  rows_ = layout_rows(*model_, shown_, layout);
  const float content = rows_.empty() ? 0 : rows_.back().y1;
  scroll_y_ = std::clamp(scroll_y_, 0.0f, std::max(0.0f, content - (height - kRowsTop) + 20));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = col(0xE0E0E0);
  const ImU32 dim_text = col(0xA0A0A0);
  // The backdrop is the lanes' colour: the gutter, the summary panel's column and the ruler are
  // painted in the background colour first; the rows paint what is not a lane as they go.
  // The window clips its drawing a few pixels inside the display (ImGui's inner clip rect): the
  // strip below the rows' clip is painted here, with the whole display as the clip.
  const ImU32 background = col(kBackgroundColor);
  const float clip_bottom = std::min(height, dl->GetClipRectMax().y);
  dl->PushClipRect(ImVec2(0, 0), ImVec2(width, height), false);
  dl->AddRectFilled(ImVec2(0, 0), ImVec2(left, height), background);
  dl->AddRectFilled(ImVec2(right, 0), ImVec2(width, height), background);
  dl->AddRectFilled(ImVec2(left, 0), ImVec2(right, kRulerPx), background);
  dl->AddRectFilled(ImVec2(left, clip_bottom), ImVec2(right, height), background);
  dl->PopClipRect();

  // Time ruler: major ticks a power of ten of ns apart, labels relative to the view's start.
  const SimTime step = view_.tick_step_ns(100.0);
  const SimTime first = (view_.start_ns() / step) * step;
  for (SimTime t = first; t <= view_.end_ns(); t += step) {
    const float x = left + static_cast<float>(view_.x_of(t));
    if (x < left || x > right) continue;
    dl->AddLine(ImVec2(x, kRulerPx - 8), ImVec2(x, kRulerPx), dim_text);
    dl->AddText(ImVec2(x + 2, 2), dim_text, format_duration(t).c_str());
  }
  dl->AddLine(ImVec2(left, kRulerPx), ImVec2(right, kRulerPx), dim_text);

  const auto ghost_group = [&](std::uint32_t g) -> const RankGroup* {
    if (!ghost_model_) return nullptr;
    const TraceRank& r = trace.ranks[model_->groups()[g].members.front()];
    int gg = ghost_model_->group_of_role(r.role);
    if (gg < 0) gg = ghost_model_->group_of_rank(r.rank);
    return gg < 0 ? nullptr : &ghost_model_->groups()[static_cast<std::size_t>(gg)];
  };

  // The middle of the lane row showing `span` in the block of rows_[ri] (-1: not shown).
  const auto lane_y = [&](std::size_t ri, const Span& span) -> float {
    const std::optional<LaneKind> kind = lane_of(span);
    if (!kind) return -1;
    const Row& at = rows_[ri];
    for (const Row& r : rows_) {
      if (r.kind != Row::Kind::Lane || r.group != at.group || r.member != at.member) continue;
      if (model_->groups()[r.group].lanes[r.lane].kind == *kind) {
        return std::floor(kRowsTop - scroll_y_ + (r.y0 + r.y1) / 2);
      }
    }
    return -1;
  };
  flows_.clear();
  dl->PushClipRect(ImVec2(0, kRulerPx), ImVec2(right, height), true);
  // Down to `painted` the lane area shows what it should; a header, the gap between groups and
  // each row's last pixel line (its separator) are background, the rest of a row is backdrop.
  float painted = kRulerPx + 1;  // the ruler's line is the pixel row at kRulerPx
  const auto paint_background_to = [&](float y) {
    if (y > painted) dl->AddRectFilled(ImVec2(left, painted), ImVec2(right, y), background);
    painted = std::max(painted, y);
  };
  for (std::size_t ri = 0; ri < rows_.size(); ++ri) {
    const Row& row = rows_[ri];
    const float y0 = kRowsTop - scroll_y_ + row.y0, y1 = kRowsTop - scroll_y_ + row.y1;
    if (y0 > height) break;
    if (y1 < kRulerPx) continue;  // scrolled above the ruler
    const RankGroup& group = model_->groups()[row.group];
    if (row.kind == Row::Kind::Header) {
      paint_background_to(y1);
      // A member of an expanded group is indented under its group's header.
      const float indent = row.member == kAllMembers ? 6 : 18;
      dl->AddText(ImVec2(indent, y0 + 2), text, block_label(*model_, row).c_str());
      continue;
    }
    // A row over the backdrop: the background above it (a gap) and its separator line.
    const auto lane_backdrop = [&](float top, float bottom) {
      paint_background_to(top);
      painted = std::max(painted, bottom - 1);
      paint_background_to(bottom);
    };
    const RowBox box{left, right, y0, y1};
    if (row.kind == Row::Kind::Buckets || row.kind == Row::Kind::Params) {
      dl->AddText(ImVec2(18, y0 + 1), dim_text,
                  row.kind == Row::Kind::Buckets ? "bucket fill" : "params");
      lane_backdrop(y0, y1);
      if (row.kind == Row::Kind::Buckets) {
        draw_bucket_row(
            dl, trace, group, view_, box, [&](const Span& s) { return lane_y(ri, s); }, flows_);
      } else {
        draw_params_row(dl, group, view_, box);
      }
      continue;
    }
    if (row.kind == Row::Kind::Lane) {
      const Lane& lane = group.lanes[row.lane];
      dl->AddText(ImVec2(18, y0 + 3), dim_text, lane_kind_name(lane.kind));
      lane_backdrop(y0, y1);
      if (const RankGroup* gg = ghost_group(row.group)) {
        // The ghost's own clock, aligned so both runs start at the same pixel.
        const TimeView gv = view_.shifted(ghost_offset_ns_);
        for (const Lane& gl : gg->lanes) {
          if (gl.kind != lane.kind) continue;
          visible_items(ghost_->trace.value(), gl, gv, kMinSpanPx, items_);
          for (const DrawItem& it : items_) {
            const float x0 = left + static_cast<float>(std::max(gv.x_of(it.start_ns), -1.0));
            const float x1 = left + static_cast<float>(std::min(gv.x_of(it.end_ns), 1e6));
            dl->AddRectFilled(ImVec2(x0, y1 - kGhostStripPx), ImVec2(std::max(x1, x0 + 1), y1 - 1),
                              col(kGhostColor));
          }
        }
      }
      visible_items(trace, lane, view_, kMinSpanPx, items_);
      for (const DrawItem& it : items_) {
        const float x0 = left + static_cast<float>(std::max(view_.x_of(it.start_ns), -1.0));
        const float x1 = left + static_cast<float>(std::min(view_.x_of(it.end_ns), 1e6));
        const Span& s = trace.spans[lane.spans[it.first]];
        const Rgb c = it.count > 1 ? kMergedColor : span_color(trace, s);
        dl->AddRectFilled(ImVec2(x0, y0 + kSpanTopPx),
                          ImVec2(std::max(x1, x0 + 1), y1 - kSpanBottomPx), col(c));
        if (it.count > 1) continue;
        clipped_text(dl, std::max(x0, left), std::min(x1, right), y0 + 2, col(0x101010),
                     span_label(trace, s));
        if (search_[0] != '\0' && s.name.find(search_.data()) != std::string::npos) {
          dl->AddRect(ImVec2(x0 - 1, y0), ImVec2(std::max(x1, x0 + 1) + 1, y1 - kSpanBottomPx + 1),
                      col(kSearchColor), 0.0f, 0, 2.0f);
        }
      }
      continue;
    }
    // Memory stack: one column per pixel, categories bottom-up, then capacity, peak, OOM.
    const MemoryStack& stack = stacks_[row.group];
    const float h = y1 - 1 - (y0 + kMemoryTopPx);
    const double scale = static_cast<double>(h) / static_cast<double>(stack.y_max());
    dl->AddText(ImVec2(18, y0 + 3), dim_text, "memory");
    dl->AddText(ImVec2(18, y0 + 18), dim_text, format_bytes(stack.peak_bytes()).c_str());
    lane_backdrop(y0, y1);
    stack.columns(view_, columns_);
    // Adjacent columns with the same breakdown become one rectangle per category (most of a
    // run is flat between allocations): far fewer quads for the software rasteriser.
    for (std::size_t i = 0; i < columns_.size();) {
      const MemoryColumn& c = columns_[i];
      std::size_t j = i + 1;
      while (j < columns_.size() && columns_[j].x == columns_[j - 1].x + 1 &&
             columns_[j].by_category == c.by_category) {
        ++j;
      }
      const float x0 = left + static_cast<float>(c.x);
      const float x1 = left + static_cast<float>(columns_[j - 1].x + 1);
      double base = 0;
      for (std::size_t k = 0; k < kCategoryCount; ++k) {
        if (c.by_category[k] == 0) continue;
        const double top = base + static_cast<double>(c.by_category[k]) * scale;
        dl->AddRectFilled(ImVec2(x0, y1 - 1 - static_cast<float>(top)),
                          ImVec2(x1, y1 - 1 - static_cast<float>(base)), col(kCategoryColor[k]));
        base = top;
      }
      i = j;
    }
    if (stack.capacity() > 0) {
      if (stack.capacity() <= stack.y_max()) {
        const float yc = y1 - 1 - static_cast<float>(static_cast<double>(stack.capacity()) * scale);
        // Rectangles, not AddLine: no anti-aliasing, so the pixel tests find the exact colour.
        const float yr = capacity_line_y(y0, y1, stack);
        dl->AddRectFilled(ImVec2(left, yr), ImVec2(right, yr + kCapacityLinePx),
                          col(kCapacityColor));
        dl->AddText(ImVec2(right - 150, yc - 14), col(kCapacityColor),
                    ("capacity " + format_bytes(stack.capacity())).c_str());
      } else {
        dl->AddText(ImVec2(right - 190, y0 + 2), col(kCapacityColor),
                    ("capacity " + format_bytes(stack.capacity()) + " (above)").c_str());
      }
    }
    const float xp = left + static_cast<float>(view_.x_of(stack.peak_t()));
    if (xp >= left && xp <= right) {
      const float yp = y1 - 1 - static_cast<float>(static_cast<double>(stack.peak_bytes()) * scale);
      dl->AddTriangleFilled(ImVec2(xp, yp), ImVec2(xp - 4, yp - 7), ImVec2(xp + 4, yp - 7),
                            col(kPeakColor));
      dl->AddText(
          ImVec2(xp + 6, std::max(y0, yp - 14)), col(kPeakColor),
          ("peak " + format_bytes(stack.peak_bytes()) + top_categories(stack.peak_by_category()))
              .c_str());
    }
    if (const auto& oom = stack.oom()) {
      const float xo = left + static_cast<float>(view_.x_of(oom->t));
      if (xo >= left && xo <= right) {
        const float xr = std::floor(xo);
        dl->AddRectFilled(ImVec2(xr - 1, y0), ImVec2(xr + 2, y1 - 1), col(kOomColor));
        dl->AddText(ImVec2(xo + 4, y0 + 30), col(kOomColor),
                    ("OOM: " + oom->buffer_name + " " + format_bytes(oom->bytes)).c_str());
      }
    }
  }
  paint_background_to(height);  // below the last row
  dl->PushClipRect(ImVec2(left, kRulerPx), ImVec2(right, height), true);
  draw_flows(dl, flows_);
  dl->PopClipRect();
  if (measuring_) {  // the measured range across every lane, with its duration
    const SimTime lo = std::min(measure_from_, measure_to_);
    const SimTime hi = std::max(measure_from_, measure_to_);
    const float x0 = left + static_cast<float>(view_.x_of(lo));
    const float x1 = left + static_cast<float>(view_.x_of(hi));
    dl->AddRectFilled(ImVec2(x0, kRulerPx), ImVec2(x1, height), col(0xFFFFFF, 40));
    measure_label_ = format_duration(hi - lo);
    dl->AddText(ImVec2(x1 + 4, kRulerPx + 2), col(0xFFFFFF), measure_label_.c_str());
  }
  dl->PopClipRect();
}

void Viewer::draw_summary(float x, float height) {
  const Trace& t = model_->trace();
  ImGui::SetCursorPos(ImVec2(x + 10, 8));
  ImGui::BeginChild("summary", ImVec2(kSummaryPx - 16, height - 16), false);
  // Every line wraps at the panel's edge: a trace path or a param list's path as the model name
  // was cut there.
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(main_->path.c_str());
  ImGui::SetNextItemWidth(kSummaryPx - 80);
  ImGui::InputText("search", search_.data(), search_.size());
  if (!details_.empty()) {
    ImGui::TextColored(ImVec4(1, 0.85f, 0.3f, 1), "selected");
    ImGui::TextUnformatted(details_.c_str());
  }
  ImGui::Text("%s, ZeRO stage %d, %u ranks", t.meta.model.c_str(), t.meta.stage, t.meta.world);
  ImGui::Text("backend %s (%s clock), DeepSpeed %s", t.meta.backend.c_str(), t.meta.clock.c_str(),
              t.meta.deepspeed_version.c_str());
  ImGui::Separator();
  for (const std::string& line : step_time_lines(summary_)) ImGui::TextUnformatted(line.c_str());
  ImGui::Separator();
  ImGui::Text("collectives over the run:");
  for (const CommKindSummary& c : summary_.comm) {
    ImGui::TextColored(
        ImGui::ColorConvertU32ToFloat4(col(kCollectiveColor[static_cast<std::size_t>(c.kind)])),
        "%-14s %s (%llu calls)", std::string(collective_name(c.kind)).c_str(),
        format_bytes(c.bytes).c_str(), static_cast<unsigned long long>(c.calls));
  }
  ImGui::Separator();
  for (const RolePeakSummary& p : summary_.peaks) {
    ImGui::Text("rank %u peak   %s", p.rank, format_bytes(p.device.bytes).c_str());
  }
  if (summary_.oom) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(col(kOomColor)), "OOM on rank %u: %s",
                       summary_.oom_rank, summary_.oom->buffer_name.c_str());
  }
  if (pairing_) {
    ImGui::Separator();
    ImGui::Text("ghost: %s", ghost_->path.c_str());
    ImGui::Text("%zu paired spans, %zu only here, %zu only there", pairing_->pairs.size(),
                pairing_->only_measured.size(), pairing_->only_predicted.size());
    // The largest time differences; a click centres the view on the span and selects it.
    int id = 0;
    for (const SpanPair& p : largest_differences(*pairing_, 8)) {
      const Span& s = t.spans[p.measured];
      const std::string label =
          (p.dur_diff_ns >= 0 ? "+" : "") + format_duration(p.dur_diff_ns) + "  " + s.name;
      ImGui::PushID(id++);
      if (ImGui::Selectable(label.c_str())) {
        view_.center_on(s.start_ns + s.dur_ns / 2);
        details_ = s.name + "\nmeasured " + format_duration(s.dur_ns) + ", predicted " +
                   format_duration(ghost_->trace->spans[p.predicted].dur_ns);
      }
      ImGui::PopID();
    }
    // Peak memory per category, first group against the ghost's group of the same role.
    const TraceRank& r = t.ranks[model_->groups()[0].members.front()];
    int gg = ghost_model_->group_of_role(r.role);
    if (gg >= 0) {
      const TraceRank& gr =
          ghost_->trace
              ->ranks[ghost_model_->groups()[static_cast<std::size_t>(gg)].members.front()];
      const MemoryStack ghost_stack(gr, ghost_->trace->meta.device_capacity);
      const MemoryStack& main_stack = stacks_[0];
      ImGui::Text("peak: %s here, %s there", format_bytes(main_stack.peak_bytes()).c_str(),
                  format_bytes(ghost_stack.peak_bytes()).c_str());
      for (std::size_t k = 0; k < kCategoryCount; ++k) {
        const Bytes a = main_stack.peak_by_category()[k];
        const Bytes b = ghost_stack.peak_by_category()[k];
        if (a == b) continue;
        ImGui::Text("  %-14s %s%s",
                    std::string(category_name(static_cast<BufferCategory>(k))).c_str(),
                    a > b ? "+" : "-", format_bytes(a > b ? a - b : b - a).c_str());
      }
    }
  }
  ImGui::Separator();
  for (const std::string& n : t.meta.notes) ImGui::TextDisabled("%s", n.c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndChild();
}

// What the mouse is over: a span (name, kind, stream, times, bytes, bandwidth, the ghost's
// duration), a merged run, or the memory stack at that time. Kept in tooltip_ for tests.
void Viewer::draw_tooltip(float width) {
  if (measuring_) return;  // the measured range shows its own label
  tooltip_ = describe_at(ImGui::GetIO().MousePos, width, false);
  if (tooltip_.empty()) return;
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(tooltip_.c_str());
  ImGui::EndTooltip();
}

std::string Viewer::describe_at(ImVec2 mouse, float width, bool full) {
  const float x = mouse.x - kGutterPx;
  if (x < 0 || mouse.x > lanes_right(width)) return {};
  if (mouse.y < kRowsTop) return {};
  const Row* row = row_at(rows_, mouse.y - kRowsTop + scroll_y_);
  if (row == nullptr || row->kind == Row::Kind::Header) return {};
  const Trace& trace = model_->trace();
  const RankGroup& group = model_->groups()[row->group];
  std::string text;
  if (row->kind == Row::Kind::Buckets) return describe_bucket_at(trace, group, view_, x, full);
  if (row->kind == Row::Kind::Params) return describe_params_at(trace, group, view_, x);
  if (row->kind == Row::Kind::Memory) {
    const MemorySample m = stacks_[row->group].at(view_.t_at(x));
    text =
        block_label(*model_, *row) + " at " + format_duration(m.t) + ": " + format_bytes(m.total);
    for (std::size_t k = 0; k < kCategoryCount; ++k) {
      if (m.by_category[k] == 0) continue;
      text += "\n  " + std::string(category_name(static_cast<BufferCategory>(k))) + " " +
              format_bytes(m.by_category[k]);
    }
  } else {
    const Lane& lane = group.lanes[row->lane];
    visible_items(trace, lane, view_, kMinSpanPx, items_);
    const std::optional<DrawItem> it = item_at(items_, view_, x);
    if (!it) return {};
    if (it->count > 1) {
      text = std::to_string(it->count) + " spans merged (" +
             format_duration(it->end_ns - it->start_ns) + "): zoom in";
    } else {
      const Span& s = trace.spans[lane.spans[it->first]];
      text = s.name + "\n" + s.category + " on " + lane_kind_name(lane.kind) + ", " +
             block_label(*model_, *row) + "\nstart " + format_duration(s.start_ns) + ", duration " +
             format_duration(s.dur_ns);
      if (s.comm != kNone && s.comm < trace.comms.size()) {
        const CommRecord& c = trace.comms[s.comm];
        char bw[96];
        std::snprintf(bw, sizeof bw, "\nalgbw %.1f GB/s, busbw %.1f GB/s", c.algbw_gbps,
                      c.busbw_gbps);
        text += "\n" + std::string(collective_name(c.kind)) + " " + format_bytes(c.bytes) + ", " +
                std::to_string(c.group_size) + " ranks" + bw;
      } else if (s.bytes > 0) {
        text += "\n" + format_bytes(s.bytes);
      }
    }
  }
  return text;
}

// Tracy/Perfetto conventions (ecosystem.md §2.4): wheel zooms around the cursor (Ctrl finer,
// Shift coarser), right- or middle-drag pans, left-drag measures a range, a left click selects
// the span under the mouse (details in the summary panel), W/S zoom and A/D pan around the
// centre, Home or F fits the whole run. ImGui 1.86 reads letter keys by GLFW key code, which
// for letters is the upper-case ASCII code.
void Viewer::handle_input() {
  const ImGuiIO& io = ImGui::GetIO();
  const float x = io.MousePos.x - kGutterPx;
  const float width = io.DisplaySize.x;
  // The mouse belongs to another window drawn over the timeline (the what-if panel) when that
  // window, not this one, is under it.
  const bool hovered = ImGui::IsWindowHovered(ImGuiHoveredFlags_RootAndChildWindows);
  const bool over_lanes = hovered && x >= 0 && io.MousePos.x <= lanes_right(width) &&
                          io.MousePos.y >= kRulerPx && !io.WantTextInput;
  if (io.MouseWheel != 0 && over_lanes) {
    const double notch = io.KeyCtrl ? 1.05 : (io.KeyShift ? 1.5 : 1.25);
    view_.zoom_at(x, std::pow(notch, static_cast<double>(io.MouseWheel)));
  }
  if (hovered && (ImGui::IsMouseDragging(ImGuiMouseButton_Right) ||
                  ImGui::IsMouseDragging(ImGuiMouseButton_Middle))) {
    view_.pan_px(io.MouseDelta.x);
  }
  // A click on a group's header (gutter or lane area) folds or expands it.
  const Row* row = hovered && io.MousePos.y >= kRowsTop && io.MousePos.x <= lanes_right(width)
                       ? row_at(rows_, io.MousePos.y - kRowsTop + scroll_y_)
                       : nullptr;
  const bool over_header = row != nullptr && row->kind == Row::Kind::Header;
  if (over_header && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    model_->toggle_expanded(row->group);
  }
  if (over_lanes && !over_header && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    measure_from_ = view_.t_at(x);
    measure_to_ = measure_from_;
    press_armed_ = true;
  }
  if (press_armed_ && ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
    measuring_ = ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f);
    measure_to_ = view_.t_at(x);
  }
  if (press_armed_ && ImGui::IsMouseReleased(ImGuiMouseButton_Left)) {
    if (!measuring_) details_ = describe_at(io.MousePos, width, true);  // a click, not a drag
    measuring_ = false;
    press_armed_ = false;
  }
  if (!io.WantTextInput) {
    const double step = 1.0 + 2.0 * static_cast<double>(io.DeltaTime);
    const double centre = view_.width_px() / 2;
    if (ImGui::IsKeyDown('W')) view_.zoom_at(centre, step);
    if (ImGui::IsKeyDown('S')) view_.zoom_at(centre, 1.0 / step);
    const double pan = view_.width_px() * static_cast<double>(io.DeltaTime);
    if (ImGui::IsKeyDown('A')) view_.pan_px(pan);
    if (ImGui::IsKeyDown('D')) view_.pan_px(-pan);
    // Vertical scrolling of the rows (an expanded group of many ranks is taller than the
    // screen): Up/Down by a lane, Page Up/Down by a screen; clamped in draw_timeline.
    const float page = io.DisplaySize.y - kRowsTop - 40;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow))) scroll_y_ += 20;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow))) scroll_y_ -= 20;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) scroll_y_ += page;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) scroll_y_ -= page;
    if (ImGui::IsKeyPressed('E')) {  // the group under the mouse, or every group
      const Row* r =
          io.MousePos.y >= kRowsTop ? row_at(rows_, io.MousePos.y - kRowsTop + scroll_y_) : nullptr;
      if (r == nullptr || !model_->toggle_expanded(r->group)) model_->toggle_all();
    }
    if (ImGui::IsKeyPressed('F') || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) {
      view_.fit(model_->begin_ns(), model_->end_ns());
    }
  }
}

}  // namespace zerosim::view
