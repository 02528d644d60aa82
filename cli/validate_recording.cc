// `zerosim validate --recording DIR`: the prediction built from a recording's own inputs (rank 0's
// param list with its recorded gradient order, the job's ds_config the recorder wrote beside the
// manifest, the recorded world size and optimizer steps) and compared with what the job did: the
// collective sequence of every rank as `check --measured DIR` compares it, and the memory counters
// at the phase boundaries against the planner's estimate (zerosim/recorded_memory.h).
#include "validate_recording.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "commands.h"
#include "run_inputs.h"
#include "zerosim/memory_model.h"
#include "zerosim/recorded_memory.h"
#include "zerosim/recording.h"
#include "zerosim/schedule_io.h"
#include "zerosim/trace_compare.h"

namespace zerosim::cli {

namespace {

// The flags that make sense with a recording: everything else the recording itself gives.
bool recording_flag(const std::string& flag) {
  return flag == "--recording" || flag == "--format" || flag == "--memory-tolerance" ||
         flag == "--deepspeed-version";
}

std::string manifest_of(const std::string& dir) {
  return (std::filesystem::path(dir) / "recording.rank0.json").string();
}

}  // namespace

int run_validate_recording(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  Diagnostics d;
  for (const auto& [flag, value] : args.values)
    if (!recording_flag(flag))
      d.error("zerosim validate", flag,
              "expected no " + flag +
                  " with --recording (the recording gives the model, ds_config and world size), "
                  "got one");
  double tolerance = 0;
  if (auto v = args.get("--memory-tolerance")) {
    auto x = parse_number("--memory-tolerance", *v, 0, 1e6);
    d.append(x.diagnostics());
    if (x.ok()) tolerance = x.value();
  }
  auto fmt = parse_choice("--format", args.get("--format").value_or("table"), {"table", "json"});
  d.append(fmt.diagnostics());
  if (report(d, err)) return kExitInvalidInput;

  const std::string dir = *args.get("--recording");
  auto rec = read_recording(dir);
  if (report(rec.diagnostics(), err)) return kExitInvalidInput;
  const std::string manifest = manifest_of(dir);
  if (rec->ds_config.empty()) {
    err << manifest
        << ": /ds_config: expected the job's ds_config (recorded from the DeepSpeed engine, or "
           "zerosim_record.enable(..., ds_config=...)), got none\n";
    return kExitInvalidInput;
  }
  if (rec->steps == 0) {
    err << manifest << ": /steps: expected at least 1 completed optimizer step, got 0\n";
    return kExitInvalidInput;
  }
  const std::string params = (std::filesystem::path(dir) / "params.rank0.json").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(params, ec)) {
    err << params << ": expected the recorded param list (the recorder writes it once the model's "
        << "first forward ran), got none\n";
    return kExitInvalidInput;
  }
  // The prediction is built from rank 0's ds_config and param list: a rank whose own differs was
  // compared against it without a word (found by a hostile-input pass).
  const auto contents = [](const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return f ? ss.str() : std::string();
  };
  for (const char* kind : {"ds_config", "params"}) {
    const std::filesystem::path first =
        std::filesystem::path(dir) / (std::string(kind) + ".rank0.json");
    const std::string zero = contents(first);
    for (std::uint64_t r = 1; r < rec->world; ++r) {
      const std::filesystem::path other =
          std::filesystem::path(dir) / (std::string(kind) + ".rank" + std::to_string(r) + ".json");
      if (!std::filesystem::is_regular_file(other, ec) || contents(other) == zero) continue;
      err << other.string() << ": expected the same " << kind << " as rank 0 ("
          << first.filename().string()
          << ", which the prediction is built from), got a different file\n";
      return kExitInvalidInput;
    }
  }
  // The same inputs `zerosim schedule` would take: the errors name the recording's own files (a
  // ds_config whose train_batch_size needs another world size is refused by its loader).
  std::vector<std::string> argv = {"--param-list", params,
                                   "--ds-config",  rec->ds_config,
                                   "--gpus",       std::to_string(rec->world),
                                   "--steps",      std::to_string(rec->steps)};
  if (auto v = args.get("--deepspeed-version"))
    argv.insert(argv.end(), {"--deepspeed-version", *v});
  auto run_args = parse_args(argv, run_flags(), "validate");
  if (report(run_args.diagnostics(), err)) return kExitInvalidInput;
  auto run = build_run(run_args.value());
  if (report(run.diagnostics(), err)) return kExitInvalidInput;

  std::ostringstream log_text;
  auto written = write_collective_log(run->schedule, log_text, {});
  if (report(written.diagnostics(), err)) return kExitInternal;
  auto predicted = read_collective_log(log_text.str(), "the prediction");
  if (report(predicted.diagnostics(), err)) return kExitInternal;

  Comparison c;
  c.sequence =
      compare_sequences(as_recorded_phases(std::move(predicted.value())), rec->log, rec->world);
  c.sequence_only = true;
  c.notes.push_back("predicted from " + params + ", " + rec->ds_config + ", " +
                    std::to_string(rec->world) + " ranks, " + std::to_string(rec->steps) +
                    " optimizer steps");
  for (std::string& n : recorded_phase_notes(rec->other_collectives))
    c.notes.push_back(std::move(n));

  const Scenario& sc = run->scenario;
  const MemoryReport mem = estimate_memory(sc.model, run->plan, sc.ds, sc.cluster, sc.training,
                                           sc.mode, default_overheads());
  const PhaseMemoryCheck pm =
      compare_phase_memory(rec.value(), mem, default_overheads(), tolerance);
  if (fmt.value() == "json") {
    out << "{\"format\": \"zerosim-validate-recording\", \"version\": 1, \"check\": ";
    write_comparison_json(c, out);
    out << ", \"memory\": {\"recorded\": " << (pm.recorded ? "true" : "false")
        << ", \"passed\": " << (pm.passed() ? "true" : "false") << ", \"rows\": [";
    for (std::size_t i = 0; i < pm.rows.size(); ++i) {
      const auto& r = pm.rows[i];
      out << (i ? ", " : "") << "{\"rank\": " << r.rank << ", \"event\": \"" << r.event
          << "\", \"category\": \"" << r.category << "\", \"measured_bytes\": " << r.measured
          << ", \"predicted_bytes\": " << r.predicted
          << ", \"within\": " << (r.within ? "true" : "false") << "}";
    }
    out << "]}}\n";
  } else {
    // check's table without its verdict line: the verdict here covers the memory too.
    std::ostringstream table;
    write_comparison_table(c, table);
    std::string text = table.str();
    if (const auto v = text.rfind("\nverdict: "); v != std::string::npos) text.resize(v);
    out << text << "\n";
    write_phase_memory_table(pm, out);
    out << "\nverdict: " << (c.passed() && pm.passed() ? "PASS" : "FAIL")
        << " (collective sequence " << (c.passed() ? "identical" : "differs") << "; memory "
        << (!pm.recorded  ? "not recorded"
            : pm.passed() ? "within tolerance"
                          : "differs")
        << ")\n";
  }
  return c.passed() && pm.passed() ? kExitOk : kExitInfeasible;
}

}  // namespace zerosim::cli
