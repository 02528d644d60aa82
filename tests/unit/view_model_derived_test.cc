// The rows the view model derives (model/derived_lanes.h): IPG bucket fills with their copies,
// flush time and collective; stage 3 gathers and releases; their rows in the layout; and the
// folding state of rank groups (expand/collapse, kept by the model).
#include <gtest/gtest.h>

#include "model/derived_lanes.h"
#include "model/timeline_model.h"
#include "view_model_testlib.h"

namespace zerosim::view {
namespace {

using testing::rank;
using testing::span;

Span in_bucket(Span s, std::uint32_t bucket, std::uint32_t step = 0, Bytes bytes = 0) {
  s.bucket = bucket;
  s.step = step;
  s.bytes = bytes;
  return s;
}

// Step 0: bucket 0 filled by three copies (one out of order), flattened, then reduced twice
// (the first collective is the one it feeds); bucket 1 filled, never flushed; a collective of
// bucket 5, which had no copies. Step 1: bucket 0 again.
Trace bucket_trace() {
  Trace t;
  t.ranks = {rank(0, 0)};
  t.spans = {
      in_bucket(span(kAllRanks, Stream::Compute, 1, 30, 5, "copy_to_bucket", "copy b into ipg[0]"),
                0, 0, 200),
      in_bucket(
          span(kAllRanks, Stream::Compute, 0, 10, 5, "copy_to_bucket", "grad a into IPG [0:100]"),
          0, 0, 100),
      in_bucket(span(kAllRanks, Stream::Compute, 2, 50, 4, "copy_to_bucket", "odd label"), 0, 0,
                50),
      in_bucket(span(kAllRanks, Stream::Reduce, 3, 60, 10, "copy", "flush 0: staging"), 0),
      in_bucket(span(kAllRanks, Stream::Reduce, 5, 200, 10, "collective", "flush 0: again"), 0),
      in_bucket(span(kAllRanks, Stream::Reduce, 4, 70, 30, "collective", "flush 0: AR"), 0),
      in_bucket(span(kAllRanks, Stream::Compute, 6, 80, 2, "copy_to_bucket", "copy c into ipg[1]"),
                1, 0, 8),
      in_bucket(span(kAllRanks, Stream::Reduce, 7, 90, 5, "collective", "flush 5"), 5),
      in_bucket(span(kAllRanks, Stream::Compute, 8, 300, 5, "copy_to_bucket", "copy a into ipg[0]"),
                0, 1, 100),
  };
  return t;
}

std::vector<std::uint32_t> all_spans(const Trace& t) {
  std::vector<std::uint32_t> v;
  for (std::uint32_t i = 0; i < t.spans.size(); ++i) v.push_back(i);
  return v;
}

TEST(ViewModelDerived, BucketFillsGroupCopiesPerStepAndBucketAndFindTheirFlush) {
  const Trace t = bucket_trace();
  const std::vector<BucketFill> f = bucket_fills(t, all_spans(t));
  ASSERT_EQ(f.size(), 3u);  // (0, 0), (0, 1), (1, 0); bucket 5 had no copies
  EXPECT_EQ(f[0].bucket, 0u);
  EXPECT_EQ(f[0].step, 0u);
  EXPECT_EQ(f[0].copies, (std::vector<std::uint32_t>{1, 0, 2}));  // by start
  EXPECT_EQ(f[0].start_ns, 10);
  EXPECT_EQ(f[0].end_ns, 54);
  EXPECT_EQ(f[0].bytes, 350u);
  EXPECT_EQ(f[0].flush_ns, 60);    // the staging copy, before the collective
  EXPECT_EQ(f[0].collective, 5u);  // the earlier of its two collectives
  EXPECT_EQ(f[1].bucket, 1u);
  EXPECT_EQ(f[1].flush_ns, kNoTime);  // never flushed
  EXPECT_EQ(f[1].collective, kNone);
  EXPECT_EQ(f[2].step, 1u);
  EXPECT_EQ(f[2].start_ns, 300);
  EXPECT_EQ(f[2].collective, kNone);  // step 0's collectives do not feed step 1's fill
}

TEST(ViewModelDerived, BucketParamNamesComeFromTheCopyLabels) {
  const Trace t = bucket_trace();
  EXPECT_EQ(bucket_param_name(t.spans[0]), "b");
  EXPECT_EQ(bucket_param_name(t.spans[1]), "a");
  EXPECT_EQ(bucket_param_name(t.spans[2]), "odd label");
  Span s;
  s.name = "copy  into x";
  EXPECT_EQ(bucket_param_name(s), "copy  into x");  // no name between: the label as it is
}

MemorySample gathered(SimTime t, Bytes bytes) {
  MemorySample m;
  m.t = t;
  m.by_category[static_cast<std::size_t>(BufferCategory::GatheredParam)] = bytes;
  m.total = bytes;
  return m;
}

Trace stage3_trace() {
  Trace t;
  t.meta.stage = 3;
  t.ranks = {rank(0, 0)};
  // Gathered bytes: 100 at 10, 300 at 20, a free of 250 and an allocation of 50 both at 30
  // (a net drop of 200, but 250 released), 0 at 40.
  t.ranks[0].memory = {gathered(0, 0),   gathered(10, 100), gathered(20, 300),
                       gathered(30, 50), gathered(30, 100), gathered(40, 0)};
  t.spans = {span(kAllRanks, Stream::Gather, 0, 0, 10, "collective", "fetch fwd a"),
             span(kAllRanks, Stream::Gather, 1, 12, 8, "collective", "fetch fwd b"),
             span(kAllRanks, Stream::Reduce, 2, 25, 5, "collective", "flush 0: RS")};
  t.spans[0].comm = 0;
  t.spans[1].comm = 1;
  t.spans[2].comm = 2;
  CommRecord ag;
  ag.kind = CollectiveKind::AllGather;
  ag.bytes = 100;
  CommRecord ag2 = ag;
  ag2.bytes = 200;
  CommRecord rs;
  rs.kind = CollectiveKind::ReduceScatter;
  t.comms = {ag, ag2, rs};
  return t;
}

TEST(ViewModelDerived, Stage3GathersEndAtTheirAllGatherAndReleasesAreDropsOfGatheredBytes) {
  const Trace t = stage3_trace();
  const std::vector<ParamEvent> e = param_events(t, t.ranks[0], all_spans(t));
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].kind, ParamEvent::Kind::Gather);
  EXPECT_EQ(e[0].t, 10);
  EXPECT_EQ(e[0].bytes, 100u);
  EXPECT_EQ(e[0].span, 0u);
  EXPECT_EQ(e[1].kind, ParamEvent::Kind::Gather);
  EXPECT_EQ(e[1].t, 20);
  EXPECT_EQ(e[2].kind, ParamEvent::Kind::Release);
  EXPECT_EQ(e[2].t, 30);
  EXPECT_EQ(e[2].bytes, 250u);  // the free, not the net change
  EXPECT_EQ(e[2].gathered_after, 100u);
  EXPECT_EQ(e[3].t, 40);
  EXPECT_EQ(e[3].bytes, 100u);
  EXPECT_EQ(e[3].gathered_after, 0u);
  // No gathered buffers add up to 250: that release stays unnamed; the last frees "fetch fwd a"'s.
  EXPECT_TRUE(e[2].released.empty());
  EXPECT_EQ(e[3].released, std::vector<std::uint32_t>{0});
  Trace stage2 = t;
  stage2.meta.stage = 2;
  EXPECT_TRUE(param_events(stage2, stage2.ranks[0], all_spans(stage2)).empty());
}

// A release names the parameters it frees: the rise of the gathered bytes in one instant is the
// earliest unclaimed all-gather of that many bytes started by then (h.1's gather, prefetched,
// starts before h.0's buffer is allocated: h.0 still claims its own); a drop frees the oldest
// buffer of exactly its bytes, else the oldest run adding up to it (two modules freed at once).
TEST(ViewModelDerived, AReleaseNamesTheAllGathersWhoseParametersItFrees) {
  Trace t;
  t.meta.stage = 3;
  t.ranks = {rank(0, 0)};
  t.spans = {span(kAllRanks, Stream::Gather, 0, 0, 2, "collective", "fetch fwd h.0.ln: 2 params"),
             span(kAllRanks, Stream::Gather, 1, 2, 2, "collective", "fetch fwd h.1.ln: 2 params"),
             span(kAllRanks, Stream::Gather, 2, 10, 1, "collective", "prefetch: wte.weight"),
             span(kAllRanks, Stream::Gather, 3, 10, 1, "collective", "fetch bwd wpe: wpe.weight"),
             span(kAllRanks, Stream::Reduce, 4, 12, 4, "collective", "grad hook all-gather")};
  const Bytes sizes[] = {100, 100, 50, 30, 80};
  for (std::uint32_t i = 0; i < 5; ++i) {
    t.spans[i].comm = i;
    CommRecord c;
    c.kind = CollectiveKind::AllGather;
    c.bytes = sizes[i];
    t.comms.push_back(c);
  }
  // Rises of 100 at 3 and at 6 (two samples of 50: one module's two parameters), 50 at 11 and
  // 30 at 12; drops of 100 at 20, 80 at 30, 100 at 40, and of 7 bytes at 50 after a rise of 7
  // at 45 that no all-gather explains.
  t.ranks[0].memory = {gathered(3, 100),  gathered(6, 150),  gathered(6, 200),  gathered(11, 250),
                       gathered(12, 280), gathered(20, 180), gathered(30, 100), gathered(40, 0),
                       gathered(45, 7),   gathered(50, 0)};
  const std::vector<ParamEvent> e = param_events(t, t.ranks[0], all_spans(t));
  std::vector<ParamEvent> releases;
  for (const ParamEvent& x : e) {
    if (x.kind == ParamEvent::Kind::Release) releases.push_back(x);
  }
  ASSERT_EQ(releases.size(), 4u);
  EXPECT_EQ(releases[0].released, std::vector<std::uint32_t>{0});  // h.0 before h.1
  EXPECT_EQ(releases[1].released, (std::vector<std::uint32_t>{2, 3}));
  EXPECT_EQ(releases[2].released, std::vector<std::uint32_t>{1});
  EXPECT_TRUE(releases[3].released.empty());
  EXPECT_EQ(gathered_params_name(t.spans[0]), "h.0.ln: 2 params");
  EXPECT_EQ(gathered_params_name(t.spans[2]), "wte.weight");
  EXPECT_EQ(gathered_params_name(t.spans[3]), "wpe: wpe.weight");
  Span persistent = t.spans[0];
  persistent.name = "post-step gather of persistent h.0.ln_1.weight";
  EXPECT_EQ(gathered_params_name(persistent), "h.0.ln_1.weight");
  EXPECT_EQ(gathered_params_name(t.spans[4]), "grad hook all-gather");
}

TEST(ViewModelDerived, TheLayoutAddsBucketAndParamRowsOnlyWhereTheyHaveContent) {
  const Trace b = bucket_trace();
  TimelineModel mb(b);
  EXPECT_EQ(mb.groups()[0].buckets.size(), 3u);
  EXPECT_TRUE(mb.groups()[0].params.empty());
  LayoutOptions o;
  std::vector<Row> rows = layout_rows(mb, {}, o);
  ASSERT_EQ(rows.size(), 5u);  // header, compute, reduce, buckets, memory
  EXPECT_EQ(rows[3].kind, Row::Kind::Buckets);
  EXPECT_FLOAT_EQ(rows[3].y1 - rows[3].y0, o.bucket_px);
  EXPECT_EQ(rows[4].kind, Row::Kind::Memory);
  const Trace s3 = stage3_trace();
  TimelineModel m3(s3);
  rows = layout_rows(m3, {}, o);
  ASSERT_EQ(rows.size(), 5u);  // header, reduce, gather, params, memory
  EXPECT_EQ(rows[3].kind, Row::Kind::Params);
  EXPECT_EQ(m3.groups()[0].params.size(), 4u);
}

// Three ranks of one role-free trace: rank 0 differs, ranks 1 and 2 fold into one group.
Trace folded_trace() {
  Trace t;
  t.ranks = {rank(0, 0), rank(1, 1), rank(2, 2)};
  for (std::uint32_t r = 0; r < 3; ++r) {
    t.spans.push_back(span(r, Stream::Compute, 1, 0, r == 0 ? 20 : 10));
  }
  return t;
}

TEST(ViewModelDerived, AFoldedGroupExpandsIntoOneBlockPerMemberAndFoldsBack) {
  const Trace t = folded_trace();
  TimelineModel m(t);
  ASSERT_EQ(m.groups().size(), 2u);
  LayoutOptions o;
  o.memory_px = 0;
  EXPECT_EQ(layout_rows(m, {}, o).size(), 4u);  // (header, compute) x 2
  EXPECT_FALSE(m.expanded(1));
  EXPECT_FALSE(m.set_expanded(0, true));  // one member: nothing to expand
  EXPECT_FALSE(m.set_expanded(7, true));
  EXPECT_FALSE(m.expanded(0));
  EXPECT_EQ(block_label(m, layout_rows(m, {}, o)[2]), "[+] ranks 1-2, 2 ranks");
  ASSERT_TRUE(m.toggle_expanded(1));
  EXPECT_TRUE(m.expanded(1));
  const std::vector<Row> rows = layout_rows(m, {}, o);
  // Group 1: its header, then per member a header and the compute lane.
  ASSERT_EQ(rows.size(), 2u + 1u + 2u * 2u);
  EXPECT_EQ(rows[2].kind, Row::Kind::Header);
  EXPECT_EQ(rows[2].member, kAllMembers);
  EXPECT_EQ(block_label(m, rows[2]), "[-] ranks 1-2, 2 ranks");
  EXPECT_EQ(rows[3].kind, Row::Kind::Header);
  EXPECT_EQ(rows[3].member, 0u);
  EXPECT_EQ(block_label(m, rows[3]), "rank 1");
  EXPECT_EQ(rows[4].kind, Row::Kind::Lane);
  EXPECT_EQ(rows[4].member, 0u);
  EXPECT_EQ(block_label(m, rows[5]), "rank 2");
  EXPECT_EQ(rows[6].member, 1u);
  EXPECT_FLOAT_EQ(rows[6].y0, rows[5].y1);
  m.toggle_expanded(1);
  EXPECT_EQ(layout_rows(m, {}, o).size(), 4u);
  m.toggle_all();  // expands every multi-member group
  EXPECT_TRUE(m.expanded(1));
  EXPECT_FALSE(m.expanded(0));
  m.toggle_all();  // none folded: folds them all
  EXPECT_FALSE(m.expanded(1));
}

}  // namespace
}  // namespace zerosim::view
