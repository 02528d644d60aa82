// ring_bytes (ring_plan.h).
#include "ring_plan.h"

namespace zerosim::exec {

RingBytes ring_bytes(CollectiveKind kind, Elements numel, Elements out_numel, Bytes elem_bytes,
                     std::uint32_t n, std::uint32_t r, std::uint32_t root) {
  RingBytes b;
  if (n <= 1) return b;
  const auto mod = [n](std::int64_t v) { return static_cast<std::uint32_t>(((v % n) + n) % n); };
  Elements sent = 0, received = 0;
  switch (kind) {
    case CollectiveKind::AllReduce:
      sent = 2 * numel - ring_chunk(numel, n, mod(r + 1)) - ring_chunk(numel, n, mod(r + 2));
      received = 2 * numel - ring_chunk(numel, n, r) - ring_chunk(numel, n, mod(r + 1));
      break;
    case CollectiveKind::ReduceScatter:
      sent = received = static_cast<Elements>(n - 1) * out_numel;
      break;
    case CollectiveKind::AllGather:
      sent = received = static_cast<Elements>(n - 1) * numel;
      break;
    case CollectiveKind::Broadcast:
      sent = r == mod(std::int64_t{root} - 1) ? 0 : numel;
      received = r == root ? 0 : numel;
      break;
    case CollectiveKind::Reduce:
      sent = r == root ? 0 : numel;
      received = r == mod(std::int64_t{root} + 1) ? 0 : numel;
      break;
  }
  b.sent = sent * elem_bytes;
  b.received = received * elem_bytes;
  return b;
}

}  // namespace zerosim::exec
