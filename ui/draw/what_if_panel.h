// The what-if side panel (issue #9 "What-if (live)"): ImGui widgets for the knobs of a WhatIf
// session (ui/whatif), re-simulated on every change; the knobs that differ from the ghost (the
// previous configuration) listed; "save as ds_config.json". The caller rebuilds its Viewer when
// draw() reports a new run (the viewer draws the session's trace, the previous one as its ghost).
#pragma once

#include <array>
#include <string>

#include "whatif/what_if.h"

namespace zerosim::view {

/// "stage 2 -> 3, micro_batch 4 -> 8": the knobs that differ from `a` to `b` ("" when none).
std::string knob_changes(const Knobs& a, const Knobs& b);

class WhatIfPanel {
 public:
  /// The session must outlive the panel.
  explicit WhatIfPanel(WhatIf& session);

  /// Draws the panel as its own ImGui window (first placed at x, y, width x height; the user may
  /// move it). True when a change re-simulated: the session holds a new run.
  bool draw(float x, float y, float width, float height);
  /// Applies `k` as a widget change would (the panel's edit state follows); true when it
  /// re-simulated. Used by `zerosim view --set` and the tests.
  bool change(const Knobs& k);
  /// The panel's last message: the simulation time, a refusal, the save result.
  const std::string& status() const { return status_; }
  /// The knobs as edited (they differ from the session's after a refused change).
  const Knobs& edited() const { return edit_; }
  void set_save_path(const std::string& path);
  /// Leaves the simulation's wall time out of the status, so a screenshot's bytes depend on the
  /// inputs only (`zerosim view --screenshot` in what-if mode).
  void set_deterministic(bool on);
  /// What the save button does.
  bool save();

 private:
  WhatIf* session_;
  Knobs edit_;
  std::string status_;
  bool deterministic_ = false;
  std::array<char, 512> save_path_{};
};

}  // namespace zerosim::view
