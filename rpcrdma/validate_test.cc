#include "rpcrdma/validate.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::rpcrdma {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Words(std::initializer_list<uint32_t> words) {
  Bytes b;
  for (uint32_t w : words) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(w >> shift));
  }
  return b;
}

// Transport header for `spec`, then an RPC message of `rpc_len` bytes that
// starts with `rpc_xid`.
Bytes Message(const HeaderSpec& spec, size_t rpc_len, uint32_t rpc_xid) {
  Bytes out(EncodedHeaderSize(spec));
  size_t n = 0;
  EXPECT_EQ(EncodeHeader(spec, out, &n), EncodeStatus::kOk);
  Bytes rpc(rpc_len, 0x5a);
  Bytes x = Words({rpc_xid});
  for (size_t i = 0; i < rpc_len && i < 4; ++i) rpc[i] = x[i];
  out.insert(out.end(), rpc.begin(), rpc.end());
  return out;
}

HeaderSpec Msg(uint32_t xid) {
  HeaderSpec s;
  s.xid = xid;
  s.credit = 32;
  return s;
}

void ExpectCall(const Bytes& m, CallVerdict v, HeaderError reason,
                const CheckOptions& o = CheckOptions{}) {
  CallCheck c = CheckCall(m, o);
  EXPECT_EQ(c.verdict, v) << HeaderErrorName(c.reason);
  EXPECT_EQ(c.reason, reason) << HeaderErrorName(c.reason) << " != " << HeaderErrorName(reason);
}

TEST(CheckCallTest, AcceptsShortCallAndReportsPayloadOffset) {
  Bytes m = Message(Msg(0x0badcafe), 40, 0x0badcafe);
  CallCheck c = CheckCall(m, CheckOptions{});
  ASSERT_EQ(c.verdict, CallVerdict::kAccept);
  EXPECT_EQ(c.reason, HeaderError::kOk);
  EXPECT_EQ(c.header.header_size(), 28u);
  EXPECT_EQ(c.header.payload().size(), 40u);
  EXPECT_EQ(c.header.payload().data(), m.data() + 28);
  std::array<uint8_t, 32> out{};
  EXPECT_EQ(BuildErrorReply(c, 16, out), 0u);  // nothing to send
}

TEST(CheckCallTest, ShorterThan28BytesIsDroppedUnparsed) {
  // RFC 8166 4.5. Linux svcrdma parses from 16 bytes on and may answer;
  // the RFC says the XID of such a message cannot be trusted.
  ExpectCall(Words({1, 1, 1, 0, 0, 0}), CallVerdict::kDrop, HeaderError::kShortMessage);
  ExpectCall(Words({1, 2, 1, 0, 0, 0}), CallVerdict::kDrop, HeaderError::kShortMessage);
  ExpectCall(Words({1, 1, 1, 3}), CallVerdict::kDrop, HeaderError::kShortMessage);
  ExpectCall(Words({1, 1, 1, 4, 2}), CallVerdict::kDrop, HeaderError::kShortMessage);
  ExpectCall(Bytes{}, CallVerdict::kDrop, HeaderError::kShortMessage);
  Bytes m = Message(Msg(7), 8, 7);
  m.resize(27);
  ExpectCall(m, CallVerdict::kDrop, HeaderError::kShortMessage);
}

TEST(CheckCallTest, BadVersionGetsErrVersEchoingXidAndVersion) {
  HeaderSpec s = Msg(0x11223344);
  s.vers = 2;
  CallCheck c = CheckCall(Message(s, 8, 0x11223344), CheckOptions{});
  ASSERT_EQ(c.verdict, CallVerdict::kReplyErrVers);
  EXPECT_EQ(c.reason, HeaderError::kBadVersion);
  std::array<uint8_t, 64> out{};
  ASSERT_EQ(BuildErrorReply(c, 64, out), kErrVersSize);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + kErrVersSize),
            Words({0x11223344,  // rdma_xid of the failing call
                   2,           // its rdma_vers (RFC 8166 4.5)
                   64,          // our credit grant
                   4,           // RDMA_ERROR
                   1,           // ERR_VERS
                   1, 1}));     // we support 1..1
  EXPECT_EQ(BuildErrorReply(c, 64, std::span(out).first(kErrVersSize - 1)), 0u);
  // Version 0 and a version-2 header whose body we cannot parse: same answer.
  ExpectCall(Words({1, 0, 1, 0, 0, 0, 0}), CallVerdict::kReplyErrVers, HeaderError::kBadVersion);
  ExpectCall(Words({1, 2, 1, 0, 7, 7, 7}), CallVerdict::kReplyErrVers, HeaderError::kBadVersion);
  // A version-2 header with a procedure unknown to version 1: still ERR_VERS.
  ExpectCall(Words({1, 2, 1, 9, 0, 0, 0}), CallVerdict::kReplyErrVers, HeaderError::kBadVersion);
}

TEST(CheckCallTest, ErrorAndDoneReceivedByAServerAreDropped) {
  ExpectCall(Words({1, 1, 1, 4, 1, 1, 1}), CallVerdict::kDrop, HeaderError::kErrorReceived);
  // ERR_CHUNK padded to 28 bytes, and an undecodable error code.
  ExpectCall(Words({1, 1, 1, 4, 2, 0, 0}), CallVerdict::kDrop, HeaderError::kErrorReceived);
  ExpectCall(Words({1, 1, 1, 4, 9, 0, 0}), CallVerdict::kDrop, HeaderError::kErrorReceived);
  // RDMA_ERROR's value is fixed for all versions: never answered, even with
  // a version we do not speak (Linux svcrdma would send ERR_VERS here).
  ExpectCall(Words({1, 2, 1, 4, 1, 2, 2}), CallVerdict::kDrop, HeaderError::kErrorReceived);
  ExpectCall(Words({1, 1, 1, 3, 0, 0, 0}), CallVerdict::kDrop, HeaderError::kDoneReceived);
}

TEST(CheckCallTest, MsgpUnknownProcAndXdrErrorsGetErrChunk) {
  CallCheck c = CheckCall(Words({0xabcd, 1, 1, 2, 0, 0, 0, 0, 0}), CheckOptions{});
  ASSERT_EQ(c.verdict, CallVerdict::kReplyErrChunk);
  EXPECT_EQ(c.reason, HeaderError::kMsgpUnsupported);
  std::array<uint8_t, 32> out{};
  ASSERT_EQ(BuildErrorReply(c, 5, out), kErrChunkSize);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + kErrChunkSize),
            Words({0xabcd, 1, 5,
                   4,    // RDMA_ERROR
                   2}));  // ERR_CHUNK

  ExpectCall(Words({1, 1, 1, 5, 0, 0, 0}), CallVerdict::kReplyErrChunk, HeaderError::kUnknownProc);
  ExpectCall(Words({1, 1, 1, 0, 3, 0, 0}), CallVerdict::kReplyErrChunk,
             HeaderError::kBadDiscriminator);
  // Read entry announced but cut short.
  ExpectCall(Words({1, 1, 1, 0, 1, 8, 0}), CallVerdict::kReplyErrChunk, HeaderError::kTruncated);

  CheckOptions small;
  small.limits = Limits{.max_read_segments = 1, .max_write_chunks = 1, .max_segments_per_chunk = 1};
  std::array<ReadSegment, 2> reads = {{{8, {1, 4, 0}}, {8, {2, 4, 0}}}};
  HeaderSpec s = Msg(3);
  s.read_list = reads;
  ExpectCall(Message(s, 64, 3), CallVerdict::kReplyErrChunk, HeaderError::kTooManyReadSegments,
             small);
  std::array<Segment, 2> segs = {{{1, 1, 1}, {2, 2, 2}}};
  std::array<WriteChunkSpec, 2> two_chunks = {{{std::span(segs).first(1)}, {}}};
  s = Msg(3);
  s.write_list = two_chunks;
  ExpectCall(Message(s, 8, 3), CallVerdict::kReplyErrChunk, HeaderError::kTooManyWriteChunks,
             small);
  std::array<WriteChunkSpec, 1> wide_chunk = {{{segs}}};
  s.write_list = wide_chunk;
  ExpectCall(Message(s, 8, 3), CallVerdict::kReplyErrChunk, HeaderError::kTooManyWriteSegments,
             small);
  s = Msg(3);
  s.has_reply_chunk = true;
  s.reply_chunk = segs;
  ExpectCall(Message(s, 8, 3), CallVerdict::kReplyErrChunk, HeaderError::kTooManyReplySegments,
             small);
}

TEST(CheckCallTest, ReadPositionsMustBeXdrAligned) {
  for (uint32_t pos : {113u, 114u, 115u, 2u}) {
    std::array<ReadSegment, 1> reads = {{{pos, {1, 100, 0}}}};
    HeaderSpec s = Msg(3);
    s.read_list = reads;
    ExpectCall(Message(s, 200, 3), CallVerdict::kReplyErrChunk,
               HeaderError::kReadPositionMisaligned);
  }
  std::array<ReadSegment, 1> ok = {{{116, {1, 100, 0}}}};
  HeaderSpec s = Msg(3);
  s.read_list = ok;
  ExpectCall(Message(s, 200, 3), CallVerdict::kAccept, HeaderError::kOk);
}

TEST(CheckCallTest, PositionZeroChunkRules) {
  // RDMA_MSG carries its Payload inline: a Position Zero chunk contradicts it.
  std::array<ReadSegment, 2> pz = {{{0, {1, 300, 0}}, {0, {2, 100, 0}}}};
  HeaderSpec s = Msg(3);
  s.read_list = pz;
  ExpectCall(Message(s, 64, 3), CallVerdict::kReplyErrChunk, HeaderError::kPositionZeroInMsg);
  // RDMA_NOMSG: the same list is a Long Call.
  s.proc = Proc::kNomsg;
  ExpectCall(Message(s, 0, 0), CallVerdict::kAccept, HeaderError::kOk);
  // Long Call plus a reduced data item at Position 16 (NFS WRITE as a Long Call).
  std::array<ReadSegment, 2> pz_and_data = {{{0, {1, 300, 0}}, {16, {2, 8192, 0}}}};
  s.read_list = pz_and_data;
  ExpectCall(Message(s, 0, 0), CallVerdict::kAccept, HeaderError::kOk);
  // RDMA_NOMSG whose read list has no Position Zero chunk: nowhere to find the call.
  std::array<ReadSegment, 1> data_only = {{{16, {2, 8192, 0}}}};
  s.read_list = data_only;
  ExpectCall(Message(s, 0, 0), CallVerdict::kReplyErrChunk, HeaderError::kNomsgNoCallChunk);
  // RDMA_NOMSG with only a Reply chunk: same.
  std::array<Segment, 1> reply = {{{9, 4096, 0}}};
  s.read_list = {};
  s.has_reply_chunk = true;
  s.reply_chunk = reply;
  ExpectCall(Message(s, 0, 0), CallVerdict::kReplyErrChunk, HeaderError::kNomsgNoCallChunk);
  // RDMA_NOMSG with all lists absent (RFC 8166 4.5.2's own example).
  ExpectCall(Words({1, 1, 1, 1, 0, 0, 0}), CallVerdict::kReplyErrChunk,
             HeaderError::kNomsgNoChunks);
}

TEST(CheckCallTest, ReadChunksMustNotOverlapAndMustFitThePayload) {
  HeaderSpec s = Msg(3);
  // Chunk at 8 of 10 bytes occupies 8..20 (12 with round-up); 16 overlaps it.
  std::array<ReadSegment, 2> overlap = {{{8, {1, 10, 0}}, {16, {2, 4, 0}}}};
  s.read_list = overlap;
  ExpectCall(Message(s, 64, 3), CallVerdict::kReplyErrChunk, HeaderError::kReadChunkOverlap);
  // At 20 it does not; list order does not matter (chunks sort by Position).
  std::array<ReadSegment, 2> adjacent = {{{20, {2, 4, 0}}, {8, {1, 10, 0}}}};
  s.read_list = adjacent;
  ExpectCall(Message(s, 64, 3), CallVerdict::kAccept, HeaderError::kOk);

  // One chunk at 112: the inline payload must reach offset 112.
  std::array<ReadSegment, 1> at112 = {{{112, {1, 4096, 0}}}};
  s.read_list = at112;
  ExpectCall(Message(s, 112, 3), CallVerdict::kAccept, HeaderError::kOk);
  ExpectCall(Message(s, 108, 3), CallVerdict::kReplyErrChunk,
             HeaderError::kReadPositionBeyondPayload);
  // Two chunks: 8 (100 bytes removed) then 200, which is 100 in the reduced payload.
  std::array<ReadSegment, 2> two = {{{8, {1, 100, 0}}, {200, {2, 5, 0}}}};
  s.read_list = two;
  ExpectCall(Message(s, 100, 3), CallVerdict::kAccept, HeaderError::kOk);
  ExpectCall(Message(s, 99, 3), CallVerdict::kReplyErrChunk,
             HeaderError::kReadPositionBeyondPayload);
  // A 5-byte item at 8 took 8 bytes (with its XDR padding) out of the
  // payload, so a chunk at 16 is reinserted at 8: the payload's very end.
  std::array<ReadSegment, 2> padded = {{{8, {1, 5, 0}}, {16, {2, 5, 0}}}};
  s.read_list = padded;
  ExpectCall(Message(s, 8, 3), CallVerdict::kAccept, HeaderError::kOk);
  ExpectCall(Message(s, 7, 3), CallVerdict::kReplyErrChunk,
             HeaderError::kReadPositionBeyondPayload);
  // And the padding counts for overlap: 8 + 5 rounds up to 16, so 12 overlaps.
  std::array<ReadSegment, 2> into_padding = {{{8, {1, 5, 0}}, {12, {2, 5, 0}}}};
  s.read_list = into_padding;
  ExpectCall(Message(s, 64, 3), CallVerdict::kReplyErrChunk, HeaderError::kReadChunkOverlap);
}

TEST(CheckCallTest, InlineRpcMustCarryTheSameXid) {
  for (size_t len : {0u, 1u, 3u}) {
    ExpectCall(Message(Msg(0x42), len, 0x42), CallVerdict::kReplyErrChunk,
               HeaderError::kMsgNoPayload);
  }
  ExpectCall(Message(Msg(0x42), 4, 0x42), CallVerdict::kAccept, HeaderError::kOk);
  ExpectCall(Message(Msg(0x42), 40, 0x43), CallVerdict::kReplyErrChunk, HeaderError::kXidMismatch);
  CheckOptions lax;
  lax.check_rpc_xid = false;  // Linux svcrdma behaviour
  ExpectCall(Message(Msg(0x42), 40, 0x43), CallVerdict::kAccept, HeaderError::kOk, lax);
}

TEST(CheckCallTest, EveryTruncationIsDroppedOrAnsweredNeverAccepted) {
  std::array<ReadSegment, 2> reads = {{{112, {1, 4096, 0}}, {112, {2, 904, 0}}}};
  std::array<Segment, 1> reply = {{{9, 4096, 0}}};
  HeaderSpec s = Msg(0x99);
  s.read_list = reads;
  s.has_reply_chunk = true;
  s.reply_chunk = reply;
  const Bytes m = Message(s, 200, 0x99);
  const size_t hdr = EncodedHeaderSize(s);
  ASSERT_EQ(CheckCall(m, CheckOptions{}).verdict, CallVerdict::kAccept);
  for (size_t n = 0; n < hdr; ++n) {
    Bytes prefix(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(n));
    prefix.shrink_to_fit();
    CallCheck c = CheckCall(prefix, CheckOptions{});
    if (n < kMinHeaderSize) {
      EXPECT_EQ(c.verdict, CallVerdict::kDrop) << n;
      EXPECT_EQ(c.reason, HeaderError::kShortMessage) << n;
    } else {
      EXPECT_EQ(c.verdict, CallVerdict::kReplyErrChunk) << n;
      EXPECT_EQ(c.reason, HeaderError::kTruncated) << n;
    }
  }
}

void ExpectReply(const Bytes& m, ReplyVerdict v, HeaderError reason) {
  ReplyCheck c = CheckReply(m, CheckOptions{});
  EXPECT_EQ(c.verdict, v);
  EXPECT_EQ(c.reason, reason) << HeaderErrorName(c.reason) << " != " << HeaderErrorName(reason);
}

TEST(CheckReplyTest, RequesterAcceptsRepliesAndErrors) {
  ExpectReply(Message(Msg(5), 24, 5), ReplyVerdict::kAccept, HeaderError::kOk);
  // A reply echoing a used Write chunk.
  std::array<Segment, 1> used = {{{0xb, 4000, 0x10}}};
  std::array<WriteChunkSpec, 1> writes = {{{used}}};
  HeaderSpec s = Msg(5);
  s.write_list = writes;
  ExpectReply(Message(s, 24, 5), ReplyVerdict::kAccept, HeaderError::kOk);
  // Long Reply: RDMA_NOMSG with the Reply chunk.
  s = Msg(5);
  s.proc = Proc::kNomsg;
  s.has_reply_chunk = true;
  s.reply_chunk = used;
  ExpectReply(Message(s, 0, 0), ReplyVerdict::kAccept, HeaderError::kOk);
  // RDMA_ERROR, 20 and 28 bytes: accepted so the XID completes with an error.
  ExpectReply(Words({5, 1, 1, 4, 2}), ReplyVerdict::kAccept, HeaderError::kOk);
  ExpectReply(Words({5, 1, 1, 4, 1, 1, 1}), ReplyVerdict::kAccept, HeaderError::kOk);
}

TEST(CheckReplyTest, RequesterDropsBadReplies) {
  std::array<ReadSegment, 1> reads = {{{8, {1, 4, 0}}}};
  HeaderSpec s = Msg(5);
  s.read_list = reads;
  ExpectReply(Message(s, 24, 5), ReplyVerdict::kDrop, HeaderError::kReadListInReply);
  ExpectReply(Words({5, 1, 1, 3}), ReplyVerdict::kDrop, HeaderError::kDoneReceived);
  ExpectReply(Words({5, 2, 1, 0, 0, 0, 0}), ReplyVerdict::kDrop, HeaderError::kBadVersion);
  ExpectReply(Words({5, 1, 1, 4, 7}), ReplyVerdict::kDrop, HeaderError::kBadErrorCode);
  ExpectReply(Words({5, 1, 1, 0, 0, 0}), ReplyVerdict::kDrop, HeaderError::kTruncated);
  ExpectReply(Message(Msg(5), 2, 5), ReplyVerdict::kDrop, HeaderError::kMsgNoPayload);
  ExpectReply(Message(Msg(5), 8, 6), ReplyVerdict::kDrop, HeaderError::kXidMismatch);
  ExpectReply(Words({5, 1, 1, 1, 0, 0, 0}), ReplyVerdict::kDrop, HeaderError::kNomsgNoChunks);
  std::array<WriteChunkSpec, 1> empty_chunk = {{{}}};
  s = Msg(5);
  s.proc = Proc::kNomsg;
  s.write_list = empty_chunk;
  ExpectReply(Message(s, 0, 0), ReplyVerdict::kDrop, HeaderError::kNomsgNoReplyChunk);
}

}  // namespace
}  // namespace iwarp::rpcrdma
