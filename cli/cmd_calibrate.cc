// `zerosim calibrate MEASURED.json [MEASURED2.json ...] [--nccl-tests FILE ...] -o FILE`: fits the
// time model's parameters to measured traces (calibration.h) and writes the calibration file that
// plan, simulate and check read with --calibration.
#include <cstdio>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "output_file.h"
#include "zerosim/calibration.h"
#include "zerosim/input_file.h"
#include "zerosim/model_loader.h"
#include "zerosim/trace.h"

namespace zerosim::cli {

namespace {
std::vector<FlagSpec> calibrate_flags() {
  return {
      {"--output", "FILE", "write the calibration JSON here (also -o FILE); required"},
      {"--nccl-tests", "FILE",
       "nccl-tests output of the same machine (all_reduce_perf, ...), repeatable: the device "
       "side of the collectives, so the host's launch cost is told from NCCL's latency"},
      {"--hidden", "N",
       "the model's hidden size when the traces' model is not in the zoo (the compute "
       "efficiency depends on it)"},
      {"--allow-host-clock", "",
       "accept traces timed by the host's steady clock (the host backend): host time is not "
       "GPU time, so the fit describes the CPU, not a GPU"},
      {"--gpu", "NAME",
       "the catalog GPU the fit divides by, for host-backend traces (their meta.gpu is \"host\"): "
       "the --gpu their validate run predicted for"},
      {"--format", "FMT", "table|json on stdout; default table"},
  };
}
constexpr const char* kSummary =
    "Fits the time model to measured traces (zerosim validate --backend cuda --output): the\n"
    "achieved compute efficiency (e_max and h_half with several hidden sizes, else the one GEMM\n"
    "size class measured), the host cost per kernel launch, stage-3 fetch + release hook and\n"
    "collective launch, and each collective's latency and bus bandwidth. Prints every value with\n"
    "its unit, residual and basis, and writes the calibration for --calibration FILE of plan,\n"
    "simulate and check.\n"
    "usage: zerosim calibrate MEASURED.json [MEASURED2.json ...] [--nccl-tests FILE ...] -o FILE";

std::string fnv1a64(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return std::string("fnv1a64:") + b;
}

// parse_args takes flags only: the traces (positional) and the repeatable --nccl-tests are taken
// out first, and -o is --output.
struct Split {
  std::vector<std::string> flags, traces, nccl_tests;
};
Result<Split> split_args(const std::vector<std::string>& argv) {
  Split s;
  const auto specs = calibrate_flags();
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a == "-o") a = "--output";
    if (a == "--nccl-tests" || a.rfind("--nccl-tests=", 0) == 0) {
      if (a.size() > 12) {
        s.nccl_tests.push_back(a.substr(13));
      } else if (i + 1 < argv.size()) {
        s.nccl_tests.push_back(argv[++i]);
      } else {
        return fail<Split>("--nccl-tests", "", "expected a FILE after it, got the end of the line");
      }
      continue;
    }
    if (a.rfind('-', 0) != 0 || a == "-") {
      s.traces.push_back(a);
      continue;
    }
    s.flags.push_back(a);
    // A flag with a value takes the next argument (unless written --flag=value).
    for (const FlagSpec& f : specs)
      if (f.name == a && !f.value_name.empty() && i + 1 < argv.size()) s.flags.push_back(argv[++i]);
  }
  return s;
}

}  // namespace

std::string calibrate_help() { return format_help("calibrate", kSummary, calibrate_flags()); }

int run_calibrate(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  auto split = split_args(argv);
  if (!split.ok()) {
    report(split.diagnostics(), err);
    return kExitInvalidInput;
  }
  const auto specs = calibrate_flags();
  auto args = parse_args(split->flags, specs, "calibrate");
  if (!args.ok()) {
    report(args.diagnostics(), err);
    return kExitInvalidInput;
  }
  if (args->help) {
    out << calibrate_help();
    return kExitOk;
  }
  Diagnostics d;
  auto fmt = parse_choice("--format", args->get("--format").value_or("table"), {"table", "json"});
  d.append(fmt.diagnostics());
  std::uint64_t hidden = 0;
  if (auto h = args->get("--hidden")) {
    auto v = parse_uint("--hidden", *h, 1, 1u << 20);
    d.append(v.diagnostics());
    if (v.ok()) hidden = v.value();
  }
  if (split->traces.empty())
    d.error("zerosim calibrate", "",
            "expected one or more measured traces (zerosim validate --backend cuda --output), got "
            "none");
  if (!args->has("--output"))
    d.error("--output", "", "expected -o FILE: where to write the calibration, got none");
  for (const std::string& t : split->traces)
    if (args->has("--output") && t == *args->get("--output"))
      d.error("--output", "", "expected a file other than the measured trace " + quote(t));
  // One file given twice (m.json ./m.json) was fitted as two measurements (found by a
  // hostile-input pass).
  for (std::size_t i = 0; i < split->traces.size(); ++i) {
    const std::string key = output_detail::file_key(split->traces[i]);
    for (std::size_t j = 0; j < i && !key.empty() && key.rfind("new:", 0) != 0; ++j)
      if (output_detail::file_key(split->traces[j]) == key) {
        d.error(split->traces[i], "",
                "expected each measured trace once, got the file of " + quote(split->traces[j]) +
                    " again");
        break;
      }
  }
  if (report(d, err)) return kExitInvalidInput;
  if (!check_outputs(args.value(), specs, {"--output"}, err)) return kExitInvalidInput;
  CalibratedLinks nccl;
  for (const std::string& f : split->nccl_tests) {
    auto cal = load_nccl_tests(f);
    d.append(cal.diagnostics());
    if (!cal.ok()) continue;
    // One table per collective across the files as within one (nccl_tests_parser.cc): a second
    // file's table of the same collective silently replaced the first's.
    for (const CollectiveKind k : kAllCollectiveKinds) {
      const CalibratedCollective* c = cal->find(k);
      if (!c) continue;
      if (const CalibratedCollective* first = nccl.find(k))
        d.error(c->source, "",
                "a second " + std::string(nccl_tests_program(k)) + " table (the first is " +
                    first->source + "); give one table per collective");
      else
        nccl.set(k, *c);
    }
  }
  std::vector<CalibrationInput> inputs;
  for (const std::string& path : split->traces) {
    CalibrationInput in;
    in.path = path;
    std::string text;
    if (!read_input_file(path, text, d)) continue;
    auto t = read_trace_json(text, path);
    d.append(t.diagnostics());
    if (!t.ok()) continue;
    in.digest = fnv1a64(text);
    in.trace = std::move(t.value());
    // The host backend names no GPU: --allow-host-clock could not fit any of its traces, and the
    // refusal suggested --gpu-memory, which calibrate did not take (found by a new-user pass).
    if (const auto gpu = args->get("--gpu")) {
      if (in.trace.meta.gpu == "host") {
        in.trace.meta.gpu = *gpu;
      } else if (in.trace.meta.gpu != *gpu) {
        d.error(path, "/meta/gpu",
                "expected " + quote(*gpu) + " (--gpu), got " + quote(in.trace.meta.gpu) +
                    ": --gpu names the GPU of host-backend traces only");
        continue;
      }
    } else if (in.trace.meta.gpu == "host") {
      d.error(path, "/meta/gpu",
              "expected a catalog GPU, got \"host\" (a host-backend trace): give --gpu NAME, "
              "the GPU its validate run predicted for");
      continue;
    }
    in.hidden = hidden;
    if (in.hidden == 0) {
      // The traces name their model; the zoo knows its hidden size.
      auto m = load_zoo_model(in.trace.meta.model);
      if (m.ok() && m->arch) {
        in.hidden = m->arch->hidden;
      } else {
        d.error(path, "/meta/model",
                "expected a zoo model to read the hidden size from, got " +
                    quote(in.trace.meta.model) + "; give --hidden N");
        continue;
      }
    }
    inputs.push_back(std::move(in));
  }
  if (report(d, err)) return kExitInvalidInput;
  auto cal =
      fit_calibration(inputs, nccl.empty() ? nullptr : &nccl, args->has("--allow-host-clock"));
  if (report(cal.diagnostics(), err)) return kExitInvalidInput;
  {
    // The file must be one --calibration reads: a count-only host trace fitted a compute
    // efficiency of 3e4 of the dense peak, which calibrate wrote and plan then refused.
    std::ostringstream text;
    write_calibration_json(cal.value(), text);
    auto back = read_calibration_text(text.str(), *args->get("--output"));
    if (!back.ok()) {
      const Diagnostic& first = back.diagnostics().items().front();
      err << "zerosim calibrate: expected a fit that --calibration can use, got " << first.pointer
          << ": " << first.message
          << " (the traces' spans do not time GPU work: a count-only host run?); nothing written\n";
      return kExitInvalidInput;
    }
  }
  if (!write_file("--output", *args->get("--output"), err, [&](std::ostream& o) {
        write_calibration_json(cal.value(), o);
        return true;
      }))
    return kExitInvalidInput;
  if (fmt.value() == "json")
    write_calibration_json(cal.value(), out);
  else
    write_calibration_table(cal.value(), out);
  return kExitOk;
}

}  // namespace zerosim::cli
