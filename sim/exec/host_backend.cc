// run_host (host_backend.h): one thread per rank, each executing its view of the schedule on a
// HostDevice (count-only, or backed by a DataPath in data mode: host_data.h); then the measured
// trace and collective log.
#include "zerosim/host_backend.h"

#include <unistd.h>

#include <algorithm>
#include <ostream>
#include <thread>

#include "data_check.h"
#include "host_data.h"
#include "host_world.h"
#include "ring_plan.h"
#include "sampled_device.h"
#include "zerosim/comm_record.h"
#include "zerosim/schedule_io.h"

namespace zerosim::exec {
namespace {

Diagnostic host_error(std::string message) {
  return Diagnostic{Severity::Error, "host backend", "", std::move(message), {}};
}

// Issue and start on a CPU thread. The rank's thread is both the host that issues an op and the
// device that runs it, so an op starts the moment its call is made (issue == start) -- except a
// collective, which cannot move data before every rank of its communicator has arrived: it is
// issued when this rank arrives at the rendezvous and starts when the rendezvous completes (the
// last member's arrival), so start - issue is the time spent waiting on a partner (a GPU's NCCL
// kernel, launched at issue, would spin that long). A Sync returns at once here (nothing is
// queued behind the thread), so no other op waits; a blocked Device call would show the same way.
struct OpSpan {
  std::uint32_t op = 0;
  std::int64_t issue_ns = 0, start_ns = 0, end_ns = 0;
};

// Count-only device: ops run on the rank's thread in program order (which satisfies every
// dependency, Sync gate and communicator order of the graph), collectives meet their group.
class CountingDevice final : public Device {
 public:
  CountingDevice(HostWorld& world, const Schedule& s, const HostOptions& o, std::uint32_t rank,
                 bool spans, HostRankResult& out, DataPath* data)
      : world_(world), s_(s), o_(o), rank_(rank), spans_(spans), out_(out), data_(data) {}

  Status allocate(std::uint32_t b, Bytes bytes, MemoryPool, BufferCategory, bool zero_fill,
                  bool init_weights) override {
    return data_ ? data_->allocate(b, bytes, zero_fill, init_weights) : Status{};
  }
  Status release(std::uint32_t b) override { return data_ ? data_->release(b) : Status{}; }
  Status work(Stream, const WorkCall& call) override {
    const std::int64_t t0 = world_.now_ns();
    if (Status f = fault(call.op)) return f;
    if (data_)
      if (Status e = data_->work(call)) return e;
    // Not spans (as count-only, which skips them): a GradReady, an adopting Alloc's contents.
    if (call.kind == OpKind::GradReady || call.kind == OpKind::Alloc) return {};
    if (spans_) spans_out.push_back({call.op, t0, t0, world_.now_ns()});
    return {};
  }
  Status collective(Stream, const CollectiveCall& call) override {
    const std::int64_t t0 = world_.now_ns();
    if (Status f = fault(call.op)) return f;
    if (Status e = world_.arrive(rank_, call, ArrivalSite(s_, rank_, call.op))) return e;
    const std::int64_t started = world_.now_ns();  // every member has arrived
    if (data_)
      if (Status e = data_->collective(call)) return e;
    const RingBytes b =
        ring_bytes(call.kind, call.numel, call.out_numel, dtype_size(call.dtype), call.group_size,
                   call.rank_in_group, call.root < 0 ? 0 : static_cast<std::uint32_t>(call.root));
    out_.collectives.push_back({call.op, b.sent, b.received});
    out_.sent_by_kind[static_cast<std::size_t>(call.kind)] += b.sent;
    out_.received_by_kind[static_cast<std::size_t>(call.kind)] += b.received;
    const std::int64_t t1 = world_.now_ns();
    if (spans_) spans_out.push_back({call.op, t0, started, t1});
    times.push_back({call.op, t0, started, t1});
    return {};
  }
  Status record(Stream, std::uint32_t) override { return {}; }
  Status wait(Stream, std::uint32_t) override { return {}; }
  Status synchronize() override { return world_.aborted() ? host_error("stopped") : Status{}; }

  std::vector<OpSpan> spans_out;  ///< compute, data and collective ops (traced ranks only)
  std::vector<OpSpan> times;      ///< collectives, every rank

 private:
  Status fault(std::uint32_t op) {
    if (rank_ == o_.fail_rank && op == o_.fail_op)
      return host_error("injected failure (HostOptions::fail_rank/fail_op)");
    if (rank_ == o_.stall_rank && op == o_.stall_op) {
      // Stops answering: the other ranks' stall timeout must end the run.
      while (!world_.aborted()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return host_error("stopped while stalled (HostOptions::stall_rank/stall_op)");
    }
    return {};
  }
  HostWorld& world_;
  const Schedule& s_;
  const HostOptions& o_;
  std::uint32_t rank_;
  bool spans_;
  HostRankResult& out_;
  DataPath* data_;
};

// What a rank's thread leaves behind for the trace.
struct RankState {
  std::vector<MemorySample> curve;
  std::vector<OpSpan> spans, times;
  std::vector<TraceCounter> counters;  ///< traced ranks: the allocator's, by name
};

std::vector<std::uint32_t> traced_ranks(const Schedule& s, const HostOptions& o) {
  std::vector<std::uint32_t> r = o.trace_ranks;
  if (r.empty())
    for (const RankRole& role : s.roles) r.push_back(role.representative);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

Trace make_measured_trace(const Schedule& s, const HostRun& run,
                          const std::vector<RankState>& states,
                          const std::vector<std::uint32_t>& traced, bool data, std::uint64_t seed) {
  Trace t;
  t.meta.backend = "host";
  t.meta.deepspeed_version = std::string(deepspeed_version_name(s.meta.deepspeed_version));
  t.meta.mode = s.meta.mode;
  t.meta.model = s.meta.model;
  t.meta.optimizer = s.meta.optimizer;
  t.meta.gpu = "host";
  t.meta.stage = s.meta.stage;
  t.meta.world = s.meta.world;
  t.meta.nodes = s.meta.nodes;
  t.meta.gpus_per_node = s.meta.gpus_per_node;
  t.meta.steps = s.meta.steps;
  t.meta.grad_accum = s.meta.grad_accum;
  t.meta.clock = "host_steady";
  t.meta.warmup_steps = 0;
  t.meta.timed_steps = s.meta.steps;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) t.meta.host = host;
  if (data)
    t.meta.notes = {
        "host backend, data mode: every buffer a real allocation, every data op and collective "
        "run on real data (ring collectives through shared memory), AdamW with DeepSpeed's "
        "dynamic loss scaling and clipping",
        "compute ops are stand-ins, not a model: forward/backward run nothing; the init-phase "
        "param16 Alloc holds synthetic initial weights and each grad_ready writes synthetic "
        "gradients (seed " +
            std::to_string(seed) + ")"};
  else
    t.meta.notes = {
        "host backend, count-only: every op issued, every Alloc/Free tracked, every collective a "
        "rendezvous of its ranks; nothing backed by memory, compute ops not run"};
  t.meta.notes.insert(
      t.meta.notes.end(),
      {"times are the host's steady clock, not GPU time",
       "bytes sent/received per rank: the ring algorithm's chunk plan for each executed call"});
  for (const HostRankResult& r : run.ranks) {
    TraceRank tr;
    tr.rank = r.rank;
    tr.role = r.role;
    tr.memory = states[r.rank].curve;
    t.ranks.push_back(std::move(tr));
  }
  for (const HostRankResult& r : run.ranks) {
    const std::vector<OpSpan>& times = states[r.rank].times;
    for (std::size_t k = 0; k < r.collectives.size(); ++k) {
      const ExecutedCollective& c = r.collectives[k];
      CommRecord cr = schedule_comm_record(s, c.op, r.rank);
      cr.bytes_sent = c.bytes_sent;
      cr.bytes_received = c.bytes_received;
      cr.start_ns = times[k].start_ns;
      cr.dur_ns = times[k].end_ns - times[k].start_ns;
      cr.algorithm = cr.group_size <= 1 ? "none" : "ring";
      t.comms.push_back(std::move(cr));
    }
  }
  // Comm record index per (rank, op) for the spans.
  for (std::uint32_t rank : traced) {
    std::size_t comm = 0;
    while (comm < t.comms.size() && t.comms[comm].rank != rank) ++comm;
    for (const OpSpan& sp : states[rank].spans) {
      const Op& op = s.ops[sp.op];
      Span span;
      span.rank = rank;
      span.stream = op.stream;
      span.op = sp.op;
      span.name = op.label.empty() ? std::string(op_kind_name(op.kind)) : op.label;
      span.category = std::string(op_kind_name(op.kind));
      span.start_ns = sp.start_ns;
      span.dur_ns = sp.end_ns - sp.start_ns;
      span.issue_ns = sp.issue_ns;
      span.phase = op.phase;  // summarize(): Phase::Init spans end the init phase
      span.step = op.step;
      span.micro_step = op.micro_step;
      span.layer = op.layer;
      span.bucket = op.bucket;
      if (op.kind == OpKind::Collective && comm < t.comms.size() && t.comms[comm].op == sp.op)
        span.comm = static_cast<std::uint32_t>(comm++);
      span.numel = op.kind == OpKind::Collective ? op.numel : s.op_elements(op, s.role_of(rank));
      span.flops = op.flops;
      t.spans.push_back(std::move(span));
    }
  }
  std::stable_sort(t.spans.begin(), t.spans.end(), [](const Span& a, const Span& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.op < b.op;
  });
  // Named counters: traced ranks ascending, each rank's by name (Trace::counters' order).
  for (std::uint32_t rank : traced)
    for (const TraceCounter& c : states[rank].counters) t.counters.push_back(c);
  return t;
}

}  // namespace

std::optional<Diagnostic> data_mode_refusal(const Schedule& s, const HostOptions& o) {
  DataCheckOptions dc;
  dc.gradient_clipping = o.data_options.gradient_clipping;
  dc.memory_cap = o.data_options.memory_cap;
  return data_mode_gap(s, dc);
}

Result<HostRun> run_host(const Schedule& s, const ScheduleGraph& g, const HostOptions& o) {
  if (s.meta.world > kMaxHostRanks)
    return fail<HostRun>("--gpus", "",
                         "expected at most " + std::to_string(kMaxHostRanks) +
                             " ranks on the host backend (one thread per rank), got " +
                             std::to_string(s.meta.world));
  if (o.data) {
    if (Status gap = data_mode_refusal(s, o)) {
      Diagnostics d;
      d.add(*gap);
      return Result<HostRun>(std::move(d));
    }
  }
  const std::uint32_t world = s.meta.world;
  HostWorld hw(o.stall_timeout);
  RingRegistry rings(o.stall_timeout);
  HostRun run;
  run.ranks.resize(world);
  std::vector<RankState> states(world);
  const std::vector<std::uint32_t> traced = traced_ranks(s, o);
  // The ranks' page caches share what the buffers leave under the data-memory cap.
  const std::size_t page_cache = o.data ? page_cache_limit(s, o.data_options.memory_cap) : 0;
  std::vector<std::thread> threads;
  threads.reserve(world);
  const auto t0 = HostWorld::Clock::now();
  for (std::uint32_t r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      HostRankResult& out = run.ranks[r];
      out.rank = r;
      out.role = s.role_of(r);
      const bool spans = std::binary_search(traced.begin(), traced.end(), r);
      std::unique_ptr<DataPath> data;
      if (o.data) data = std::make_unique<DataPath>(s, o.data_options, r, rings, page_cache);
      CountingDevice dev(hw, s, o, r, spans, out, data.get());
      TrackingAllocator alloc(o.memory_limit);
      // The device curve (every rank) and the allocator's named counters (traced ranks).
      AllocatorCounters counters;
      SampledDevice sampled(dev, alloc, hw, states[r].curve, spans ? &counters : nullptr);
      sampled.start();
      auto res = execute_rank({&s, &g, r, out.role, o.data}, sampled, alloc);
      if (!res.ok()) {
        hw.abort(res.diagnostics().items().front());
        rings.abort_all();
        return;
      }
      if (data) {
        data->finish();
        out.loss_scale = data->loss_scale();
        out.skipped_steps = data->skipped_steps();
        if (o.data_options.keep_buffers) out.buffers = data->take_buffers();
      }
      out.memory = res.value().memory;
      states[r].spans = std::move(dev.spans_out);
      states[r].times = std::move(dev.times);
      states[r].counters = counters.take(r);
    });
  }
  for (std::thread& t : threads) t.join();
  run.wall_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(HostWorld::Clock::now() - t0).count();
  if (auto f = hw.first_failure()) {
    Diagnostics d;
    d.add(*f);
    return Result<HostRun>(std::move(d));
  }
  run.trace = make_measured_trace(s, run, states, traced, o.data, o.data_options.seed);
  return run;
}

void write_measured_collective_log(const Schedule& s, const HostRun& run, std::ostream& out) {
  for (const HostRankResult& r : run.ranks)
    for (const ExecutedCollective& c : r.collectives)
      write_collective_line(out, s, r.rank, s.ops[c.op]);
}

}  // namespace zerosim::exec
