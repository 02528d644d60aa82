// zerosim: plan, simulate and validate DeepSpeed ZeRO training steps.
// Dispatches through the command table (commands()); turns any escaped exception into exit code 3.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "commands.h"
#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/version.h"

namespace zerosim::cli {

bool report(const Diagnostics& diags, std::ostream& err) {
  std::size_t shown = 0, more_errors = 0, more_others = 0;
  for (const auto& d : diags.items()) {
    if (shown < kMaxReportedDiagnostics) {
      err << d.to_string() << "\n";
      ++shown;
    } else {
      ++(d.severity == Severity::Error ? more_errors : more_others);
    }
  }
  if (more_errors + more_others > 0) {
    err << "zerosim: and " << more_errors << " more error" << (more_errors == 1 ? "" : "s");
    if (more_others > 0)
      err << " and " << more_others << " more warning" << (more_others == 1 ? "" : "s")
          << " or notes";
    err << "\n";
  }
  return diags.has_errors();
}

namespace {
constexpr Command kCommands[] = {
    {"plan", "memory per GPU for every ZeRO stage, what fits, largest micro-batch, traffic",
     run_plan, plan_help},
    {"schedule",
     "the exact collectives and buffers of a training step, as JSON or a collective log",
     run_schedule, schedule_help},
    {"simulate", "replay a training step event by event: time, traffic, memory over time, traces",
     run_simulate, simulate_help},
    {"validate", "execute the schedule on the host backend and compare with the prediction",
     run_validate, validate_help},
    {"check", "compare a predicted with a measured trace or collective log", run_check, check_help},
    {"calibrate", "fit the time model to measured traces: efficiency, host costs, collectives",
     run_calibrate, calibrate_help},
    {"models", "list the model zoo and the GPU catalog", run_models, models_help},
    {"view", "timeline viewer: lanes, memory stack, predicted vs measured; headless screenshots",
     run_view, view_help},
};
}  // namespace

std::span<const Command> commands() { return kCommands; }

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

namespace {

std::string usage() {
  std::string s =
      "usage: zerosim <command> [flags]\n"
      "\n"
      "zerosim predicts what DeepSpeed ZeRO (stages 0-3) needs per GPU before you rent the GPUs.\n"
      "\n"
      "commands:\n";
  // Descriptions in one column, two spaces after the longest name (a fixed width of 9 pushed the
  // description of "calibrate", 9 letters, one column right of the others).
  std::size_t width = 0;
  for (const Command& c : commands()) width = std::max(width, c.name.size() + 1);
  for (const Command& c : commands()) {
    std::string name(c.name);
    name.resize(width, ' ');
    s += "  " + name + " " + std::string(c.description) + "\n";
  }
  s += "\nRun `zerosim <command> --help` for the flags of a command. `zerosim --version` prints "
       "the version.\n";
  return s;
}

// One line on stderr: the unknown name and the nearest command.
int unknown_command(const std::string& name) {
  std::vector<std::string> names;
  for (const Command& c : commands()) names.emplace_back(c.name);
  const std::string m = closest_match(name, names);
  std::cerr << "zerosim: unknown command " << quote(name)
            << (m.empty() ? "" : " (did you mean " + quote(m) + "?)") << "; see zerosim --help\n";
  return kExitInvalidInput;
}

int dispatch(const std::vector<std::string>& all) {
  if (all.size() == 2 && all[0] == "help") {  // zerosim help <command>
    const Command* c = find_command(all[1]);
    if (!c) return unknown_command(all[1]);
    std::cout << c->help();
    return kExitOk;
  }
  if (all.empty() || all[0] == "--help" || all[0] == "-h" || all[0] == "help") {
    std::cout << usage();
    return all.empty() ? kExitInvalidInput : kExitOk;
  }
  if (all[0] == "--version") {
    std::cout << "zerosim " << kZerosimVersion << " (DeepSpeed behaviour: " << kDeepSpeedCommit
              << ")\n";
    return kExitOk;
  }
  const Command* c = find_command(all[0]);
  if (!c) return unknown_command(all[0]);
  return c->run(std::vector<std::string>(all.begin() + 1, all.end()), std::cout, std::cerr);
}
// Standard output is checked like an output file: flushed at exit, and a failed write (a full
// disk, a closed pipe) is one line on stderr and a non-zero exit, never a silent 0.
int flush_stdout(int rc) {
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return rc;
  std::cerr << "zerosim: cannot write the standard output"
            << (errno == 0 ? "" : std::string(": ") + std::strerror(errno)) << "\n";
  return rc == kExitOk ? kExitInvalidInput : rc;
}

// A run is short and its working set is mostly a few schedules of tens of MB each, built, simulated
// and dropped one after another (the planner: one per stage/offload row, a thread per core). With
// glibc's defaults a freed multi-MB op vector goes back to the kernel (munmap, or a trimmed heap
// top) and the next row faults fresh zeroed pages in again: a third of `zerosim plan`'s CPU for
// the Llama-3.1-405B sweep was system time. Keeping freed memory in the process for reuse (no
// trimming; blocks up to 32 MiB, glibc's largest mmap threshold, from the heap) costs nothing a
// short run would notice.
void keep_freed_memory() {
#if defined(__GLIBC__)
  (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
  (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
}
}  // namespace

}  // namespace zerosim::cli

int main(int argc, char** argv) {
  zerosim::cli::keep_freed_memory();
  try {
    const int rc = zerosim::cli::dispatch(std::vector<std::string>(argv + 1, argv + argc));
    return zerosim::cli::flush_stdout(rc);
  } catch (const std::exception& e) {
    std::cerr << "zerosim: internal error: " << e.what() << "\n";
    return zerosim::cli::kExitInternal;
  } catch (...) {
    std::cerr << "zerosim: internal error\n";
    return zerosim::cli::kExitInternal;
  }
}
