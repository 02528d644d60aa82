// Collective cost model: names, nccl-tests' S and busbw factors, ring bytes per rank, NCCL's
// alpha–beta times (values worked out by hand below), algorithm choice and input errors.
#include "zerosim/collective_model.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace zerosim {
namespace {

CollectiveRequest request(CollectiveKind k, Elements count, DType dt, std::uint32_t nodes,
                          std::uint32_t gpus_per_node) {
  CollectiveRequest r;
  r.kind = k;
  r.count = count;
  r.dtype = dt;
  r.group = {nodes * gpus_per_node, nodes, gpus_per_node};
  return r;
}

CollectiveCost cost_of(const CollectiveRequest& r, const LinkParams& l = {}) {
  auto c = collective_cost(r, l);
  EXPECT_TRUE(c.ok()) << c.diagnostics().to_string();
  return c.ok() ? c.value() : CollectiveCost{};
}

std::string error_of(const CollectiveRequest& r, const LinkParams& l = {}) {
  auto c = collective_cost(r, l);
  EXPECT_FALSE(c.ok());
  return c.diagnostics().to_string();
}

TEST(CollectiveNames, TorchAndNcclTestsNames) {
  EXPECT_EQ(collective_name(CollectiveKind::AllReduce), "all_reduce");
  EXPECT_EQ(collective_name(CollectiveKind::Reduce), "reduce");
  EXPECT_EQ(collective_name(CollectiveKind::Broadcast), "broadcast");
  EXPECT_EQ(collective_name(CollectiveKind::AllGather), "all_gather_into_tensor");
  EXPECT_EQ(collective_name(CollectiveKind::ReduceScatter), "reduce_scatter_tensor");
  EXPECT_EQ(nccl_tests_program(CollectiveKind::AllGather), "all_gather_perf");
  EXPECT_EQ(nccl_tests_program(CollectiveKind::ReduceScatter), "reduce_scatter_perf");
  EXPECT_EQ(parse_collective("reduce_scatter_tensor"), CollectiveKind::ReduceScatter);
  EXPECT_EQ(parse_collective("all_gather_perf"), CollectiveKind::AllGather);
  EXPECT_EQ(parse_collective("all_gather"), CollectiveKind::AllGather);
  EXPECT_EQ(parse_collective("broadcast_perf"), CollectiveKind::Broadcast);
  EXPECT_FALSE(parse_collective("alltoall_perf").has_value());
  for (const CollectiveKind k : kAllCollectiveKinds) {
    EXPECT_EQ(parse_collective(collective_name(k)), k);
    EXPECT_EQ(parse_collective(nccl_tests_program(k)), k);
  }
}

// nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n,
// broadcast and reduce 1.
TEST(CollectiveFactors, BusBandwidthFactorsMatchNcclTests) {
  EXPECT_DOUBLE_EQ(collective_busbw_factor(CollectiveKind::AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(collective_busbw_factor(CollectiveKind::AllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(collective_busbw_factor(CollectiveKind::AllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(collective_busbw_factor(CollectiveKind::ReduceScatter, 16), 0.9375);
  EXPECT_DOUBLE_EQ(collective_busbw_factor(CollectiveKind::Broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(collective_busbw_factor(CollectiveKind::Reduce, 64), 1.0);
  EXPECT_DOUBLE_EQ(collective_busbw_factor(CollectiveKind::AllReduce, 1), 0.0);
}

TEST(CollectiveFactors, AlgbwBytesUseNcclTestsS) {
  // all-gather and reduce-scatter count per rank; S is the full gathered output / input.
  EXPECT_EQ(collective_algbw_bytes(CollectiveKind::AllGather, 1000, DType::BFloat16, 8), 16000u);
  EXPECT_EQ(collective_algbw_bytes(CollectiveKind::ReduceScatter, 1000, DType::Float32, 4), 16000u);
  EXPECT_EQ(collective_algbw_bytes(CollectiveKind::AllReduce, 1000, DType::Float16, 8), 2000u);
  EXPECT_EQ(collective_algbw_bytes(CollectiveKind::Broadcast, 1000, DType::Float64, 8), 8000u);
  EXPECT_FALSE(collective_algbw_bytes(CollectiveKind::AllGather, 1ULL << 61, DType::Float32, 2));
}

TEST(CollectiveBytes, RingBytesPerRankMatchTextbookFormulas) {
  // all-reduce sends 2(n-1)/n × S: 2 × 7/8 × 2^30.
  EXPECT_EQ(cost_of(request(CollectiveKind::AllReduce, 1ULL << 29, DType::Float16, 1, 8))
                .bytes_sent_per_rank,
            1879048192u);
  // all-gather and reduce-scatter send (n-1)/n × S = (n-1) × shard.
  auto ag = cost_of(request(CollectiveKind::AllGather, 1000, DType::BFloat16, 1, 8));
  EXPECT_EQ(ag.algbw_bytes, 16000u);
  EXPECT_EQ(ag.bytes_sent_per_rank, 14000u);
  EXPECT_EQ(cost_of(request(CollectiveKind::ReduceScatter, 1000, DType::Float32, 2, 8))
                .bytes_sent_per_rank,
            15u * 4000u);
  // broadcast and reduce: the root (or the ring's busiest rank) sends S once.
  EXPECT_EQ(
      cost_of(request(CollectiveKind::Broadcast, 1000, DType::Float32, 1, 8)).bytes_sent_per_rank,
      4000u);
  EXPECT_EQ(
      cost_of(request(CollectiveKind::Reduce, 1000, DType::Float32, 2, 4)).bytes_sent_per_rank,
      4000u);
  // A fraction of a byte rounds up: 2 × 2/3 × 10 bytes = 13.3 -> 14.
  EXPECT_EQ(
      cost_of(request(CollectiveKind::AllReduce, 5, DType::Float16, 1, 3)).bytes_sent_per_rank,
      14u);
}

TEST(CollectiveTime, SingleNodeRingAllReduceWorkedExample) {
  // 8 GPUs, S = 2^30 B. Ring: alpha = 8.4 + 14 × 3.4 = 56 us; S × 1.75 / 360 GB/s = 5219578.3 ns.
  // Tree: alpha = 8.4 + 2 × 7 × 4.0 = 64.4 us and S / (360 × 0.46) is slower, so ring.
  auto c = cost_of(request(CollectiveKind::AllReduce, 1ULL << 28, DType::Float32, 1, 8));
  EXPECT_EQ(c.duration_ns, 5275578);
  EXPECT_STREQ(c.algorithm, "ring");
  EXPECT_EQ(c.algbw_bytes, 1ULL << 30);
  EXPECT_DOUBLE_EQ(c.busbw_factor, 1.75);
}

TEST(CollectiveTime, TreeIsChosenForSmallMultiNodeAllReduce) {
  // 2 nodes × 8, S = 4096 B. busBw = min(360, 8 × 50) = 360.
  // Ring: alpha = 8.4 + (30 - 2) × 3.4 + 2 × 14 = 131.6 us, + 4096 × 1.875 / 360 = 21.3 ns.
  // Tree: alpha = 8.4 + 2 × (7 × 4.0 + log2(2) × 14) = 92.4 us, + 4096 / (360 × 0.92 × 0.5) = 24.7.
  auto r = request(CollectiveKind::AllReduce, 1024, DType::Float32, 2, 8);
  auto c = cost_of(r);
  EXPECT_STREQ(c.algorithm, "tree");
  EXPECT_EQ(c.duration_ns, 92425);
  r.algorithm = CollectiveAlgorithm::Ring;
  c = cost_of(r);
  EXPECT_STREQ(c.algorithm, "ring");
  EXPECT_EQ(c.duration_ns, 131621);
  // Large messages go back to the ring: its bandwidth term is 2(n-1)/n = 1.875 versus 2 / 0.92.
  r.algorithm = CollectiveAlgorithm::Auto;
  r.count = 1ULL << 28;
  EXPECT_STREQ(cost_of(r).algorithm, "ring");
}

TEST(CollectiveTime, RingLatencyOfOtherCollectives) {
  // all-gather, 1 node × 8, 8 fp32 per rank: alpha = 8.4 + 7 × 3.4 = 32.2 us;
  // S = 256 B × 0.875 / 360 = 0.62 ns.
  EXPECT_EQ(cost_of(request(CollectiveKind::AllGather, 8, DType::Float32, 1, 8)).duration_ns,
            32201);
  // broadcast, 2 nodes × 4: nsteps = 8, 1 over the network: 8.4 + 7 × 3.4 + 14 = 46.2 us;
  // busBw = min(360, 4 × 50) = 200, S = 2e6 B / 200 = 10000 ns.
  EXPECT_EQ(cost_of(request(CollectiveKind::Broadcast, 1000000, DType::Float16, 2, 4)).duration_ns,
            56200);
}

TEST(CollectiveTime, EfficiencyScalesBandwidth) {
  LinkParams half;
  half.efficiency = 0.5;
  // 56 us + 2 × 5219578.3 ns.
  EXPECT_EQ(cost_of(request(CollectiveKind::AllReduce, 1ULL << 28, DType::Float32, 1, 8), half)
                .duration_ns,
            10495157);
}

TEST(CollectiveTime, OneRankOrNoBytesIsFree) {
  for (const CollectiveKind k : kAllCollectiveKinds) {
    auto c = cost_of(request(k, 1 << 20, DType::BFloat16, 1, 1));
    EXPECT_EQ(c.duration_ns, 0);
    EXPECT_EQ(c.bytes_sent_per_rank, 0u);
    EXPECT_EQ(c.algbw_bytes, 2u << 20);
    EXPECT_STREQ(c.algorithm, "none");
    auto empty = cost_of(request(k, 0, DType::BFloat16, 2, 8));
    EXPECT_EQ(empty.duration_ns, 0);
    EXPECT_EQ(empty.bytes_sent_per_rank, 0u);
  }
}

TEST(CollectiveTime, MonotonicInSize) {
  for (const CollectiveKind k : kAllCollectiveKinds) {
    for (const auto& [nodes, gpn] : {std::pair{1u, 8u}, std::pair{4u, 8u}, std::pair{16u, 8u}}) {
      SimTime prev = 0;
      for (int p = 0; p <= 34; ++p) {
        const auto c = cost_of(request(k, 1ULL << p, DType::BFloat16, nodes, gpn));
        EXPECT_GE(c.duration_ns, prev) << collective_name(k) << " 2^" << p << " on " << nodes;
        if (p >= 20) {
          EXPECT_GT(c.duration_ns, prev) << collective_name(k) << " 2^" << p;
        }
        prev = c.duration_ns;
      }
    }
  }
}

TEST(CollectiveTime, MultiNodeIsSlowerThanSingleNode) {
  for (const CollectiveKind k : kAllCollectiveKinds) {
    for (int p = 0; p <= 32; p += 4) {
      const auto one = cost_of(request(k, 1ULL << p, DType::Float16, 1, 8));
      const auto two = cost_of(request(k, 1ULL << p, DType::Float16, 2, 4));
      EXPECT_GT(two.duration_ns, one.duration_ns) << collective_name(k) << " 2^" << p;
      EXPECT_EQ(two.bytes_sent_per_rank, one.bytes_sent_per_rank);
    }
  }
}

TEST(CollectiveTime, CalibrationOverridesOnlyItsCollective) {
  CalibratedLinks cal;
  cal.set(CollectiveKind::AllReduce, CalibratedCollective{20.0, 300.0, 8, 1, 31, 0.0, "t"});
  EXPECT_FALSE(cal.empty());
  EXPECT_EQ(cal.find(CollectiveKind::AllGather), nullptr);
  auto r = request(CollectiveKind::AllReduce, 1ULL << 28, DType::Float32, 1, 8);
  auto c = collective_cost(r, LinkParams{}, &cal);
  ASSERT_TRUE(c.ok());
  // 20 us + 2^30 × 1.75 / 300 = 6263493.97 ns.
  EXPECT_EQ(c->duration_ns, 6283494);
  EXPECT_STREQ(c->algorithm, "calibrated");
  auto ag = collective_cost(request(CollectiveKind::AllGather, 8, DType::Float32, 1, 8), {}, &cal);
  ASSERT_TRUE(ag.ok());
  EXPECT_STREQ(ag->algorithm, "ring");
}

TEST(CollectiveErrors, BadInputsGetExactMessages) {
  auto r = request(CollectiveKind::AllReduce, 10, DType::Float32, 2, 8);
  r.group.size = 12;
  EXPECT_EQ(error_of(r),
            "all_reduce: expected group size = nodes × gpus_per_node = 2 × 8, got 12\n");
  r.group = {0, 1, 1};
  EXPECT_EQ(error_of(r), "all_reduce: expected a group size in 1..16777216, got 0\n");

  auto ag = request(CollectiveKind::AllGather, 10, DType::Float32, 1, 8);
  ag.algorithm = CollectiveAlgorithm::Tree;
  EXPECT_EQ(
      error_of(ag),
      "all_gather_into_tensor: expected algorithm ring: NCCL runs only all_reduce as a tree\n");

  LinkParams bad;
  bad.inter_gbps = -1;
  bad.efficiency = 1.5;
  bad.ring.intra_hop_us = -0.5;
  EXPECT_EQ(
      error_of(request(CollectiveKind::Broadcast, 10, DType::Float32, 1, 8), bad),
      "broadcast: expected inter_gbps > 0, got -1\n"
      "broadcast: expected efficiency in (0, 1], got 1.5\n"
      "broadcast: expected ring latencies (base, intra hop, inter hop) >= 0 us, got 8.4, -0.5, "
      "14\n");

  EXPECT_EQ(
      error_of(request(CollectiveKind::ReduceScatter, 1ULL << 61, DType::Float32, 1, 8)),
      "reduce_scatter_tensor: byte count of 2305843009213693952 elements overflows 64 bits\n");
}

}  // namespace
}  // namespace zerosim
