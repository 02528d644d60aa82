// write_plan_speeds and row_speed_json (plan_speed_report.h).
#include "report/plan_speed_report.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "zerosim/time_model.h"

namespace zerosim::report {
namespace {

std::string per_gpu(const RowSpeed& s, std::uint64_t world) {
  char b[48];
  std::snprintf(b, sizeof b, "%.0f", s.tokens_per_s / static_cast<double>(world));
  std::string digits = b, out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", x * 100);
  return b;
}

// What the speed table prints in place of a speed: the JSON's name as words ("no fit",
// "dominated"), no wider than the micro-batch column's header, each explained below the table.
std::string skip_word(SpeedSkip s) {
  const char* name = speed_skip_name(s);
  std::string w = name ? name : "-";
  std::replace(w.begin(), w.end(), '_', ' ');
  return w;
}

const char* skip_legend(SpeedSkip s) {
  switch (s) {
    case SpeedSkip::NoFit:
      return "no fit: no micro-batch fits without activation checkpointing; in the last column, "
             "checkpointing fits no larger micro-batch than the row without it (it would only add "
             "the recomputed forward)";
    case SpeedSkip::Dominated:
      return "dominated: not simulated, because a row of the same stage with no more offload and "
             "no more recompute runs at least this micro-batch, and is never slower";
    case SpeedSkip::Bounded:
      return "bounded: not simulated, because even its compute alone (forward and backward FLOPs "
             "at the time model's rate) is slower than the fastest configuration simulated";
    case SpeedSkip::Failed:
      return "failed: its simulation failed (the notes say why)";
    case SpeedSkip::None:
    case SpeedSkip::NoShape:
      break;
  }
  return "";
}

}  // namespace

const char* offload_label(OffloadVariant v) {
  switch (v) {
    case OffloadVariant::None:
      return "none";
    case OffloadVariant::OptimizerCpu:
      return "optimizer->cpu";
    case OffloadVariant::OptimizerAndParamsCpu:
      return "opt+params->cpu";
    case OffloadVariant::ParamsCpu:
      return "params->cpu";
  }
  return "?";
}

void write_plan_speeds(const PlanResult& p, std::ostream& out, bool markdown) {
  bool any = false;
  for (const auto& r : p.rows) any = any || r.speed || r.speed_checkpointed;
  if (!any) return;
  const std::uint64_t world = p.request.cluster.world_size();
  out << "predicted speed (simulated steady step at each row's largest micro-batch; time model "
         "and its defaults: docs/time_model.md):\n";
  const bool ck = p.request.training.activation_checkpointing;
  // A request that checkpoints already has it in every row: no column for it.
  std::vector<std::vector<std::string>> rows = {
      {"stage", "offload", "micro-batch", "step time", "tokens/s/GPU", "MFU"}};
  if (!ck) rows[0].emplace_back("with checkpointing");
  std::array<bool, static_cast<std::size_t>(SpeedSkip::NoShape) + 1> used{};  // for the legend
  // Every row that fits at some micro-batch: with its speed or the reason it has none.
  auto tried = [](SpeedSkip s) { return s != SpeedSkip::None && s != SpeedSkip::NoFit; };
  for (const auto& r : p.rows) {
    if (!r.speed && !r.speed_checkpointed && !tried(r.speed_skip) &&
        !tried(r.speed_checkpointed_skip))
      continue;
    std::vector<std::string> c = {std::to_string(r.stage), offload_label(r.offload)};
    if (r.speed) {
      c.push_back(std::to_string(r.speed->micro_batch));
      c.push_back(human_duration(r.speed->step_ns));
      c.push_back(per_gpu(*r.speed, world));
      c.push_back(pct(r.speed->mfu));
    } else {
      c.insert(c.end(), {skip_word(r.speed_skip), "-", "-", "-"});
      used[static_cast<std::size_t>(r.speed_skip)] = true;
    }
    if (ck) {
      // no checkpointing column
    } else if (r.speed_checkpointed) {
      c.push_back("micro-batch " + std::to_string(r.speed_checkpointed->micro_batch) + ": " +
                  per_gpu(*r.speed_checkpointed, world) + " tokens/s/GPU, " +
                  human_duration(r.speed_checkpointed->step_ns));
    } else {
      c.push_back(skip_word(r.speed_checkpointed_skip));
      used[static_cast<std::size_t>(r.speed_checkpointed_skip)] = true;
    }
    rows.push_back(std::move(c));
  }
  std::vector<std::size_t> w(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (markdown) {
      out << "|";
      for (const auto& c : rows[k]) out << " " << c << " |";
      out << "\n";
      if (k == 0) {
        out << "|";
        for (std::size_t i = 0; i < rows[0].size(); ++i) out << (i < 2 ? " --- |" : " ---: |");
        out << "\n";
      }
      continue;
    }
    std::string line;
    for (std::size_t i = 0; i < rows[k].size(); ++i) {
      const std::string& c = rows[k][i];
      const bool left = i < 2 || i == 6;  // the checkpointing column is words
      const std::string pad(w[i] - c.size(), ' ');
      line += (i ? "  " : "") + (left ? c + (i + 1 == rows[k].size() ? "" : pad) : pad + c);
    }
    out << line << "\n";
  }
  for (std::size_t k = 0; k < used.size(); ++k)
    if (const char* l = skip_legend(static_cast<SpeedSkip>(k)); used[k] && *l)
      out << (markdown ? "- " : "  ") << l << "\n";
  out << "\n";
}

void write_time_model(const PlanResult& p, std::ostream& out) {
  if (p.time_model.empty()) return;
  out << "time model (default: docs/time_model.md; given: a flag; calibrated: --calibration; each "
         "note names its source in brackets):\n";
  for (const TimeModelNote& n : p.time_model)
    out << "  - [" << time_basis_name(n.basis) << "] " << n.text << "\n";
  out << "\n";
}

nlohmann::ordered_json time_model_json(const PlanResult& p) {
  nlohmann::ordered_json notes = nlohmann::ordered_json::array();
  for (const TimeModelNote& n : p.time_model) {
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (const auto& [name, v] : n.values) values[name] = v;
    notes.push_back({{"what", n.what},
                     {"basis", std::string(time_basis_name(n.basis))},
                     {"source", n.source},
                     {"values", values},
                     {"text", n.text}});
  }
  return notes;
}

nlohmann::ordered_json row_speed_json(const std::optional<RowSpeed>& s) {
  if (!s) return nullptr;
  nlohmann::ordered_json j;
  j["micro_batch"] = s->micro_batch;
  j["activation_checkpointing"] = s->activation_checkpointing;
  j["step_ns"] = s->step_ns;
  j["tokens_per_s"] = s->tokens_per_s;
  j["mfu"] = s->mfu;
  return j;
}

}  // namespace zerosim::report
