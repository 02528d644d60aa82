// `zerosim schedule`: builds the schedule DeepSpeed would run and writes it as JSON (-o) and/or as
// the collective log (--collectives-out), one JSON object per collective per rank.
#include "args.h"
#include "commands.h"
#include "output_file.h"
#include "run_inputs.h"
#include "zerosim/schedule_io.h"

namespace zerosim::cli {

namespace {
std::vector<FlagSpec> schedule_flags() {
  auto f = run_flags();
  f.push_back({"--output", "FILE", "write the schedule JSON (\"zerosim-schedule\" version 2)"});
  f.push_back({"--collectives-out", "FILE", "write the collective log (JSON lines, see README)"});
  f.push_back({"--ranks", "LIST", "collective log: only these ranks, e.g. 0,3,7; default all"});
  return f;
}
constexpr const char* kSummary =
    "Builds the schedule of one or more training steps (every op of every rank, no times) exactly "
    "as\n"
    "DeepSpeed issues it, and writes it as JSON and/or as the collective log. Without output flags "
    "it\n"
    "prints a count of ops and collectives.";

}  // namespace

std::string schedule_help() { return format_help("schedule", kSummary, schedule_flags()); }

int run_schedule(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  const auto specs = schedule_flags();
  auto args = parse_args(argv, specs, "schedule");
  if (!args.ok()) {
    report(args.diagnostics(), err);
    return kExitInvalidInput;
  }
  if (args->help) {
    out << schedule_help();
    return kExitOk;
  }
  CollectiveLogOptions log_opts;
  if (args->has("--ranks") && !args->has("--collectives-out")) {
    // It selects the collective log's ranks; without the log it was ignored, exit 0.
    err << "--ranks: expected --collectives-out FILE, the collective log whose ranks it selects; "
           "got no --collectives-out\n";
    return kExitInvalidInput;
  }
  if (auto r = args->get("--ranks")) {
    auto ranks = parse_uint_list("--ranks", *r, 0, 16777215);
    if (report(ranks.diagnostics(), err)) return kExitInvalidInput;
    log_opts.ranks = ranks.value();
  }
  if (!check_outputs(args.value(), specs, {"--output", "--collectives-out"}, err))
    return kExitInvalidInput;
  auto run = build_run(args.value());
  if (report(run.diagnostics(), err)) return kExitInvalidInput;
  const Schedule& s = run->schedule;
  OutputBatch outputs(err);  // replaced together, or neither
  if (auto p = args->get("--output"))
    outputs.add("--output", *p, [&](std::ostream& o) {
      write_schedule_json(s, o);
      return true;
    });
  if (auto p = args->get("--collectives-out"))
    outputs.add("--collectives-out", *p, [&](std::ostream& o) {
      auto n = write_collective_log(s, o, log_opts);
      return !report(n.diagnostics(), err);
    });
  if (!outputs.commit()) return kExitInvalidInput;
  std::uint64_t collectives = 0;
  for (const auto& op : s.ops) collectives += op.kind == OpKind::Collective;
  out << "schedule: " << s.meta.model << ", stage " << s.meta.stage << " (" << s.meta.optimizer
      << "), " << s.meta.world << " ranks in " << s.roles.size() << " role"
      << (s.roles.size() == 1 ? "" : "s") << ", " << s.meta.steps << " step"
      << (s.meta.steps == 1 ? "" : "s") << " x " << s.meta.grad_accum << " micro-step"
      << (s.meta.grad_accum == 1 ? "" : "s") << ": " << s.ops.size() << " ops, " << collectives
      << " collectives per rank; DeepSpeed " << deepspeed_version_name(s.meta.deepspeed_version)
      << ", " << s.meta.mode << " mode\n";
  for (const auto& n : s.meta.notes) out << "note: " << n << "\n";
  return kExitOk;
}

}  // namespace zerosim::cli
