// Table, Markdown and CSV output of a plan. All three share one row model (cells as strings) so
// they can never disagree; JSON lives in plan_json.cc.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "report/plan_speed_report.h"
#include "zerosim/plan_report.h"

namespace zerosim {
namespace {

using Cells = std::vector<std::string>;

using report::offload_label;

std::string signed_gib(std::int64_t b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / kGiB);
  return buf;
}

std::string with_commas(std::uint64_t v) {
  std::string s = std::to_string(v), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

const Cells kHeader = {"stage",    "offload",   "model states",    "buffers",    "activations",
                       "overhead", "total/GPU", "peak at",         "steady/GPU", "host/node",
                       "fits",     "headroom",  "max micro-batch", "min GPUs",   "traffic/step/GPU",
                       "step time"};

// Which side fails: the GPU (total/GPU over its memory) or the host (host/node over
// --cpu-memory-per-node); both when both.
std::string fits_cell(const PlanRow& r) {
  if (r.fits) return "yes";
  if (!r.gpu_fits && !r.host_fits) return "no (GPU, host)";
  return r.host_fits ? "no (GPU)" : "no (host)";
}

std::string step_time(SimTime ns) {
  if (ns <= 0) return "-";
  char buf[48];
  const double s = static_cast<double>(ns) / 1e9;
  if (s >= 120)
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else
    std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  return buf;
}

Cells row_cells(const PlanRow& r, const Cluster& cluster, bool raw_bytes) {
  auto b = [&](Bytes x) { return raw_bytes ? std::to_string(x) : format_gib(x); };
  std::string stage = std::to_string(r.stage) + (r.matches_ds_config ? "*" : "");
  return {stage,
          offload_label(r.offload),
          b(r.memory.model_states()),
          b(r.memory.buffers),
          b(r.memory.activations),
          b(r.memory.overhead),
          b(r.memory.total()),
          r.memory.peak_phase,
          r.simulated ? b(r.steady_total_bytes) : (raw_bytes ? "" : "-"),
          b(host_per_node(r.memory.host_bytes, cluster)),
          raw_bytes ? (r.fits ? "yes" : "no") : fits_cell(r),
          raw_bytes ? std::to_string(r.headroom_bytes) : signed_gib(r.headroom_bytes),
          std::to_string(r.max_micro_batch),
          r.min_gpus ? std::to_string(*r.min_gpus) : (raw_bytes ? "" : "none"),
          b(r.comm_bytes_per_step),
          raw_bytes ? (r.simulated ? std::to_string(r.steady_step_ns) : "")
                    : (r.simulated ? step_time(r.steady_step_ns) : "-")};
}

void write_aligned(const std::vector<Cells>& rows, std::ostream& out) {
  std::vector<std::size_t> w(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::string& cell = r[i];
      bool left = i < 2;  // text columns left-aligned, numbers right-aligned
      std::string pad(w[i] - cell.size(), ' ');
      line += (left ? cell + pad : pad + cell) + (i + 1 < r.size() ? "  " : "");
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

std::string precision_name(const DsConfig& d) { return d.fp16 ? "fp16" : d.bf16 ? "bf16" : "fp32"; }

void write_header(const PlanResult& p, std::ostream& out, const std::string& prefix) {
  const auto& r = p.request;
  // A LoRA model says how many of its parameters train (peft's print_trainable_parameters).
  const Elements trainable = r.model.num_trainable();
  const Elements total = r.model.num_logical_parameters();
  out << prefix << "zerosim plan: " << r.model.name << " (" << with_commas(total) << " parameters"
      << (trainable == total ? "" : ", " + with_commas(trainable) + " trainable") << ") on "
      << r.cluster.world_size() << " x " << r.cluster.gpu.name << " ("
      << format_gib(r.cluster.gpu.memory_bytes) << " each; " << r.cluster.nodes << " node"
      << (r.cluster.nodes == 1 ? "" : "s") << " x " << r.cluster.gpus_per_node << ")\n";
  if (r.cluster.gpu.source == "flags") out << prefix << "GPU " << r.cluster.gpu.description << "\n";
  if (r.cpu_memory_per_node)
    out << prefix << "host memory: " << format_gib(*r.cpu_memory_per_node)
        << " per node (--cpu-memory-per-node), checked beside the GPU\n";
  out << prefix << precision_name(r.base) << ", micro-batch " << r.training.micro_batch
      << ", sequence " << r.training.seq_len << " tokens, gradient accumulation "
      << r.base.grad_accum_steps << ", activation checkpointing "
      << (r.training.activation_checkpointing ? "on" : "off")
      << "; accounting: " << (r.mode == Accounting::DeepSpeed ? "deepspeed" : "paper")
      << " (DeepSpeed "
      << (r.version == DeepSpeedVersion::V0_14_4 ? std::string("v0.14.4")
                                                 : std::string(kDeepSpeedCommit).substr(0, 8))
      << ")\n";
  // On the first screen, not after the table: each one changes every number below.
  for (const auto& w : r.base.warnings) out << prefix << "warning: " << w << "\n";
}

void write_estimators(const PlanResult& p, std::ostream& out, const std::string& prefix) {
  out << prefix << "DeepSpeed's own estimators for this case (model states only; "
      << "estimate_zero2/3_model_states_mem_needs):\n";
  for (const auto& r : p.rows) {
    if (!r.ds_estimate) continue;
    out << prefix << "  stage " << r.stage << ", offload " << offload_label(r.offload) << ": GPU "
        << format_gib(r.ds_estimate->gpu) << ", CPU " << format_gib(r.ds_estimate->cpu)
        << "  (zerosim model states: " << format_gib(r.memory.model_states());
    // A simulated row's items are those of its deciding peak, which may be init's whole model.
    if (r.simulated && r.memory.peak_phase != "steady")
      out << " at the " << r.memory.peak_phase << " peak";
    out << ")\n";
  }
  // model_to_params (stage_1_and_2.py:3101, stage3.py:3783) sums every parameter: a LoRA job's
  // estimate is a full fine-tune's, which read as zerosim disagreeing 5x (found by a new-user
  // pass).
  const Elements all = p.request.model.num_logical_parameters();  // as the header counts them
  const Elements trained = p.request.model.num_trainable();
  if (trained < all && std::any_of(p.rows.begin(), p.rows.end(),
                                   [](const PlanRow& r) { return r.ds_estimate.has_value(); }))
    out << prefix << "  (the estimators count every parameter as trained: model_to_params sums "
        << "all of them, while " << with_commas(all - trained) << " of " << with_commas(all)
        << " are frozen here)\n";
}

void write_breakdown(const PlanResult& p, std::ostream& out, const std::string& prefix) {
  for (const auto& r : p.rows) {
    out << prefix << "stage " << r.stage << ", offload " << offload_label(r.offload) << " ("
        << r.optimizer << "):\n";
    for (const auto& it : r.memory.items)
      out << prefix << "  " << it.layer << ": " << it.name << " = " << format_gib(it.bytes) << " ("
          << it.bytes << " bytes)\n";
  }
  if (!p.request.base.not_modelled.empty()) {
    out << prefix << "ds_config keys accepted but not modelled:";
    for (const auto& k : p.request.base.not_modelled) out << " " << k;
    out << "\n";
  }
}

void write_text(const PlanResult& p, std::ostream& out, bool verbose, bool markdown) {
  const std::string pre;  // no prefix in either form
  write_header(p, out, pre);
  out << "\n";
  std::vector<Cells> rows = {kHeader};
  for (const auto& r : p.rows) rows.push_back(row_cells(r, p.request.cluster, false));
  if (markdown) {
    for (std::size_t k = 0; k < rows.size(); ++k) {
      out << "|";
      for (const auto& c : rows[k]) out << " " << c << " |";
      out << "\n";
      if (k == 0) {
        out << "|";
        for (std::size_t i = 0; i < rows[0].size(); ++i) out << (i < 2 ? " --- |" : " ---: |");
        out << "\n";
      }
    }
  } else {
    write_aligned(rows, out);
  }
  out << "\n";
  if (p.request.ds_config_given) out << "* = the stage and offload of the given ds_config\n";
  if (p.request.mode == Accounting::DeepSpeed)
    out << "sizes in GiB (2^30 bytes) per GPU: what `zerosim simulate` allocates for the row, plus "
           "overhead (CUDA context,\nNCCL buffers, fragmentation); total = the whole-run peak, "
           "which decides the fit (\"peak at\": init, first step\nor steady); steady = the peak "
           "of a steady step; traffic = bytes each GPU sends in one steady step (ring\n"
           "algorithms; init broadcasts excluded); step time = the simulated steady step;\n"
           "host/node = host RAM of one node: its GPUs x a rank's host peak (offload buffers, "
           "init included)\n\n";
  else
    out << "sizes in GiB (2^30 bytes) per GPU at the peak of the step (\"peak at\": backward or "
           "step phase; activations are freed before the step);\ntraffic = bytes each GPU sends "
           "per optimizer step (ring algorithms); host/node = host RAM of one node: its GPUs x a "
           "rank's offload buffers\n\n";
  report::write_plan_speeds(p, out, markdown);
  report::write_time_model(p, out);
  write_estimators(p, out, pre);
  out << "\nrecommendation: " << p.recommendation << "\n";
  if (!p.notes.empty()) {
    out << "\nnotes:\n";
    for (const auto& n : p.notes) out << "  - " << n << "\n";
  }
  if (!p.sweep.empty()) {
    out << "\nsweep (total per GPU at micro-batch " << p.request.training.micro_batch
        << "; \">=\": the whole "
        << (p.request.base.lp_dtype() == DType::Float32 ? "fp32" : "16-bit")
        << " model each GPU holds at init without zero.Init already exceeds the GPU):\n";
    std::vector<Cells> sw = {{"gpus", "stage", "offload", "total/GPU", "fits", "max micro-batch"}};
    for (const auto& c : p.sweep)
      sw.push_back({std::to_string(c.gpus), std::to_string(c.stage), offload_label(c.offload),
                    (c.at_least ? ">= " : "") + format_gib(c.total_bytes), c.fits ? "yes" : "no",
                    std::to_string(c.max_micro_batch)});
    write_aligned(sw, out);
  }
  if (verbose) {
    out << "\nbreakdown:\n";
    write_breakdown(p, out, pre);
  }
}

void write_csv(const PlanResult& p, std::ostream& out) {
  out << "stage,offload,model_states_bytes,buffers_bytes,activations_bytes,overhead_bytes,total_"
         "bytes,"
         "peak_phase,steady_bytes,host_per_node_bytes,fits,fits_gpu,fits_host,headroom_bytes,max_"
         "micro_batch,min_gpus,comm_bytes_per_step,step_ns";
  // The time model's basis per note (default, given, calibrated; empty: no row is timed): CSV has
  // no notes, so the columns say what the JSON's "time_model" says.
  for (const char* what : {"compute", "host", "memory_bound", "collectives"})
    out << "," << what << "_basis";
  out << "\n";
  for (const auto& r : p.rows) {
    Cells c = row_cells(r, p.request.cluster, true);
    c[0] = std::to_string(r.stage);
    // Which side fails (fits_host empty: not checked without --cpu-memory-per-node).
    const std::size_t fits = 10;
    c.insert(c.begin() + fits + 1,
             {r.gpu_fits ? "yes" : "no",
              p.request.cpu_memory_per_node ? (r.host_fits ? "yes" : "no") : ""});
    for (std::size_t i = 0; i < 4; ++i)
      c.push_back(i < p.time_model.size() ? std::string(time_basis_name(p.time_model[i].basis))
                                          : std::string());
    for (std::size_t i = 0; i < c.size(); ++i) out << c[i] << (i + 1 < c.size() ? "," : "\n");
  }
}

}  // namespace

std::optional<OutputFormat> parse_output_format(std::string_view s) {
  if (s == "table") return OutputFormat::Table;
  if (s == "json") return OutputFormat::Json;
  if (s == "csv") return OutputFormat::Csv;
  if (s == "markdown" || s == "md") return OutputFormat::Markdown;
  return std::nullopt;
}

void write_plan_json(const PlanResult& plan, std::ostream& out, bool verbose);

void write_plan(const PlanResult& plan, OutputFormat format, std::ostream& out, bool verbose) {
  switch (format) {
    case OutputFormat::Table:
      write_text(plan, out, verbose, false);
      break;
    case OutputFormat::Markdown:
      write_text(plan, out, verbose, true);
      break;
    case OutputFormat::Csv:
      write_csv(plan, out);
      break;
    case OutputFormat::Json:
      write_plan_json(plan, out, verbose);
      break;
  }
}

}  // namespace zerosim
