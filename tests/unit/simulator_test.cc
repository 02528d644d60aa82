// The discrete-event engine on small hand-built schedules with round-number costs (a GPU of
// 100 TFLOP/s fp16 at efficiency 0.5 = 5e13 FLOP/s, HBM 1000 GB/s = 1000 B/ns, PCIe 10 GB/s, host
// 100 GB/s; links 100 GB/s busBw, ring alpha = 10 µs + 1 µs per hop), so every start, end and
// exposed-communication figure below is computed by hand:
//   forward of 5e9 FLOPs = 100,000 ns; all-reduce of 1e6 fp16 on 4 ranks = (10 + 6) µs + 3e6 B /
//   100 B/ns = 46,000 ns; all-gather 250,000 -> 1e6 fp16 = (10 + 3) µs + 1.5e6 / 100 = 28,000 ns.
#include <gtest/gtest.h>

#include <sstream>

#include "simulator_testlib.h"

namespace zerosim {
namespace {

using namespace simtest;  // NOLINT

TEST(Simulator, CostModelUsesTheDocumentedFormulas) {
  Schedule s = tiny_schedule(4);
  auto cost = CostModel::make(round_gpu(), s.meta, round_options());
  ASSERT_TRUE(cost.ok()) << cost.diagnostics().to_string();
  const auto c = [&](Op o, Elements e = 0) { return cost->cost(o, e, s.comms.front()).value(); };
  EXPECT_EQ(c(compute(OpKind::Forward, 5e9)).duration_ns, 100000);
  EXPECT_EQ(c(compute(OpKind::Backward, 1e10)).duration_ns, 200000);
  EXPECT_EQ(c(data(OpKind::Copy, Stream::Compute, DType::Float16), 1000000).duration_ns,
            4000);  // 4e6 B
  EXPECT_EQ(c(data(OpKind::CopyToBucket, Stream::Compute, DType::Float16), 1000000).bytes,
            4000000u);
  EXPECT_EQ(c(data(OpKind::WriteBack, Stream::Compute, DType::Float16), 1000000).duration_ns,
            6000);  // 4+2 B
  EXPECT_EQ(c(data(OpKind::OptimizerStep, Stream::Compute, DType::Float32), 1000000).duration_ns,
            28000);
  EXPECT_EQ(c(data(OpKind::OptimizerStep, Stream::Host, DType::Float32), 1000000).duration_ns,
            280000);
  EXPECT_EQ(c(data(OpKind::Copy, Stream::Host, DType::Float16), 1000000).duration_ns, 40000);
  EXPECT_EQ(c(data(OpKind::HostToDevice, Stream::H2D, DType::Float16), 1000000).duration_ns,
            200000);
  EXPECT_EQ(c(data(OpKind::DeviceToHost, Stream::D2H, DType::Float32), 1000000).duration_ns,
            400000);
  const OpCost ar = c(collective(CollectiveKind::AllReduce, 1000000, 1000000, 0, Stream::Reduce));
  EXPECT_EQ(ar.duration_ns, 46000);
  EXPECT_EQ(ar.bytes, 2000000u);
  ASSERT_TRUE(ar.collective);
  EXPECT_EQ(ar.collective->bytes_sent_per_rank, 3000000u);
  const OpCost ag = c(collective(CollectiveKind::AllGather, 250000, 1000000, 0, Stream::Compute));
  EXPECT_EQ(ag.duration_ns, 28000);
  EXPECT_EQ(ag.bytes, 2000000u);
  EXPECT_EQ(ag.collective->bytes_sent_per_rank, 1500000u);
  EXPECT_EQ(c(make_op(OpKind::Sync)).duration_ns, 0);
  EXPECT_EQ(c(make_op(OpKind::Marker)).duration_ns, 0);
}

// An nccl-tests calibration replaces alpha and busBw: t = 5 µs + 3e6 B / 50 B/ns = 65,000 ns.
TEST(Simulator, NcclTestsCalibrationReplacesTheModel) {
  EngineOptions o = round_options();
  CalibratedCollective cal;
  cal.alpha_us = 5;
  cal.busbw_gbps = 50;
  o.calibration.set(CollectiveKind::AllReduce, cal);
  Schedule s = tiny_schedule(4);
  s.ops = {collective(CollectiveKind::AllReduce, 1000000, 1000000, 0, Stream::Compute),
           collective(CollectiveKind::AllGather, 250000, 1000000, 0, Stream::Compute)};
  const SimulationResult r = run(s, o);
  EXPECT_EQ(times(r)[0], (std::pair<SimTime, SimTime>{0, 65000}));
  EXPECT_EQ(times(r)[1],
            (std::pair<SimTime, SimTime>{65000, 93000}));  // all-gather: still the model
  ASSERT_EQ(r.trace.comms.size(), 2u);
  EXPECT_EQ(r.trace.comms[0].algorithm, "calibrated");
  EXPECT_EQ(r.trace.comms[1].algorithm, "ring");
}

TEST(Simulator, LinksFromTheGpuCatalogEntry) {
  const LinkParams l = links_for_gpu(round_gpu());
  EXPECT_DOUBLE_EQ(l.intra_gbps, 400.0 * 0.8);
  EXPECT_DOUBLE_EQ(l.inter_gbps, 25.0);
}

// Overlap: the all-reduce on the reduce stream runs beside the next backward; the compute stream
// only waits when it needs the reduction.
TEST(Simulator, ReduceStreamOverlapsCompute) {
  Schedule s = tiny_schedule(4);
  s.ops = {
      compute(OpKind::Forward, 5e9),
      with_deps(collective(CollectiveKind::AllReduce, 1000000, 1000000, 0, Stream::Reduce), {0}),
      compute(OpKind::Backward, 1e10), with_deps(make_op(OpKind::Marker), {1}),
      compute(OpKind::Forward, 5e9)};
  const SimulationResult r = run(s);
  EXPECT_EQ(
      times(r),
      (std::vector<std::pair<SimTime, SimTime>>{
          {0, 100000}, {100000, 146000}, {100000, 300000}, {300000, 300000}, {300000, 400000}}));
  EXPECT_EQ(r.summary.exposed_comm_ns, 0);
  EXPECT_EQ(r.summary.compute_ns, 400000);
  EXPECT_EQ(r.summary.steps[0].end_ns, 400000);
}

TEST(Simulator, WaitingOnTheReduceStreamIsExposedCommunication) {
  Schedule s = tiny_schedule(4);
  s.ops = {
      compute(OpKind::Forward, 5e9),
      with_deps(collective(CollectiveKind::AllReduce, 1000000, 1000000, 0, Stream::Reduce), {0}),
      compute(OpKind::Backward, 1e9), with_deps(make_op(OpKind::Marker), {1}),
      compute(OpKind::Forward, 5e9)};
  const SimulationResult r = run(s);
  EXPECT_EQ(times(r)[2], (std::pair<SimTime, SimTime>{100000, 120000}));
  EXPECT_EQ(times(r)[3], (std::pair<SimTime, SimTime>{146000, 146000}));
  EXPECT_EQ(times(r)[4], (std::pair<SimTime, SimTime>{146000, 246000}));
  EXPECT_EQ(r.summary.exposed_comm_ns, 26000);
  EXPECT_EQ(r.summary.steps[0].exposed_comm_ns, 26000);
  EXPECT_EQ(r.summary.total_ns, 246000);
}

TEST(Simulator, CollectiveOnTheComputeStreamBlocksIt) {
  Schedule s = tiny_schedule(4);
  s.ops = {compute(OpKind::Forward, 5e9),
           collective(CollectiveKind::AllReduce, 1000000, 1000000, 0, Stream::Compute),
           compute(OpKind::Forward, 5e9)};
  const SimulationResult r = run(s);
  EXPECT_EQ(times(r)[2], (std::pair<SimTime, SimTime>{146000, 246000}));
  EXPECT_EQ(r.summary.exposed_comm_ns, 46000);
  ASSERT_EQ(r.summary.comm.size(), 1u);
  EXPECT_EQ(r.summary.comm[0].kind, CollectiveKind::AllReduce);
  EXPECT_EQ(r.summary.comm[0].calls, 1u);
  EXPECT_EQ(r.summary.comm[0].bytes, 2000000u);
  EXPECT_EQ(r.summary.comm[0].bytes_sent, 3000000u);
  EXPECT_EQ(r.summary.comm[0].bytes_received, 3000000u);
  EXPECT_EQ(r.summary.comm[0].time_ns, 46000);
}

// Sync drains every stream, and nothing issued after it starts earlier, on any stream.
TEST(Simulator, SyncWaitsForEveryStreamAndGatesLaterOps) {
  Schedule s = tiny_schedule(4);
  s.ops = {data(OpKind::HostToDevice, Stream::H2D, DType::Float16, 1000000),
           compute(OpKind::Forward, 5e9), make_op(OpKind::Sync),
           collective(CollectiveKind::AllGather, 250000, 1000000, 0, Stream::Gather),
           compute(OpKind::Forward, 5e9)};
  const SimulationResult r = run(s);
  EXPECT_EQ(times(r),
            (std::vector<std::pair<SimTime, SimTime>>{
                {0, 200000}, {0, 100000}, {200000, 200000}, {200000, 228000}, {200000, 300000}}));
  EXPECT_EQ(r.summary.exposed_offload_ns, 100000);
  EXPECT_EQ(r.summary.exposed_comm_ns, 0);
}

// NCCL serialises one communicator's kernels in launch order: the gather-stream all-gather waits
// for the reduce-stream all-reduce issued before it, though the streams are independent.
TEST(Simulator, CollectivesOfOneCommunicatorRunInLaunchOrder) {
  Schedule s = tiny_schedule(4);
  s.ops = {collective(CollectiveKind::AllReduce, 1000000, 1000000, 0, Stream::Reduce),
           collective(CollectiveKind::AllGather, 250000, 1000000, 0, Stream::Gather),
           compute(OpKind::Forward, 5e9)};
  const SimulationResult r = run(s);
  EXPECT_EQ(times(r),
            (std::vector<std::pair<SimTime, SimTime>>{{0, 46000}, {46000, 74000}, {0, 100000}}));
}

// Same-time ties start in program order; ops of one stream never overlap.
TEST(Simulator, OneStreamRunsInProgramOrder) {
  Schedule s = tiny_schedule(4);
  s.ops = {data(OpKind::Copy, Stream::Reduce, DType::Float16, 1000000),
           data(OpKind::Copy, Stream::Reduce, DType::Float16, 1000000),
           compute(OpKind::Forward, 5e9),
           with_deps(data(OpKind::Copy, Stream::Compute, DType::Float16, 1000000), {1})};
  const SimulationResult r = run(s);
  EXPECT_EQ(times(r), (std::vector<std::pair<SimTime, SimTime>>{
                          {0, 4000}, {4000, 8000}, {0, 100000}, {100000, 104000}}));
}

// The timing role takes the largest slot value; memory uses each role's own size.
TEST(Simulator, TimingRoleIsTheMaxAndMemoryIsPerRole) {
  Schedule s = two_role_schedule();
  const SimulationResult r = run(s);
  EXPECT_EQ(r.timing_slots, (std::vector<Elements>{3000000}));
  EXPECT_EQ(times(r)[2], (std::pair<SimTime, SimTime>{0, 12000}));  // 2 x 3e6 x 2 B / 1000 B/ns
  ASSERT_EQ(r.memory.size(), 2u);
  EXPECT_EQ(r.memory[0].device.bytes, 1000u + 2000000u);
  EXPECT_EQ(r.memory[1].device.bytes, 1000u + 6000000u);
  ASSERT_EQ(r.summary.peaks.size(), 2u);
  EXPECT_EQ(r.summary.peaks[1].rank, 2u);
  EXPECT_EQ(r.summary.peaks[1].rank_count, 2u);
  EXPECT_EQ(r.summary.peak_role, 1u);
  EXPECT_EQ(r.summary.peaks[1].device.by_category[static_cast<std::size_t>(BufferCategory::Grad)],
            6000000u);
  EXPECT_EQ(r.summary.peaks[1].device.t, 0);
  EXPECT_FALSE(r.summary.oom);
}

TEST(Simulator, OutOfMemoryIsAResultAndTheRunContinues) {
  Schedule s = two_role_schedule();
  EngineOptions o = round_options();
  o.device_capacity = 3000000;
  auto r = simulate(s, round_gpu(), o);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  ASSERT_TRUE(r->summary.oom);
  EXPECT_EQ(r->summary.oom->t, 0);
  EXPECT_EQ(r->summary.oom_rank, 2u);
  EXPECT_EQ(r->summary.oom->role, 1u);
  EXPECT_EQ(r->summary.oom->buffer_name, "grads_in_partition");
  EXPECT_EQ(r->summary.oom->category, BufferCategory::Grad);
  EXPECT_EQ(r->summary.oom->bytes, 6000000u);
  EXPECT_EQ(r->summary.oom->live_bytes, 6001000u);
  EXPECT_EQ(r->summary.oom_ranks, 2u);
  EXPECT_EQ(r->summary.total_ns, 112000);  // every op still ran
  std::ostringstream out;
  write_summary_json(r->summary, out);
  EXPECT_NE(
      out.str().find(
          "\"oom\": {\"t_ns\": 0, \"rank\": 2, \"role\": 1, \"buffer\": \"grads_in_partition\", "
          "\"category\": \"grad\", \"bytes\": 6000000, \"live_bytes\": 6001000, \"capacity\": "
          "3000000, \"ranks_out_of_memory\": 2}"),
      std::string::npos)
      << out.str();
}

TEST(Simulator, StepsInitAndSteadyWindow) {
  Schedule s = tiny_schedule(4);
  s.meta.steps = 2;
  s.buffers = {buffer("flat", BufferCategory::Param16, 500, true),
               buffer("act", BufferCategory::Activation, 100)};
  s.ops = {in_phase(alloc(0), Phase::Init),
           in_phase(compute(OpKind::Forward, 5e9), Phase::Init),
           alloc(1),
           compute(OpKind::Forward, 5e9),
           free_op(1),
           in_step(compute(OpKind::Backward, 1e10), 1)};
  const SimulationResult r = run(s);
  EXPECT_EQ(r.summary.init_ns, 100000);
  ASSERT_EQ(r.summary.steps.size(), 2u);
  EXPECT_EQ(r.summary.steps[0].start_ns, 100000);
  EXPECT_EQ(r.summary.steps[0].end_ns, 200000);
  EXPECT_EQ(r.summary.steps[1].start_ns, 200000);
  EXPECT_EQ(r.summary.steps[1].end_ns, 400000);
  EXPECT_EQ(r.summary.steps[0].compute_ns, 100000);  // init compute is not a step's
  EXPECT_EQ(r.summary.steady_from_ns, 200000);
  EXPECT_EQ(r.memory[0].device.bytes, 600u * 2);  // fp16 elements
  EXPECT_EQ(r.memory[0].steady.bytes, 500u * 2);  // activations freed before the last step
}

TEST(Simulator, BadSchedulesAndOptionsAreDiagnostics) {
  Schedule s = tiny_schedule(4);
  s.ops = {compute(OpKind::Forward, 5e9), with_deps(compute(OpKind::Forward, 5e9), {1}), alloc(7)};
  auto r = simulate(s, round_gpu(), round_options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().to_string(),
            "schedule: /ops/1/deps/0: expected an earlier op index 0..0, got 1\n"
            "schedule: /ops/2/buffer: expected no buffer index (the schedule has no buffers), "
            "got 7\n");
  Schedule ok = tiny_schedule(4);
  ok.ops = {compute(OpKind::Forward, 5e9)};
  GpuSpec v100 = round_gpu();
  v100.name = "V100-32GB";
  v100.fp16_tflops = 0;
  r = simulate(ok, v100, round_options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().items()[0].to_string(),
            "simulator: /gpu: expected a dense float16 rate for \"V100-32GB\", got 0 TFLOP/s (the "
            "GPU does not "
            "support this dtype)");
  EngineOptions o = round_options();
  o.compute_efficiency = 1.5;
  r = simulate(ok, round_gpu(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().items()[0].message, "expected a compute efficiency in (0, 1], got 1.5");
  Schedule odd = tiny_schedule(4);
  odd.meta.nodes = 2;
  odd.meta.gpus_per_node = 2;
  odd.comms.push_back({1, 3, 1});  // ranks 1..3
  odd.ops = {collective(CollectiveKind::AllReduce, 8, 8, 1, Stream::Compute)};
  odd.ops[0].label = "odd group";
  r = simulate(odd, round_gpu(), round_options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().items()[0].to_string(),
            "simulator: /ops/0: expected a collective group that fills whole nodes of 2 GPUs, got "
            "3 ranks for "
            "\"odd group\"");
  Schedule twice = tiny_schedule(4);
  twice.buffers = {buffer("b", BufferCategory::Temp, 8)};
  twice.ops = {alloc(0), free_op(0), free_op(0)};
  r = simulate(twice, round_gpu(), round_options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().items()[0].to_string(),
            "schedule: /ops/2: expected buffer \"b\" to be live before its Free, got it free");
}

TEST(Simulator, OutputsAreDeterministic) {
  const Schedule s = two_role_schedule();
  const auto text = [&] {
    const SimulationResult r = run(s);
    std::ostringstream a;
    write_summary_json(r.summary, a);
    write_trace_json(r.trace, a);
    write_chrome_trace(r.trace, a);
    return a.str();
  };
  const std::string first = text();
  EXPECT_EQ(first, text());
  EXPECT_GT(first.size(), 1000u);
}

}  // namespace
}  // namespace zerosim
