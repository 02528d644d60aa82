// validate_cuda_precheck and run_validate_cuda (validate_cuda.h).
#include "validate_cuda.h"

#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "output_file.h"
#include "zerosim/cuda_backend.h"
#include "zerosim/schedule_digest.h"
#include "zerosim/trace.h"

namespace zerosim::cli {
namespace {

std::int64_t median(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void report_one(const Diagnostic& d, std::ostream& err) {
  Diagnostics x;
  x.add(d);
  report(x, err);
}

}  // namespace

std::vector<FlagSpec> validate_cuda_flags() {
  return {
      {"--single-gpu", "",
       "cuda: run the schedule's ranks one at a time on one GPU, collectives replaced by "
       "local copies of the same size (communication time: model only)"},
      {"--ranks", "LIST", "cuda --single-gpu: the ranks to run, e.g. 0,3 (default: every rank)"},
      {"--warmup-steps", "N", "cuda: steps left out of the measured median step time; default 1"}};
}

int validate_cuda_precheck(const ParsedArgs& args, std::ostream& err) {
  if (!cuda::cuda_backend_built()) {
    err << "zerosim validate: --backend cuda: " << cuda::cuda_unavailable_reason() << "\n";
    return kExitInvalidInput;
  }
  auto launch = cuda::launch_from_env(cuda::process_env());
  if (report(launch.diagnostics(), err)) return kExitInvalidInput;
  if (args.has("--single-gpu") && launch->world != 1) {
    report_one(*cuda::launch_mismatch(launch.value(), launch->world, true), err);
    return kExitInvalidInput;
  }
  return -1;
}

int run_validate_cuda(const ParsedArgs& args, const Schedule& s, const ScheduleGraph& g,
                      const SimulationResult& p, const exec::DataOptions& data, std::ostream& out,
                      std::ostream& err) {
  cuda::CudaOptions o;
  o.single_gpu = args.has("--single-gpu");
  o.data = data;
  Diagnostics d;
  if (auto v = args.get("--ranks")) {
    auto r = parse_uint_list("--ranks", *v, 0, s.meta.world - 1);
    d.append(r.diagnostics());
    if (r.ok()) o.ranks = r.value();
  }
  if (auto v = args.get("--warmup-steps")) {
    auto n = parse_uint("--warmup-steps", *v, 0, s.meta.steps == 0 ? 0 : s.meta.steps - 1);
    d.append(n.diagnostics());
    if (n.ok()) o.warmup_steps = static_cast<std::uint32_t>(n.value());
  }
  if (auto v = args.get("--stall-timeout")) {
    auto t = parse_number("--stall-timeout", *v, 0.001, 86400);
    d.append(t.diagnostics());
    if (t.ok())
      o.nccl_timeout = std::chrono::milliseconds(static_cast<long long>(t.value() * 1000));
  }
  if (args.has("--ranks") && !o.single_gpu)
    d.error("zerosim validate", "--ranks", "expected --single-gpu for this flag, got none");
  if (report(d, err)) return kExitInvalidInput;
  auto launch = cuda::launch_from_env(cuda::process_env());
  if (report(launch.diagnostics(), err)) return kExitInvalidInput;
  if (auto bad = cuda::launch_mismatch(launch.value(), s.meta.world, o.single_gpu)) {
    report_one(*bad, err);  // refused before any allocation
    return kExitInvalidInput;
  }
  err << "validate: " << s.meta.world << " ranks x " << s.ops.size() << " ops on the cuda backend ("
      << (o.single_gpu ? "single-GPU mode" : "one rank per process") << ")...\n";
  auto measured = cuda::run_cuda(s, g, o, cuda::process_env());
  if (!measured.ok()) {
    report(measured.diagnostics(), err);
    err << "validate: the run failed; nothing was compared\n";
    return kExitInfeasible;
  }
  cuda::CudaRun& m = measured.value();
  m.trace.meta.schedule_digest = schedule_digest(s);
  m.trace.meta.warmup_steps = o.warmup_steps;
  if (auto path = args.get("--output")) {
    // One trace per process: rank N of a multi-process launch writes PATH.rankN.
    const std::string file =
        m.launch.world > 1 ? *path + ".rank" + std::to_string(m.launch.rank) : *path;
    if (!write_file("--output", file, err, [&](std::ostream& os) {
          write_trace_json(m.trace, os);
          return true;
        }))
      return kExitInvalidInput;
  }
  SimTime step_ns = 0;
  if (!p.summary.steps.empty())
    step_ns = p.summary.steps.back().end_ns - p.summary.steps.back().start_ns;
  bool pass = true;
  const bool json = args.get("--format").value_or("table") == "json";
  char line[320];
  if (!json) {
    out << "zerosim validate: " << s.meta.model << ", stage " << s.meta.stage << ", "
        << s.meta.world << " ranks, " << s.meta.steps << " step(s); cuda backend on " << m.gpu_name
        << " (driver " << m.driver_version << ", CUDA " << m.runtime_version << ", NCCL "
        << m.nccl_version << ")" << (o.single_gpu ? ", single-GPU mode" : "") << "\n\n";
    std::snprintf(line, sizeof line, "%5s %16s %16s %8s %16s %16s %16s %14s %12s %12s %8s\n",
                  "rank", "predicted B", "tracked B", "memory", "pool used B", "pool reserved B",
                  "device used B", "nccl B", "pred ms", "meas ms", "err %");
    out << line;
  } else {
    out << "{\"format\": \"zerosim-validate\", \"version\": 1, \"backend\": \"cuda\", \"gpu\": "
        << quote(m.gpu_name) << ", \"single_gpu\": " << (o.single_gpu ? "true" : "false")
        << ", \"ranks\": [";
  }
  for (std::size_t i = 0; i < m.ranks.size(); ++i) {
    const cuda::CudaRankResult& r = m.ranks[i];
    const RoleMemory& rm = p.memory[r.role];
    const bool mem_ok = rm.device.bytes == r.memory.tracked.device_peak &&
                        rm.device.by_category == r.memory.tracked.device_peak_by_category &&
                        rm.host.bytes == r.memory.tracked.host_peak;
    std::array<std::uint64_t, kCollectiveKindCount> calls{};
    for (const exec::ExecutedCollective& c : r.collectives)
      ++calls[static_cast<std::size_t>(s.ops[c.op].collective)];
    bool calls_ok = true;
    for (const CommKindSummary& c : p.summary.comm)
      calls_ok = calls_ok && calls[static_cast<std::size_t>(c.kind)] == c.calls;
    pass = pass && mem_ok && calls_ok;
    std::vector<std::int64_t> timed(
        r.step_device_ns.begin() + std::min<std::size_t>(o.warmup_steps, r.step_device_ns.size()),
        r.step_device_ns.end());
    const std::int64_t meas = median(timed);
    const double err_pct =
        step_ns > 0 ? 100.0 * (static_cast<double>(meas) - static_cast<double>(step_ns)) /
                          static_cast<double>(step_ns)
                    : 0.0;
    if (!json) {
      std::snprintf(line, sizeof line,
                    "%5u %16llu %16llu %8s %16llu %16llu %16llu %14llu %12.3f %12.3f %8.1f%s\n",
                    r.rank, static_cast<unsigned long long>(rm.device.bytes),
                    static_cast<unsigned long long>(r.memory.tracked.device_peak),
                    mem_ok ? "equal" : "DIFFERS",
                    static_cast<unsigned long long>(r.memory.pool_used_high),
                    static_cast<unsigned long long>(r.memory.pool_reserved_high),
                    static_cast<unsigned long long>(r.memory.device_used_high),
                    static_cast<unsigned long long>(r.memory.nccl_bytes),
                    static_cast<double>(step_ns) / 1e6, static_cast<double>(meas) / 1e6, err_pct,
                    r.comm_model_only ? "  (comm: model only)" : "");
      out << line;
      if (!calls_ok) out << "      collective calls per kind DIFFER from the prediction\n";
    } else {
      out << (i ? ", " : "") << "{\"rank\": " << r.rank
          << ", \"predicted_peak_bytes\": " << rm.device.bytes
          << ", \"tracked_peak_bytes\": " << r.memory.tracked.device_peak
          << ", \"memory_equal\": " << (mem_ok ? "true" : "false")
          << ", \"pool_used_high_bytes\": " << r.memory.pool_used_high
          << ", \"pool_reserved_high_bytes\": " << r.memory.pool_reserved_high
          << ", \"device_used_high_bytes\": " << r.memory.device_used_high
          << ", \"nccl_bytes\": " << r.memory.nccl_bytes
          << ", \"collective_calls_equal\": " << (calls_ok ? "true" : "false")
          << ", \"predicted_step_ns\": " << step_ns << ", \"measured_step_ns\": " << meas
          << ", \"step_error_pct\": " << err_pct << ", \"issue_ns\": " << r.issue_ns
          << ", \"comm_model_only\": " << (r.comm_model_only ? "true" : "false") << "}";
    }
  }
  if (json)
    out << "], \"passed\": " << (pass ? "true" : "false") << "}\n";
  else
    out << "\nverdict: " << (pass ? "PASS" : "FAIL")
        << " (memory: zerosim's tracked bytes against the simulator's ledger, to the byte; "
           "collective calls per kind; time is reported, not judged)\n";
  return pass ? kExitOk : kExitInfeasible;
}

}  // namespace zerosim::cli
