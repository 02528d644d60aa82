// `zerosim check --measured DIR` on a recording of tools/zerosim_record (zerosim/recording.h): the
// shipped recording of tests/recorder/tiny_job.py agrees with the job's own log, and every way a
// recording can be broken (a rank missing, a truncated log, a stopped recorder, another version,
// another world size) is one line naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_testlib.h"
#include "recording_testlib.h"
#include "zerosim/recording.h"

namespace zerosim {
namespace {

namespace fs = std::filesystem;
using clitest::data;
using clitest::expect_one_line_error;
using clitest::read_all;
using clitest::run_cli;
using rectest::copy_recording;
using rectest::kRec;
using rectest::replace;
using rectest::write;

TEST(Recording, ReadsEveryRankInOrder) {
  auto rec = read_recording(kRec);
  ASSERT_TRUE(rec.ok()) << rec.diagnostics().to_string();
  EXPECT_EQ(rec->world, 2u);
  EXPECT_EQ(rec->steps, 2u);
  EXPECT_EQ(rec->other_collectives, 2u);  // one barrier per rank
  ASSERT_EQ(rec->log.size(), 48u);
  EXPECT_EQ(rec->log.front().rank, 0u);
  EXPECT_EQ(rec->log.back().rank, 1u);
  EXPECT_EQ(rec->log.front().phase, Phase::Init);
}

TEST(Recording, PredictedPhasesMapOntoTheRecordersPhases) {
  std::vector<LoggedCollective> log(4);
  log[0].phase = Phase::BoundaryReduce;
  log[1].phase = Phase::Epilogue;
  log[2].phase = Phase::PostStep;
  log[3].phase = Phase::Forward;
  const auto m = as_recorded_phases(log);
  EXPECT_EQ(m[0].phase, Phase::Backward);
  EXPECT_EQ(m[1].phase, Phase::Backward);
  EXPECT_EQ(m[2].phase, Phase::Step);
  EXPECT_EQ(m[3].phase, Phase::Forward);
}

TEST(RecordingCheck, TheJobsOwnLogAgreesWithItsRecording) {
  auto r = run_cli("check --predicted " + kRec + "/job_log.jsonl --measured " + kRec);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("collective sequence: identical (2 ranks, 48 measured collectives)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 recorded calls zerosim does not model"), std::string::npos) << r.out;
}

TEST(RecordingCheck, AChangedSizeInThePredictionDiffers) {
  const std::string dir = copy_recording("rec_pred");
  const std::string pred = dir + "/pred.jsonl";
  write(pred, replace(read_all(kRec + "/job_log.jsonl"), "\"numel\":128,\"out_numel\":128",
                      "\"numel\":256,\"out_numel\":256"));
  auto r = run_cli("check --predicted " + pred + " --measured " + kRec);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("numel: predicted 256, measured 128"), std::string::npos) << r.out;
}

TEST(RecordingCheck, AMissingRankIsOneLine) {
  const std::string dir = copy_recording("rec_missing");
  fs::remove(dir + "/recording.rank1.json");
  expect_one_line_error("check --predicted " + kRec + "/job_log.jsonl --measured " + dir,
                        "expected recording.rankR.json for every rank R of world size 2 "
                        "(recording.rank0.json), got none for rank 1: ranks are missing");
  // A world of 2^20 with rank 0 alone printed a line per missing rank (562 MB; found by a
  // hostile-input pass): the ranks are one range on one line.
  write(dir + "/recording.rank0.json", replace(read_all(dir + "/recording.rank0.json"),
                                               "\"world_size\": 2", "\"world_size\": 1048576"));
  expect_one_line_error("check --predicted " + kRec + "/job_log.jsonl --measured " + dir,
                        "got none for ranks 1..1048575 (1048575 ranks): ranks are missing");
}

// The recorded device is printed in check's notes: a control character reached the terminal raw.
TEST(RecordingCheck, ADeviceWithControlCharactersIsOneLine) {
  const std::string dir = copy_recording("rec_device");
  write(dir + "/recording.rank0.json",
        replace(read_all(dir + "/recording.rank0.json"), "\"device\": \"cpu\"",
                "\"device\": \"cpu\\u001b[31m\""));
  expect_one_line_error(
      "check --predicted " + kRec + "/job_log.jsonl --measured " + dir,
      "recording.rank0.json: /device: expected a name without control characters");
}

TEST(RecordingCheck, ATruncatedLogIsOneLine) {
  const std::string dir = copy_recording("rec_truncated");
  std::string log = read_all(dir + "/collectives.rank1.jsonl");
  log.erase(log.rfind('\n', log.size() - 2) + 1);  // drop the last line
  write(dir + "/collectives.rank1.jsonl", log);
  expect_one_line_error("check --predicted " + kRec + "/job_log.jsonl --measured " + dir,
                        "collectives.rank1.jsonl: expected 24 collectives");
}

TEST(RecordingCheck, AStoppedRecorderIsOneLineWithItsReason) {
  const std::string dir = copy_recording("rec_stopped");
  const std::string m = dir + "/recording.rank0.json";
  write(m, replace(replace(read_all(m), "\"complete\": true", "\"complete\": false"),
                   "\"error\": null", "\"error\": \"a hook raised\""));
  expect_one_line_error("check --predicted " + kRec + "/job_log.jsonl --measured " + dir,
                        "/complete: expected a complete recording, got one that stopped early: a "
                        "hook raised");
}

TEST(RecordingCheck, AnotherVersionIsOneLine) {
  const std::string dir = copy_recording("rec_version");
  const std::string m = dir + "/recording.rank0.json";
  write(m, replace(read_all(m), "\"version\": 1", "\"version\": 2"));
  expect_one_line_error("check --predicted " + kRec + "/job_log.jsonl --measured " + dir,
                        "expected version 1 (this zerosim reads recordings of version 1), got "
                        "version 2");
}

TEST(RecordingCheck, AnotherWorldSizeIsOneLine) {
  const std::string dir = copy_recording("rec_world");
  const std::string pred = dir + "/pred.jsonl";
  std::string log = read_all(kRec + "/job_log.jsonl");
  log += replace(log.substr(0, log.find('\n') + 1), "\"rank\":0", "\"rank\":2");
  write(pred, log);
  expect_one_line_error("check --predicted " + pred + " --measured " + kRec,
                        "expected a recording of 3 ranks (the prediction's world size), got 2");
}

TEST(RecordingCheck, ADirectoryWithoutARecordingOrOnThePredictedSideIsOneLine) {
  expect_one_line_error(
      "check --predicted " + kRec + "/job_log.jsonl --measured " + data("scenarios"),
      "expected a recording directory holding recording.rank0.json");
  // A prediction is a file: a directory there is what it always was, not a recording.
  expect_one_line_error("check --predicted " + kRec + " --measured " + kRec,
                        "expected a regular file, got a directory");
}

TEST(RecordingCheck, TheRecordedParamListIsAZerosimParamList) {
  auto r = run_cli("schedule --param-list " + kRec + "/params.rank0.json --ds-config " +
                   data("ds/hf_ds_config_zero2.json") +
                   " --world-size 2 --precision fp16 --micro-batch 1 --grad-accum 2 "
                   "--gradient-clipping 1 --steps 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace zerosim
