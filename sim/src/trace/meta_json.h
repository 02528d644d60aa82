// The "meta" keys the zerosim trace (trace_writer.cc) and the summary (summary_writer.cc) share,
// written by one function so the two files name a run the same way.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "trace/json_text.h"
#include "zerosim/trace.h"

namespace zerosim::trace_text {

/// The keys that say which run this is, backend through grad_accum, as `"key": value` pairs
/// separated by ", " (no braces, no trailing separator).
inline void write_run_identity(const TraceMeta& m, std::ostream& out) {
  out << "\"backend\": " << str(m.backend) << ", \"zerosim_version\": " << str(m.zerosim_version)
      << ", \"deepspeed_version\": " << str(m.deepspeed_version) << ", \"mode\": " << str(m.mode)
      << ", \"model\": " << str(m.model) << ", \"optimizer\": " << str(m.optimizer)
      << ", \"gpu\": " << str(m.gpu) << ", \"stage\": " << m.stage << ", \"world\": " << m.world
      << ", \"nodes\": " << m.nodes << ", \"gpus_per_node\": " << m.gpus_per_node
      << ", \"steps\": " << m.steps << ", \"grad_accum\": " << m.grad_accum;
}

/// `,\n    "notes": [...]`: one note a line, the closing bracket on its own line unless empty.
inline void write_notes(const std::vector<std::string>& notes, std::ostream& out) {
  out << ",\n    \"notes\": [";
  for (std::size_t i = 0; i < notes.size(); ++i)
    out << (i ? ",\n      " : "\n      ") << str(notes[i]);
  out << (notes.empty() ? "]" : "\n    ]");
}

}  // namespace zerosim::trace_text
