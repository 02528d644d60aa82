// read_recording and as_recorded_phases (zerosim/recording.h).
#include <filesystem>
#include <string>

#include "base/json_reader.h"
#include "zerosim/recording.h"

namespace zerosim {
namespace {

constexpr std::uint64_t kMaxWorld = 1u << 20;

struct Manifest {
  std::uint32_t rank = 0, world = 0, steps = 0;
  std::uint64_t collectives = 0, others = 0;
};

std::string file_of(const std::string& dir, const char* stem, std::uint32_t rank, const char* ext) {
  return (std::filesystem::path(dir) / (std::string(stem) + ".rank" + std::to_string(rank) + ext))
      .string();
}

bool read_manifest(const std::string& path, Manifest& m, Diagnostics& d) {
  std::string text;
  if (!json::read_file(path, text, d)) return false;
  Diagnostics local;
  auto doc = json::parse(text, path, local);
  if (!doc) {
    d.append(local);
    return false;
  }
  json::JsonReader r(*doc, path, "", local);
  if (!r.expect_object()) {
    d.append(local);
    return false;
  }
  r.get_enum("format", {"zerosim-recording"});
  if (!r.has("format")) r.error("expected key \"format\": \"zerosim-recording\", got none");
  if (auto v = r.get_uint("version", 0, UINT32_MAX); v && *v != 1)
    r.error("expected version 1 (this zerosim reads recordings of version 1), got version " +
                std::to_string(*v),
            "version");
  if (auto v = r.get_uint("rank", 0, kMaxWorld - 1)) m.rank = static_cast<std::uint32_t>(*v);
  if (auto v = r.get_uint("world_size", 1, kMaxWorld)) m.world = static_cast<std::uint32_t>(*v);
  if (auto v = r.get_uint("steps", 0, UINT32_MAX)) m.steps = static_cast<std::uint32_t>(*v);
  if (auto v = r.get_uint("collectives", 0, UINT64_MAX)) m.collectives = *v;
  if (auto v = r.get_uint("other_collectives", 0, UINT64_MAX)) m.others = *v;
  for (const char* k : {"version", "rank", "world_size", "collectives", "complete"})
    if (!r.has(k)) r.error(std::string("expected key \"") + k + "\", got none");
  if (auto complete = r.get_bool("complete"); complete && !*complete) {
    std::string why = "no reason recorded";
    if (r.has("error") && r.value()["error"].is_string())
      why = r.value()["error"].get<std::string>();
    r.error("expected a complete recording, got one that stopped early: " + why, "complete");
  }
  for (const char* k : {"error", "torch", "device", "model_found", "recorded_s"}) r.mark_used(k);
  r.reject_unknown(
      {"format", "version", "rank", "world_size", "steps", "collectives", "other_collectives",
       "complete", "error", "torch", "device", "model_found", "recorded_s"},
      Severity::Warning);
  const bool ok = !local.has_errors();
  d.append(local);
  return ok;
}

}  // namespace

Result<Recording> read_recording(const std::string& dir) {
  Recording rec;
  rec.dir = dir;
  Diagnostics d;
  Manifest first;
  const std::string first_path = file_of(dir, "recording", 0, ".json");
  if (!std::filesystem::exists(first_path))
    return fail<Recording>(dir, "",
                           "expected a recording directory holding recording.rank0.json "
                           "(python -m zerosim_record -o DIR ...), got none");
  if (!read_manifest(first_path, first, d)) return d;
  rec.world = first.world;
  rec.steps = first.steps;
  for (std::uint32_t r = 0; r < rec.world; ++r) {
    Manifest m = first;
    const std::string mpath = file_of(dir, "recording", r, ".json");
    if (r > 0) {
      if (!std::filesystem::exists(mpath)) {
        d.error(dir, "",
                "expected recording.rank" + std::to_string(r) + ".json (world size " +
                    std::to_string(rec.world) +
                    " in recording.rank0.json), got none: a rank is "
                    "missing");
        continue;
      }
      if (!read_manifest(mpath, m, d)) continue;
    }
    if (m.rank != r)
      d.error(mpath, "/rank", "expected " + std::to_string(r) + ", got " + std::to_string(m.rank));
    if (m.world != rec.world)
      d.error(mpath, "/world_size",
              "expected " + std::to_string(rec.world) + " (as recording.rank0.json), got " +
                  std::to_string(m.world));
    rec.other_collectives += m.others;
    const std::string lpath = file_of(dir, "collectives", r, ".jsonl");
    std::string text;
    if (!json::read_file(lpath, text, d)) continue;
    std::vector<LoggedCollective> lines;
    if (text.find_first_not_of(" \t\r\n") != std::string::npos) {
      auto log = read_collective_log(text, lpath);
      if (!log.ok()) {
        d.append(log.diagnostics());
        continue;
      }
      lines = std::move(log.value());
    }
    if (lines.size() != m.collectives) {
      d.error(lpath, "",
              "expected " + std::to_string(m.collectives) + " collectives (" + mpath +
                  " /collectives), got " + std::to_string(lines.size()) +
                  ": the log is truncated or was edited");
      continue;
    }
    for (std::size_t i = 0; i < lines.size(); ++i)
      if (lines[i].rank != r) {
        d.error(lpath + ":" + std::to_string(i + 1), "/rank",
                "expected " + std::to_string(r) + ", got " + std::to_string(lines[i].rank));
        break;
      }
    rec.log.insert(rec.log.end(), lines.begin(), lines.end());
  }
  if (d.has_errors()) return d;
  return Result<Recording>(std::move(rec), std::move(d));
}

std::vector<LoggedCollective> as_recorded_phases(std::vector<LoggedCollective> log) {
  for (LoggedCollective& c : log) {
    if (c.phase == Phase::BoundaryReduce || c.phase == Phase::Epilogue) c.phase = Phase::Backward;
    if (c.phase == Phase::PostStep) c.phase = Phase::Step;
  }
  return log;
}

}  // namespace zerosim
