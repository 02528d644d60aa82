// The flags and the help text of `zerosim view`, shared by the viewer (view_command.cc, in
// zerosim-view) and the launcher that zerosim runs it through (view_launcher.cc).
#include "view_flags.h"

#include <string>
#include <vector>

#include "args.h"
#include "cmd_view_inputs.h"
#include "commands.h"

namespace zerosim::cli {

// The view's own flags, then the run commands' model/cluster/training flags (what-if mode from the
// planner's flags), parsed by the same parser.
const std::vector<FlagSpec>& view_flags() {
  static const std::vector<FlagSpec> kFlags = [] {
    std::vector<FlagSpec> f = {
        {"--screenshot", "FILE", "render without a display (EGL surfaceless) and write a PNG"},
        {"--width", "W", "image/window width in pixels, 400..8192; default 1600"},
        {"--height", "H", "image/window height in pixels, 200..8192; default 900"},
        {"--at-time", "T", "centre the view on time T (ns from the trace's start)"},
        {"--zoom", "Z", "zoom factor over the whole run, 1..1e9; default 1 (everything)"},
        {"--rank", "R", "show only the lane group of traced rank R"},
        {"--scenario", "FILE",
         "what-if mode: simulate a scenario and open the knobs panel (a scenario file given as "
         "TRACE "
         "does the same)"},
        {"--set", "KNOB=V,...",
         "what-if mode: change knobs before the first frame, e.g. stage=3,micro_batch=8 (the "
         "scenario's run becomes the ghost)"},
        {"--frames", "N",
         "frames to render, 1..1000; screenshot: the last is saved (default 3); window: closes "
         "after "
         "N"},
    };
    for (FlagSpec& p : view_planner_flags()) {
      p.help = "what-if mode from the planner's flags: " + p.help;
      f.push_back(std::move(p));
    }
    return f;
  }();
  return kFlags;
}

std::string view_help() {
  return format_help(
      "view",
      "arguments: TRACE [TRACE2], zerosim trace JSON files; or SCENARIO, or the planner's flags\n"
      "(what-if mode), e.g. zerosim view --model gpt2-xl --gpus 8 --stage 2 --micro-batch 4\n\n"
      "Opens a zerosim trace (zerosim simulate --trace, zerosim validate --output) as a timeline:\n"
      "lanes per rank (compute, reduce/gather streams, h2d/d2h, optimizer), collectives coloured\n"
      "by kind and labelled with their size, the memory stack per rank by category with the\n"
      "device capacity, the peak and any OOM, and a summary panel. Ranks with identical timelines\n"
      "fold into one group. TRACE2 (e.g. the prediction of a measured TRACE) is drawn as a ghost\n"
      "strip under each lane, paired op by op. Keys in the window: wheel zoom, right-drag pan,\n"
      "left-drag measure, click details, W/S/A/D zoom and pan, F fit, search box; a click on a\n"
      "group's header or E expands or folds it; Up/Down, Page Up/Down scroll the rows. Each\n"
      "rank's IPG bucket fill (params, flush, a flow line to its collective) and, at stage 3,\n"
      "its parameter gathers and releases get a row.\n"
      "What-if mode (a scenario, --scenario, or the model/cluster/training flags of plan and\n"
      "simulate, parsed and checked as simulate does; with a scenario they override its values):\n"
      "a panel of knobs (stage, offload, micro-batch, gradient accumulation, activation\n"
      "checkpointing, reduce_bucket_size, overlap_comm, contiguous_gradients, stage-3\n"
      "prefetch/persistence/live parameters, GPU type and count) re-simulates on every change,\n"
      "the previous run drawn as the ghost; \"save as ds_config.json\" writes the DeepSpeed\n"
      "knobs.",
      view_flags());
}

}  // namespace zerosim::cli
