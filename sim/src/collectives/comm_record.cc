// schedule_comm_record, set_comm_bandwidths (comm_record.h): the simulator (engine/), the host
// backend (sim/exec) and the CUDA backend write their comm records through these.
#include "zerosim/comm_record.h"

#include "zerosim/collective_model.h"

namespace zerosim {

CommRecord schedule_comm_record(const Schedule& s, std::uint32_t i, std::uint32_t rank) {
  const Op& op = s.ops[i];
  const CommGroup& g = s.comms[op.comm];
  CommRecord r;
  r.op = i;
  r.rank = rank;
  r.kind = op.collective;
  r.phase = op.phase;
  r.step = op.step;
  r.bucket = op.bucket;
  r.numel = op.numel;
  r.out_numel = op.out_numel;
  r.dtype = op.dtype;
  r.group_size = g.size;
  // nccl-tests' S with NCCL's count, as the cost model asks for it (cost_model.cc).
  const Elements count = op.collective == CollectiveKind::ReduceScatter ? op.out_numel : op.numel;
  r.bytes = collective_algbw_bytes(op.collective, count, op.dtype, g.size).value_or(0);
  r.micro_step = op.micro_step;
  r.reduce_op = op.reduce_op;
  r.root = kNone;
  if (op.root != kNone) r.root = g.rank_at(rank == kAllRanks ? g.first : rank, op.root);
  return r;
}

void set_comm_bandwidths(CommRecord& r, double busbw_factor) {
  r.algbw_gbps = 0;
  r.busbw_gbps = 0;
  if (r.dur_ns <= 0) return;
  r.algbw_gbps = static_cast<double>(r.bytes) / static_cast<double>(r.dur_ns);  // B/ns = GB/s
  r.busbw_gbps = r.algbw_gbps * busbw_factor;
}

}  // namespace zerosim
