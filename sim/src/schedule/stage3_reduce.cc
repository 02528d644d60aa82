// Gradient reduction of DeepSpeed stage 3 (deepspeed_zero.md §7.6): the per-param gradient hook,
// the single persistent IPG bucket with its flush rule (non-empty guard), the coalesced
// reduce-scatter (rank-major staging of W·Σc_i unless the bucket is one W-divisible tensor), the
// reduce_scatter=false all-reduce, PARTITION_GRADS into grad_partitions_flat_buffer (through the
// host with offload_optimizer), and the backward epilogue.
#include <algorithm>
#include <string>
#include <vector>

#include "schedule/stage3_internal.h"

namespace zerosim::schedule::s3 {

std::uint32_t Reducer::on_reduce_stream(std::uint32_t op) {
  last_reduce_op_ = op;
  return op;
}

std::uint32_t Reducer::alloc(std::uint32_t buffer) {
  return on_reduce_stream(cx_.e.alloc(buffer, cx_.reduce_stream, flush_seq_));
}

std::uint32_t Reducer::free(std::uint32_t buffer) {
  return on_reduce_stream(cx_.e.free(buffer, cx_.reduce_stream, flush_seq_));
}

std::uint32_t Reducer::copy(OpKind kind, Elements elements, DType dt, std::uint32_t buffer,
                            std::string label, std::uint32_t param,
                            std::vector<std::uint32_t> deps) {
  return on_reduce_stream(cx_.e.copy({.kind = kind,
                                      .stream = cx_.reduce_stream,
                                      .dtype = dt,
                                      .elements = elements,
                                      .buffer = buffer,
                                      .param = param,
                                      .flush = flush_seq_,
                                      .deps = std::move(deps),
                                      .label = std::move(label)}));
}

void Reducer::on_grad(std::uint32_t p, std::uint32_t ready_op) {
  const Elements n = cx_.n(p), r = cx_.z.reduce_bucket_size;
  // Stage 3 flushes only a non-empty bucket (stage 1/2 has no such guard). All params share one
  // data-parallel process group and one communication dtype, so those flush triggers never fire.
  if (elements_ > 0 && elements_ + n > r) flush();
  Entry entry{p, false};
  if (cx_.z.contiguous_gradients && elements_ + n <= r) {
    // The reduce stream waits for the compute stream, copies the grad into the bucket, and the
    // autograd storage goes (p.grad becomes a view of the IPG buffer).
    copy(OpKind::CopyToBucket, n, cx_.cd, cx_.ipg,
         "grad " + cx_.m.params[p].name + " into IPG [" + std::to_string(elements_) + ":" +
             std::to_string(elements_ + n) + "]",
         p, {ready_op});
    free(cx_.grad_buf[p]);
    entry.in_ipg = true;
  }
  bucket_.push_back(entry);
  elements_ += n;
}

void Reducer::flush() {
  if (bucket_.empty()) return;
  // At most 2 earlier reductions may still be outstanding: the host waits for the oldest beyond.
  if (cx_.reduce_stream != Stream::Compute && flush_end_.size() >= 3) {
    cx_.e.marker("flush " + std::to_string(flush_seq_) + ": wait for flush " +
                     std::to_string(flush_seq_ - 3),
                 Stream::Compute, {flush_end_[flush_end_.size() - 3]});
  }
  std::vector<std::uint32_t> sorted;
  for (const auto& en : bucket_) sorted.push_back(en.param);
  std::sort(sorted.begin(), sorted.end());  // ds_id order
  Elements sum_c = 0;
  for (auto p : sorted) sum_c += cx_.c(p);
  if (cx_.z.contiguous_gradients && elements_ <= cx_.z.reduce_bucket_size && !cx_.z.reduce_scatter)
    all_reduce(elements_);
  else
    reduce_scatter(sorted, sum_c);
  for (const auto& en : bucket_) {
    if (en.in_ipg) continue;
    free(cx_.grad_buf[en.param]);  // grads kept in their own storage (oversize, non-contiguous)
  }
  flush_end_.push_back(last_reduce_op_);
  bucket_.clear();
  elements_ = 0;
  ++flush_seq_;
}

// REDUCE_SCATTER_COALESCED: pre-divided by W, one reduce_scatter_tensor(in W·Σc, out Σc).
void Reducer::reduce_scatter(const std::vector<std::uint32_t>& sorted, Elements sum_c) {
  const Elements in = sum_c * cx_.world;
  const bool staging = !(sorted.size() == 1 && cx_.n(sorted.front()) % cx_.world == 0);
  const auto flush_label = "flush " + std::to_string(flush_seq_);
  std::uint32_t stage_buf = kNone;
  if (staging) {
    stage_buf =
        cx_.pool.acquire(cx_.e, "reduce-scatter staging", BufferCategory::CommBucket, cx_.cd, in);
    alloc(stage_buf);
    copy(OpKind::Copy, in, cx_.cd, stage_buf,
         flush_label + ": rank-major staging, padded per tensor, / W");
  }
  const auto out =
      cx_.pool.acquire(cx_.e, "reduce-scatter output", BufferCategory::Grad, cx_.cd, sum_c);
  alloc(out);
  on_reduce_stream(cx_.e.collective({.kind = CollectiveKind::ReduceScatter,
                                     .dtype = cx_.cd,
                                     .numel = in,
                                     .out_numel = sum_c,
                                     .op = ReduceOp::Sum,
                                     .flush = flush_seq_,
                                     .stream = cx_.reduce_stream,
                                     .label = flush_label + ": reduce_scatter_tensor of " +
                                              std::to_string(sorted.size()) + " grads"}));
  if (staging) {
    free(stage_buf);
    cx_.pool.release(stage_buf);
  }
  partition_grads(sorted, sum_c);
  free(out);
  cx_.pool.release(out);
}

// reduce_scatter=false, contiguous, bucket within R: the bucket is all-reduced in place (post /W).
void Reducer::all_reduce(Elements e) {
  on_reduce_stream(cx_.e.collective(
      {.kind = CollectiveKind::AllReduce,
       .dtype = cx_.cd,
       .numel = e,
       .out_numel = e,
       .op = ReduceOp::Sum,
       .flush = flush_seq_,
       .buffer = cx_.ipg,
       .stream = cx_.reduce_stream,
       .label = "flush " + std::to_string(flush_seq_) + ": all_reduce of the IPG bucket"}));
  std::vector<std::uint32_t> sorted;
  Elements sum_c = 0;
  for (const auto& en : bucket_) {
    sorted.push_back(en.param);
    sum_c += cx_.c(en.param);
  }
  partition_grads(sorted, sum_c);  // own chunks in bucket order
}

// PARTITION_GRADS: the first micro-step copies into the param's view of
// grad_partitions_flat_buffer, later ones add. With offload_optimizer that buffer is on the host
// (per-param D2H, or H2D + add + D2H), and at the accumulation boundary each partition is copied
// into its sub-group's fp32 grads. Ranks holding only padding skip the copy; the element counts
// here are the padded c_i.
void Reducer::partition_grads(const std::vector<std::uint32_t>& sorted, Elements sum_c) {
  const std::string mode = cx_.micro == 0 ? "copy" : "accumulate";
  const DType ga = cx_.ga;
  if (!cx_.offload_opt) {
    copy(OpKind::Copy, sum_c, ga, cx_.grad_partitions, "partition grads (" + mode + ")");
    return;
  }
  for (auto p : sorted) {
    const std::string& name = cx_.m.params[p].name;
    auto data = [&](OpKind k, const std::string& what) {
      return copy(k, cx_.c(p), ga, cx_.grad_partitions, what + " " + name);
    };
    if (cx_.micro > 0) {
      data(OpKind::HostToDevice, "grad partition to device for accumulation:");
      data(OpKind::Copy, "accumulate grad partition:");
    }
    const auto d2h = data(OpKind::DeviceToHost, "grad partition to host:");
    const std::uint32_t sg = cx_.sg_of_param[p];
    if (cx_.boundary && sg != kNone && cx_.sg_on_cpu(sg))
      cx_.data_op(OpKind::Copy, Stream::Host, cx_.c(p), cx_.mw, cx_.host_fp32_grads[sg],
                  "grad partition into fp32 sub-group grads: " + name, {d2h});
  }
}

void Reducer::epilogue() {
  flush();
  // The reduce stream is synchronized before the step (or the next forward) runs.
  std::vector<std::uint32_t> deps;
  if (cx_.reduce_stream != Stream::Compute && last_reduce_op_ != kNone)
    deps.push_back(last_reduce_op_);
  cx_.e.marker("epilogue: reduce stream synchronized", Stream::Compute, std::move(deps));
}

}  // namespace zerosim::schedule::s3
