// Bytes sent per rank of rooted collectives (reduce, broadcast). NCCL's ring reduce is a chain that
// ends at the root, so the root sends nothing; ZeRO-1/2 with use_multi_rank_bucket_allreduce off
// reduces each bucket piece to its partition owner, so the root moves from call to call and each
// rank sends the whole gradient less its own partition. The prediction (the summary of the
// simulator's all-rank records) used to sum the busiest rank of every call (the whole gradient),
// 4/3 of what any rank sends at 4 ranks, and `zerosim validate` failed on that config.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_testlib.h"
#include "temp_path.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

using clitest::run_cli;

const char* const kNoMultiRank =
    R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true},
        "zero_optimization": {"stage": 2, "use_multi_rank_bucket_allreduce": false,
                              "reduce_scatter": true}})";

nlohmann::json validate_json(const std::string& flags) {
  const std::string config = testutil::unique_temp_path("no_multi_rank.json");
  std::ofstream(config) << kNoMultiRank;
  const clitest::CliRun r = run_cli("validate --gpus 4 --gpus-per-node 4 --ds-config " + config +
                                    " --format json " + flags);
  std::remove(config.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

const nlohmann::json* kind_row(const nlohmann::json& j, const std::string& kind) {
  for (const auto& row : j["bytes"])
    if (row["kind"] == kind) return &row;
  return nullptr;
}

TEST(ValidateRootedBytes, ReduceToEachOwnerCountOnlyGpt2Small) {
  const auto j = validate_json("--model gpt2-small --no-data --steps 1");
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["passed"].get<bool>()) << j.dump();
  const nlohmann::json* reduce = kind_row(j, "reduce");
  ASSERT_NE(reduce, nullptr) << j.dump();
  EXPECT_EQ((*reduce)["calls_per_rank"], 4u);
  // 124,439,808 fp16 gradients = 248,879,616 bytes in one bucket, a quarter owned by each rank:
  // every rank sends the three quarters it does not own.
  EXPECT_EQ((*reduce)["predicted_sent_per_rank"], 186659712u);
  EXPECT_EQ((*reduce)["measured_sent_max"], 186659712u);
  EXPECT_TRUE((*reduce)["within"].get<bool>());
}

TEST(ValidateRootedBytes, ReduceToEachOwnerDataMode) {
  const std::string params = std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_params.json";
  const auto j = validate_json("--param-list " + params + " --steps 2");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["mode"], "data");
  EXPECT_TRUE(j["passed"].get<bool>()) << j.dump();
  const nlohmann::json* reduce = kind_row(j, "reduce");
  ASSERT_NE(reduce, nullptr) << j.dump();
  EXPECT_EQ((*reduce)["predicted_sent_per_rank"], (*reduce)["measured_sent_max"]);
  EXPECT_TRUE((*reduce)["within"].get<bool>());
}

// The summary rule itself, on all-rank records as the simulator writes them.
CommRecord rooted(CollectiveKind kind, std::uint32_t root, std::uint32_t group, Bytes bytes,
                  std::uint32_t step) {
  CommRecord c;
  c.kind = kind;
  c.phase = Phase::Backward;
  c.step = step;
  c.root = root;
  c.group_size = group;
  c.bytes = c.bytes_sent = c.bytes_received = bytes;
  return c;
}

TEST(ValidateRootedBytes, SummaryCountsTheChainEndsOfAllRankRecords) {
  TraceMeta meta;
  meta.world = 2;
  meta.steps = 1;
  {  // reduce to rank 0 (100 B) then rank 1 (60 B): rank 0 sends 60, rank 1 sends 100
    SummaryBuilder b(meta);
    b.add(rooted(CollectiveKind::Reduce, 0, 2, 100, 0));
    b.add(rooted(CollectiveKind::Reduce, 1, 2, 60, 0));
    const Summary s = b.finish();
    ASSERT_EQ(s.comm.size(), 1u);
    EXPECT_EQ(s.comm[0].bytes_sent, 100u);
    EXPECT_EQ(s.comm[0].bytes_received, 100u);  // the root's right neighbour receives nothing
    EXPECT_EQ(s.comm[0].bytes, 160u);           // nccl-tests' S is not per rank
    ASSERT_EQ(s.steps.size(), 1u);
    EXPECT_EQ(s.steps[0].bytes_sent, 100u);
  }
  meta.world = 4;
  {  // broadcasts from rank 0 only: ranks 0-2 send everything, rank 3 nothing
    SummaryBuilder b(meta);
    b.add(rooted(CollectiveKind::Broadcast, 0, 4, 100, 0));
    b.add(rooted(CollectiveKind::Broadcast, 0, 4, 50, 0));
    const Summary s = b.finish();
    EXPECT_EQ(s.comm[0].bytes_sent, 150u);
    EXPECT_EQ(s.steps[0].bytes_sent, 150u);
  }
  {  // a group smaller than the world: its layout is not in the record, the busiest rank's bytes
    SummaryBuilder b(meta);
    b.add(rooted(CollectiveKind::Reduce, 0, 2, 100, 0));
    b.add(rooted(CollectiveKind::Reduce, 1, 2, 60, 0));
    EXPECT_EQ(b.finish().comm[0].bytes_sent, 160u);
  }
  {  // per-rank records (a measured trace) are each rank's own count: summed as they are
    SummaryBuilder b(meta);
    CommRecord c = rooted(CollectiveKind::Reduce, 0, 4, 0, 0);
    c.rank = 0;
    b.add(c);
    c = rooted(CollectiveKind::Reduce, 0, 4, 100, 0);
    c.rank = 1;
    b.add(c);
    EXPECT_EQ(b.finish().comm[0].bytes_sent, 100u);
  }
}

}  // namespace
}  // namespace zerosim
