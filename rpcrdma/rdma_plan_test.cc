// The transport's pure decision functions on hand-built headers: where Read
// chunks land and how they are reinserted, how replies are split over Write
// chunks of several segments, unused Write chunks, Long Replies and
// ERR_CHUNK decisions.
#include "rpcrdma/rdma_plan.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::rpcrdma {
namespace {

std::vector<uint8_t> Encode(const HeaderSpec& spec, std::vector<uint8_t> payload = {}) {
  std::vector<uint8_t> v(EncodedHeaderSize(spec));
  size_t n = 0;
  EXPECT_EQ(EncodeHeader(spec, MutableByteSpan(v), &n), EncodeStatus::kOk);
  v.insert(v.end(), payload.begin(), payload.end());
  return v;
}

std::vector<uint8_t> Words(std::initializer_list<uint32_t> w) {
  std::vector<uint8_t> v;
  for (uint32_t x : w) {
    uint8_t b[4];
    StoreBe32(b, x);
    v.insert(v.end(), b, b + 4);
  }
  return v;
}

TEST(RdmaPlanTest, ReadChunksAreReinsertedAtTheirPositions) {
  // Stream: xid, len=5, [5 bytes + 3 pad by Read chunk], trailer word.
  const ReadSegment rs[] = {{8, {0x10, 5, 0x1000}}};
  HeaderSpec spec;
  spec.xid = 7;
  spec.read_list = rs;
  const std::vector<uint8_t> msg = Encode(spec, Words({7, 5, 0xEEEEEEEE}));
  CallPlan plan;
  ASSERT_EQ(PlanCall(ByteSpan(msg), PlanLimits{}, &plan), CallVerdict::kAccept);
  ASSERT_EQ(plan.chunk_count, 1u);
  EXPECT_EQ(plan.sink_bytes, 5u);
  const uint8_t sink[5] = {1, 2, 3, 4, 5};
  rpc::Message m;
  ASSERT_TRUE(BuildCallMessage(plan, ByteSpan(msg), 11, ByteSpan(sink, 5), 22, &m));
  ASSERT_EQ(m.count(), 3u);
  EXPECT_EQ(m[0].bytes.size(), 8u);
  EXPECT_TRUE(m[1].ddp);
  EXPECT_EQ(m[1].stag, 22u);
  EXPECT_EQ(m[1].bytes.size(), 5u);
  EXPECT_EQ(m[2].bytes.size(), 4u);
  EXPECT_EQ(m.stream_length(), 20u);
}

TEST(RdmaPlanTest, MoreThanThreeReadChunksAndOversizedCallsAreErrChunk) {
  const ReadSegment four[] = {{8, {1, 4, 0}}, {12, {2, 4, 0}}, {16, {3, 4, 0}}, {20, {4, 4, 0}}};
  HeaderSpec spec;
  spec.xid = 1;
  spec.read_list = four;
  CallPlan plan;
  std::vector<uint8_t> msg = Encode(spec, Words({1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(PlanCall(ByteSpan(msg), PlanLimits{}, &plan), CallVerdict::kReplyErrChunk);
  EXPECT_EQ(plan.reason, RdmaError::kTooManyReadChunks);
  const ReadSegment big[] = {{8, {1, 70000, 0}}};
  spec.read_list = big;
  msg = Encode(spec, Words({1, 0}));
  PlanLimits l;
  l.max_call_bytes = 65536;
  EXPECT_EQ(PlanCall(ByteSpan(msg), l, &plan), CallVerdict::kReplyErrChunk);
  EXPECT_EQ(plan.reason, RdmaError::kCallTooLong);
}

TEST(RdmaPlanTest, ResultsFillWriteChunksSegmentBySegmentAndUnusedChunksComeBackEmpty) {
  const Segment c0[] = {{0xA, 100, 0x1000}, {0xB, 4000, 0x9000}};
  const Segment c1[] = {{0xC, 64, 0x2000}};
  const WriteChunkSpec wl[] = {{c0}, {c1}};
  HeaderSpec spec;
  spec.xid = 9;
  spec.write_list = wl;
  const std::vector<uint8_t> msg = Encode(spec, Words({9, 0}));
  CallPlan plan;
  ASSERT_EQ(PlanCall(ByteSpan(msg), PlanLimits{}, &plan), CallVerdict::kAccept);
  std::vector<uint8_t> result(250, 0x33);
  const uint8_t head[8] = {0, 0, 0, 9, 0, 0, 0, 250};
  rpc::Message reply;
  reply.Add(rpc::Piece{ByteSpan(head, 8), false, 0});
  reply.Add(rpc::Piece{ByteSpan(result), true, 5});
  ReplyPlan rp;
  ASSERT_EQ(PlanReply(reply, plan, 1024, &rp), ReplyKind::kInline);
  ASSERT_EQ(rp.write_count, 2u);
  EXPECT_EQ(rp.writes[0].length, 100u);
  EXPECT_EQ(rp.writes[0].dst.offset, 0x1000u);
  EXPECT_EQ(rp.writes[1].length, 150u);
  EXPECT_EQ(rp.writes[1].piece_offset, 100u);
  EXPECT_EQ(rp.stream_length, 8u);
  // The header echoes both chunks: 100 + 150 written, the second unused.
  std::vector<uint8_t> hdr(rp.header_size);
  size_t n = 0;
  ASSERT_EQ(EncodeHeader(rp.Spec(9, 32), MutableByteSpan(hdr), &n), EncodeStatus::kOk);
  HeaderView h;
  ASSERT_EQ(DecodeHeader(ByteSpan(hdr), Limits{}, &h), HeaderError::kOk);
  ASSERT_EQ(h.write_chunk_count(), 2u);
  auto it = h.write_chunks().begin();
  EXPECT_EQ((*it).total_length(), 250u);
  ++it;
  EXPECT_EQ((*it).segment_count(), 1u);
  EXPECT_EQ((*it).total_length(), 0u);
  // A result longer than its Write chunk: ERR_CHUNK.
  std::vector<uint8_t> huge(5000);
  reply.Clear();
  reply.Add(rpc::Piece{ByteSpan(head, 8), false, 0});
  reply.Add(rpc::Piece{ByteSpan(huge), true, 0});
  EXPECT_EQ(PlanReply(reply, plan, 1024, &rp), ReplyKind::kErrChunk);
  EXPECT_EQ(rp.reason, RdmaError::kWriteChunkTooSmall);
}

TEST(RdmaPlanTest, LongReplyGoesThroughTheReplyChunkOrIsErrChunk) {
  const Segment rc[] = {{0xD, 3000, 0x5000}, {0xE, 3000, 0x8000}};
  HeaderSpec spec;
  spec.xid = 4;
  spec.has_reply_chunk = true;
  spec.reply_chunk = rc;
  const std::vector<uint8_t> msg = Encode(spec, Words({4, 0}));
  CallPlan plan;
  ASSERT_EQ(PlanCall(ByteSpan(msg), PlanLimits{}, &plan), CallVerdict::kAccept);
  std::vector<uint8_t> body(5001, 1);
  rpc::Message reply;
  reply.Add(rpc::Piece{ByteSpan(body), true, 0});
  ReplyPlan rp;
  ASSERT_EQ(PlanReply(reply, plan, 4096, &rp), ReplyKind::kReplyChunk);
  EXPECT_EQ(rp.stream_length, 5004u);  // the pad is written in a Long Reply
  ASSERT_EQ(rp.write_count, 2u);
  EXPECT_EQ(rp.writes[0].length, 3000u);
  EXPECT_EQ(rp.writes[1].length, 2004u);
  EXPECT_EQ(rp.writes[1].stream_offset, 3000u);
  std::vector<uint8_t> big(7000, 1);
  reply.Clear();
  reply.Add(rpc::Piece{ByteSpan(big), false, 0});
  EXPECT_EQ(PlanReply(reply, plan, 4096, &rp), ReplyKind::kErrChunk);
  EXPECT_EQ(rp.reason, RdmaError::kReplyTooLong);
}

TEST(RdmaPlanTest, ReplyLongerThanOfferedIsRefusedByTheClient) {
  const Segment w0[] = {{0xA, 500, 0}};
  const WriteChunkSpec wl[] = {{w0}};
  HeaderSpec spec;
  spec.xid = 3;
  spec.write_list = wl;
  const std::vector<uint8_t> msg = Encode(spec, Words({3, 1}));
  OfferedChunks offer;
  offer.write_count = 1;
  offer.write_segments[0] = 1;
  offer.write_lengths[0] = 400;
  ReplyParse p;
  EXPECT_EQ(CheckReplyAgainstOffer(ByteSpan(msg), CheckOptions{}, offer, &p), ReplyVerdict::kDrop);
  EXPECT_EQ(p.reason, RdmaError::kReplyBadWriteList);
  offer.write_lengths[0] = 500;
  EXPECT_EQ(CheckReplyAgainstOffer(ByteSpan(msg), CheckOptions{}, offer, &p), ReplyVerdict::kAccept);
  EXPECT_EQ(p.result_lengths[0], 500u);
}

}  // namespace
}  // namespace iwarp::rpcrdma
