// Schedule JSON (schedule_io.h): the exact text the writer produces for a hand-built two-rank
// schedule (golden file tests/data/schedules/two_rank.json plus exact op lines), the compactness
// rule, the round trip (read back == written schedule, re-written byte-identical), and one
// exact diagnostic line per kind of bad file.
#include "zerosim/schedule_io.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/schedule_graph.h"

namespace zerosim {
namespace {

const std::string kSrc = "two_rank.json";

Op make_op(OpKind kind, Phase phase) {
  Op o;
  o.kind = kind;
  o.phase = phase;
  return o;
}

Op collective(CollectiveKind k, Elements numel, Elements out, DType dt, ReduceOp r, Phase phase) {
  Op o = make_op(OpKind::Collective, phase);
  o.collective = k;
  o.numel = numel;
  o.out_numel = out;
  o.dtype = dt;
  o.reduce_op = r;
  return o;
}

// A small stage-2-like program on 2 ranks whose grads_in_partition differs per rank (two roles).
Schedule two_rank_schedule() {
  Schedule s;
  s.meta.model = "toy";
  s.meta.optimizer = "DeepSpeedZeroOptimizer";
  s.meta.stage = 2;
  s.meta.world = 2;
  s.meta.gpus_per_node = 2;
  s.meta.slot_names = {"grads_in_partition"};
  s.meta.notes = {"hand-built for schedule_io_test"};
  s.comms = {{0, 2, 1}};
  // Three params of one group: 16 elements, already a multiple of 2W, 8 per rank.
  s.tensors = {{"w0", {4, 2}, 8, DType::Float16, true, kNone, 0, 0, kNone, false},
               {"frozen", {3}, 3, DType::Float16, false, kNone, kNone, 0, kNone, false},
               {"w2", {8}, 8, DType::Float16, true, 1, 0, 8, kNone, false}};
  s.layout.stage = 2;
  s.layout.world = 2;
  s.layout.groups = {{{0, 2}, {0, 2}, 16, 0, 16, 8}};
  s.buffers = {
      {"flat_lp", "B1", BufferCategory::Param16, MemoryPool::Device, DType::Float16, 16, kNone,
       true},
      {"ipg[0]", "T2", BufferCategory::CommBucket, MemoryPool::Device, DType::Float16, 8, kNone,
       false},
      {"grads_in_partition", "", BufferCategory::Grad, MemoryPool::Device, DType::Float16, 0, 0,
       false},
      {"master", "B2", BufferCategory::Param32, MemoryPool::Pinned, DType::Float32, 8, kNone, true},
      {"norms", "", BufferCategory::Temp, MemoryPool::Device, DType::Float32, 1, kNone, false,
       true},
  };
  s.roles = {{{{0, 0}}, 0, {8}}, {{{1, 1}}, 1, {7}}};
  auto& ops = s.ops;
  Op a = make_op(OpKind::Alloc, Phase::Init);
  a.buffer = 0;
  ops.push_back(a);  // 0
  a.buffer = 3;
  ops.push_back(a);  // 1
  Op bc =
      collective(CollectiveKind::Broadcast, 16, 16, DType::Float16, ReduceOp::None, Phase::Init);
  bc.root = 0;
  bc.label = "broadcast model";
  ops.push_back(bc);  // 2
  Op fwd = make_op(OpKind::Forward, Phase::Forward);
  fwd.layer = 0;
  fwd.flops = 1.5e9;
  fwd.label = "fwd layers.0";
  ops.push_back(fwd);  // 3
  Op ipg = make_op(OpKind::Alloc, Phase::Backward);
  ipg.buffer = 1;
  ops.push_back(ipg);  // 4
  Op bwd = make_op(OpKind::Backward, Phase::Backward);
  bwd.layer = 0;
  bwd.flops = 3e9;
  ops.push_back(bwd);  // 5
  Op ready = make_op(OpKind::GradReady, Phase::Backward);
  ready.param = 2;
  ops.push_back(ready);  // 6
  Op copy = make_op(OpKind::CopyToBucket, Phase::Backward);
  copy.param = 2;
  copy.elements = 7;
  copy.bucket = 0;
  copy.dst = {1, 0, 0, 0};  // ipg[0] from its start, the op's 7 elements
  ops.push_back(copy);      // 7
  Op ar =
      collective(CollectiveKind::AllReduce, 7, 7, DType::Float16, ReduceOp::Sum, Phase::Backward);
  ar.stream = Stream::Reduce;
  ar.bucket = 0;
  ar.deps = {7};
  ar.scale = 0.5;  // averaged over the 2 ranks
  ar.label = "flush 0: AR(7)";
  ops.push_back(ar);  // 8
  Op gip = make_op(OpKind::Alloc, Phase::Epilogue);
  gip.buffer = 2;
  gip.zero_fill = true;  // torch.zeros
  gip.deps = {6, 8};
  ops.push_back(gip);  // 9
  Op post = make_op(OpKind::Copy, Phase::Epilogue);
  post.slot = 0;
  post.dst = {2, 0, 0, 0};  // the role's grads_in_partition
  post.copy_mode = CopyMode::Add;
  ops.push_back(post);  // 10
  Op fr = make_op(OpKind::Free, Phase::Epilogue);
  fr.buffer = 1;
  ops.push_back(fr);  // 11
  ops.push_back(
      collective(CollectiveKind::AllReduce, 1, 1, DType::UInt8, ReduceOp::Max, Phase::Step));
  Op rd = collective(CollectiveKind::Reduce, 8, 8, DType::Float32, ReduceOp::Sum, Phase::Step);
  rd.root = 1;
  ops.push_back(rd);  // 13
  Op opt = make_op(OpKind::OptimizerStep, Phase::Step);
  opt.stream = Stream::Host;
  opt.slot = 0;
  opt.dtype = DType::Float32;
  opt.update = 0;
  UpdateCall call;
  call.master = {3, 0, 0, 0};  // the role's master slice (the op's slot-sized extent)
  call.norms = {4, 0, 0, 1};
  s.updates = {call};
  ops.push_back(opt);  // 14
  Op ag = collective(CollectiveKind::AllGather, 8, 16, DType::Float16, ReduceOp::None, Phase::Step);
  ag.src = {0, 0, 8, 8};  // the rank's half of flat_lp, gathered in place
  ag.dst = {0, 0, 0, 0};
  ops.push_back(ag);  // 15
  Op rs = collective(CollectiveKind::ReduceScatter, 16, 8, DType::BFloat16, ReduceOp::Sum,
                     Phase::PostStep);
  rs.bucket = 1;
  rs.src.list = 0;  // half of flat_lp, then 8 zeros
  s.lists = {{{0, 0, 8}, {kNone, 0, 8}}};
  s.flush_plans = {{{{2, 1, 0}}}};  // flush 0 reduces w2 from ipg[0]
  ops.push_back(rs);                // 16
  Op fr2 = make_op(OpKind::Free, Phase::PostStep);
  fr2.buffer = 2;
  ops.push_back(fr2);                                     // 17
  ops.push_back(make_op(OpKind::Sync, Phase::PostStep));  // 18
  Op mk = make_op(OpKind::Marker, Phase::PostStep);
  mk.label = "step \"0\" done";
  ops.push_back(mk);  // 19
  return s;
}

std::string write(const Schedule& s) {
  std::ostringstream os;
  write_schedule_json(s, os);
  return os.str();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces the one occurrence of `from` (the test fails if it is not exactly one).
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  EXPECT_EQ(text.find(from, pos + 1), std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

// Reads `text`, expects failure, returns the diagnostics (one per line).
std::string errors_of(const std::string& text, const ModelDesc* model = nullptr) {
  auto r = read_schedule_json(text, kSrc, model);
  EXPECT_FALSE(r.ok());
  return r.diagnostics().to_string();
}

void expect_equal(const Schedule& a, const Schedule& b) {
  EXPECT_EQ(a.meta.model, b.meta.model);
  EXPECT_EQ(a.meta.mode, b.meta.mode);
  EXPECT_EQ(a.meta.deepspeed_version, b.meta.deepspeed_version);
  EXPECT_EQ(a.meta.optimizer, b.meta.optimizer);
  EXPECT_EQ(a.meta.stage, b.meta.stage);
  EXPECT_EQ(a.meta.world, b.meta.world);
  EXPECT_EQ(a.meta.nodes, b.meta.nodes);
  EXPECT_EQ(a.meta.gpus_per_node, b.meta.gpus_per_node);
  EXPECT_EQ(a.meta.steps, b.meta.steps);
  EXPECT_EQ(a.meta.grad_accum, b.meta.grad_accum);
  EXPECT_EQ(a.meta.lp, b.meta.lp);
  EXPECT_EQ(a.meta.master, b.meta.master);
  EXPECT_EQ(a.meta.grad_accum_dtype, b.meta.grad_accum_dtype);
  EXPECT_EQ(a.meta.comm, b.meta.comm);
  EXPECT_EQ(a.meta.slot_names, b.meta.slot_names);
  EXPECT_EQ(a.meta.notes, b.meta.notes);
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    const Buffer &x = a.buffers[i], &y = b.buffers[i];
    EXPECT_TRUE(x.name == y.name && x.spec_id == y.spec_id && x.category == y.category &&
                x.pool == y.pool && x.dtype == y.dtype && x.numel == y.numel && x.slot == y.slot &&
                x.persistent == y.persistent)
        << "buffer " << i;
  }
  ASSERT_EQ(a.roles.size(), b.roles.size());
  for (std::size_t i = 0; i < a.roles.size(); ++i) {
    EXPECT_EQ(a.roles[i].ranks, b.roles[i].ranks);
    EXPECT_EQ(a.roles[i].representative, b.roles[i].representative);
    EXPECT_EQ(a.roles[i].slots, b.roles[i].slots);
  }
  EXPECT_EQ(a.comms, b.comms);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const TensorInfo &x = a.tensors[i], &y = b.tensors[i];
    EXPECT_TRUE(x.name == y.name && x.shape == y.shape && x.numel == y.numel &&
                x.dtype == y.dtype && x.trainable == y.trainable && x.grad == y.grad &&
                x.group == y.group && x.flat_offset == y.flat_offset &&
                x.sub_group == y.sub_group && x.persistent == y.persistent)
        << "tensor " << i;
  }
  EXPECT_EQ(a.layout.stage, b.layout.stage);
  EXPECT_EQ(a.layout.world, b.layout.world);
  EXPECT_EQ(a.layout.round_robin, b.layout.round_robin);
  EXPECT_EQ(a.layout.sub_group_size, b.layout.sub_group_size);
  EXPECT_EQ(a.layout.param_persistence_threshold, b.layout.param_persistence_threshold);
  EXPECT_EQ(a.layout.model_persistence_threshold, b.layout.model_persistence_threshold);
  ASSERT_EQ(a.layout.groups.size(), b.layout.groups.size());
  for (std::size_t g = 0; g < a.layout.groups.size(); ++g) {
    const GroupLayout &x = a.layout.groups[g], &y = b.layout.groups[g];
    EXPECT_TRUE(x.params == y.params && x.flat_order == y.flat_order && x.numel == y.numel &&
                x.padding == y.padding && x.aligned == y.aligned && x.partition == y.partition)
        << "group " << g;
  }
  ASSERT_EQ(a.layout.sub_groups.size(), b.layout.sub_groups.size());
  for (std::size_t i = 0; i < a.layout.sub_groups.size(); ++i)
    EXPECT_TRUE(a.layout.sub_groups[i].group == b.layout.sub_groups[i].group &&
                a.layout.sub_groups[i].params == b.layout.sub_groups[i].params &&
                a.layout.sub_groups[i].partition_numel == b.layout.sub_groups[i].partition_numel)
        << "sub-group " << i;
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    EXPECT_TRUE(x.kind == y.kind && x.stream == y.stream && x.phase == y.phase &&
                x.step == y.step && x.micro_step == y.micro_step && x.buffer == y.buffer &&
                x.layer == y.layer && x.param == y.param && x.bucket == y.bucket &&
                x.flops == y.flops && x.elements == y.elements && x.slot == y.slot &&
                x.dtype == y.dtype && x.collective == y.collective && x.numel == y.numel &&
                x.out_numel == y.out_numel && x.comm == y.comm && x.reduce_op == y.reduce_op &&
                x.root == y.root && x.deps == y.deps && x.label == y.label &&
                x.zero_fill == y.zero_fill && x.copy_mode == y.copy_mode && x.scale == y.scale &&
                x.src == y.src && x.dst == y.dst && x.update == y.update)
        << "op " << i;
  }
}

TEST(ScheduleIo, StructLayoutIsTheOneTheFormatCovers) {
  // A new Buffer/Op field changes these sizes: add it to schedule_writer.cc, schedule_reader.cc,
  // expect_equal above and scenarios/README.md, then update the numbers (x86-64, g++).
  EXPECT_EQ(sizeof(Buffer), 88u);
  EXPECT_EQ(sizeof(Op), 232u);
}

TEST(ScheduleIo, WritesTheGoldenFile) {
  const std::string path = std::string(ZEROSIM_TEST_DATA_DIR) + "/schedules/two_rank.json";
  if (std::getenv("ZEROSIM_UPDATE_GOLDEN") != nullptr) {  // regenerate, then review the diff
    std::ofstream(path, std::ios::binary) << write(two_rank_schedule());
    GTEST_SKIP() << "wrote " << path;
  }
  const std::string golden = read_text(path);
  ASSERT_FALSE(golden.empty());
  EXPECT_EQ(write(two_rank_schedule()), golden);
}

TEST(ScheduleIo, OpsAreCompactAndKeysOrdered) {
  const std::string text = write(two_rank_schedule());
  EXPECT_NE(text.find("\n    {\"kind\":\"alloc\",\"phase\":\"init\",\"buffer\":0},\n"),
            std::string::npos);
  EXPECT_NE(text.find("\n    {\"kind\":\"collective\",\"stream\":\"reduce\",\"phase\":\"backward\","
                      "\"bucket\":0,\"scale\":0.5,\"numel\":7,\"out_numel\":7,"
                      "\"reduce_op\":\"sum\",\"deps\":[7],\"label\":\"flush 0: AR(7)\"},\n"),
            std::string::npos)
      << text;
  // zero_fill next to the buffer it fills, copy_mode after the operands it applies to.
  EXPECT_NE(text.find("\n    {\"kind\":\"alloc\",\"phase\":\"epilogue\",\"buffer\":2,"
                      "\"zero_fill\":true,\"deps\":[6,8]},\n"),
            std::string::npos);
  EXPECT_NE(text.find("\n    {\"kind\":\"copy\",\"phase\":\"epilogue\",\"slot\":0,"
                      "\"dst\":{\"buffer\":2},\"copy_mode\":\"add\"},\n"),
            std::string::npos);
  EXPECT_NE(text.find("\n    {\"kind\":\"forward\",\"layer\":0,\"flops\":1500000000.0,"
                      "\"label\":\"fwd layers.0\"}"),
            std::string::npos);
  EXPECT_NE(
      text.find("\n    {\"name\":\"grads_in_partition\",\"category\":\"grad\",\"slot\":0},\n"),
      std::string::npos);
  EXPECT_NE(text.find("\"label\":\"step \\\"0\\\" done\"}\n  ]\n}\n"), std::string::npos);
  Schedule empty;
  empty.ops.push_back(Op{});
  EXPECT_NE(write(empty).find("\"ops\": [\n    {\"kind\":\"marker\"}\n  ]\n}\n"),
            std::string::npos);
}

TEST(ScheduleIo, RoundTripGivesAnEqualScheduleAndIdenticalBytes) {
  const Schedule original = two_rank_schedule();
  const std::string text = write(original);
  auto r = read_schedule_json(text, kSrc);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_TRUE(r.diagnostics().empty()) << r.diagnostics().to_string();
  expect_equal(r.value(), original);
  EXPECT_EQ(write(r.value()), text);
}

TEST(ScheduleIo, RoundTripKeepsNonDefaultMetaAndExtremeValues) {
  Schedule s = two_rank_schedule();
  s.meta.mode = "paper";
  s.meta.deepspeed_version = DeepSpeedVersion::V0_14_4;
  s.meta.steps = 3;
  s.meta.grad_accum = 4;
  s.meta.lp = DType::BFloat16;
  s.meta.comm = DType::Float32;
  s.meta.grad_accum_dtype = DType::Float32;
  s.buffers[0].numel = UINT64_MAX / 16;  // the largest sizes whose bytes still add up
  s.ops[3].flops = 0.1;  // not exactly representable: must survive the text form bit for bit
  s.ops[5].step = 2;
  s.ops[5].micro_step = 3;
  auto r = read_schedule_json(write(s), kSrc);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  expect_equal(r.value(), s);
  // Sizes no ledger can add up are refused: nothing could allocate them.
  s.buffers[0].numel = UINT64_MAX;
  EXPECT_EQ(read_schedule_json(write(s), kSrc).diagnostics().to_string(),
            "two_rank.json: /buffers: expected buffer sizes whose sum fits in 64 bits, got an "
            "overflow\n");
}

TEST(ScheduleIo, ReadsTheFileFromDisk) {
  auto r = read_schedule_file(std::string(ZEROSIM_TEST_DATA_DIR) + "/schedules/two_rank.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  expect_equal(r.value(), two_rank_schedule());
  auto missing = read_schedule_file("/nonexistent/s.json");
  EXPECT_EQ(missing.diagnostics().to_string(),
            "/nonexistent/s.json: cannot read file: No such file or directory\n");
}

// Builders' real output (the shipped tiny scenario at every stage, both modes) survives the round
// trip and passes the reader's stricter checks (reduce_op / dst rules, param and layer indices
// against the model).
TEST(ScheduleIo, BuiltSchedulesRoundTrip) {
  auto sc = load_scenario_file(std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_zero2_4gpu.json");
  ASSERT_TRUE(sc.ok()) << sc.diagnostics().to_string();
  for (int k = 0; k < 8; ++k) {
    const int stage = k % 4;
    const Accounting mode = k < 4 ? Accounting::DeepSpeed : Accounting::Paper;
    SCOPED_TRACE("stage " + std::to_string(stage) + (k < 4 ? " deepspeed" : " paper"));
    Scenario s = sc.value();
    s.ds.zero.stage = stage;
    s.ds.grad_accum_steps = 2;
    PartitionOptions o;
    o.stage = stage;
    o.world = static_cast<std::uint32_t>(s.cluster.world_size());
    auto plan = plan_partition(s.model, o);
    ASSERT_TRUE(plan.ok()) << plan.diagnostics().to_string();
    ScheduleInput in;
    in.model = &s.model;
    in.plan = &plan.value();
    in.ds = &s.ds;
    in.cluster = s.cluster;
    in.training = s.training;
    in.steps = 2;
    in.mode = mode;
    auto built = build_schedule(in);
    ASSERT_TRUE(built.ok()) << built.diagnostics().to_string();
    ASSERT_GT(built->ops.size(), 10u);
    const std::string text = write(built.value());
    auto back = read_schedule_json(text, "built.json", &s.model);
    ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
    expect_equal(back.value(), built.value());
    EXPECT_EQ(write(back.value()), text);
    const auto collectives = std::count_if(built->ops.begin(), built->ops.end(), [](const Op& op) {
      return op.kind == OpKind::Collective;
    });
    std::ostringstream log;
    auto lines = write_collective_log(built.value(), log);
    ASSERT_TRUE(lines.ok());
    EXPECT_EQ(lines.value(), 4u * static_cast<std::uint64_t>(collectives));
  }
}

TEST(ScheduleIoBadInput, WrongFormat) {
  const std::string text =
      replace_once(write(two_rank_schedule()), "zerosim-schedule", "zerosim-plan");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /format: expected \"zerosim-schedule\", got \"zerosim-plan\"\n");
}

// meta.steps must be the steps the ops hold, and a schedule has ops: a file claiming 10^8 steps
// over 2 steps of ops was simulated as 10^8 (13 GB, exit 0), one without ops as an empty run.
TEST(ScheduleIoBadInput, StepsMustBeTheStepsTheOpsHold) {
  const std::string text = write(two_rank_schedule());  // one step of ops
  EXPECT_EQ(errors_of(replace_once(text, "\"steps\":1,", "\"steps\":100000000,")),
            "two_rank.json: /meta/steps: expected the steps the ops hold (1), got 100000000\n");
  Schedule empty = two_rank_schedule();
  empty.ops.clear();
  EXPECT_EQ(errors_of(write(empty)),
            "two_rank.json: /ops: expected the schedule's ops, got none\n");
}

TEST(ScheduleIoBadInput, WrongVersion) {
  const std::string text =
      replace_once(write(two_rank_schedule()), "\"version\": 2", "\"version\": 3");
  EXPECT_EQ(errors_of(text), "two_rank.json: /version: expected version 2, got 3\n");
}

TEST(ScheduleIoBadInput, VersionOneIsRefusedWithTheWayOut) {
  const std::string text =
      replace_once(write(two_rank_schedule()), "\"version\": 2", "\"version\": 1");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /version: expected version 2, got 1: regenerate the file with "
            "\"zerosim schedule --output\"\n");
}

TEST(ScheduleIoBadInput, CommunicatorsAreChecked) {
  const std::string good = write(two_rank_schedule());
  EXPECT_EQ(errors_of(replace_once(good, "  \"comms\": [\n    {\"size\":2}\n  ],\n", "")),
            "two_rank.json: /: expected key \"comms\", got none\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"size\":2}", "{\"size\":\"two\"}")),
            "two_rank.json: /comms/0/size: expected an integer 1..16777216, got \"two\"\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"size\":2}", "{\"sise\":2}")),
            "two_rank.json: /comms/0/sise: unknown key \"sise\" (did you mean \"size\"?)\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"size\":2}", "{\"size\":1}")),
            "two_rank.json: /comms/0: expected the data-parallel world {first 0, size 2, stride "
            "1}, got {first 0, size 1, stride 1}\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"size\":2}", "{\"size\":2},{\"first\":1,\"size\":2}")),
            "two_rank.json: /comms/1: expected size x stride (2) to divide the 1 ranks 1..1 its "
            "groups tile, got a remainder of 1\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"size\":2}", "{\"size\":2},{\"first\":2}")),
            "two_rank.json: /comms/1/first: expected a first rank below the world size 2, got 2\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"size\":2}", "")),
            "two_rank.json: /comms: expected at least the data-parallel world {\"size\": 2} as "
            "communicator 0, got none\n");
}

TEST(ScheduleIoBadInput, TensorTableIsChecked) {
  const std::string good = write(two_rank_schedule());
  const std::string w0 = "{\"name\":\"w0\",\"shape\":[4,2],\"numel\":8,\"group\":0}";
  EXPECT_EQ(errors_of(replace_once(good, w0, "{\"name\":\"w0\",\"shape\":[4,2],\"group\":0}")),
            "two_rank.json: /tensors/0: expected key \"numel\", got none\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"shape\":[4,2]", "\"shape\":[4,-2]")),
            "two_rank.json: /tensors/0/shape/1: expected an integer >= 0, got -2\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "\"numel\":8,\"group\":0}",
                             "\"numel\":8,\"group\":0,"
                             "\"dtype\":\"float61\"}")),
      "two_rank.json: /tensors/0/dtype: expected one of \"float16\", \"bfloat16\", \"float32\", "
      "\"float64\", \"uint8\", \"int64\", got \"float61\" (did you mean \"float64\"?)\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"numel\":8,\"group\":0}", "\"numel\":8,\"grop\":0}")),
            "two_rank.json: /tensors/0/grop: unknown key \"grop\" (did you mean \"group\"?)\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"grad\":1,", "\"grad\":9,")),
            "two_rank.json: /tensors/2/grad: expected a buffer index 0..4, got 9\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"numel\":8,\"group\":0}", "\"numel\":8,\"group\":4}")),
            "two_rank.json: /tensors/0/group: expected a param group index 0..0, got 4\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"numel\":8,\"group\":0}",
                                   "\"numel\":8,\"group\":0,\"sub_group\":0}")),
            "two_rank.json: /tensors/0/sub_group: expected no sub-group index (the layout has no "
            "sub-groups), got 0\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"flat\":8", "\"flat\":9")),
            "two_rank.json: /tensors/2/flat: expected 8 (plan_partition of the tensor table and "
            "the layout options), got 9\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "\"shape\":[4,2],\"numel\":8", "\"shape\":[4,2],\"numel\":10")),
      "two_rank.json: /layout/groups/0/numel: expected 18 (plan_partition of the tensor "
      "table and the layout options), got 16\n");
}

TEST(ScheduleIoBadInput, LayoutIsChecked) {
  const std::string good = write(two_rank_schedule());
  EXPECT_EQ(errors_of(replace_once(good, "\"round_robin\":false,", "")),
            "two_rank.json: /layout: expected key \"round_robin\" (every layout key is required), "
            "got none\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"stage\":2,\"world\":2,\"round_robin\"",
                                   "\"stage\":2,\"world\":0,\"round_robin\"")),
            "two_rank.json: /layout/world: expected an integer 1..16777216, got 0\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"stage\":2,\"world\":2,\"round_robin\"",
                                   "\"stage\":2,\"world\":4,\"round_robin\"")),
            "two_rank.json: /layout/world: expected the world size 2 (meta), got 4\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"params\":[0,2],", "{\"params\":[0,7],")),
            "two_rank.json: /layout/groups/0/params/1: expected a tensor index 0..2, got 7\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"partition\":8}", "\"partition\":9}")),
            "two_rank.json: /layout/groups/0/partition: expected 8 (plan_partition of the tensor "
            "table and the layout options), got 9\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"partition\":8}", "\"partition\":8,\"parts\":1}")),
            "two_rank.json: /layout/groups/0/parts: unknown key \"parts\" (did you mean "
            "\"params\"?)\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"sub_groups\": []", "\"sub_groups\": [{\"group\":0}]")),
            "two_rank.json: /layout/sub_groups/0: expected key \"params\", got none\n"
            "two_rank.json: /layout/sub_groups/0: expected key \"partition_numel\", got none\n");
  EXPECT_EQ(errors_of(replace_once(good, "  \"tensors\": [", "  \"tensor\": [")),
            "two_rank.json: /: expected key \"tensors\", got none\n"
            "two_rank.json: /tensor: unknown key \"tensor\" (did you mean \"tensors\"?)\n");
}

TEST(ScheduleIoBadInput, OperandRegionsAreChecked) {
  const std::string good = write(two_rank_schedule());
  const std::string copy_dst = "\"dst\":{\"buffer\":1}";
  EXPECT_EQ(errors_of(replace_once(good, copy_dst, "\"dst\":{\"buffer\":9}")),
            "two_rank.json: /ops/7/dst/buffer: expected a buffer index 0..4, got 9\n");
  EXPECT_EQ(errors_of(replace_once(good, copy_dst, "\"dst\":{\"offset\":1}")),
            "two_rank.json: /ops/7/dst: expected key \"buffer\" (a buffer index), \"list\", "
            "\"flush_grads\" or \"derived\", got none\n");
  EXPECT_EQ(errors_of(replace_once(good, copy_dst, "\"dst\":{\"buffer\":1,\"ofset\":1}")),
            "two_rank.json: /ops/7/dst/ofset: unknown key \"ofset\" (did you mean \"offset\"?)\n");
  EXPECT_EQ(errors_of(replace_once(good, copy_dst, "\"dst\":{\"buffer\":1,\"offset\":-1}")),
            "two_rank.json: /ops/7/dst/offset: expected an integer >= 0, got -1\n");
  EXPECT_EQ(errors_of(replace_once(good, copy_dst, "\"dst\":{\"buffer\":1,\"offset\":4}")),
            "two_rank.json: /ops/7/dst: expected a region inside buffer \"ipg[0]\" (8 elements), "
            "got elements [4, 11)\n");
  EXPECT_EQ(errors_of(replace_once(good, copy_dst, "\"dst\":{\"buffer\":1,\"length\":5}")),
            "two_rank.json: /ops/7/dst/length: expected the op's extent 7, got 5\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"src\":{\"buffer\":0,\"rank_stride\":8,\"length\":8}",
                                   "\"src\":{\"buffer\":0,\"rank_stride\":9,\"length\":8}")),
            "two_rank.json: /ops/15/src: expected a region inside buffer \"flat_lp\" (16 "
            "elements), got elements [9, 17) at rank index 1\n");
  // A slot-sized copy into a slot-sized buffer is checked for every role.
  EXPECT_EQ(errors_of(replace_once(good, "\"dst\":{\"buffer\":2}",
                                   "\"dst\":{\"buffer\":2,\"offset\":1}")),
            "two_rank.json: /ops/10/dst: expected a region inside buffer \"grads_in_partition\" (8 "
            "elements for role 0), got elements [1, 9)\n");
}

TEST(ScheduleIoBadInput, OperandListsAreChecked) {
  const std::string good = write(two_rank_schedule());
  EXPECT_EQ(errors_of(replace_once(good, "\"src\":{\"list\":0}", "\"src\":{\"list\":3}")),
            "two_rank.json: /ops/16/src/list: expected a list index 0..0, got 3\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "\"src\":{\"list\":0}", "\"src\":{\"list\":0,\"offset\":1}")),
      "two_rank.json: /ops/16/src/offset: unknown key \"offset\"\n");
  EXPECT_EQ(errors_of(replace_once(good, "[{\"buffer\":0,\"length\":8},{\"length\":8}]",
                                   "[{\"buffer\":0,\"length\":8},{\"length\":7}]")),
            "two_rank.json: /ops/16/src: expected list 0's pieces to total the op's extent 16, got "
            "15\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "[{\"buffer\":0,\"length\":8},{\"length\":8}]",
                             "[{\"buffer\":1,\"offset\":4,\"length\":8},{\"length\":8}]")),
      "two_rank.json: /lists/0/0: expected a piece inside buffer \"ipg[0]\" (8 elements), got "
      "elements [4, 12)\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "[{\"buffer\":0,\"length\":8},{\"length\":8}]",
                             "[{\"buffer\":0,\"length\":8},{\"lenght\":8}]")),
      "two_rank.json: /lists/0/1: expected key \"length\", got none\n"
      "two_rank.json: /lists/0/1/lenght: unknown key \"lenght\" (did you mean \"length\"?)\n");
}

TEST(ScheduleIoBadInput, FlushPlansAreChecked) {
  const std::string good = write(two_rank_schedule());
  EXPECT_EQ(errors_of(replace_once(good, "[[2,1,0]]", "[[2,1]]")),
            "two_rank.json: /flush_plans/0/0: expected [tensor, buffer, offset], got an array of "
            "2\n");
  EXPECT_EQ(errors_of(replace_once(good, "[[2,1,0]]", "[[7,1,0]]")),
            "two_rank.json: /flush_plans/0/0: expected a tensor index 0..2, got 7\n");
  EXPECT_EQ(errors_of(replace_once(good, "[[2,1,0]]", "[[2,1,4]]")),
            "two_rank.json: /flush_plans/0/0: expected tensor 2 inside buffer \"ipg[0]\" (8 "
            "elements), got elements [4, 12)\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"dst\":{\"buffer\":2}",
                                   "\"src\":{\"flush_grads\":5},\"dst\":{\"buffer\":2}")),
            "two_rank.json: /ops/10/src/flush_grads: expected a flush plan index 0..0, got 5\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "\"dst\":{\"buffer\":2}",
                             "\"src\":{\"flush_grads\":0,\"buffer\":1},\"dst\":{\"buffer\":2}")),
      "two_rank.json: /ops/10/src/buffer: unknown key \"buffer\"\n");
  // Rank 0's partition [0, 8) holds w0, not w2: the flush's touching grads total 0, not the 8 the
  // copy's slot says.
  EXPECT_EQ(errors_of(replace_once(good, "\"dst\":{\"buffer\":2}",
                                   "\"src\":{\"flush_grads\":0},\"dst\":{\"buffer\":2}")),
            "two_rank.json: /ops/10/src: expected flush plan 0's gradients touching rank 0's "
            "partition (role 0) to total the op's extent 8, got 0\n");
}

TEST(ScheduleIoBadInput, UpdatesAndScratchAreChecked) {
  const std::string good = write(two_rank_schedule());
  const std::string opt = "\"update\":0,";
  EXPECT_EQ(errors_of(replace_once(good, opt, "\"update\":2,")),
            "two_rank.json: /ops/14/update: expected an update index 0..0, got 2\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "{\"kind\":\"marker\"", "{\"kind\":\"marker\",\"update\":0")),
      "two_rank.json: /ops/19/update: expected no update for a marker op, got 0\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"master\":{\"buffer\":3}",
                                   "{\"master\":{\"buffer\":3,\"offset\":1}")),
            "two_rank.json: /updates/0/master: expected a region inside buffer \"master\" (8 "
            "elements for role 0), got elements [1, 9)\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"norms\":{\"buffer\":4,\"length\":1}",
                                   "\"norms\":{\"buffer\":4,\"length\":2}")),
            "two_rank.json: /updates/0/norms: expected a region inside buffer \"norms\" (1 "
            "elements), got elements [0, 2)\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "{\"master\":{\"buffer\":3}", "{\"mastr\":{\"buffer\":3}")),
      "two_rank.json: /updates/0/mastr: unknown key \"mastr\" (did you mean \"master\"?)\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"numel\":1,\"executor_owned\":true",
                                   "\"numel\":1,\"executor_owned\":1")),
            "two_rank.json: /buffers/4/executor_owned: expected true or false, got 1\n");
  // An executor-owned buffer is never allocated by the program.
  EXPECT_EQ(errors_of(replace_once(good, "{\"kind\":\"alloc\",\"phase\":\"init\",\"buffer\":3}",
                                   "{\"kind\":\"alloc\",\"phase\":\"init\",\"buffer\":4}")),
            "two_rank.json: /ops/1/buffer: expected a buffer the program allocates, got \"norms\", "
            "which the executor owns (no Alloc or Free)\n");
}

// copy_mode, scale and zero_fill: known names and types, and only on the kinds they apply to.
TEST(ScheduleIoBadInput, CopyModeScaleAndZeroFillAreChecked) {
  const std::string good = write(two_rank_schedule());
  const std::string add = "\"copy_mode\":\"add\"";
  EXPECT_EQ(
      errors_of(replace_once(good, add, "\"copy_mode\":\"ad\"")),
      "two_rank.json: /ops/10/copy_mode: expected one of \"assign\", \"add\", got \"ad\" (did "
      "you mean \"add\"?)\n");
  EXPECT_EQ(errors_of(replace_once(good, add, "\"copy_mode\":1")),
            "two_rank.json: /ops/10/copy_mode: expected one of \"assign\", \"add\", got 1\n");
  EXPECT_EQ(errors_of(replace_once(good, add, add + ",\"zero_fill\":true")),
            "two_rank.json: /ops/10/zero_fill: expected zero_fill only on an alloc op, got it on a "
            "copy op\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"buffer\":2,\"zero_fill\":true",
                                   "\"buffer\":2,\"zero_fill\":1")),
            "two_rank.json: /ops/9/zero_fill: expected true or false, got 1\n");
  const std::string avg = "\"scale\":0.5";
  EXPECT_EQ(errors_of(replace_once(good, avg, "\"scale\":-1")),
            "two_rank.json: /ops/8/scale: expected a finite scale above 0, got -1\n");
  EXPECT_EQ(errors_of(replace_once(good, avg, "\"scale\":0")),
            "two_rank.json: /ops/8/scale: expected a finite scale above 0, got 0\n");
  EXPECT_EQ(errors_of(replace_once(good, avg, "\"scale\":\"half\"")),
            "two_rank.json: /ops/8/scale: expected a number in [-1.79769e+308, 1.79769e+308], got "
            "\"half\"\n");
  EXPECT_EQ(
      errors_of(replace_once(good, avg, avg + "," + add)),
      "two_rank.json: /ops/8/copy_mode: expected \"add\" only on copy, copy_to_bucket, "
      "write_back, host_to_device, device_to_host, grad_ready, grad_norm or grad_overflow, got it "
      "on a collective op\n");
  EXPECT_EQ(
      errors_of(replace_once(good, "\"reduce_op\":\"max\"", "\"reduce_op\":\"max\",\"scale\":2")),
      "two_rank.json: /ops/12/scale: expected no scale on an all_reduce (max) op (only "
      "copy-like ops, grad_ready and sum all_reduce, reduce or reduce_scatter_tensor scale), "
      "got 2\n");
  EXPECT_EQ(errors_of(replace_once(good, "\"root\":0,\"label\":\"broadcast model\"",
                                   "\"root\":0,\"scale\":2,\"label\":\"broadcast model\"")),
            "two_rank.json: /ops/2/scale: expected no scale on a broadcast op (only copy-like ops, "
            "grad_ready and sum all_reduce, reduce or reduce_scatter_tensor scale), got 2\n");
  EXPECT_EQ(errors_of(replace_once(good, "{\"kind\":\"sync\"", "{\"kind\":\"sync\",\"scale\":2")),
            "two_rank.json: /ops/18/scale: expected no scale on a sync op (only copy-like ops, "
            "grad_ready and sum all_reduce, reduce or reduce_scatter_tensor scale), got 2\n");
}

TEST(ScheduleIoBadInput, UnknownCommunicator) {
  const std::string text = replace_once(write(two_rank_schedule()), "\"label\":\"flush 0: AR(7)\"",
                                        "\"comm\":3,\"label\":\"flush 0: AR(7)\"");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /ops/8/comm: expected a communicator index 0..0, got 3\n");
}

TEST(ScheduleIoBadInput, TruncatedFileGivesLineAndColumn) {
  const std::string full = write(two_rank_schedule());
  const std::string text =
      full.substr(0, full.find("{\"kind\":\"backward\"") + 9);  // ...{"kind":"b
  const auto line = 1 + std::count(text.begin(), text.end(), '\n');
  const auto col = text.size() - text.rfind('\n');
  auto r = read_schedule_json(text, kSrc);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics().items().size(), 1u);
  const std::string msg = r.diagnostics().to_string();
  EXPECT_EQ(msg.rfind("two_rank.json: invalid JSON at line " + std::to_string(line) + ", column " +
                          std::to_string(col) + ": ",
                      0),
            0u)
      << msg;
}

TEST(ScheduleIoBadInput, UnknownEnumNameWithHint) {
  const std::string text =
      replace_once(write(two_rank_schedule()), "\"stream\":\"reduce\"", "\"stream\":\"reduc\"");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /ops/8/stream: expected one of \"compute\", \"reduce\", \"gather\", "
            "\"h2d\", \"d2h\", \"host\", got \"reduc\" (did you mean \"reduce\"?)\n");
}

TEST(ScheduleIoBadInput, UnknownDtypeAndCollective) {
  std::string text =
      replace_once(write(two_rank_schedule()), "\"dtype\":\"uint8\"", "\"dtype\":\"int8\"");
  text = replace_once(text, "\"collective\":\"all_gather_into_tensor\"",
                      "\"collective\":\"all_gather\"");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /ops/12/dtype: expected one of \"float16\", \"bfloat16\", \"float32\", "
            "\"float64\", \"uint8\", \"int64\", got \"int8\" (did you mean \"uint8\"?)\n"
            "two_rank.json: /ops/15/collective: expected one of \"all_reduce\", \"reduce\", "
            "\"broadcast\", \"all_gather_into_tensor\", \"reduce_scatter_tensor\", got "
            "\"all_gather\" (did you mean "
            "\"all_gather_into_tensor\"?)\n");
}

TEST(ScheduleIoBadInput, BufferIndexOutOfRange) {
  const std::string text = replace_once(write(two_rank_schedule()),
                                        "{\"kind\":\"alloc\",\"phase\":\"backward\",\"buffer\":1}",
                                        "{\"kind\":\"alloc\",\"phase\":\"backward\",\"buffer\":9}");
  EXPECT_EQ(errors_of(text), "two_rank.json: /ops/4/buffer: expected a buffer index 0..4, got 9\n");
}

TEST(ScheduleIoBadInput, DepThatIsNotEarlier) {
  const std::string text = replace_once(write(two_rank_schedule()), "\"deps\":[7]", "\"deps\":[8]");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /ops/8/deps/0: expected an earlier op index 0..7, got 8\n");
}

TEST(ScheduleIoBadInput, SlotIndexOutOfRange) {
  const std::string text = replace_once(write(two_rank_schedule()),
                                        "{\"kind\":\"copy\",\"phase\":\"epilogue\",\"slot\":0,",
                                        "{\"kind\":\"copy\",\"phase\":\"epilogue\",\"slot\":1,");
  EXPECT_EQ(errors_of(text), "two_rank.json: /ops/10/slot: expected a slot index 0..0, got 1\n");
}

// The dense form (every file before sparse slots) is counted by the lowering; the sparse form's
// count by the reader (schedule_sparse_slots_test.cc).
TEST(ScheduleIoBadInput, RoleSlotCountMismatch) {
  std::ostringstream dense;
  write_schedule_json(two_rank_schedule(), dense, SlotsForm::Dense);
  const std::string text = replace_once(dense.str(), "\"slots\":[7]", "\"slots\":[7,1]");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /roles/1/slots: expected 1 slot values (one per meta slot_names "
            "entry), got 2\n");
}

TEST(ScheduleIoBadInput, RankInTwoRoles) {
  const std::string text =
      replace_once(write(two_rank_schedule()), "{\"ranks\":[[1,1]]", "{\"ranks\":[[0,1]]");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /roles/1/representative: expected the role's first rank 0, got 1\n"
            "two_rank.json: /roles: expected every rank in exactly one role, got rank 0 in roles 0 "
            "and 1\n");
}

TEST(ScheduleIoBadInput, RankInNoRole) {
  std::string text =
      replace_once(write(two_rank_schedule()), "\"world\":2,\"nodes\"", "\"world\":5,\"nodes\"");
  text = replace_once(text, "{\"size\":2}", "{\"size\":5}");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /roles: expected every rank 0..4 in exactly one role, got ranks 2..4 "
            "in no role\n");
}

TEST(ScheduleIoBadInput, RankBeyondWorld) {
  const std::string text =
      replace_once(write(two_rank_schedule()), "{\"ranks\":[[1,1]]", "{\"ranks\":[[1,2]]");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /roles/1/ranks/0/1: expected an integer 0..1, got 2\n");
}

TEST(ScheduleIoBadInput, ParamAndLayerCheckedAgainstTheModel) {
  const std::string text = write(two_rank_schedule());
  ModelDesc model;
  model.params.resize(2);  // the schedule names param 2 in ops 6 and 7
  EXPECT_EQ(
      errors_of(text, &model),
      "two_rank.json: /ops/3/layer: expected no layer index (the model has no layers), got 0\n"
      "two_rank.json: /ops/5/layer: expected no layer index (the model has no layers), got 0\n"
      "two_rank.json: /ops/6/param: expected a param index 0..1, got 2\n"
      "two_rank.json: /ops/7/param: expected a param index 0..1, got 2\n");
  model.params.resize(3);
  model.layers.resize(1);
  EXPECT_TRUE(read_schedule_json(text, kSrc, &model).ok());
}

TEST(ScheduleIoBadInput, UnknownKeyWithHint) {
  const std::string text =
      replace_once(write(two_rank_schedule()), "{\"kind\":\"forward\",\"layer\"",
                   "{\"kind\":\"forward\",\"layr\"");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /ops/3/layr: unknown key \"layr\" (did you mean \"layer\"?)\n");
}

TEST(ScheduleIoBadInput, RootedCollectiveNeedsRootAndReductionNeedsOp) {
  std::string text =
      replace_once(write(two_rank_schedule()), ",\"reduce_op\":\"sum\",\"root\":1", "");
  EXPECT_EQ(
      errors_of(text),
      "two_rank.json: /ops/13: expected \"reduce_op\" (\"sum\" or \"max\") for reduce, got "
      "none\n"
      "two_rank.json: /ops/13: expected \"root\" (an index in communicator 0) for reduce, got "
      "none\n");
  text = replace_once(write(two_rank_schedule()), "\"reduce_op\":\"sum\",\"root\":1",
                      "\"reduce_op\":\"sum\",\"root\":2");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /ops/13/root: expected a root index 0..1 (communicator 0 has groups of "
            "2 ranks) for reduce, got 2\n");
  text = replace_once(write(two_rank_schedule()), "\"out_numel\":16}",
                      "\"out_numel\":16,\"reduce_op\":\"sum\",\"root\":0}");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /ops/15/reduce_op: expected no reduce_op for all_gather_into_tensor, "
            "got \"sum\"\n"
            "two_rank.json: /ops/15/root: expected no root for all_gather_into_tensor, got 0\n");
  text = replace_once(write(two_rank_schedule()), "\"reduce_op\":\"sum\",\"root\":1",
                      "\"reduce_op\":\"sum\",\"root\":1,\"group_size\":2");  // a v1 key
  EXPECT_EQ(errors_of(text), "two_rank.json: /ops/13/group_size: unknown key \"group_size\"\n");
}

TEST(ScheduleIoBadInput, WrongTypesAndMissingKeys) {
  std::string text = replace_once(write(two_rank_schedule()), "\"world\":2,\"nodes\"",
                                  "\"world\":\"two\",\"nodes\"");
  text = replace_once(text, "\"steps\":1,", "");
  EXPECT_EQ(errors_of(text),
            "two_rank.json: /meta: expected key \"steps\" (every meta key is required), got none\n"
            "two_rank.json: /meta/world: expected an integer 1..16777216, got \"two\"\n");
}

TEST(ScheduleIoBadInput, ValidateScheduleRunsAfterReading) {
  // Every reference is in range, but the IPG buffer is never freed: lower_schedule's rule.
  const std::string text = replace_once(write(two_rank_schedule()),
                                        "{\"kind\":\"free\",\"phase\":\"epilogue\",\"buffer\":1}",
                                        "{\"kind\":\"marker\",\"phase\":\"epilogue\"}");
  auto r = read_schedule_json(text, kSrc);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics().items().size(), 1u) << r.diagnostics().to_string();
  EXPECT_EQ(r.diagnostics().items()[0].source, kSrc);
  EXPECT_EQ(r.diagnostics().items()[0].pointer, "/buffers/1");
}

TEST(ScheduleIoBadInput, NotAnObjectAndEmptyText) {
  EXPECT_EQ(errors_of("[1, 2]"), "two_rank.json: /: expected an object, got an array\n");
  auto r = read_schedule_json("", kSrc);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.diagnostics().to_string().rfind("two_rank.json: invalid JSON at line 1, column 1: ", 0),
      0u);
}

}  // namespace
}  // namespace zerosim
