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

std::uint32_t Reducer::copy(OpKind kind, Elements elements, DType dt, Region src, Region dst,
                            std::string label, std::uint32_t param, DepList deps, CopyMode mode,
                            double scale) {
  return on_reduce_stream(cx_.e.copy({.kind = kind,
                                      .stream = cx_.reduce_stream,
                                      .dtype = dt,
                                      .elements = elements,
                                      .src = src,
                                      .dst = dst,
                                      .mode = mode,
                                      .scale = scale,
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
  Entry entry{p, false, elements_};
  if (cx_.z.contiguous_gradients && elements_ + n <= r) {
    // The reduce stream waits for the compute stream, copies the grad into the bucket, and the
    // autograd storage goes (p.grad becomes a view of the IPG buffer).
    copy(OpKind::CopyToBucket, n, cx_.cd, region(cx_.grad_buf[p]), region(cx_.ipg, elements_),
         cx_.e.label("grad ", cx_.m.params[p].name, " into IPG [", elements_, ":", elements_ + n,
                     "]"),
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
    cx_.e.marker(cx_.e.label("flush ", flush_seq_, ": wait for flush ", flush_seq_ - 3),
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

Piece Reducer::grad_piece(const Entry& en) const {
  if (en.in_ipg) return {cx_.ipg, en.offset, cx_.n(en.param)};
  return {cx_.grad_buf[en.param], 0, cx_.n(en.param)};
}

// REDUCE_SCATTER_COALESCED (coalesced_collectives.py reduce_scatter_coalesced): pre-divided by W,
// one reduce_scatter_tensor(in W·Σc, out Σc).
void Reducer::reduce_scatter(const std::vector<std::uint32_t>& sorted, Elements sum_c) {
  const Elements in = sum_c * cx_.world;
  const bool staging = !(sorted.size() == 1 && cx_.n(sorted.front()) % cx_.world == 0);
  const std::string flush_label = cx_.e.label("flush ", flush_seq_);
  const double average = 1.0 / static_cast<double>(cx_.world);
  std::uint32_t stage_buf = kNone;
  if (staging) {
    stage_buf =
        cx_.pool.acquire(cx_.e, "reduce-scatter staging", BufferCategory::CommBucket, cx_.cd, in);
    alloc(stage_buf);
    // Rank-major: for k in 0..W-1, for each grad in ds_id order, its chunk k then padding to c.
    // Per grad that is one strided piece (runs of c, Σc apart) fed by the grad and W·c - n zeros
    // (DeepSpeed pads with torch.empty and never reads the padding back; zeros keep the padding
    // of grad_partitions at 0). The staging buffer is divided by W (tensor_partition_flat_buffer
    // .div_(world_sz)): the copy's scale.
    std::vector<Piece> from, into;
    Elements prefix = 0;
    if (entry_of_.size() < cx_.m.params.size()) entry_of_.assign(cx_.m.params.size(), kNone);
    for (std::uint32_t i = 0; i < bucket_.size(); ++i)
      if (entry_of_[bucket_[i].param] == kNone) entry_of_[bucket_[i].param] = i;
    for (auto p : sorted) {
      from.push_back(grad_piece(bucket_[entry_of_[p]]));
      const Elements c = cx_.c(p), pad = c * cx_.world - cx_.n(p);
      if (pad > 0) from.push_back({kNone, 0, pad});
      into.push_back({.buffer = stage_buf,
                      .offset = prefix,
                      .length = c * cx_.world,
                      .block = c,
                      .block_stride = sum_c});
      prefix += c;
    }
    // Interned one after the other: two pieces() calls in one argument list would number the
    // lists in an order C++ leaves to the compiler (gcc and clang differ), changing the schedule.
    for (const Entry& en : bucket_) entry_of_[en.param] = kNone;
    const Region src = cx_.pieces(std::move(from));
    const Region dst = cx_.pieces(std::move(into));
    copy(OpKind::Copy, in, cx_.cd, src, dst,
         cx_.e.label(flush_label, ": rank-major staging, padded per tensor, / W"), kNone, {},
         CopyMode::Assign, average);
  }
  const auto out =
      cx_.pool.acquire(cx_.e, "reduce-scatter output", BufferCategory::Grad, cx_.cd, sum_c);
  alloc(out);
  // A lone W-divisible tensor is scattered from its own gradient (in the bucket or not).
  Region input = region(stage_buf);
  if (!staging)
    input = bucket_.front().in_ipg ? region(cx_.ipg, 0, in) : region(cx_.grad_buf[sorted.front()]);
  // A lone W-divisible grad is divided in place before the scatter: carried as the output's
  // scale (a post-division; the rounding differs from DeepSpeed's by at most one ulp).
  on_reduce_stream(cx_.e.collective(
      {.kind = CollectiveKind::ReduceScatter,
       .dtype = cx_.cd,
       .numel = in,
       .out_numel = sum_c,
       .op = ReduceOp::Sum,
       .flush = flush_seq_,
       .src = input,
       .dst = region(out),
       .scale = staging ? 1.0 : average,
       .stream = cx_.reduce_stream,
       .label = cx_.e.label(flush_label, ": reduce_scatter_tensor of ", sorted.size(), " grads")}));
  if (staging) {
    free(stage_buf);
    cx_.pool.release(stage_buf);
  }
  std::vector<Piece> chunks;  // the rank's chunk of each grad in the output, in ds_id order
  Elements at = 0;
  for (auto p : sorted) {
    chunks.push_back({out, at, cx_.c(p)});
    at += cx_.c(p);
  }
  partition_grads(sorted, sum_c, chunks, out);
  free(out);
  cx_.pool.release(out);
}

// reduce_scatter=false, contiguous, bucket within R: the bucket is divided by W and all-reduced
// in place (carried as the output's scale: a post-division, within one ulp of DeepSpeed's).
void Reducer::all_reduce(Elements e) {
  on_reduce_stream(cx_.e.collective(
      {.kind = CollectiveKind::AllReduce,
       .dtype = cx_.cd,
       .numel = e,
       .out_numel = e,
       .op = ReduceOp::Sum,
       .flush = flush_seq_,
       .src = region(cx_.ipg, 0, e),
       .scale = 1.0 / static_cast<double>(cx_.world),
       .stream = cx_.reduce_stream,
       .label = cx_.e.label("flush ", flush_seq_, ": all_reduce of the IPG bucket")}));
  // Own chunk of each grad, in bucket order: T[off + r·c, off + min((r + 1)·c, n)) zero-padded
  // to c, i.e. a rank-strided piece whose positions past the grad's end read as zeros.
  std::vector<std::uint32_t> params;
  std::vector<Piece> chunks;
  Elements sum_c = 0;
  for (const auto& en : bucket_) {
    const Elements c = cx_.c(en.param);
    params.push_back(en.param);
    chunks.push_back({.buffer = cx_.ipg,
                      .offset = en.offset,
                      .length = c,
                      .rank_stride = c,
                      .limit = en.offset + cx_.n(en.param)});
    sum_c += c;
  }
  partition_grads(params, sum_c, chunks, kNone);
}

// PARTITION_GRADS (stage3.py partition_grads): the first micro-step copies into the param's view
// of grad_partitions_flat_buffer, later ones add. With offload_optimizer that buffer is on the host
// (per-param D2H, or H2D into a device temporary + add + D2H), and at the accumulation boundary
// each partition is copied into its sub-group's fp32 grads. Ranks holding only padding skip the
// copy and DeepSpeed copies only the real elements; here every rank copies its whole c-chunk,
// whose padding is 0 (zeros staged, zero-filled buffer), so the values are the same.
void Reducer::partition_grads(const std::vector<std::uint32_t>& params, Elements sum_c,
                              const std::vector<Piece>& chunks, std::uint32_t out) {
  const bool first = cx_.micro == 0;
  const std::string mode = first ? "copy" : "accumulate";
  const CopyMode into = first ? CopyMode::Assign : CopyMode::Add;
  const DType ga = cx_.ga;
  if (!cx_.offload_opt) {
    // Into each param's view of grad_partitions, from the reduce-scatter output or the bucket.
    std::vector<Piece> views;
    for (auto p : params) {
      const Region v = cx_.grad_partition(p);
      views.push_back({v.buffer, v.offset, v.length});
    }
    const Region src = out != kNone ? region(out) : cx_.pieces(chunks);  // interned first
    const Region dst = cx_.pieces(std::move(views));
    copy(OpKind::Copy, sum_c, ga, src, dst, cx_.e.label("partition grads (", mode, ")"), kNone, {},
         into);
    return;
  }
  for (std::size_t k = 0; k < params.size(); ++k) {
    const std::uint32_t p = params[k];
    const std::string& name = cx_.m.params[p].name;
    const Region chunk =
        out != kNone ? region(out, chunks[k].offset, chunks[k].length) : cx_.pieces({chunks[k]});
    std::uint32_t d2h = kNone;
    if (!first) {  // cuda_grad_buffer = grad_buffer.to(device); add_; grad_buffer.copy_(it)
      const auto tmp = cx_.pool.acquire(cx_.e, "grad partition accumulation (device)",
                                        BufferCategory::Grad, ga, cx_.c(p));
      alloc(tmp);
      copy(OpKind::HostToDevice, cx_.c(p), ga, cx_.grad_partition(p), region(tmp),
           cx_.e.label("grad partition to device for accumulation: ", name));
      copy(OpKind::Copy, cx_.c(p), ga, chunk, region(tmp),
           cx_.e.label("accumulate grad partition: ", name), kNone, {}, CopyMode::Add);
      d2h = copy(OpKind::DeviceToHost, cx_.c(p), ga, region(tmp), cx_.grad_partition(p),
                 cx_.e.label("grad partition to host: ", name));
      free(tmp);
      cx_.pool.release(tmp);
    } else {
      d2h = copy(OpKind::DeviceToHost, cx_.c(p), ga, chunk, cx_.grad_partition(p),
                 cx_.e.label("grad partition to host: ", name));
    }
    const std::uint32_t sg = cx_.sg_of_param[p];
    if (cx_.boundary && sg != kNone && cx_.sg_on_cpu(sg))
      cx_.data_op(OpKind::Copy, Stream::Host, cx_.c(p), cx_.mw, cx_.grad_partition(p),
                  region(cx_.host_fp32_grads[sg], cx_.part_offset[p] - cx_.sg_offset[sg], cx_.c(p)),
                  cx_.e.label("grad partition into fp32 sub-group grads: ", name), {d2h});
  }
}

void Reducer::epilogue() {
  flush();
  // The reduce stream is synchronized before the step (or the next forward) runs.
  DepList deps;
  if (cx_.reduce_stream != Stream::Compute && last_reduce_op_ != kNone)
    deps.push_back(last_reduce_op_);
  cx_.e.marker("epilogue: reduce stream synchronized", Stream::Compute, std::move(deps));
}

}  // namespace zerosim::schedule::s3
