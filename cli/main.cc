// zerosim: plan, simulate and validate DeepSpeed ZeRO training steps.
// Dispatches to one function per subcommand; turns any escaped exception into exit code 3.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "zerosim/diagnostic.h"
#include "zerosim/version.h"

namespace zerosim::cli {

bool report(const Diagnostics& diags, std::ostream& err) {
  for (const auto& d : diags.items()) err << d.to_string() << "\n";
  return diags.has_errors();
}

namespace {
constexpr const char* kUsage =
    "usage: zerosim <command> [flags]\n"
    "\n"
    "zerosim predicts what DeepSpeed ZeRO (stages 0-3) needs per GPU before you rent the GPUs.\n"
    "\n"
    "commands:\n"
    "  plan      memory per GPU for every ZeRO stage, what fits, largest micro-batch, traffic\n"
    "  schedule  the exact collectives and buffers of a training step, as JSON or a collective "
    "log\n"
    "  simulate  replay a training step event by event: time, traffic, memory over time, traces\n"
    "  models    list the model zoo and the GPU catalog\n"
    "\n"
    "Run `zerosim <command> --help` for the flags of a command. `zerosim --version` prints the "
    "version.\n";

int dispatch(const std::vector<std::string>& all) {
  if (all.empty() || all[0] == "--help" || all[0] == "-h" || all[0] == "help") {
    std::cout << kUsage;
    return all.empty() ? kExitInvalidInput : kExitOk;
  }
  if (all[0] == "--version") {
    std::cout << "zerosim " << kZerosimVersion
              << " (DeepSpeed behaviour: edaa7221267243c7be7fb49c5d5f5c4fb97b4641)\n";
    return kExitOk;
  }
  std::vector<std::string> rest(all.begin() + 1, all.end());
  if (all[0] == "plan") return run_plan(rest, std::cout, std::cerr);
  if (all[0] == "models") return run_models(rest, std::cout, std::cerr);
  if (all[0] == "schedule") return run_schedule(rest, std::cout, std::cerr);
  if (all[0] == "simulate") return run_simulate(rest, std::cout, std::cerr);
  std::string m = closest_match(all[0], {"plan", "models", "schedule", "simulate"});
  std::cerr << "zerosim: unknown command " << quote(all[0])
            << (m.empty() ? "" : " (did you mean " + quote(m) + "?)") << "; see zerosim --help\n";
  return kExitInvalidInput;
}
}  // namespace

}  // namespace zerosim::cli

int main(int argc, char** argv) {
  try {
    return zerosim::cli::dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "zerosim: internal error: " << e.what() << "\n";
    return zerosim::cli::kExitInternal;
  } catch (...) {
    std::cerr << "zerosim: internal error\n";
    return zerosim::cli::kExitInternal;
  }
}
