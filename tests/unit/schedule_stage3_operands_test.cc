// Stage 3 operands (schedule.h Piece, resolve_pieces): the rank-major reduce-scatter staging, the
// assembly after a coalesced gather, the own chunks of an all-reduced bucket, the partitioning of
// the whole params (X2), the all-reduce fetch (X10), copy modes, scales and zero-fill. Concrete
// offsets are checked on a small model at W = 2 and 4; then a data-flow interpreter runs the
// schedule for every rank on synthetic values and checks DeepSpeed's numerics: every param a layer
// reads is the broadcast model, and every rank's gradient partition after a step is the average
// over ranks of the synthetic gradients of its slice, summed over micro-steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "schedule_stage3_test_util.h"
#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

using Spans = std::vector<OperandSpan>;

const Op& op_labelled(const Schedule& s, const std::string& label) {
  const std::size_t i = s3test::find_label(s, label);
  EXPECT_LT(i, s.ops.size()) << label;
  return s.ops[i < s.ops.size() ? i : 0];
}

std::uint32_t buffer_named(const Schedule& s, const std::string& name) {
  const std::size_t b = s3test::find_buffer(s, name);
  EXPECT_LT(b, s.buffers.size()) << name;
  return static_cast<std::uint32_t>(b);
}

Elements ceil_div(Elements n, Elements w) { return (n + w - 1) / w; }

// One flush of two odd params, p0 (10) and p1 (7): every param lands in the IPG bucket in
// gradient order p1, p0 (bucket offsets 0 and 7), then one reduce-scatter.
DsConfig one_flush_config() {
  DsConfig ds = s3test::stage3_config();
  ds.zero.param_persistence_threshold = 0;
  ds.zero.reduce_bucket_size = 40;  // a small IPG buffer for the interpreter
  return ds;
}

TEST(Stage3Operands, RankMajorStagingIsOneStridedPiecePerGrad) {
  const ModelDesc m = s3test::param_model({10, 7}, {1, 0});
  for (const Elements w : {2u, 4u}) {
    SCOPED_TRACE("world " + std::to_string(w));
    const Schedule s = s3test::build(m, one_flush_config(), static_cast<std::uint32_t>(w));
    const Op& st = op_labelled(s, "flush 0: rank-major staging, padded per tensor, / W");
    const Elements c0 = ceil_div(10, w), c1 = ceil_div(7, w), sum_c = c0 + c1;
    EXPECT_EQ(st.elements, w * sum_c);
    EXPECT_EQ(st.scale, 1.0 / static_cast<double>(w));
    const std::uint32_t ipg = buffer_named(s, "IPG bucket");
    ASSERT_NE(st.src.list, kNone);
    ASSERT_NE(st.dst.list, kNone);
    // Source: p0 (bucket offset 7) then its padding, p1 (offset 0) then its padding.
    std::vector<Piece> from = {{ipg, 7, 10}};  // W = 2: 10 = 2·5, no padding
    if (w * c0 > 10) from.push_back({kNone, 0, w * c0 - 10});
    from.push_back({ipg, 0, 7});
    from.push_back({kNone, 0, w * c1 - 7});
    EXPECT_EQ(s.lists[st.src.list], from);
    const std::uint32_t stage = s.lists[st.dst.list][0].buffer;
    const std::vector<Piece> into = {
        {.buffer = stage, .offset = 0, .length = w * c0, .block = c0, .block_stride = sum_c},
        {.buffer = stage, .offset = c0, .length = w * c1, .block = c1, .block_stride = sum_c}};
    EXPECT_EQ(s.lists[st.dst.list], into);
    // Rank r's slot k·Σc.. holds chunk k of p0 then chunk k of p1: at W = 4 (c0 3, c1 2),
    // p0's stream goes to [0,3) [5,8) [10,13) [15,18) and p1's to [3,5) [8,10) [13,15) [18,20).
    const Spans dst = resolve_pieces(s, st, st.dst, 1, false);
    if (w == 4) {
      EXPECT_EQ(dst, (Spans{{stage, 0, 3},
                            {stage, 5, 3},
                            {stage, 10, 3},
                            {stage, 15, 3},
                            {stage, 3, 2},
                            {stage, 8, 2},
                            {stage, 13, 2},
                            {stage, 18, 2}}));
    } else {  // c0 5, c1 4: [0,5) [9,14), then [5,9) [14,18)
      EXPECT_EQ(dst, (Spans{{stage, 0, 5}, {stage, 9, 5}, {stage, 5, 4}, {stage, 14, 4}}));
    }
    // The reduce-scatter reads the whole staging buffer: the copy's scale did the averaging.
    const Op& rs = op_labelled(s, "flush 0: reduce_scatter_tensor of 2 grads");
    EXPECT_EQ(rs.src.buffer, stage);
    EXPECT_EQ(rs.scale, 1.0);
    EXPECT_EQ(rs.numel, w * sum_c);
    EXPECT_EQ(rs.out_numel, sum_c);
  }
}

TEST(Stage3Operands, LoneDivisibleGradIsScatteredFromTheBucketAndAveragedByTheCollective) {
  const ModelDesc m = s3test::param_model({8}, {0});
  for (const std::uint32_t w : {2u, 4u}) {
    const Schedule s = s3test::build(m, one_flush_config(), w);
    EXPECT_EQ(s3test::find_label(s, "flush 0: rank-major staging, padded per tensor, / W"),
              s.ops.size());
    const Op& rs = op_labelled(s, "flush 0: reduce_scatter_tensor of 1 grads");
    EXPECT_EQ(rs.src, (Region{buffer_named(s, "IPG bucket"), 0, 0, 8}));
    EXPECT_EQ(rs.scale, 1.0 / w);
  }
}

// reduce_scatter=false: the bucket (p1 at 0, p0 at 7) is all-reduced in place and averaged; each
// rank's chunk of each grad is a rank-strided piece cut at the grad's end.
TEST(Stage3Operands, AllReducedBucketOwnChunksAreRankStridedAndLimited) {
  const ModelDesc m = s3test::param_model({10, 7}, {1, 0});
  DsConfig ds = one_flush_config();
  ds.zero.reduce_scatter = false;
  for (const Elements w : {2u, 4u}) {
    SCOPED_TRACE("world " + std::to_string(w));
    const Schedule s = s3test::build(m, ds, static_cast<std::uint32_t>(w));
    const std::uint32_t ipg = buffer_named(s, "IPG bucket");
    const Op& ar = op_labelled(s, "flush 0: all_reduce of the IPG bucket");
    EXPECT_EQ(ar.scale, 1.0 / static_cast<double>(w));
    const Op& pg = op_labelled(s, "partition grads (copy)");
    EXPECT_EQ(pg.copy_mode, CopyMode::Assign);
    const Elements c0 = ceil_div(10, w), c1 = ceil_div(7, w);
    ASSERT_NE(pg.src.list, kNone);
    EXPECT_EQ(s.lists[pg.src.list],
              (std::vector<Piece>{
                  {.buffer = ipg, .offset = 0, .length = c1, .rank_stride = c1, .limit = 7},
                  {.buffer = ipg, .offset = 7, .length = c0, .rank_stride = c0, .limit = 17}}));
    const Elements last = w - 1;
    const Spans chunks = resolve_pieces(s, pg, pg.src, static_cast<std::uint32_t>(last), true);
    if (w == 4) {  // rank 3: p1 [6, 7) + 1 zero, p0 [16, 17) + 2 zeros
      EXPECT_EQ(chunks, (Spans{{ipg, 6, 1}, {kNone, 0, 1}, {ipg, 16, 1}, {kNone, 0, 2}}));
    } else {  // rank 1: p1 [4, 7) + 1 zero, p0 [12, 17)
      EXPECT_EQ(chunks, (Spans{{ipg, 4, 3}, {kNone, 0, 1}, {ipg, 12, 5}}));
    }
    // The views in grad_partitions, in bucket order: p1 at its part offset c0, p0 at 0.
    const std::uint32_t gp = buffer_named(s, "grad_partitions_flat_buffer");
    EXPECT_EQ(s.lists[pg.dst.list], (std::vector<Piece>{{gp, c0, c1}, {gp, 0, c0}}));
  }
}

// A coalesced gather assembles each param from its chunk of every rank's slot: one strided piece
// ending mid-run.
TEST(Stage3Operands, CoalescedGatherAssemblyIsOneStridedPiecePerParam) {
  const ModelDesc m = s3test::layer_model({{10, 7}});
  for (const Elements w : {2u, 4u}) {
    SCOPED_TRACE("world " + std::to_string(w));
    const Schedule s = s3test::build(m, one_flush_config(), static_cast<std::uint32_t>(w));
    const Op& as = op_labelled(s, "assemble w1_1");
    ASSERT_NE(as.src.list, kNone);
    const Elements c0 = ceil_div(10, w), c1 = ceil_div(7, w);
    const Piece& from = s.lists[as.src.list].at(0);
    EXPECT_EQ(from, (Piece{.buffer = from.buffer,
                           .offset = c0,
                           .length = 7,
                           .block = c1,
                           .block_stride = c0 + c1}));
    EXPECT_EQ(s.buffers[from.buffer].numel, w * (c0 + c1));
    const Spans spans = resolve_pieces(s, as, as.src, 0, true);
    const std::uint32_t b = from.buffer;
    if (w == 4)  // c 2 of Σc 5: [3,5) [8,10) [13,15) [18,19)
      EXPECT_EQ(spans, (Spans{{b, 3, 2}, {b, 8, 2}, {b, 13, 2}, {b, 18, 1}}));
    else  // c 4 of Σc 9: [5,9) [14,17)
      EXPECT_EQ(spans, (Spans{{b, 5, 4}, {b, 14, 3}}));
    // The staging copy reads the two partitions and writes rank r's slot.
    const Op& sc = op_labelled(s, "own partitions into the staging slot");
    EXPECT_EQ(sc.dst, (Region{b, 0, c0 + c1, c0 + c1}));
    const std::uint32_t lp = buffer_named(s, "lp_param_buffer (LP partitions)");
    EXPECT_EQ(s.lists[sc.src.list], (std::vector<Piece>{{lp, 0, c0}, {lp, c0, c1}}));
  }
}

// X2: the whole model's params are cut into the partitions the defragmenting copy moves.
TEST(Stage3Operands, WholeParamsArePartitionedIntoTheLpPartitions) {
  const ModelDesc m = s3test::param_model({10, 7, 2}, {2, 1, 0});
  for (const Elements w : {2u, 4u}) {
    SCOPED_TRACE("world " + std::to_string(w));
    const Schedule s = s3test::build(m, one_flush_config(), static_cast<std::uint32_t>(w));
    const Op& pp = op_labelled(s, "partition params");
    const std::uint32_t whole = buffer_named(s, kStage3WholeModelBuffer);
    const Elements c0 = ceil_div(10, w), c1 = ceil_div(7, w), c2 = ceil_div(2, w);
    EXPECT_EQ(pp.elements, c0 + c1 + c2);
    EXPECT_EQ(s.lists[pp.src.list],
              (std::vector<Piece>{
                  {.buffer = whole, .offset = 0, .length = c0, .rank_stride = c0, .limit = 10},
                  {.buffer = whole, .offset = 10, .length = c1, .rank_stride = c1, .limit = 17},
                  {.buffer = whole, .offset = 17, .length = c2, .rank_stride = c2, .limit = 19}}));
    if (w == 4) {  // rank 3: p0 [9, 10) + 2 zeros, p1 [16, 17) + 1 zero, p2 only padding
      EXPECT_EQ(resolve_pieces(s, pp, pp.src, 3, true),
                (Spans{{whole, 9, 1}, {kNone, 0, 2}, {whole, 16, 1}, {kNone, 0, 2}}));
    }
    // Rank 1 at W = 2: p0 [5, 10), p1 [14, 17) + 1 zero, p2 [18, 19).
    if (w == 2) {
      EXPECT_EQ(resolve_pieces(s, pp, pp.src, 1, true),
                (Spans{{whole, 5, 5}, {whole, 14, 3}, {kNone, 0, 1}, {whole, 18, 1}}));
    }
    EXPECT_LT(s3test::find_label(s, "partition params"),
              s3test::find_label(s, "defragment LP partitions"));
  }
}

// A new Piece field changes this size: add it to schedule_writer.cc, schedule_reader.cc,
// check_lists (schedule_graph.cc), the emitter's interning order and scenarios/README.md.
TEST(Stage3Operands, PieceLayoutIsTheOneTheFormatCovers) { EXPECT_EQ(sizeof(Piece), 56u); }

// The new piece fields survive the file; a broken one is named by its JSON pointer.
TEST(Stage3Operands, PieceFieldsRoundTripAndBadPiecesAreRefused) {
  const Schedule s = s3test::build(s3test::param_model({10, 7}, {1, 0}), one_flush_config(), 4);
  std::ostringstream out;
  write_schedule_json(s, out);
  const std::string text = out.str();
  auto back = read_schedule_json(text, "s3.json");
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  EXPECT_EQ(back.value().lists, s.lists);
  const auto errors = [&](const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return std::string();
    std::string bad = text;
    bad.replace(at, from.size(), to);
    auto r = read_schedule_json(bad, "s3.json");
    EXPECT_FALSE(r.ok());
    return r.diagnostics().to_string();
  };
  // The staging list is the one whose first piece is p0's strided chunks (block 3, Σc 5).
  const std::string staging = "\"length\":12,\"block\":3,\"block_stride\":5}";
  const std::string at = std::to_string(text.find(staging));
  std::string list;  // its index, for the expected pointers
  for (std::size_t k = 0; k < s.lists.size(); ++k)
    if (!s.lists[k].empty() && s.lists[k][0].block == 3) list = std::to_string(k);
  ASSERT_FALSE(list.empty()) << at;
  EXPECT_EQ(errors(staging, "\"length\":12,\"block\":3,\"block_stride\":2}"),
            "s3.json: /lists/" + list +
                "/0/block_stride: expected a block_stride of at least the block 3 (runs must not "
                "overlap), got 2\n");
  EXPECT_EQ(errors(staging, "\"length\":12,\"block_stride\":5}"),
            "s3.json: /lists/" + list +
                "/0/block_stride: expected no block_stride without a block, "
                "got 5\n");
  EXPECT_EQ(errors(staging, "\"length\":12,\"block\":3,\"block_stride\":6}"),
            "s3.json: /lists/" + list +
                "/0: expected a piece inside buffer \"reduce-scatter staging (20)\" (20 "
                "elements), got elements [0, 21)\n");
  EXPECT_EQ(
      errors(staging, "\"length\":12,\"blok\":3,\"block_stride\":5}"),
      "s3.json: /lists/" + list + "/0/blok: unknown key \"blok\" (did you mean \"block\"?)\n");
  // The own chunk of the last rank reaches past the bucket's end unless the limit stops it.
  const Schedule a = [] {
    DsConfig ds = one_flush_config();
    ds.zero.reduce_bucket_size = 17;  // p1 at 0, p0 at 7: the bucket ends at p0's end
    ds.zero.reduce_scatter = false;
    return s3test::build(s3test::param_model({10, 7}, {1, 0}), ds, 4);
  }();
  std::ostringstream a_out;
  write_schedule_json(a, a_out);
  const std::string a_text = a_out.str();
  const std::string chunk = "\"offset\":7,\"length\":3,\"rank_stride\":3,\"limit\":17}";
  ASSERT_NE(a_text.find(chunk), std::string::npos);
  std::string unlimited = a_text;
  unlimited.replace(a_text.find(chunk), chunk.size(),
                    "\"offset\":7,\"length\":3,\"rank_stride\":3}");
  auto r = read_schedule_json(unlimited, "ar.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics().to_string().find(
                "expected a piece inside buffer \"IPG bucket\" (17 elements), got elements [16, "
                "19) at rank index 3"),
            std::string::npos)
      << r.diagnostics().to_string();
}

// The operands stay O(tensors + buckets): the same lists and pieces at 4 and 256 ranks.
TEST(Stage3Operands, PieceListsDoNotGrowWithTheWorld) {
  const ModelDesc m = s3test::layer_model({{10, 7}, {2, 5, 13}, {3}});
  for (const bool all_reduce : {false, true}) {
    DsConfig ds = one_flush_config();
    ds.zero.reduce_scatter = !all_reduce;
    ds.zero.use_all_reduce_for_fetch_params = all_reduce;
    const auto pieces = [&](std::uint32_t w) {
      const Schedule s = s3test::build(m, ds, w, 2);
      std::size_t n = 0;
      for (const auto& l : s.lists) n += l.size();
      return std::make_pair(s.lists.size(), n);
    };
    const auto small = pieces(4), large = pieces(256);
    EXPECT_EQ(small.first, large.first);
    EXPECT_EQ(small.second, large.second);
    EXPECT_LT(small.second, 80u);  // a few pieces per tensor and list
  }
}

// ---------------------------------------------------------------------------------------------
// The data-flow interpreter.

constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

struct Interpreter {
  const Schedule& s;
  std::uint32_t world;
  std::vector<std::map<std::uint32_t, std::vector<double>>> mem;  // per rank, per live buffer
  std::map<std::string, std::uint32_t> tensor_of_name;
  std::vector<Elements> part_offset;  // per tensor: its c-chunk in grad_partitions
  std::string failure;                // the first problem met

  explicit Interpreter(const Schedule& sch) : s(sch), world(sch.meta.world), mem(world) {
    for (std::uint32_t t = 0; t < s.tensors.size(); ++t) tensor_of_name[s.tensors[t].name] = t;
    part_offset.assign(s.tensors.size(), 0);
    Elements at = 0;
    for (const auto& sg : s.layout.sub_groups)
      for (auto t : sg.params) {
        part_offset[t] = at;
        at += c(t);
      }
    for (std::uint32_t b = 0; b < s.buffers.size(); ++b)
      if (s.buffers[b].executor_owned)
        for (auto& m : mem) m[b].assign(s.buffers[b].numel, 0.0);
  }

  Elements c(std::uint32_t t) const { return ceil_div(s.tensors[t].numel, world); }
  // The model as rank r constructed it (rank 0's is the one every rank ends up with).
  static double init_value(std::uint32_t t, Elements j, std::uint32_t r) {
    return 1.0 + 100.0 * t + static_cast<double>(j) + 10000.0 * r;
  }
  // The synthetic gradient of rank r for element j of tensor t at micro-step `micro`.
  static double grad_value(std::uint32_t t, Elements j, std::uint32_t r, std::uint32_t micro) {
    return 1.0 + r + 8.0 * t + 64.0 * static_cast<double>(j) + 4096.0 * micro;
  }

  void fail(const std::string& why) {
    if (failure.empty()) failure = why;
  }

  std::vector<double>* buf(std::uint32_t r, std::uint32_t b, const Op& op) {
    auto it = mem[r].find(b);
    if (it == mem[r].end()) {
      fail(op.label + ": buffer " + s.buffers[b].name + " is not live");
      return nullptr;
    }
    return &it->second;
  }

  std::vector<double> read(std::uint32_t r, const Op& op, const Region& reg, bool is_src) {
    std::vector<double> out;
    for (const OperandSpan& sp : resolve_pieces(s, op, reg, r, is_src)) {
      if (sp.buffer == kNone) {
        out.insert(out.end(), sp.length, 0.0);
        continue;
      }
      auto* v = buf(r, sp.buffer, op);
      if (v == nullptr || sp.offset + sp.length > v->size()) {
        fail(op.label + ": read outside " + s.buffers[sp.buffer].name);
        return out;
      }
      out.insert(out.end(), v->begin() + static_cast<std::ptrdiff_t>(sp.offset),
                 v->begin() + static_cast<std::ptrdiff_t>(sp.offset + sp.length));
    }
    return out;
  }

  void write(std::uint32_t r, const Op& op, const Region& reg, const std::vector<double>& vals,
             CopyMode mode) {
    std::size_t k = 0;
    for (const OperandSpan& sp : resolve_pieces(s, op, reg, r, false)) {
      if (sp.buffer == kNone) {
        k += sp.length;
        continue;
      }
      auto* v = buf(r, sp.buffer, op);
      if (v == nullptr || sp.offset + sp.length > v->size() || k + sp.length > vals.size()) {
        fail(op.label + ": write outside " + s.buffers[sp.buffer].name);
        return;
      }
      for (Elements j = 0; j < sp.length; ++j, ++k) {
        double& d = (*v)[sp.offset + j];
        d = mode == CopyMode::Add ? d + vals[k] : vals[k];
      }
    }
    if (k != vals.size()) fail(op.label + ": source and destination lengths differ");
  }

  void alloc(const Op& op) {
    const Buffer& b = s.buffers[op.buffer];
    for (std::uint32_t r = 0; r < world; ++r) {
      auto& v = mem[r][op.buffer];
      v.assign(s.buffer_numel(op.buffer, s.role_of(r)), op.zero_fill ? 0.0 : kUnset);
      // What the rank's module constructor produced (differs per rank until broadcast).
      if (b.name == kStage3WholeModelBuffer) {
        Elements at = 0;
        for (std::uint32_t t = 0; t < s.tensors.size(); ++t)
          for (Elements j = 0; j < s.tensors[t].numel; ++j) v[at++] = init_value(t, j, r);
      }
      const std::string prefix = "zero.Init construction:";
      if (b.name.rfind(prefix, 0) == 0) {
        const std::uint32_t t = tensor_of_name.at(b.name.substr(prefix.size()));
        for (Elements j = 0; j < v.size(); ++j) v[j] = init_value(t, j, r);
      }
    }
  }

  void grad_ready(const Op& op) {
    const std::uint32_t t = op.param;
    for (std::uint32_t r = 0; r < world; ++r) {
      // The layer reads the gathered param: it must be rank 0's model everywhere.
      const std::vector<double> seen = read(r, op, op.src, true);
      if (seen.size() != s.tensors[t].numel) fail(op.label + ": the param read has a wrong size");
      for (Elements j = 0; j < seen.size(); ++j)
        if (seen[j] != init_value(t, j, 0)) {
          fail(op.label + ": rank " + std::to_string(r) + " reads element " + std::to_string(j) +
               " as " + std::to_string(seen[j]));
          break;
        }
      std::vector<double> g(s.tensors[t].numel);
      for (Elements j = 0; j < g.size(); ++j) g[j] = grad_value(t, j, r, op.micro_step);
      write(r, op, op.dst, g, op.copy_mode);
    }
  }

  void copy(const Op& op) {
    for (std::uint32_t r = 0; r < world; ++r) {
      std::vector<double> v = read(r, op, op.src, true);
      if (v.size() != s.op_elements(op, s.role_of(r))) fail(op.label + ": wrong source length");
      for (double& x : v) x *= op.scale;
      write(r, op, op.dst, v, op.copy_mode);
    }
  }

  void collective(const Op& op) {
    std::vector<std::vector<double>> in(world);
    for (std::uint32_t r = 0; r < world; ++r) in[r] = read(r, op, op.src, true);
    const Region& dst = op.dst.empty() ? op.src : op.dst;
    for (std::uint32_t r = 0; r < world; ++r) {
      std::vector<double> out;
      switch (op.collective) {
        case CollectiveKind::AllGather:
          for (const auto& x : in) out.insert(out.end(), x.begin(), x.end());
          break;
        case CollectiveKind::Broadcast:
          out = in[op.root];
          break;
        case CollectiveKind::AllReduce:
        case CollectiveKind::ReduceScatter: {
          const Elements n = op.out_numel;
          const Elements from = op.collective == CollectiveKind::ReduceScatter ? r * n : 0;
          out.assign(n, op.reduce_op == ReduceOp::Max ? -1e300 : 0.0);
          for (const auto& x : in)
            for (Elements j = 0; j < n && from + j < x.size(); ++j)
              out[j] = op.reduce_op == ReduceOp::Max ? std::max(out[j], x[from + j])
                                                     : out[j] + x[from + j];
          for (double& x : out) x *= op.scale;
          break;
        }
        case CollectiveKind::Reduce:
          fail(op.label + ": stage 3 issues no reduce");
          return;
      }
      write(r, op, dst, out, CopyMode::Assign);
    }
  }

  /// Runs ops until the first optimizer update (or the end); returns its index.
  std::size_t run() {
    for (std::size_t i = 0; i < s.ops.size() && failure.empty(); ++i) {
      const Op& op = s.ops[i];
      switch (op.kind) {
        case OpKind::Alloc:
          alloc(op);
          break;
        case OpKind::Free:
          for (auto& m : mem) m.erase(op.buffer);
          break;
        case OpKind::GradReady:
          grad_ready(op);
          break;
        case OpKind::Copy:
        case OpKind::CopyToBucket:
        case OpKind::WriteBack:
        case OpKind::HostToDevice:
        case OpKind::DeviceToHost:
          if (op.src.empty() || op.dst.empty()) fail(op.label + ": operand not carried");
          copy(op);
          break;
        case OpKind::Collective:
          if (op.src.empty() && op.numel > 0) fail(op.label + ": operand not carried");
          if (!op.src.empty()) collective(op);
          break;
        case OpKind::OptimizerStep:
          return i;
        default:
          break;
      }
    }
    return s.ops.size();
  }
};

struct Case {
  std::string name;
  std::function<void(DsConfig&, TrainingSettings&)> set;
};

// Every rank's grad partition before the first update: the mean over ranks of its slice of the
// synthetic gradients, summed over the micro-steps (zeros in the padding).
void expect_averaged_partitions(const ModelDesc& m, const Case& k, std::uint32_t world) {
  SCOPED_TRACE(k.name + ", world " + std::to_string(world));
  DsConfig ds = s3test::stage3_config();
  ds.zero.param_persistence_threshold = 0;
  ds.zero.reduce_bucket_size = 12;  // several flushes, one oversize grad kept in its storage
  TrainingSettings t;
  k.set(ds, t);
  const Schedule s = s3test::build(m, ds, world, 1, DeepSpeedVersion::Edaa722, t);
  ASSERT_FALSE(s.ops.empty());
  // Every op that moves data names where, after the step too (write-backs, post-step gathers).
  for (const Op& op : s.ops) {
    const bool copy = op.kind == OpKind::Copy || op.kind == OpKind::CopyToBucket ||
                      op.kind == OpKind::WriteBack || op.kind == OpKind::HostToDevice ||
                      op.kind == OpKind::DeviceToHost || op.kind == OpKind::GradReady;
    EXPECT_FALSE(copy && (op.src.empty() || op.dst.empty())) << op.label;
    EXPECT_FALSE(op.kind == OpKind::Collective && op.numel > 0 && op.src.empty()) << op.label;
    EXPECT_FALSE(op.kind == OpKind::OptimizerStep && op.update == kNone) << op.label;
  }
  Interpreter in(s);
  const std::size_t at = in.run();
  ASSERT_TRUE(in.failure.empty()) << in.failure;
  ASSERT_LT(at, s.ops.size()) << "no optimizer step";
  const std::uint32_t gp = buffer_named(s, "grad_partitions_flat_buffer");
  const auto gas = static_cast<std::uint32_t>(ds.grad_accum_steps);
  for (std::uint32_t r = 0; r < world; ++r) {
    const std::vector<double>& got = in.mem[r].at(gp);
    for (std::uint32_t p = 0; p < s.tensors.size(); ++p)
      for (Elements e = 0; e < in.c(p); ++e) {
        const Elements j = r * in.c(p) + e;
        double want = 0;
        if (j < s.tensors[p].numel)
          for (std::uint32_t micro = 0; micro < gas; ++micro)
            for (std::uint32_t q = 0; q < world; ++q)
              want += Interpreter::grad_value(p, j, q, micro) / world;
        ASSERT_EQ(got[in.part_offset[p] + e], want)
            << "rank " << r << ", " << s.tensors[p].name << " element " << j;
      }
  }
  // With the optimizer on the CPU the update reads the fp32 sub-group grads: the same values.
  if (ds.zero.offload_optimizer.enabled()) {
    const std::uint32_t g32 = buffer_named(s, "fp32 grads [sub-group 0]");
    for (std::uint32_t r = 0; r < world; ++r) EXPECT_EQ(in.mem[r].at(g32), in.mem[r].at(gp));
  }
}

TEST(Stage3Operands, InterpreterGradPartitionsAreTheRankAverage) {
  // Sizes 10, 7, 2, 5, 13, 3 over three layers: at W = 4 c is 3, 2, 1, 2, 4, 1 and ranks 2-3
  // hold only padding of the 2-element param; 13 > the bucket size, so it is reduced alone from
  // its own storage.
  const ModelDesc m = s3test::layer_model({{10, 7}, {2, 5, 13}, {3}});
  const std::vector<Case> cases = {
      {"reduce-scatter", [](DsConfig&, TrainingSettings&) {}},
      {"2 micro-steps", [](DsConfig& d, TrainingSettings&) { d.grad_accum_steps = 2; }},
      {"all-reduce buckets",
       [](DsConfig& d, TrainingSettings&) {
         d.zero.reduce_scatter = false;
         d.grad_accum_steps = 2;
       }},
      {"zero.Init", [](DsConfig&, TrainingSettings& t) { t.zero_init = true; }},
      {"all-reduce fetch",
       [](DsConfig& d, TrainingSettings&) {
         d.zero.use_all_reduce_for_fetch_params = true;
         d.grad_accum_steps = 2;
       }},
      {"persistent params",
       [](DsConfig& d, TrainingSettings&) {
         d.zero.param_persistence_threshold = 6;
         d.grad_accum_steps = 2;
       }},
      {"offload optimizer",
       [](DsConfig& d, TrainingSettings&) {
         d.zero.offload_optimizer.device = OffloadDevice::Cpu;
         d.grad_accum_steps = 2;
       }},
      {"offload param",
       [](DsConfig& d, TrainingSettings&) {
         d.zero.offload_param.device = OffloadDevice::Cpu;
         d.zero.param_persistence_threshold = 6;
         d.grad_accum_steps = 2;
       }},
      {"no overlap, sequential gathers",
       [](DsConfig& d, TrainingSettings&) {
         d.zero.overlap_comm = false;
         d.zero.allgather_sequential = true;
       }},
  };
  for (const Case& k : cases)
    for (const std::uint32_t world : {2u, 4u}) expect_averaged_partitions(m, k, world);
}

// X12: under offload_param the optimizer's init moves every trainable partition, persistent
// params' included, into the host flat buffer (stage3.py:950-954, _move_to_flat_buffer :832-834),
// and every gather reads a device copy of it (ds_tensor.to(device), partition_parameters.py:1974,
// :1332): no all-gather reads host memory, and each persistent param's hook-registration and
// post-step gathers follow an H2D of its partition.
TEST(Stage3Operands, OffloadParamGathersReadDeviceCopiesOfPersistentPartitions) {
  const ModelDesc m = s3test::layer_model({{10, 7}, {2, 5, 13}, {3}});
  DsConfig ds = one_flush_config();
  ds.zero.offload_param.device = OffloadDevice::Cpu;
  ds.zero.param_persistence_threshold = 6;  // w2_0 (2), w2_1 (5) and w3_0 (3)
  for (const std::uint32_t w : {2u, 4u}) {
    SCOPED_TRACE("world " + std::to_string(w));
    const Schedule s = s3test::build(m, ds, w, 2);
    std::size_t gathers = 0;
    for (const Op& op : s.ops) {
      if (op.kind != OpKind::Collective || op.collective != CollectiveKind::AllGather) continue;
      ++gathers;
      for (std::uint32_t r = 0; r < w; ++r)
        for (const OperandSpan& sp : resolve_pieces(s, op, op.src, r, true)) {
          if (sp.buffer == kNone) continue;
          EXPECT_EQ(s.buffers[sp.buffer].pool, MemoryPool::Device)
              << op.label << " rank " << r << " reads " << s.buffers[sp.buffer].name;
        }
    }
    EXPECT_GT(gathers, 0u);
    for (const std::string name : {"w2_0", "w2_1", "w3_0"}) {
      const std::size_t h2d = s3test::find_label(s, "H2D partition of " + name);
      const std::size_t hook = s3test::find_label(s, "grad hook registration: gather " + name);
      ASSERT_LT(hook, s.ops.size()) << name;
      EXPECT_LT(h2d, hook) << name;
      const std::size_t post = s3test::find_label(s, "post-step gather of persistent " + name);
      ASSERT_LT(post, s.ops.size()) << name;
      const std::size_t staged = s3test::find_label(s, "H2D partition of persistent " + name);
      EXPECT_LT(staged, post) << name;
      // From the host LP partition into what the gather reads.
      EXPECT_EQ(s.ops[staged].src.buffer, buffer_named(s, "lp_param_buffer (LP partitions)"));
      EXPECT_EQ(s.ops[staged].dst, s.ops[post].src) << name;
    }
  }
}

// A persistent param outside the optimizer is never moved into the host flat buffer: DeepSpeed
// gathers its device partition in place (no H2D), while a frozen non-persistent one is staged.
TEST(Stage3Operands, OffloadParamStagesNoFrozenPersistentPartition) {
  ModelDesc m = s3test::layer_model({{10, 7}, {2, 13}});
  m.params[2].trainable = false;  // w2_0: 2 elements, persistent
  m.params[3].trainable = false;  // w2_1: 13 elements, not persistent
  m.grad_order = derive_grad_order(m);
  DsConfig ds = one_flush_config();
  ds.zero.offload_param.device = OffloadDevice::Cpu;
  ds.zero.param_persistence_threshold = 6;
  const Schedule s = s3test::build(m, ds, 4, 2);
  const std::uint32_t frozen = buffer_named(s, "LP partitions of params outside the optimizer");
  std::size_t staged_frozen = 0, read_in_place = 0;
  for (const Op& op : s.ops) {
    const bool h2d = op.kind == OpKind::HostToDevice;
    const bool gather = op.kind == OpKind::Collective && op.collective == CollectiveKind::AllGather;
    if (!h2d && !gather) continue;
    for (const OperandSpan& sp : resolve_pieces(s, op, op.src, 0, true)) {
      if (sp.buffer != frozen) continue;
      // w2_0 sits first in the frozen partitions (declaration order), w2_1 after its c = 1.
      if (h2d) {
        EXPECT_GE(sp.offset, 1u) << op.label << ": stages the persistent frozen partition";
        ++staged_frozen;
      } else {
        EXPECT_EQ(sp.offset, 0u) << op.label << ": a gather reads the frozen w2_1 unstaged";
        ++read_in_place;
      }
    }
  }
  EXPECT_GT(staged_frozen, 0u);  // w2_1's fetches
  EXPECT_GT(read_in_place, 0u);  // w2_0's fetches and post-step gathers
}

// The interpreter itself fails on a schedule whose averaging is dropped.
TEST(Stage3Operands, InterpreterCatchesAMissingAverage) {
  const ModelDesc m = s3test::layer_model({{10, 7}});
  Schedule s = s3test::build(m, one_flush_config(), 4);
  for (Op& op : s.ops)
    if (op.label == "flush 0: rank-major staging, padded per tensor, / W") op.scale = 1.0;
  Interpreter in(s);
  in.run();
  ASSERT_TRUE(in.failure.empty()) << in.failure;
  const std::uint32_t gp = buffer_named(s, "grad_partitions_flat_buffer");
  const double want = (Interpreter::grad_value(0, 0, 0, 0) + Interpreter::grad_value(0, 0, 1, 0) +
                       Interpreter::grad_value(0, 0, 2, 0) + Interpreter::grad_value(0, 0, 3, 0)) /
                      4;
  EXPECT_EQ(in.mem[0].at(gp)[0], 4 * want);  // the sum, not the average
}

}  // namespace
}  // namespace zerosim
