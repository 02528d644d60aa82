// `zerosim models`: the model zoo and the GPU catalog.
#include <cstdio>
#include <iostream>
#include <string>

#include "args.h"
#include "commands.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/model_loader.h"

namespace zerosim::cli {

namespace {
std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
      continue;
    }
    o += c;
  }
  return o;
}

void write_table(std::ostream& out) {
  char line[512];
  out << "model zoo (exact parameter counts, as Hugging Face model.num_parameters() reports):\n";
  // The model column fits the longest display name (Phi-3-mini-4k-instruct).
  std::snprintf(line, sizeof line, "  %-18s %-24s %15s  %s\n", "name", "model", "parameters",
                "source");
  out << line;
  for (const auto& z : list_zoo()) {
    std::snprintf(line, sizeof line, "  %-18s %-24s %15llu  %s\n", z.name.c_str(),
                  z.display_name.c_str(), static_cast<unsigned long long>(z.parameters),
                  z.source.c_str());
    out << line;
  }
  out << "\nGPU catalog (memory in GiB; rates dense, no sparsity):\n";
  std::snprintf(line, sizeof line, "  %-16s %10s %11s %9s %12s %12s\n", "name", "memory",
                "bf16 TFLOPS", "HBM GB/s", "intra GB/s", "network GB/s");
  out << line;
  for (const auto& g : gpu_catalog()) {
    std::snprintf(line, sizeof line, "  %-16s %10s %11.0f %9.0f %12.0f %12.1f\n", g.name.c_str(),
                  format_gib(g.memory_bytes).c_str(), g.bf16_tflops, g.hbm_gbps, g.intra_node_gbps,
                  g.network_gbps);
    out << line;
  }
}

void write_json(std::ostream& out) {
  out << "{\n  \"format\": \"zerosim-models\",\n  \"version\": 1,\n  \"models\": [";
  bool first = true;
  for (const auto& z : list_zoo()) {
    out << (first ? "\n" : ",\n") << "    {\"name\": \"" << json_escape(z.name)
        << "\", \"display_name\": \"" << json_escape(z.display_name)
        << "\", \"parameters\": " << z.parameters << ", \"source\": \"" << json_escape(z.source)
        << "\"}";
    first = false;
  }
  out << "\n  ],\n  \"gpus\": [";
  first = true;
  for (const auto& g : gpu_catalog()) {
    out << (first ? "\n" : ",\n") << "    {\"name\": \"" << json_escape(g.name)
        << "\", \"memory_bytes\": " << g.memory_bytes << ", \"bf16_tflops\": " << g.bf16_tflops
        << ", \"hbm_gbps\": " << g.hbm_gbps << ", \"intra_node_gbps\": " << g.intra_node_gbps
        << ", \"network_gbps\": " << g.network_gbps << "}";
    first = false;
  }
  out << "\n  ]\n}\n";
}
std::vector<FlagSpec> models_flags() { return {{"--format", "FMT", "table|json; default table"}}; }
}  // namespace

std::string models_help() {
  return format_help("models", "Lists the model zoo and the GPU catalog.", models_flags());
}

int run_models(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  const std::vector<FlagSpec> specs = models_flags();
  auto args = parse_args(argv, specs, "models");
  if (!args.ok()) {
    report(args.diagnostics(), err);
    return kExitInvalidInput;
  }
  if (args->help) {
    out << models_help();
    return kExitOk;
  }
  auto fmt = parse_choice("--format", args->get("--format").value_or("table"), {"table", "json"});
  if (report(fmt.diagnostics(), err)) return kExitInvalidInput;
  if (fmt.value() == "json")
    write_json(out);
  else
    write_table(out);
  return kExitOk;
}

}  // namespace zerosim::cli
