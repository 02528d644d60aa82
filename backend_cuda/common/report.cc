// write_cuda_report (cuda_report.h).
#include <algorithm>
#include <cstdio>

#include "zerosim/cuda_report.h"

namespace zerosim::cuda {

namespace {

// [{"comm": "world", "bytes": N}, {"comm": 1, "bytes": M}]'s inside.
std::string comm_bytes_json(const CudaMemory& m) {
  std::string j;
  for (const auto& [comm, bytes] : m.nccl_by_comm)
    j += (j.empty() ? "" : ", ") + std::string("{\"comm\": ") +
         (comm == kNone ? std::string("\"world\"") : std::to_string(comm)) +
         ", \"bytes\": " + std::to_string(bytes) + "}";
  return j;
}

}  // namespace

std::int64_t median_step_ns(const std::vector<std::int64_t>& steps, std::uint32_t warmup) {
  if (steps.size() <= warmup) return 0;
  std::vector<std::int64_t> v(steps.begin() + warmup, steps.end());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool write_cuda_report(const Schedule& s, const SimulationResult& p, const CudaRun& m,
                       const ReportOptions& o, std::ostream& out) {
  const bool single = !m.ranks.empty() && m.ranks.front().comm_model_only;
  SimTime step_ns = 0;
  if (!p.summary.steps.empty())
    step_ns = p.summary.steps.back().end_ns - p.summary.steps.back().start_ns;
  bool pass = true;
  const bool json = o.json;
  char line[320];
  if (!json) {
    out << "zerosim validate: " << s.meta.model << ", stage " << s.meta.stage << ", "
        << s.meta.world << " ranks, " << s.meta.steps << " step(s); cuda backend on " << m.gpu_name
        << " (driver " << m.driver_version << ", CUDA " << m.runtime_version << ", NCCL "
        << m.nccl_version << ")" << (single ? ", single-GPU mode" : "") << "\n\n";
    std::snprintf(line, sizeof line, "%5s %16s %16s %8s %16s %16s %16s %14s %12s %12s %8s\n",
                  "rank", "predicted B", "tracked B", "memory", "pool used B", "pool reserved B",
                  "device used B", "nccl B", "pred ms", "meas ms", "err %");
    out << line;
  } else {
    out << "{\"format\": \"zerosim-validate\", \"version\": 1, \"backend\": \"cuda\", \"gpu\": "
        << quote(m.gpu_name) << ", \"single_gpu\": " << (single ? "true" : "false")
        << ", \"ranks\": [";
  }
  for (std::size_t i = 0; i < m.ranks.size(); ++i) {
    const CudaRankResult& r = m.ranks[i];
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
    const std::int64_t meas = median_step_ns(r.step_device_ns, o.warmup_steps);
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
          << ", \"nccl_bytes\": " << r.memory.nccl_bytes << ", \"nccl_bytes_by_comm\": ["
          << comm_bytes_json(r.memory) << "]"
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
  return pass;
}

}  // namespace zerosim::cuda
