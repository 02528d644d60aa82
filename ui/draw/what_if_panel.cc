// The what-if panel: see what_if_panel.h.
#include "draw/what_if_panel.h"

#include <imgui.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace zerosim::view {
namespace {

std::string yes_no(bool b) { return b ? "on" : "off"; }

// An unsigned knob with +/- buttons; true when it changed.
bool input_u64(const char* label, std::uint64_t& v, std::uint64_t step, std::uint64_t lo) {
  std::uint64_t x = v;
  const bool changed = ImGui::InputScalar(label, ImGuiDataType_U64, &x, &step, &step, "%llu",
                                          ImGuiInputTextFlags_EnterReturnsTrue);
  if (!changed || x < lo || x == v) return false;
  v = x;
  return true;
}

}  // namespace

std::string knob_changes(const Knobs& a, const Knobs& b) {
  std::string s;
  auto add = [&](const char* name, const std::string& x, const std::string& y) {
    if (x == y) return;
    s += (s.empty() ? "" : ", ") + std::string(name) + " " + x + " -> " + y;
  };
  add("stage", std::to_string(a.stage), std::to_string(b.stage));
  add("offload_optimizer", yes_no(a.offload_optimizer), yes_no(b.offload_optimizer));
  add("offload_param", yes_no(a.offload_param), yes_no(b.offload_param));
  add("micro_batch", std::to_string(a.micro_batch), std::to_string(b.micro_batch));
  add("grad_accum", std::to_string(a.grad_accum), std::to_string(b.grad_accum));
  add("activation_checkpointing", yes_no(a.activation_checkpointing),
      yes_no(b.activation_checkpointing));
  add("reduce_bucket_size", std::to_string(a.reduce_bucket_size),
      std::to_string(b.reduce_bucket_size));
  add("overlap_comm", yes_no(a.overlap_comm), yes_no(b.overlap_comm));
  add("contiguous_gradients", yes_no(a.contiguous_gradients), yes_no(b.contiguous_gradients));
  add("prefetch_bucket_size", std::to_string(a.prefetch_bucket_size),
      std::to_string(b.prefetch_bucket_size));
  add("param_persistence_threshold", std::to_string(a.param_persistence_threshold),
      std::to_string(b.param_persistence_threshold));
  add("max_live_parameters", std::to_string(a.max_live_parameters),
      std::to_string(b.max_live_parameters));
  add("gpu", a.gpu, b.gpu);
  add("nodes", std::to_string(a.nodes), std::to_string(b.nodes));
  add("gpus_per_node", std::to_string(a.gpus_per_node), std::to_string(b.gpus_per_node));
  return s;
}

WhatIfPanel::WhatIfPanel(WhatIf& session) : session_(&session), edit_(session.knobs()) {
  set_save_path("ds_config.json");
  char ms[64];
  std::snprintf(ms, sizeof ms, "simulated in %.1f ms", session.last_simulation_ms());
  status_ = ms;
}

void WhatIfPanel::set_deterministic(bool on) {
  deterministic_ = on;
  if (on && status_.find(" ms") != std::string::npos) status_ = "simulated";
}

void WhatIfPanel::set_save_path(const std::string& path) {
  save_path_.fill('\0');
  path.copy(save_path_.data(), save_path_.size() - 1);
}

bool WhatIfPanel::change(const Knobs& k) {
  edit_ = k;
  const Diagnostics d = session_->apply(k);
  if (d.has_errors()) {
    status_ = d.items().front().to_string();
    return false;
  }
  char ms[64];
  std::snprintf(ms, sizeof ms, "re-simulated in %.1f ms", session_->last_simulation_ms());
  status_ = deterministic_ ? "re-simulated" : ms;
  return true;
}

bool WhatIfPanel::save() {
  std::string error;
  if (!session_->save_ds_config(save_path_.data(), error)) {
    status_ = error;
    return false;
  }
  status_ = std::string("wrote ") + save_path_.data();
  return true;
}

bool WhatIfPanel::draw(float x, float y, float width, float height) {
  ImGui::SetNextWindowPos(ImVec2(x, y), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(ImVec2(width, height), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowBgAlpha(0.92f);
  bool changed = false;
  if (!ImGui::Begin("what-if", nullptr, ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::End();
    return false;
  }
  Knobs k = edit_;
  bool edited = false;
  ImGui::PushItemWidth(width * 0.45f);
  int stage = k.stage;
  if (ImGui::SliderInt("stage", &stage, 0, 3) && stage != k.stage) {
    k.stage = stage;
    if (stage < 3) k.offload_param = false;  // DeepSpeed ignores it below stage 3
    edited = true;
  }
  edited |= ImGui::Checkbox("offload optimizer (cpu)", &k.offload_optimizer);
  ImGui::BeginDisabled(k.stage != 3);
  edited |= ImGui::Checkbox("offload params (cpu)", &k.offload_param);
  ImGui::EndDisabled();
  edited |= input_u64("micro-batch", k.micro_batch, 1, 1);
  edited |= input_u64("grad accumulation", k.grad_accum, 1, 1);
  edited |= ImGui::Checkbox("activation checkpointing", &k.activation_checkpointing);
  edited |= input_u64("reduce_bucket_size", k.reduce_bucket_size, 50000000, 1);
  edited |= ImGui::Checkbox("overlap_comm", &k.overlap_comm);
  edited |= ImGui::Checkbox("contiguous_gradients", &k.contiguous_gradients);
  ImGui::BeginDisabled(k.stage != 3);
  edited |= input_u64("prefetch bucket", k.prefetch_bucket_size, 10000000, 1);
  edited |= input_u64("persistence threshold", k.param_persistence_threshold, 10000, 0);
  edited |= input_u64("max live params", k.max_live_parameters, 100000000, 1);
  ImGui::EndDisabled();
  if (ImGui::BeginCombo("GPU", k.gpu.c_str())) {
    static const std::vector<std::string> kGpus = gpu_names();
    for (const std::string& g : kGpus) {
      if (ImGui::Selectable(g.c_str(), g == k.gpu) && g != k.gpu) {
        k.gpu = g;
        edited = true;
      }
    }
    ImGui::EndCombo();
  }
  edited |= input_u64("nodes", k.nodes, 1, 1);
  edited |= input_u64("GPUs per node", k.gpus_per_node, 1, 1);
  ImGui::PopItemWidth();
  if (edited) changed = change(k);
  ImGui::Separator();
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(status_.c_str());
  if (session_->ghost_knobs()) {
    ImGui::TextDisabled("ghost (previous): %s",
                        knob_changes(*session_->ghost_knobs(), session_->knobs()).c_str());
  }
  ImGui::PopTextWrapPos();
  if (ImGui::Button("revert edits")) edit_ = session_->knobs();
  ImGui::Separator();
  ImGui::SetNextItemWidth(width * 0.5f);
  ImGui::InputText("##path", save_path_.data(), save_path_.size());
  ImGui::SameLine();
  if (ImGui::Button("save as ds_config.json")) save();
  ImGui::End();
  return changed;
}

}  // namespace zerosim::view
