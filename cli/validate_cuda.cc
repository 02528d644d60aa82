// validate_cuda_precheck and run_validate_cuda (validate_cuda.h).
#include "validate_cuda.h"

#include <string>
#include <vector>

#include "commands.h"
#include "companion.h"
#include "output_file.h"
#include "zerosim/cuda_backend.h"
#include "zerosim/cuda_report.h"
#include "zerosim/schedule_digest.h"
#include "zerosim/trace.h"

namespace zerosim::cli {
namespace {

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

int validate_cuda_precheck(const std::vector<std::string>& argv, const ParsedArgs& args,
                           std::ostream& err) {
  // A build with the backend puts zerosim-cuda beside zerosim, which runs the same command with
  // the backend loaded (see backend_cuda/CMakeLists).
  if (const std::string name = cuda::cuda_companion_name(); !name.empty()) {
    const std::string companion = beside_this_executable(name);
    const std::string why = companion.empty() ? "/proc/self/exe is not readable"
                                              : exec_companion(companion, "validate", argv);
    err << "zerosim validate: --backend cuda: cannot run " << (companion.empty() ? name : companion)
        << ": " << why << "\n";
    return kExitInvalidInput;
  }
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
  // The trace keeps every step (meta.warmup_steps 0); --warmup-steps only shapes the median.
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
  cuda::ReportOptions ro;
  ro.json = args.get("--format").value_or("table") == "json";
  ro.warmup_steps = o.warmup_steps;
  const bool pass = cuda::write_cuda_report(s, p, m, ro, out);
  return pass ? kExitOk : kExitInfeasible;
}

}  // namespace zerosim::cli
