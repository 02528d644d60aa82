// `zerosim simulate`'s report (simulate_report.h): the text table, or the summary JSON.
#include "zerosim/simulate_report.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "zerosim/schedule_builder.h"

namespace zerosim {
namespace {

// A schedule note the builders mark as a warning (DsConfig::warnings), as the engine prefixes it.
constexpr const char* kWarningNote = "schedule: warning: ";

std::string ms(SimTime ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
  return b;
}

std::string gib_cell(Bytes b) { return format_gib(b); }

// One table line without the padding of empty trailing cells.
void emit(std::ostream& out, const char* line) {
  std::string l(line);
  while (!l.empty() && (l.back() == '\n' || l.back() == ' ')) l.pop_back();
  out << l << "\n";
}

// The first step and the steady state side by side: a stage-3 first step records the module trace
// (no prefetch) and the first optimizer step creates Adam's states, so step 0 is not what training
// sees; the steady state is the last simulated step (the default runs one warm-up step before it).
void write_first_and_steady(const Summary& s, std::ostream& out) {
  if (s.steps.empty()) return;
  const StepSummary& first = s.steps.front();
  const StepSummary& steady = s.steps.back();
  const RolePeakSummary* pk = s.peaks.empty() ? nullptr : &s.peaks[s.steady_peak_role];
  const RolePeakSummary* whole = s.peaks.empty() ? nullptr : &s.peaks[s.peak_role];
  char line[256];
  out << "\nfirst step and steady state (steady = the last step, step " << steady.step
      << "; traffic = bytes each GPU sends):\n";
  std::snprintf(line, sizeof line, "  %-22s %14s %14s %16s\n", "", "time", "sent (GiB)",
                "peak memory");
  emit(out, line);
  std::snprintf(line, sizeof line, "  %-22s %14s %14.3f %16s\n", "init", ms(s.init_ns).c_str(),
                static_cast<double>(s.init_bytes_sent) / kGiB, "");
  emit(out, line);
  std::snprintf(line, sizeof line, "  %-22s %14s %14.3f %16s\n",
                ("first step (step " + std::to_string(first.step) + ")").c_str(),
                ms(first.end_ns - first.start_ns).c_str(),
                static_cast<double>(first.bytes_sent) / kGiB, "");
  emit(out, line);
  std::snprintf(line, sizeof line, "  %-22s %14s %14.3f %16s\n",
                ("steady (step " + std::to_string(steady.step) + ")").c_str(),
                ms(steady.end_ns - steady.start_ns).c_str(),
                static_cast<double>(steady.bytes_sent) / kGiB,
                pk ? gib_cell(pk->steady.bytes).c_str() : "");
  emit(out, line);
  std::snprintf(line, sizeof line, "  %-22s %14s %14s %16s\n", "whole run (init incl.)", "", "",
                whole ? gib_cell(whole->device.bytes).c_str() : "");
  emit(out, line);
  if (s.steps.size() == 1)
    out << "  note: one step simulated, so the steady state is the first step (its numbers are "
           "not steady: run --steps 2 or more)\n";
}

std::string with_commas(double x) {
  auto v = static_cast<unsigned long long>(std::llround(x));
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void write_speed(const Summary& s, const StepSpeed& v, std::ostream& out) {
  if (s.steps.empty()) return;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f%%", v.mfu * 100);
  out << "\nspeed of the steady step (step " << s.steps.back().step << "):\n";
  out << "  step time " << human_duration(v.step_ns);
  if (v.tokens_per_s > 0)
    out << ", " << with_commas(v.tokens_per_s) << " tokens/s ("
        << with_commas(v.tokens_per_s / s.meta.world) << " per GPU, "
        << with_commas(v.tokens_per_step) << " tokens per step)";
  if (v.model_flops_per_gpu <= 0) {  // a param list or synthetic shapes without layer FLOPs
    out << "\n  model FLOPs utilisation: not known (the schedule's compute ops carry no FLOPs)\n";
    return;
  }
  const double tflop = v.model_flops_per_gpu / 1e12;
  char small[32];
  std::snprintf(small, sizeof small, "%.3g", tflop);
  out << "\n  model FLOPs utilisation " << pct << " ("
      << (tflop >= 1000 ? with_commas(tflop) : std::string(small))
      << " TFLOP of forward + backward per GPU per step, recompute excluded, over the dense "
         "peak)\n";
}

void write_table(const Summary& s, const Schedule& sched, std::ostream& out,
                 const StepSpeed* speed) {
  const auto& m = s.meta;
  out << "zerosim simulate: " << m.model << ", stage " << m.stage << " (" << m.optimizer << "), "
      << m.world << " x " << m.gpu << " (" << m.nodes << " node" << (m.nodes == 1 ? "" : "s")
      << " x " << m.gpus_per_node << "), " << m.steps << " step" << (m.steps == 1 ? "" : "s")
      << " x " << m.grad_accum << " micro-step" << (m.grad_accum == 1 ? "" : "s") << "; DeepSpeed "
      << m.deepspeed_version << ", " << m.mode << " mode\n";
  // What the schedule does not model and changes every number below, before the numbers.
  for (const auto& n : m.notes)
    if (n.rfind(kWarningNote, 0) == 0) out << n.substr(std::strlen("schedule: ")) << "\n";
  out << "\ntime (simulated):\n";
  out << "  init (flatten, broadcast)  " << human_duration(s.init_ns) << "\n";
  for (const auto& st : s.steps) {
    // The rest of the step: the optimizer step, copies and waits no stream above names. Without
    // it the parts did not add up (555 ms = 499 + 36.7 + 0 and 19.6 ms unaccounted; found by a
    // new-user pass). Each part is its busiest rank's, so the rest is at least 0.
    const SimTime dur = st.end_ns - st.start_ns;
    const SimTime named = st.compute_ns + st.exposed_comm_ns + st.exposed_offload_ns;
    out << "  step " << st.step << "  " << human_duration(dur) << "  (compute "
        << human_duration(st.compute_ns) << ", exposed communication "
        << human_duration(st.exposed_comm_ns) << ", exposed offload "
        << human_duration(st.exposed_offload_ns) << ", the rest "
        << human_duration(dur > named ? dur - named : 0) << ": optimizer step, copies)\n";
  }
  write_first_and_steady(s, out);
  if (speed) write_speed(s, *speed, out);
  out << "\ntraffic per rank over the run (ring algorithms, nccl-tests conventions):\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s %8s %16s %16s %12s\n", "collective", "calls",
                "sent (GiB)", "received (GiB)", "time");
  out << line;
  for (const auto& c : s.comm) {
    std::snprintf(line, sizeof line, "  %-24s %8llu %16.3f %16.3f %12s\n",
                  std::string(collective_name(c.kind)).c_str(),
                  static_cast<unsigned long long>(c.calls),
                  static_cast<double>(c.bytes_sent) / kGiB,
                  static_cast<double>(c.bytes_received) / kGiB, ms(c.time_ns).c_str());
    out << line;
  }
  out << "\npeak device memory per rank role (whole run; steady state = the last step):\n";
  std::size_t shown = 0;
  for (const auto& p : s.peaks) {
    if (shown == 8 && p.role != s.peak_role) continue;
    ++shown;
    out << "  role " << p.role << " (rank " << p.rank << ", " << p.rank_count << " rank"
        << (p.rank_count == 1 ? "" : "s") << "): peak " << format_gib(p.device.bytes) << ", steady "
        << format_gib(p.steady.bytes) << ":";
    for (std::size_t c = 0; c < p.steady.by_category.size(); ++c)
      if (p.steady.by_category[c])
        out << " " << category_name(static_cast<BufferCategory>(c)) << " "
            << format_gib(p.steady.by_category[c]);
    out << (p.role == s.peak_role ? "  <- largest" : "") << "\n";
  }
  if (s.peaks.size() > shown)
    out << "  ... " << s.peaks.size() - shown << " more roles (see --summary)\n";
  if (s.oom)
    out << "\nOUT OF MEMORY at " << ms(s.oom->t) << " on rank " << s.oom_rank << " (" << s.oom_ranks
        << " ranks): allocating " << s.oom->buffer_name << " (" << format_gib(s.oom->bytes)
        << ") with " << format_gib(s.oom->live_bytes) << " live of " << format_gib(s.oom->capacity)
        << "\n";
  // The whole-model buffer exists only when the model is not built under zero.Init
  // (schedule_builder.h), so an OOM allocating it is an OOM at initialization without zero.Init.
  if (s.oom && s.oom->buffer_name == kStage3WholeModelBuffer)
    out << "hint: the OOM is at initialization: without zero.Init every GPU holds the whole model "
           "before "
           "partitioning. If the model is built under deepspeed.zero.Init (HF Trainer does so for "
           "stage 3), "
           "pass --zero-init or set \"training\": {\"zero_init\": true}\n";
  out << "\n"
      << sched.ops.size() << " ops simulated; memory is what the schedule allocates (model states, "
      << "buffers, activations); `zerosim plan` adds CUDA context, NCCL buffers and "
         "fragmentation\n";
  for (const auto& n : m.notes)
    if (n.rfind(kWarningNote, 0) != 0) out << "note: " << n << "\n";
}
}  // namespace

void write_simulate_report(const Summary& summary, const Schedule& schedule, OutputFormat format,
                           std::ostream& out, const StepSpeed* speed) {
  if (format == OutputFormat::Json)
    write_summary_json(summary, out, speed);
  else
    write_table(summary, schedule, out, speed);
}

}  // namespace zerosim
