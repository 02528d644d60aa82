// read_recording, as_recorded_phases and recorded_phase_notes (zerosim/recording.h).
#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/json_reader.h"
#include "zerosim/recording.h"

namespace zerosim {
namespace {

// A recording has one file per rank: 2^20 ranks is far above any job recorded (~10^5 GPUs).
constexpr std::uint64_t kMaxWorld = std::uint64_t{1} << 20;

struct Manifest {
  std::uint32_t rank = 0, world = 0, steps = 0;
  std::uint64_t collectives = 0, others = 0;
  std::string device, ds_config;
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
  if (r.has("device") && r.value()["device"].is_string())
    if (auto v = r.get_name("device")) m.device = *v;
  // "ds_config": the file the recorder wrote the job's ds_config to, null when it found none.
  if (r.has("ds_config") && !r.value()["ds_config"].is_null()) {
    if (auto f = r.get_string("ds_config")) {
      if (f->empty() || f->find('/') != std::string::npos || f->find('\\') != std::string::npos)
        r.error("expected a file name inside the recording directory, got \"" + *f + "\"",
                "ds_config");
      else
        m.ds_config = *f;
    }
  }
  for (const char* k : {"error", "torch", "device", "model_found", "recorded_s", "ds_config"})
    r.mark_used(k);
  r.reject_unknown(
      {"format", "version", "rank", "world_size", "steps", "collectives", "other_collectives",
       "complete", "error", "torch", "device", "model_found", "recorded_s", "ds_config"},
      Severity::Warning);
  const bool ok = !local.has_errors();
  d.append(local);
  return ok;
}

// memory.rankR.jsonl: one object per line, every counter a byte count.
bool read_memory(const std::string& path, std::uint32_t rank, std::vector<RecordedMemory>& out,
                 Diagnostics& d) {
  std::string text;
  if (!json::read_file(path, text, d)) return false;
  std::size_t line_no = 0, at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    Diagnostics local;
    auto doc = json::parse(line, where, local);
    if (!doc) {
      d.append(local);
      return false;
    }
    json::JsonReader r(*doc, where, "", local);
    if (!r.expect_object()) {
      d.append(local);
      return false;
    }
    RecordedMemory m;
    m.rank = rank;
    constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
    if (auto v = r.get_uint("step", 0, UINT32_MAX)) m.step = static_cast<std::uint32_t>(*v);
    if (auto v = r.get_uint("micro_step", 0, UINT32_MAX))
      m.micro_step = static_cast<std::uint32_t>(*v);
    if (auto v = r.get_enum("event", {"forward_begin", "forward_end", "backward_begin",
                                      "backward_end", "step_begin", "step_end"}))
      m.event = *v;
    const std::pair<const char*, std::uint64_t*> counters[] = {{"allocated", &m.allocated},
                                                               {"max_allocated", &m.max_allocated},
                                                               {"reserved", &m.reserved},
                                                               {"device_free", &m.device_free},
                                                               {"device_total", &m.device_total}};
    for (const auto& [key, field] : counters)
      if (auto v = r.get_uint(key, 0, kMax)) *field = *v;
    for (const char* k : {"step", "micro_step", "event", "allocated", "max_allocated", "reserved",
                          "device_free", "device_total"})
      if (!r.has(k)) {  // the first missing key: one line per file
        r.error(std::string("expected key \"") + k + "\", got none");
        break;
      }
    r.reject_unknown({"step", "micro_step", "event", "allocated", "max_allocated", "reserved",
                      "device_free", "device_total"},
                     Severity::Warning);
    const bool bad = local.has_errors();
    d.append(local);
    if (bad) return false;
    out.push_back(std::move(m));
  }
  return true;
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
  rec.device = first.device;
  if (!first.ds_config.empty())
    rec.ds_config = (std::filesystem::path(dir) / first.ds_config).string();
  // The missing ranks, as ranges: one line for all of them (a world_size of 1048576 with rank 0
  // alone printed a line per rank, 562 MB of diagnostics; found by a hostile-input pass).
  // The directory is listed once: a stat per rank of a 2^20 world took 4 s.
  std::vector<bool> present(rec.world, false);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string head = "recording.rank", tail = ".json";
    if (name.size() <= head.size() + tail.size() || name.rfind(head, 0) != 0 ||
        name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
    if (digits.size() > 7 || digits.find_first_not_of("0123456789") != std::string::npos ||
        (digits.size() > 1 && digits[0] == '0'))
      continue;  // not a rank file zerosim_record names (file_of)
    const std::uint64_t r = std::stoull(digits);
    if (r < present.size()) present[r] = true;
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> missing;
  for (std::uint32_t r = 0; r < rec.world; ++r) {
    Manifest m = first;
    const std::string mpath = file_of(dir, "recording", r, ".json");
    if (r > 0) {
      if (ec ? !std::filesystem::exists(mpath) : !present[r]) {
        if (!missing.empty() && missing.back().second + 1 == r)
          missing.back().second = r;
        else
          missing.emplace_back(r, r);
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
    // The memory counters: absent or empty on a CPU job (the recorder samples CUDA only).
    const std::string mem_path = file_of(dir, "memory", r, ".jsonl");
    if (std::filesystem::exists(mem_path)) read_memory(mem_path, r, rec.memory, d);
  }
  if (!missing.empty()) {
    std::string ranks;
    std::uint64_t count = 0;
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const auto [lo, hi] = missing[i];
      count += hi - lo + 1;
      if (i < 8)
        ranks += (i ? ", " : "") + std::to_string(lo) + (lo == hi ? "" : ".." + std::to_string(hi));
      else if (i == 8)
        ranks += ", ...";
    }
    d.error(dir, "",
            "expected recording.rankR.json for every rank R of world size " +
                std::to_string(rec.world) + " (recording.rank0.json), got none for " +
                (count == 1 ? "rank " : "ranks ") + ranks +
                (count > 1 ? " (" + std::to_string(count) + " ranks)" : "") +
                ": ranks are missing");
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

std::vector<std::string> recorded_phase_notes(std::uint64_t other_collectives) {
  std::vector<std::string> notes = {
      "a recording's phases are init, forward, backward and step: the prediction's "
      "boundary_reduce and epilogue compared as backward, post_step as step"};
  if (other_collectives > 0)
    notes.push_back(std::to_string(other_collectives) +
                    " recorded calls zerosim does not model (barrier, all_gather of lists, "
                    "...; other_collectives.rankR.jsonl) are not compared");
  return notes;
}

}  // namespace zerosim
