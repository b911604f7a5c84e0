// Scatter/gather lists on the engine's work requests: Sends and Writes
// gather up to kMaxSge SGEs into the same DDP segments one SGE of the summed
// length gives, receives scatter untagged placement over their SGEs (a
// segment may straddle SGEs), "message too long" is judged against the SGE
// sum (RFC 5041 7.2), a Read takes one sink SGE (RFC 5040 4.4) and every SGE
// is checked before use.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"

namespace iwarp::engine {
namespace {

using tcp::testing::Pattern;
using testing::Pair;

constexpr uint64_t kBase = 0x10000;

SgeList List(std::initializer_list<LocalSge> l) {
  SgeList s;
  for (const LocalSge& e : l) EXPECT_TRUE(s.Add(e));
  return s;
}

// One Send of `src` (laid out over `sge_lens` SGEs in two source regions, or
// one SGE when sge_lens has one entry) into a single receive buffer; returns
// the FPDU sizes on the wire and checks the bytes placed.
std::vector<size_t> SendOver(const std::vector<uint32_t>& sge_lens, WrOpcode op,
                             const QpOptions& oa = {}) {
  std::vector<size_t> sizes;  // TCP payload sizes a emits in Full Operation
  Pair p(oa, QpOptions{});
  EXPECT_TRUE(p.Establish());
  p.a.port->mutate = [&](std::vector<uint8_t>& b, size_t hl) {
    if (b.size() > hl && p.a.qp->state() == QpState::kRts) sizes.push_back(b.size() - hl);
  };
  uint32_t total = 0;
  for (uint32_t l : sge_lens) total += l;
  const std::vector<uint8_t> data = Pattern(total, 77);
  // Two regions with a gap of unrelated bytes before each SGE: a gather that
  // read past an SGE would carry the 0x5A filler.
  const uint32_t r1 = p.a.mem.Register(total + 4096, 0);
  const uint32_t r2 = p.a.mem.Register(total + 4096, 0);
  std::memset(p.a.mem.Bytes(r1).data(), 0x5A, total + 4096);
  std::memset(p.a.mem.Bytes(r2).data(), 0x5A, total + 4096);
  SgeList l;
  uint32_t off = 0;
  for (size_t i = 0; i < sge_lens.size(); ++i) {
    const uint32_t region = i % 2 == 0 ? r1 : r2;
    const uint64_t at = 100 + 37 * i + off;  // never adjacent to the previous SGE
    std::memcpy(p.a.mem.Bytes(region).data() + at, data.data() + off, sge_lens[i]);
    EXPECT_TRUE(l.Add(LocalSge{region, kBase + at, sge_lens[i]}));
    off += sge_lens[i];
  }
  const uint32_t sink = p.b.mem.Register(total, ddp::kAccessLocalWrite | ddp::kAccessRemoteWrite);
  if (op == WrOpcode::kRdmaWrite) {
    EXPECT_EQ(p.a.qp->PostSend(SendWr{1, op, l, sink, kBase}), PostStatus::kOk);
  } else {
    EXPECT_EQ(p.b.qp->PostRecv(RecvWr{50, LocalSge{sink, kBase, total}}), PostStatus::kOk);
    EXPECT_EQ(p.a.qp->PostSend(SendWr{1, op, l}), PostStatus::kOk);
  }
  EXPECT_TRUE(p.RunUntil([&] { return !p.a.cqes.empty(); }, 50'000'000));
  p.RunUntil([&] { return op == WrOpcode::kRdmaWrite || !p.b.cqes.empty(); }, 5'000'000);
  EXPECT_EQ(p.a.cqes.size(), 1u);
  if (!p.a.cqes.empty()) {
    EXPECT_EQ(p.a.cqes[0].status, WcStatus::kSuccess) << WcStatusName(p.a.cqes[0].status);
    EXPECT_EQ(p.a.cqes[0].byte_len, total);
  }
  if (op != WrOpcode::kRdmaWrite) {
    EXPECT_EQ(p.b.cqes.size(), 1u);
    if (!p.b.cqes.empty()) {
      EXPECT_EQ(p.b.cqes[0].byte_len, total);
    }
  }
  const MutableByteSpan got = p.b.mem.Bytes(sink);
  EXPECT_EQ(std::memcmp(got.data(), data.data(), total), 0) << "placed bytes differ";
  EXPECT_TRUE(p.b.mem.GuardsIntact());
  EXPECT_EQ(p.a.qp->stats().terminates_sent + p.b.qp->stats().terminates_sent, 0u);
  p.a.port->mutate = nullptr;
  return sizes;
}

// Gathered Sends and Writes produce exactly the segments of one SGE of the
// summed length: full MULPDU segments (INTEROP.md: one FPDU per TCP segment
// sized to the EMSS), whatever the SGE boundaries, zero-length SGEs included.
TEST(QpSge, GatherSendAndWriteKeepFullSegments) {
  const std::vector<std::vector<uint32_t>> layouts = {
      {1000, 0, 3333, 2000},  // boundaries inside segments, one empty SGE
      {1, 1, 1, 9000},        // tiny SGEs inside the first segment
      {4500, 4500},           // SGEs larger than the MULPDU, not multiples of it
      {0, 6333, 0, 0},        // one non-empty SGE among empty ones
  };
  for (WrOpcode op : {WrOpcode::kSend, WrOpcode::kRdmaWrite}) {
    for (const std::vector<uint32_t>& layout : layouts) {
      uint32_t total = 0;
      for (uint32_t l : layout) total += l;
      const std::vector<size_t> one = SendOver({total}, op);
      const std::vector<size_t> many = SendOver(layout, op);
      ASSERT_GE(one.size(), 2u);  // several segments: the boundaries matter
      EXPECT_EQ(many, one) << "op " << int(op) << " first SGE " << layout[0];
    }
  }
}

// Gather staging given by the caller (one buffer for all the QPs a thread
// runs) gives the same segments and bytes as the QP's own buffer.
TEST(QpSge, CallerStagingGathersTheSame) {
  std::vector<uint8_t> staging(kGatherStagingSize, 0xEE);
  QpOptions o;
  o.gather_staging = MutableByteSpan(staging.data(), staging.size());
  for (WrOpcode op : {WrOpcode::kSend, WrOpcode::kRdmaWrite}) {
    EXPECT_EQ(SendOver({1000, 0, 3333, 2000}, op, o), SendOver({6333}, op));
  }
}

// Two QPs of one thread share one staging buffer while both send gathered
// messages, their segments interleaved: each peer gets its own bytes.
TEST(QpSge, SharedStagingAcrossInterleavedQps) {
  std::vector<uint8_t> staging(kGatherStagingSize);
  QpOptions o;
  o.gather_staging = MutableByteSpan(staging.data(), staging.size());
  constexpr uint32_t kHalf = 20'001;  // every segment but a few straddles nothing
  Pair p1(o, QpOptions{});
  Pair p2(o, QpOptions{});
  ASSERT_TRUE(p1.Establish());
  ASSERT_TRUE(p2.Establish());
  std::vector<uint8_t> want[2];
  uint32_t sinks[2];
  Pair* pairs[2] = {&p1, &p2};
  for (int k = 0; k < 2; ++k) {
    Pair& p = *pairs[k];
    want[k] = Pattern(2 * kHalf, 11 + k);
    // Three SGEs with the middle one 3 bytes long: segments straddle both
    // boundaries, so both QPs gather.
    const uint32_t r = p.a.mem.Register(2 * kHalf + 64, 0);
    std::memcpy(p.a.mem.Bytes(r).data(), want[k].data(), kHalf);
    std::memcpy(p.a.mem.Bytes(r).data() + kHalf + 16, want[k].data() + kHalf, 3);
    std::memcpy(p.a.mem.Bytes(r).data() + kHalf + 32, want[k].data() + kHalf + 3, kHalf - 3);
    const SgeList l = List({LocalSge{r, kBase, kHalf}, LocalSge{r, kBase + kHalf + 16, 3},
                            LocalSge{r, kBase + kHalf + 32, kHalf - 3}});
    sinks[k] = p.b.mem.Register(2 * kHalf, ddp::kAccessLocalWrite);
    ASSERT_EQ(p.b.qp->PostRecv(RecvWr{5, LocalSge{sinks[k], kBase, 2 * kHalf}}), PostStatus::kOk);
    ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSend, l}), PostStatus::kOk);
  }
  // Small slices of each link in turn, so the two QPs' segments interleave.
  int rounds = 0;
  for (; rounds < 2000 && (p1.b.cqes.empty() || p2.b.cqes.empty()); ++rounds) {
    p1.RunUntil([&] { return !p1.b.cqes.empty(); }, 5);
    p2.RunUntil([&] { return !p2.b.cqes.empty(); }, 5);
  }
  EXPECT_GT(rounds, 3) << "the two messages did not interleave";
  for (int k = 0; k < 2; ++k) {
    Pair& p = *pairs[k];
    ASSERT_EQ(p.b.cqes.size(), 1u) << "pair " << k;
    EXPECT_EQ(p.b.cqes[0].status, WcStatus::kSuccess);
    EXPECT_EQ(p.b.cqes[0].byte_len, 2 * kHalf);
    EXPECT_EQ(std::memcmp(p.b.mem.Bytes(sinks[k]).data(), want[k].data(), 2 * kHalf), 0)
        << "pair " << k << " placed bytes differ";
  }
}

// max_send_sge (verbs' cap): more SGEs than it are refused at post, fewer
// are fine; Create() checks the cap and the staging size.
TEST(QpSge, MaxSendSgeCapsWorkRequests) {
  QpOptions o;
  o.max_send_sge = 1;
  Pair p(o, QpOptions{});
  ASSERT_TRUE(p.Establish());
  const uint32_t r = p.a.mem.Register(4096, 0);
  const uint32_t sink = p.b.mem.Register(4096, ddp::kAccessLocalWrite | ddp::kAccessRemoteWrite);
  EXPECT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kRdmaWrite,
                                    List({LocalSge{r, kBase, 100}, LocalSge{r, kBase + 200, 100}}),
                                    sink, kBase}),
            PostStatus::kInvalidWr);
  EXPECT_EQ(p.a.qp->PostSend(SendWr{2, WrOpcode::kRdmaWrite, LocalSge{r, kBase, 100}, sink, kBase}),
            PostStatus::kOk);
  EXPECT_TRUE(p.RunUntil([&] { return !p.a.cqes.empty(); }, 5'000'000));
  ASSERT_EQ(p.a.cqes.size(), 1u);
  EXPECT_EQ(p.a.cqes[0].wr_id, 2u);
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kSuccess);

  for (uint32_t bad : {0u, kMaxSge + 1}) {
    QpOptions b;
    b.max_send_sge = bad;
    EXPECT_FALSE(Qp::Create(b, *p.a.stack, p.a.mem, p.a.obs).ok()) << bad;
  }
  std::vector<uint8_t> small(kGatherStagingSize - 1);
  QpOptions s;
  s.gather_staging = MutableByteSpan(small.data(), small.size());
  EXPECT_FALSE(Qp::Create(s, *p.a.stack, p.a.mem, p.a.obs).ok());
}

// A receive of several SGEs: segments straddling SGE boundaries land in the
// right bytes of the right regions, nothing outside the SGEs is touched.
TEST(QpSge, ScatterReceiveStraddlesSges) {
  Pair p(QpOptions{}, QpOptions{});
  ASSERT_TRUE(p.Establish());
  constexpr uint32_t kLen = 7000;
  const std::vector<uint8_t> data = Pattern(kLen, 5);
  const uint32_t src = p.a.mem.Register(kLen, 0);
  std::memcpy(p.a.mem.Bytes(src).data(), data.data(), kLen);
  const uint32_t r1 = p.b.mem.Register(8192, ddp::kAccessLocalWrite);
  const uint32_t r2 = p.b.mem.Register(8192, ddp::kAccessLocalWrite, 0x900000);
  // 7 | (empty) | 1500 | 6000: the first segment straddles 7/1500, the
  // second 1507/6000. The SGE sum (7507) is larger than the message.
  const SgeList l = List({LocalSge{r1, kBase + 10, 7}, LocalSge{r2, 0x900000, 0},
                          LocalSge{r2, 0x900000 + 3, 1500}, LocalSge{r1, kBase + 100, 6000}});
  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{9, l}), PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSendSe, LocalSge{src, kBase, kLen}}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return !p.b.cqes.empty() && !p.a.cqes.empty(); }, 5'000'000));
  ASSERT_EQ(p.b.cqes.size(), 1u);
  EXPECT_EQ(p.b.cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(p.b.cqes[0].byte_len, kLen);
  EXPECT_EQ(p.b.cqes[0].flags & kWcSolicited, kWcSolicited);
  const uint8_t* b1 = p.b.mem.Bytes(r1).data();
  const uint8_t* b2 = p.b.mem.Bytes(r2).data();
  EXPECT_EQ(std::memcmp(b1 + 10, data.data(), 7), 0);
  EXPECT_EQ(std::memcmp(b2 + 3, data.data() + 7, 1500), 0);
  EXPECT_EQ(std::memcmp(b1 + 100, data.data() + 1507, kLen - 1507), 0);
  // Untouched: around the SGEs and past the message end in the last SGE.
  for (size_t i = 0; i < 10; ++i) ASSERT_EQ(b1[i], 0) << i;
  for (size_t i = 17; i < 100; ++i) ASSERT_EQ(b1[i], 0) << i;
  for (size_t i = 100 + kLen - 1507; i < 8192; ++i) ASSERT_EQ(b1[i], 0) << i;
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(b2[i], 0) << i;
  for (size_t i = 1503; i < 8192; ++i) ASSERT_EQ(b2[i], 0) << i;
  EXPECT_TRUE(p.b.mem.GuardsIntact());
  EXPECT_EQ(p.b.qp->stats().bytes_placed, kLen);
}

// RFC 5041 7.2: a Send longer than the posted buffer (the SGE sum) is a DDP
// untagged "message too long" error, even though each SGE alone would hold
// a segment.
TEST(QpSge, MessageTooLongAgainstSgeSum) {
  Pair p(QpOptions{}, QpOptions{});
  ASSERT_TRUE(p.Establish());
  const uint32_t src = p.a.mem.Register(3000, 0);
  const uint32_t r = p.b.mem.Register(4096, ddp::kAccessLocalWrite);
  ASSERT_EQ(p.b.qp->PostRecv(
                RecvWr{9, List({LocalSge{r, kBase, 1000}, LocalSge{r, kBase + 2000, 1000}})}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{src, kBase, 2001}}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return !p.a.obs.term_received.empty(); }, 5'000'000));
  const rdmap::TerminateCode want{rdmap::kLayerDdp, ddp::kEtypeUntaggedBuffer, 0x05};
  ASSERT_TRUE(p.b.qp->terminate_sent().has_value());
  EXPECT_EQ(*p.b.qp->terminate_sent(), want) << rdmap::TerminateCodeName(*p.b.qp->terminate_sent());
  EXPECT_EQ(p.a.obs.term_received[0], want);
  p.RunUntil([&] { return !p.a.cqes.empty() && !p.b.cqes.empty(); }, 1'000'000);
  ASSERT_EQ(p.b.cqes.size(), 1u);
  EXPECT_EQ(p.b.cqes[0].status, WcStatus::kFlushed);
  // Nothing was placed beyond the SGEs (the gap between them stays zero).
  const uint8_t* b = p.b.mem.Bytes(r).data();
  for (size_t i = 1000; i < 2000; ++i) ASSERT_EQ(b[i], 0) << i;
  for (size_t i = 3000; i < 4096; ++i) ASSERT_EQ(b[i], 0) << i;

  // Exactly the sum fits.
  Pair q(QpOptions{}, QpOptions{});
  ASSERT_TRUE(q.Establish());
  const uint32_t src2 = q.a.mem.Register(3000, 0);
  const uint32_t r2 = q.b.mem.Register(4096, ddp::kAccessLocalWrite);
  ASSERT_EQ(q.b.qp->PostRecv(
                RecvWr{9, List({LocalSge{r2, kBase, 1000}, LocalSge{r2, kBase + 2000, 1000}})}),
            PostStatus::kOk);
  ASSERT_EQ(q.a.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{src2, kBase, 2000}}),
            PostStatus::kOk);
  ASSERT_TRUE(q.RunUntil([&] { return !q.b.cqes.empty(); }, 5'000'000));
  EXPECT_EQ(q.b.cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(q.b.cqes[0].byte_len, 2000u);
  EXPECT_FALSE(q.b.qp->terminate_sent().has_value());
}

// RFC 5040 4.4: one sink STag/TO per Read Request. Two non-empty sink SGEs
// that are not one contiguous range of one STag are refused at post (nothing
// queued); empty SGEs around one sink and contiguous pieces are fine.
TEST(QpSge, ReadTakesOneSinkSge) {
  Pair p(QpOptions{}, QpOptions{});
  ASSERT_TRUE(p.Establish());
  const uint32_t sink = p.a.mem.Register(4096, ddp::kAccessAll);
  const uint32_t rsrc = p.b.mem.Register(2048, ddp::kAccessRemoteRead, 0x500000);
  const std::vector<uint8_t> data = Pattern(2048, 9);
  std::memcpy(p.b.mem.Bytes(rsrc).data(), data.data(), data.size());
  const SgeList two = List({LocalSge{sink, kBase, 1024}, LocalSge{sink, kBase + 2048, 1024}});
  EXPECT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kRdmaRead, two, rsrc, 0x500000}),
            PostStatus::kInvalidWr);
  SgeList five;
  five.num_sge = kMaxSge + 1;
  EXPECT_EQ(p.a.qp->PostSend(SendWr{2, WrOpcode::kSend, five}), PostStatus::kInvalidWr);
  EXPECT_EQ(p.b.qp->PostRecv(RecvWr{3, five}), PostStatus::kInvalidWr);
  const SgeList one = List({LocalSge{0xdead, 0, 0}, LocalSge{sink, kBase + 100, 2048}, LocalSge{}});
  ASSERT_EQ(p.a.qp->PostSend(SendWr{4, WrOpcode::kRdmaRead, one, rsrc, 0x500000}), PostStatus::kOk);
  // Contiguous sink SGEs of one STag are one buffer: merged.
  const SgeList split = List({LocalSge{sink, kBase + 3000, 500}, LocalSge{sink, kBase + 3500, 0},
                              LocalSge{sink, kBase + 3500, 548}});
  ASSERT_EQ(p.a.qp->PostSend(SendWr{5, WrOpcode::kRdmaRead, split, rsrc, 0x500000 + 1000}),
            PostStatus::kOk);
  // Contiguous TOs but another STag: two buffers, refused.
  const uint32_t sink2 = p.a.mem.Register(4096, ddp::kAccessAll, kBase + 4096);
  EXPECT_EQ(p.a.qp->PostSend(
                SendWr{6, WrOpcode::kRdmaRead,
                       List({LocalSge{sink, kBase + 4000, 96}, LocalSge{sink2, kBase + 4096, 4}}),
                       rsrc, 0x500000}),
            PostStatus::kInvalidWr);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.cqes.size() >= 2; }, 5'000'000));
  ASSERT_EQ(p.a.cqes.size(), 2u);  // the refused ones left no trace
  EXPECT_EQ(p.a.cqes[0].wr_id, 4u);
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(p.a.cqes[0].byte_len, 2048u);
  EXPECT_EQ(p.a.cqes[1].wr_id, 5u);
  EXPECT_EQ(p.a.cqes[1].status, WcStatus::kSuccess);
  EXPECT_EQ(p.a.cqes[1].byte_len, 1048u);
  const uint8_t* b = p.a.mem.Bytes(sink).data();
  EXPECT_EQ(std::memcmp(b + 100, data.data(), 2048), 0);
  EXPECT_EQ(b[99], 0);
  EXPECT_EQ(b[2148], 0);
  EXPECT_EQ(std::memcmp(b + 3000, data.data() + 1000, 1048), 0);
  EXPECT_EQ(b[2999], 0);
  EXPECT_EQ(b[4048], 0);
}

// Each SGE is checked: a bad one in a gather list completes that Send with
// the local protection error before anything is sent (the next one goes);
// a bad one in a receive list completes that receive with it (the stream
// ends with a local catastrophic Terminate) and its memory stays untouched.
TEST(QpSge, BadSgeIsALocalProtectionError) {
  Pair p(QpOptions{}, QpOptions{});
  ASSERT_TRUE(p.Establish());
  const uint32_t src = p.a.mem.Register(4096, 0);
  const uint32_t other_pd = p.a.mem.Register(4096, 0, kBase, /*pd=*/7);
  const uint32_t r = p.b.mem.Register(4096, ddp::kAccessLocalWrite);
  const uint32_t ro = p.b.mem.Register(4096, ddp::kAccessRemoteRead);  // no local write
  std::memset(p.a.mem.Bytes(src).data(), 0x11, 4096);
  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{20, LocalSge{r, kBase, 4096}}), PostStatus::kOk);
  // Out of bounds in SGE 3, other PD in SGE 2, unknown STag in SGE 4.
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSend,
                                    List({LocalSge{src, kBase, 100}, LocalSge{src, kBase, 100},
                                          LocalSge{src, kBase + 4000, 200}})}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{
                2, WrOpcode::kRdmaWrite,
                List({LocalSge{src, kBase, 100}, LocalSge{other_pd, kBase, 100}}), r, kBase}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{3, WrOpcode::kSend,
                                    List({LocalSge{src, kBase, 10}, LocalSge{src, kBase, 10},
                                          LocalSge{src, kBase, 10}, LocalSge{0x7777, kBase, 10}})}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{4, WrOpcode::kSend,
                                    List({LocalSge{src, kBase, 10}, LocalSge{src, kBase, 20}})}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.cqes.size() == 4 && p.b.cqes.size() == 1; }, 5'000'000));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.a.cqes[i].wr_id, uint64_t(i + 1));
    EXPECT_EQ(p.a.cqes[i].status, WcStatus::kLocalProtection) << i;
  }
  EXPECT_EQ(p.a.cqes[3].status, WcStatus::kSuccess);
  EXPECT_EQ(p.b.cqes[0].wr_id, 20u);
  EXPECT_EQ(p.b.cqes[0].byte_len, 30u);  // only Send 4 arrived
  EXPECT_EQ(p.b.qp->stats().bytes_placed, 30u);

  // Receive side: the second SGE lacks local write; the Send reaches it.
  ASSERT_EQ(
      p.b.qp->PostRecv(RecvWr{21, List({LocalSge{r, kBase + 1000, 16}, LocalSge{ro, kBase, 64}})}),
      PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{5, WrOpcode::kSend, LocalSge{src, kBase, 40}}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return p.b.cqes.size() == 2 && p.a.cqes.size() == 5; }, 5'000'000));
  EXPECT_EQ(p.b.cqes[1].wr_id, 21u);
  EXPECT_EQ(p.b.cqes[1].status, WcStatus::kLocalProtection) << WcStatusName(p.b.cqes[1].status);
  ASSERT_TRUE(p.b.qp->terminate_sent().has_value());
  EXPECT_EQ(*p.b.qp->terminate_sent(), rdmap::codes::kLocalCatastrophic);
  for (uint8_t x : p.b.mem.Bytes(ro)) ASSERT_EQ(x, 0);
  EXPECT_TRUE(p.b.mem.GuardsIntact());
}

}  // namespace
}  // namespace iwarp::engine
