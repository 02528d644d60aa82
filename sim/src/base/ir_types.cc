// Names of the IR's enums (ir_types.h): the spellings every file format uses.
#include "zerosim/ir_types.h"

#include <optional>
#include <string_view>

namespace zerosim {

std::string_view deepspeed_version_name(DeepSpeedVersion v) {
  switch (v) {
    case DeepSpeedVersion::Edaa722:
      return "edaa722";
    case DeepSpeedVersion::V0_14_4:
      return "0.14.4";
  }
  return "unknown";
}

std::optional<DeepSpeedVersion> parse_deepspeed_version(std::string_view s) {
  if (s == "edaa722" || s == kDeepSpeedCommit) return DeepSpeedVersion::Edaa722;
  if (s == "0.14.4" || s == "v0.14.4") return DeepSpeedVersion::V0_14_4;
  return std::nullopt;
}

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::Compute:
      return "compute";
    case Stream::Reduce:
      return "reduce";
    case Stream::Gather:
      return "gather";
    case Stream::H2D:
      return "h2d";
    case Stream::D2H:
      return "d2h";
    case Stream::Host:
      return "host";
  }
  return "unknown";
}

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Alloc:
      return "alloc";
    case OpKind::Free:
      return "free";
    case OpKind::Forward:
      return "forward";
    case OpKind::Backward:
      return "backward";
    case OpKind::Recompute:
      return "recompute";
    case OpKind::GradReady:
      return "grad_ready";
    case OpKind::CopyToBucket:
      return "copy_to_bucket";
    case OpKind::Copy:
      return "copy";
    case OpKind::Collective:
      return "collective";
    case OpKind::OptimizerStep:
      return "optimizer_step";
    case OpKind::WriteBack:
      return "write_back";
    case OpKind::HostToDevice:
      return "host_to_device";
    case OpKind::DeviceToHost:
      return "device_to_host";
    case OpKind::GradNorm:
      return "grad_norm";
    case OpKind::GradOverflow:
      return "grad_overflow";
    case OpKind::Sync:
      return "sync";
    case OpKind::Marker:
      return "marker";
  }
  return "unknown";
}

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::Init:
      return "init";
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::BoundaryReduce:
      return "boundary_reduce";
    case Phase::Epilogue:
      return "epilogue";
    case Phase::Step:
      return "step";
    case Phase::PostStep:
      return "post_step";
  }
  return "unknown";
}

std::string_view reduce_op_name(ReduceOp r) {
  switch (r) {
    case ReduceOp::None:
      return "";
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Max:
      return "max";
  }
  return "";
}

std::string_view copy_mode_name(CopyMode m) {
  switch (m) {
    case CopyMode::Assign:
      return "assign";
    case CopyMode::Add:
      return "add";
  }
  return "unknown";
}

std::string_view category_name(BufferCategory c) {
  switch (c) {
    case BufferCategory::Param16:
      return "param16";
    case BufferCategory::Param32:
      return "param32";
    case BufferCategory::Grad:
      return "grad";
    case BufferCategory::OptimState:
      return "optim_state";
    case BufferCategory::Activation:
      return "activation";
    case BufferCategory::CommBucket:
      return "comm_bucket";
    case BufferCategory::GatheredParam:
      return "gathered_param";
    case BufferCategory::Temp:
      return "temp";
  }
  return "unknown";
}

std::string_view memory_pool_name(MemoryPool p) {
  switch (p) {
    case MemoryPool::Device:
      return "device";
    case MemoryPool::Host:
      return "host";
    case MemoryPool::Pinned:
      return "pinned";
  }
  return "unknown";
}

std::string_view collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "all_reduce";
    case CollectiveKind::Reduce:
      return "reduce";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::AllGather:
      return "all_gather_into_tensor";
    case CollectiveKind::ReduceScatter:
      return "reduce_scatter_tensor";
  }
  return "unknown";
}

}  // namespace zerosim
