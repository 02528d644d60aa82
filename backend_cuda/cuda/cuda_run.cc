// run_cuda (cuda_backend.h): the launch, the device, the communicators, one CudaDevice per rank
// this process runs, and the measured trace.
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "cuda_check.h"
#include "cuda_device.h"
#include "id_broadcast.h"
#include "ring_plan.h"
#include "zerosim/collective_model.h"
#include "zerosim/comm_record.h"
#include "zerosim/cuda_backend.h"

namespace zerosim::cuda {
namespace {

Result<CudaRun> failed(Diagnostic d) {
  Diagnostics out;
  out.add(std::move(d));
  return Result<CudaRun>(std::move(out));
}

Diagnostic at_phase(Diagnostic d, std::uint32_t rank, const std::string& phase) {
  d.message = "rank " + std::to_string(rank) + ", " + phase + ": " + d.message;
  return d;
}

Bytes device_used() {
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 0;
  return total_b - free_b;
}

std::string version_text(int v) {  // CUDA's 1000 x major + 10 x minor
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// One rank of the schedule on this GPU; `world` null in single-GPU mode.
exec::Status run_rank(const Schedule& s, const ScheduleGraph& g, const CudaOptions& o,
                      std::uint32_t rank, ncclComm_t world, Bytes world_bytes, bool data,
                      Bytes after_context, CudaRun& run) {
  CudaRankResult r;
  r.rank = rank;
  r.role = s.role_of(rank);
  r.memory.device_after_context = after_context;
  if (world) r.memory.nccl_by_comm.emplace_back(kNone, world_bytes);
  auto dev = std::make_unique<CudaDevice>(s, o, rank, world, data);
  if (exec::Status e = dev->init()) {
    dev->abort();
    return at_phase(*e, rank, "device and communicator set-up");
  }
  r.memory.device_after_comms = device_used();
  for (const auto& split : dev->split_bytes()) r.memory.nccl_by_comm.push_back(split);
  // The communicators' share: device memory after set-up less the context and the backend's own
  // workspaces (an upper bound in single-GPU mode, which has no communicator: ~0).
  const Bytes before = after_context + dev->own_bytes();
  r.memory.nccl_bytes = r.memory.device_after_comms - std::min(r.memory.device_after_comms, before);
  exec::TrackingAllocator alloc;
  auto walked = exec::execute_rank({&s, &g, rank, r.role, data}, *dev, alloc);
  if (!walked.ok()) {
    dev->abort();
    return walked.diagnostics().items().front();
  }
  r.memory.tracked = walked.value().memory;
  std::vector<Span> spans;
  std::vector<TraceCounter> counters;
  if (exec::Status e = dev->collect(r, spans, counters))
    return at_phase(*e, rank, "collecting timings");
  TraceRank tr;
  tr.rank = rank;
  tr.role = r.role;
  RankPeaks peaks;
  peaks.device.bytes = r.memory.tracked.device_peak;
  peaks.device.by_category = r.memory.tracked.device_peak_by_category;
  peaks.host_bytes = r.memory.tracked.host_peak;
  tr.peaks = peaks;
  run.trace.ranks.push_back(std::move(tr));
  for (const exec::ExecutedCollective& c : r.collectives) {
    const Op& op = s.ops[c.op];
    CommRecord cr = schedule_comm_record(s, c.op, rank);
    // The trace's sent/received are the ring's per-rank wire bytes (trace.h), as the host backend
    // and the simulator write them: a model figure here, since NCCL may pick another algorithm.
    // What NCCL was handed (count x dtype size) is CudaRankResult::collectives.
    const exec::RingBytes wire =
        exec::ring_bytes(op.collective, op.numel, op.out_numel, dtype_size(op.dtype), cr.group_size,
                         s.comms[op.comm].index_of(rank), op.root == kNone ? 0 : op.root);
    cr.bytes_sent = wire.sent;
    cr.bytes_received = wire.received;
    for (const Span& sp : spans)
      if (sp.op == c.op) {
        cr.start_ns = sp.start_ns;
        cr.dur_ns = sp.dur_ns;
        break;
      }
    if (world) set_comm_bandwidths(cr, collective_busbw_factor(op.collective, cr.group_size));
    cr.algorithm = world ? "nccl" : "none";
    run.trace.comms.push_back(std::move(cr));
  }
  run.trace.spans.insert(run.trace.spans.end(), spans.begin(), spans.end());
  // Ranks run in ascending order here (one, or single-GPU mode's in turn): Trace::counters' order.
  for (TraceCounter& c : counters) run.trace.counters.push_back(std::move(c));
  run.ranks.push_back(std::move(r));
  return std::nullopt;
}

}  // namespace

bool cuda_backend_built() { return true; }
std::string cuda_unavailable_reason() { return {}; }
std::string cuda_companion_name() { return {}; }

Result<CudaRun> run_cuda(const Schedule& s, const ScheduleGraph& g, const CudaOptions& o,
                         const EnvReader& env) {
  // 1. The launch, refused before anything touches the GPU.
  auto launch = launch_from_env(env);
  if (!launch.ok()) return Result<CudaRun>(launch.diagnostics());
  if (auto bad = launch_mismatch(launch.value(), s.meta.world, o.single_gpu)) return failed(*bad);
  for (std::uint32_t r : o.ranks)
    if (r >= s.meta.world)
      return failed(Diagnostic{Severity::Error,
                               "--ranks",
                               "",
                               "expected ranks below the schedule's world size " +
                                   std::to_string(s.meta.world) + ", got " + std::to_string(r),
                               {}});
  // 2. What the backend needs from the schedule (the operands of every data op).
  // Data mode when the schedule carries every operand; count-only otherwise (CudaDevice).
  exec::HostOptions ho;
  ho.data = true;
  ho.data_options = o.data;
  ho.data_options.memory_cap = 0;  // GPU memory is the limit here, reported as "does not fit"
  const bool data = !exec::data_mode_refusal(s, ho).has_value();
  for (const Op& op : s.ops)
    if (op.stream == Stream::Host && op.kind != OpKind::Marker)
      return failed(
          Diagnostic{Severity::Error, "cuda backend", "/ops",
                     "expected every op on a GPU stream, got " +
                         exec::where(s, 0, static_cast<std::uint32_t>(&op - s.ops.data())) +
                         " on the host stream (optimizer offload is not supported by "
                         "the CUDA backend yet)",
                     "run offload schedules with --backend host"});
  // 3. The device.
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    (void)cudaGetLastError();
    return failed(no_cuda_device(cudaGetErrorName(e), cudaGetErrorString(e)));
  }
  if (count == 0) return failed(no_cuda_device("cudaSuccess", "zero devices"));
  const LaunchInfo& li = launch.value();
  if (li.local_rank >= static_cast<std::uint32_t>(count))
    return failed(Diagnostic{Severity::Error,
                             "environment variable LOCAL_RANK",
                             "",
                             "expected a GPU index below " + std::to_string(count) +
                                 " (this node's GPUs), got " + std::to_string(li.local_rank),
                             {}});
  if (exec::Status e = ZS_CUDA(cudaSetDevice(static_cast<int>(li.local_rank))))
    return failed(at_phase(*e, li.rank, "cudaSetDevice"));
  if (exec::Status e = ZS_CUDA(cudaFree(nullptr)))  // the context, before the first reading
    return failed(at_phase(*e, li.rank, "context creation"));
  CudaRun run;
  run.launch = li;
  cudaDeviceProp prop{};
  if (exec::Status e = ZS_CUDA(cudaGetDeviceProperties(&prop, static_cast<int>(li.local_rank))))
    return failed(*e);
  run.gpu_name = prop.name;
  int v = 0;
  (void)cudaDriverGetVersion(&v);
  run.driver_version = version_text(v);
  (void)cudaRuntimeGetVersion(&v);
  run.runtime_version = version_text(v);
  (void)ncclGetVersion(&v);
  run.nccl_version = std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
                     std::to_string(v % 100);
  const Bytes after_context = device_used();

  if (o.single_gpu) {
    std::vector<std::uint32_t> ranks = o.ranks;
    if (ranks.empty())
      for (std::uint32_t r = 0; r < s.meta.world; ++r) ranks.push_back(r);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    for (std::uint32_t r : ranks)
      if (exec::Status e = run_rank(s, g, o, r, nullptr, 0, data, after_context, run))
        return failed(*e);
  } else {
    ncclUniqueId id{};
    if (li.rank == 0)
      if (exec::Status e = ZS_NCCL(nullptr, ncclGetUniqueId(&id)))
        return failed(at_phase(*e, 0, "ncclGetUniqueId"));
    if (exec::Status e = broadcast_id(li, id, o.nccl_timeout)) {
      finish_launch();
      return failed(at_phase(*e, li.rank, "NCCL unique-id exchange"));
    }
    ncclComm_t world = nullptr;
    if (exec::Status e = ZS_NCCL(nullptr, ncclCommInitRank(&world, static_cast<int>(li.world), id,
                                                           static_cast<int>(li.rank)))) {
      finish_launch();
      return failed(at_phase(*e, li.rank, "ncclCommInitRank"));
    }
    const Bytes after_world = device_used();
    exec::Status e =
        run_rank(s, g, o, li.rank, world, after_world - std::min(after_world, after_context), data,
                 after_context, run);
    if (e)
      (void)ncclCommAbort(world);
    else
      (void)ncclCommDestroy(world);
    finish_launch();
    if (e) return failed(*e);
  }

  Trace& t = run.trace;
  t.meta.backend = "cuda";
  t.meta.model = s.meta.model;
  t.meta.mode = s.meta.mode;
  t.meta.optimizer = s.meta.optimizer;
  t.meta.gpu = run.gpu_name;
  t.meta.stage = s.meta.stage;
  t.meta.world = s.meta.world;
  t.meta.nodes = s.meta.nodes;
  t.meta.gpus_per_node = s.meta.gpus_per_node;
  t.meta.steps = s.meta.steps;
  t.meta.grad_accum = s.meta.grad_accum;
  t.meta.clock = "cuda_events";
  t.meta.driver_version = run.driver_version;
  t.meta.cuda_version = run.runtime_version;
  t.meta.nccl_version = run.nccl_version;
  t.meta.device_capacity = prop.totalGlobalMem;
  t.meta.warmup_steps = 0;
  t.meta.timed_steps = s.meta.steps;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) t.meta.host = host;
  t.meta.notes = {
      "cuda backend: every buffer a cudaMallocFromPoolAsync allocation of a per-rank "
      "pool, data ops as kernels on the resolved operands, AdamW fused on the device, "
      "compute ops as cuBLAS GEMMs of (tokens x hidden) shapes or a busy kernel",
      "times are CUDA events relative to the rank's first event"};
  if (!data)
    t.meta.notes.push_back(
        "count-only: the schedule does not carry every operand, so collectives, copies and the "
        "optimizer ran with the schedule's counts on a staging buffer of the backend's own; every "
        "buffer was still a real allocation of its size");
  if (o.single_gpu)
    t.meta.notes.push_back(
        "single-GPU mode: ranks ran one at a time; collectives were local stand-ins of the same "
        "size, so communication time is model only");
  std::stable_sort(t.spans.begin(), t.spans.end(), [](const Span& a, const Span& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.op < b.op;
  });
  return run;
}

}  // namespace zerosim::cuda
