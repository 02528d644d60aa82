// `zerosim validate --recording DIR` (cli/validate_recording.cc): the prediction built from the
// recording's own param list, ds_config and world size, compared with the recording's collectives
// and its memory counters per phase (zerosim/recorded_memory.h). Bad input is one line naming the
// file; a CPU recording says that no device memory was recorded.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "cli_testlib.h"
#include "recording_testlib.h"
#include "zerosim/recorded_memory.h"
#include "zerosim/recording.h"

namespace zerosim {
namespace {

namespace fs = std::filesystem;
using clitest::expect_one_line_error;
using clitest::read_all;
using clitest::run_cli;
using rectest::copy_recording;
using rectest::edit;
using rectest::kRec;
using rectest::write;

TEST(ValidateRecording, ReaderFindsTheRecordedDsConfig) {
  auto rec = read_recording(kRec);
  ASSERT_TRUE(rec.ok()) << rec.diagnostics().to_string();
  EXPECT_EQ(rec->ds_config, (fs::path(kRec) / "ds_config.rank0.json").string());
  EXPECT_EQ(rec->device, "cpu");
  EXPECT_TRUE(rec->memory.empty());  // gloo on CPU: no torch.cuda counters
}

TEST(ValidateRecording, PredictsFromTheRecordingsOwnInputs) {
  const auto r = run_cli("validate --recording " + kRec);
  // The shipped job's engine is DeepSpeed-shaped, not DeepSpeed: its first backward collective is
  // a reduce to rank 0 where DeepSpeed's stage 0 all-reduces at the boundary.
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("collective sequence: DIFFERS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("params.rank0.json, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 ranks, 2 optimizer steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory per phase: no device memory recorded (device cpu"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("allocated"), std::string::npos) << r.out;  // no rows of zeros
  // Deterministic: the same recording gives the same bytes.
  EXPECT_EQ(run_cli("validate --recording " + kRec).out, r.out);
  const auto j = run_cli("validate --recording " + kRec + " --format json");
  EXPECT_EQ(j.exit_code, 2) << j.err;
  EXPECT_NE(j.out.find("\"memory\": {\"recorded\": false"), std::string::npos) << j.out;
}

TEST(ValidateRecording, BadInputIsOneLineNamingTheFile) {
  const std::string no_ds = copy_recording("vrec_no_ds");
  edit(no_ds + "/recording.rank0.json", "\"ds_config\": \"ds_config.rank0.json\"",
       "\"ds_config\": null");
  expect_one_line_error("validate --recording " + no_ds,
                        no_ds + "/recording.rank0.json: /ds_config: expected the job's ds_config");

  // A ds_config of 4 ranks (16 = 4 x 2 x 2) for a recording of 2.
  const std::string world = copy_recording("vrec_world");
  for (const char* rank : {"/ds_config.rank0.json", "/ds_config.rank1.json"})
    edit(world + rank, "\"train_micro_batch_size_per_gpu\": 4",
         "\"train_micro_batch_size_per_gpu\": 2");
  expect_one_line_error("validate --recording " + world, world + "/ds_config.rank0.json");

  const std::string version = copy_recording("vrec_version");
  edit(version + "/recording.rank0.json", "\"version\": 1", "\"version\": 7");
  expect_one_line_error("validate --recording " + version,
                        version + "/recording.rank0.json: /version: expected version 1");

  const std::string no_params = copy_recording("vrec_no_params");
  fs::remove(no_params + "/params.rank0.json");
  expect_one_line_error("validate --recording " + no_params, no_params + "/params.rank0.json");

  const std::string escape = copy_recording("vrec_escape");
  edit(escape + "/recording.rank0.json", "\"ds_config.rank0.json\"", "\"../ds.json\"");
  expect_one_line_error("validate --recording " + escape,
                        "/ds_config: expected a file name inside the recording directory");

  // Rank 1's own ds_config or param list differing from rank 0's, which the prediction is built
  // from: it was compared against rank 0's without a word (found by a hostile-input pass).
  const std::string ranks_ds = copy_recording("vrec_ranks_ds");
  edit(ranks_ds + "/ds_config.rank1.json", "\"train_micro_batch_size_per_gpu\": 4",
       "\"train_micro_batch_size_per_gpu\": 2");
  expect_one_line_error("validate --recording " + ranks_ds,
                        ranks_ds +
                            "/ds_config.rank1.json: expected the same ds_config as rank 0 "
                            "(ds_config.rank0.json, which the prediction is built from), "
                            "got a different file");
  const std::string ranks_params = copy_recording("vrec_ranks_params");
  write(ranks_params + "/params.rank1.json", read_all(ranks_params + "/params.rank1.json") + " ");
  expect_one_line_error("validate --recording " + ranks_params,
                        ranks_params + "/params.rank1.json: expected the same params as rank 0");

  const std::string memory = copy_recording("vrec_memory");
  write(memory + "/memory.rank1.jsonl", "{\"step\": 0, \"event\": \"forward_begin\"}\n");
  expect_one_line_error("validate --recording " + memory,
                        memory + "/memory.rank1.jsonl:1: /: expected key \"micro_step\"");
}

TEST(ValidateRecording, FlagsTheRecordingReplacesAreRefused) {
  expect_one_line_error("validate --recording " + kRec + " --gpus 4",
                        "--gpus: expected no --gpus with --recording");
  expect_one_line_error("validate --recording " + kRec + " --memory-tolerance lots",
                        "--memory-tolerance");
  expect_one_line_error("validate --recording " + kRec + " --format xml", "--format");
  expect_one_line_error("validate --model gpt2 --memory-tolerance 0.1",
                        "--memory-tolerance: expected --recording for this flag");
  expect_one_line_error("validate --recording /nonexistent/rec",
                        "expected a recording directory holding recording.rank0.json");
}

// A CUDA recording made here: the counters of two steps on one rank against a hand-built
// prediction (persistent 1000 B, activations 200 B, peak 1500 B, fragmentation 75 B, CUDA
// context + NCCL 4000 B).
MemoryReport prediction() {
  MemoryReport r;
  r.items = {{"params", "flat LP params", 600, "persistent"},
             {"optimizer_states", "master + moments", 400, "persistent"},
             {"activations", "activations", 200, "backward"},
             {"buffers", "IPG bucket", 300, "backward"},
             {"overhead", "CUDA context", 3000, "persistent"},
             {"overhead", "NCCL communicator buffers", 1000, "persistent"},
             {"overhead", "allocator fragmentation", 75, "persistent"}};
  r.params = 600;
  r.optimizer_states = 400;
  r.activations = 200;
  r.buffers = 300;
  r.overhead = 4075;
  return r;
}

std::string memory_line(std::uint32_t step, const char* event, std::uint64_t allocated,
                        std::uint64_t max_allocated, std::uint64_t reserved, std::uint64_t used) {
  const std::uint64_t total = 1u << 20;
  return "{\"step\":" + std::to_string(step) + ",\"micro_step\":0,\"event\":\"" + event +
         "\",\"allocated\":" + std::to_string(allocated) +
         ",\"max_allocated\":" + std::to_string(max_allocated) +
         ",\"reserved\":" + std::to_string(reserved) +
         ",\"device_free\":" + std::to_string(total - used) +
         ",\"device_total\":" + std::to_string(total) + "}\n";
}

Recording synthetic_cuda_recording() {
  const std::string dir = copy_recording("vrec_cuda");
  edit(dir + "/recording.rank0.json", "\"device\": \"cpu\"", "\"device\": \"cuda\"");
  std::string rank0 = memory_line(0, "forward_begin", 5, 5, 10, 10);  // step 0: not compared
  rank0 += memory_line(1, "forward_begin", 1000, 1400, 1600, 5600);
  rank0 += memory_line(1, "forward_end", 1200, 1400, 1600, 5600);
  rank0 += memory_line(1, "backward_end", 1100, 1500, 1600, 5600);  // 10% above persistent
  rank0 += memory_line(1, "step_end", 1000, 1500, 1575, 5575);
  write(dir + "/memory.rank0.jsonl", rank0);
  auto rec = read_recording(dir);
  EXPECT_TRUE(rec.ok()) << rec.diagnostics().to_string();
  return rec.ok() ? rec.value() : Recording{};
}

TEST(ValidateRecording, PhaseMemoryAgainstThePrediction) {
  const Recording rec = synthetic_cuda_recording();
  ASSERT_EQ(rec.memory.size(), 5u);
  OverheadParams o;
  o.cuda_context = 3000;
  o.nccl_buffers = 1000;
  const auto c = compare_phase_memory(rec, prediction(), o, 0.05);
  ASSERT_TRUE(c.recorded);
  EXPECT_EQ(c.step, 1u);
  ASSERT_EQ(c.rows.size(), 7u);  // 4 boundaries + max_allocated, reserved, outside
  EXPECT_EQ(c.rows[0].event, "forward_begin");
  EXPECT_EQ(c.rows[0].predicted, 1000u);
  EXPECT_TRUE(c.rows[0].within);
  EXPECT_EQ(c.rows[1].predicted, 1200u);  // forward_end: persistent + activations
  EXPECT_EQ(c.rows[2].predicted, 1000u);
  EXPECT_FALSE(c.rows[2].within);  // +10% against 5%
  EXPECT_EQ(c.rows[4].category, "max_allocated");
  EXPECT_EQ(c.rows[4].predicted, 1500u);
  EXPECT_EQ(c.rows[5].category, "reserved");
  EXPECT_EQ(c.rows[5].predicted, 1575u);  // peak + fragmentation
  EXPECT_EQ(c.rows[5].measured, 1575u);
  EXPECT_EQ(c.rows[6].category, "outside_allocator");
  EXPECT_EQ(c.rows[6].measured, 4000u);  // 5575 used - 1575 reserved
  EXPECT_EQ(c.rows[6].predicted, 4000u);
  ASSERT_EQ(c.verdicts.size(), 4u);
  EXPECT_FALSE(c.verdicts[0].within);
  EXPECT_NEAR(c.verdicts[0].worst_error, 0.10, 1e-12);
  EXPECT_TRUE(c.verdicts[1].within && c.verdicts[2].within && c.verdicts[3].within);
  EXPECT_FALSE(c.passed());
  EXPECT_TRUE(compare_phase_memory(rec, prediction(), o, 0.10).passed());
  EXPECT_EQ(relative_error_text(1100, 1000), "+10.00%");
  EXPECT_EQ(relative_error_text(5, 0), "n/a");
  std::ostringstream table;
  write_phase_memory_table(c, table);
  EXPECT_NE(table.str().find("memory per phase (step 1, tolerance 5%)"), std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("allocated          DIFFERS (worst error 10.00% over 4 rows)"),
            std::string::npos)
      << table.str();
}

TEST(ValidateRecording, SyntheticCudaRecordingThroughTheCli) {
  const Recording rec = synthetic_cuda_recording();
  const auto r = run_cli("validate --recording " + rec.dir + " --memory-tolerance 0.5");
  EXPECT_EQ(r.exit_code, 2) << r.err;  // the sequences still differ
  EXPECT_NE(r.out.find("memory per phase (step 1, tolerance 50%):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 0 forward_begin   allocated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outside_allocator"), std::string::npos) << r.out;
  // check has no memory estimate to compare with: it says where the comparison is, or that the
  // recording holds no device memory.
  const std::string log = " --predicted " + kRec + "/job_log.jsonl --measured ";
  EXPECT_NE(run_cli("check" + log + rec.dir).out.find("compared by `zerosim validate --recording"),
            std::string::npos);
  EXPECT_NE(run_cli("check" + log + kRec).out.find("note: no device memory recorded (device cpu)"),
            std::string::npos);
}

// Every key path of `j` ("a.b"; "a[].b" for the elements of array a), objects and arrays included.
void key_paths(const nlohmann::json& j, const std::string& at, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      std::string p = at;
      if (!p.empty()) p += '.';
      p += k;
      out.insert(p);
      key_paths(v, p, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) key_paths(v, at + "[]", out);
  }
}

// The first column of the README table after <!-- validate-recording-json-keys -->.
std::set<std::string> readme_json_keys() {
  const std::string readme = read_all(std::string(ZEROSIM_SOURCE_DIR) + "/README.md");
  std::set<std::string> keys;
  auto at = readme.find("<!-- validate-recording-json-keys -->");
  EXPECT_NE(at, std::string::npos) << "README.md: no <!-- validate-recording-json-keys --> table";
  if (at == std::string::npos) return keys;
  std::istringstream lines(readme.substr(at));
  std::string line;
  std::getline(lines, line);  // the marker
  while (std::getline(lines, line) && line.rfind('|', 0) == 0) {
    const auto open = line.find("| `");
    if (open != 0) continue;  // the header and the separator
    const auto close = line.find('`', 3);
    keys.insert(line.substr(3, close - 3));
  }
  return keys;
}

// README.md documents every key `validate --recording --format json` prints: the CUDA recording
// (memory rows) whose sequence differs (sequence.rank/index/difference) prints them all.
TEST(ValidateRecording, JsonKeysAreTheReadmes) {
  const Recording rec = synthetic_cuda_recording();
  const auto r = run_cli("validate --recording " + rec.dir + " --format json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_FALSE(j["memory"]["rows"].empty()) << r.out;
  ASSERT_TRUE(j["check"]["sequence"].contains("difference")) << r.out;
  std::set<std::string> printed;
  key_paths(j, "", printed);
  EXPECT_EQ(readme_json_keys(), printed) << r.out;
}

}  // namespace
}  // namespace zerosim
