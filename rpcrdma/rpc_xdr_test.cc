#include "rpcrdma/rpc_xdr.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::rpc {
namespace {

// The stream a transport sends inline: pieces in order, DDP pads written.
std::vector<uint8_t> Flatten(const Message& m) {
  std::vector<uint8_t> out;
  for (const Piece& p : m) {
    out.insert(out.end(), p.bytes.begin(), p.bytes.end());
    if (p.ddp) out.insert(out.end(), XdrPadding(p.bytes.size()), 0);
  }
  return out;
}

TEST(RpcXdrTest, ReadsWordsSplitAcrossPieces) {
  const std::array<uint8_t, 3> a = {0x01, 0x02, 0x03};
  const std::array<uint8_t, 13> b = {0x04, 0x80, 0, 0, 0, 0, 0, 0, 0x2a, 0, 0, 0, 1};
  Message m;
  ASSERT_TRUE(m.Add(Piece{a}));
  ASSERT_TRUE(m.Add(Piece{b}));
  XdrDecoder d(m);
  EXPECT_EQ(d.U32(), 0x01020304u);
  EXPECT_EQ(d.Hyper(), 0x800000000000002aull);
  EXPECT_TRUE(d.Bool());
  EXPECT_TRUE(d.ok());
  EXPECT_EQ(d.position(), 16u);
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(RpcXdrTest, SignedItemsAndEnums) {
  const std::array<uint8_t, 12> a = {0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff};
  Message m;
  m.Add(Piece{a});
  XdrDecoder d(m);
  EXPECT_EQ(d.Enum(), -2);
  EXPECT_EQ(d.IHyper(), -1);
  EXPECT_TRUE(d.ok());
}

TEST(RpcXdrTest, ImpliedPadAfterDdpPieceAndZeroCopySpan) {
  const std::array<uint8_t, 4> len = {0, 0, 0, 5};
  const std::array<uint8_t, 5> body = {'h', 'e', 'l', 'l', 'o'};
  const std::array<uint8_t, 4> tail = {0, 0, 0, 7};
  Message m;
  ASSERT_TRUE(m.Add(Piece{len}));
  ASSERT_TRUE(m.Add(Piece{body, true}));
  ASSERT_TRUE(m.Add(Piece{tail}));
  EXPECT_EQ(m.stream_length(), 4u + 8u + 4u);
  XdrDecoder d(m);
  ByteSpan got = d.Opaque(16);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(got.data(), body.data());  // not copied
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(d.position(), 12u);       // the 3-byte pad was consumed though not in any piece
  EXPECT_EQ(d.U32(), 7u);
  EXPECT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(RpcXdrTest, ImpliedPadReadsAsZeros) {
  const std::array<uint8_t, 1> body = {0xaa};
  Message m;
  m.Add(Piece{body, true});
  XdrDecoder d(m);
  EXPECT_EQ(d.U32(), 0xaa000000u);
  EXPECT_TRUE(d.ok());
}

TEST(RpcXdrTest, OpaqueAcrossPiecesNeedsScratch) {
  const std::array<uint8_t, 6> a = {0, 0, 0, 6, 'a', 'b'};
  const std::array<uint8_t, 6> b = {'c', 'd', 'e', 'f', 0, 0};
  Message m;
  m.Add(Piece{a});
  m.Add(Piece{b});
  {
    XdrDecoder d(m);
    EXPECT_TRUE(d.Opaque(100).empty());
    EXPECT_EQ(d.error(), XdrError::kNoScratch);
  }
  std::array<uint8_t, 8> scratch{};
  XdrDecoder d(m);
  ByteSpan got = d.Opaque(100, scratch);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(got.data(), scratch.data());
  EXPECT_EQ(std::string(got.begin(), got.end()), "abcdef");
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(RpcXdrTest, LengthAboveMaximumIsRejectedBeforeUse) {
  const std::array<uint8_t, 12> a = {0, 0, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8};
  Message m;
  m.Add(Piece{a});
  XdrDecoder d(m);
  EXPECT_TRUE(d.Opaque(8).empty());
  EXPECT_EQ(d.error(), XdrError::kTooLong);
  EXPECT_EQ(d.U32(), 0u);  // sticky
  EXPECT_EQ(d.error(), XdrError::kTooLong);
}

TEST(RpcXdrTest, HugeLengthWordIsTruncationNotOverflow) {
  const std::array<uint8_t, 8> a = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
  Message m;
  m.Add(Piece{a});
  XdrDecoder d(m);
  EXPECT_TRUE(d.Opaque(UINT32_MAX).empty());
  EXPECT_EQ(d.error(), XdrError::kTruncated);
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(RpcXdrTest, MissingPadIsTruncation) {
  // opaque<> of 2 bytes with its pad cut off
  const std::array<uint8_t, 6> a = {0, 0, 0, 2, 'x', 'y'};
  Message m;
  m.Add(Piece{a});
  XdrDecoder d(m);
  EXPECT_TRUE(d.Opaque(10).empty());
  EXPECT_EQ(d.error(), XdrError::kTruncated);
}

TEST(RpcXdrTest, TruncationIsSticky) {
  const std::array<uint8_t, 6> a = {0, 0, 0, 1, 0xff, 0xff};
  Message m;
  m.Add(Piece{a});
  XdrDecoder d(m);
  EXPECT_EQ(d.U32(), 1u);
  EXPECT_EQ(d.U32(), 0u);
  EXPECT_EQ(d.error(), XdrError::kTruncated);
  EXPECT_EQ(d.U32(), 0u);
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(RpcXdrTest, BadBooleanAndOptionalData) {
  const std::array<uint8_t, 12> a = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2};
  Message m;
  m.Add(Piece{a});
  XdrDecoder d(m);
  EXPECT_TRUE(d.Present());
  EXPECT_FALSE(d.Present());
  EXPECT_FALSE(d.Bool());
  EXPECT_EQ(d.error(), XdrError::kBadBool);
}

TEST(RpcXdrTest, StringFixedOpaqueAndCopy) {
  const std::array<uint8_t, 24> a = {0, 0, 0, 3, 'a', 'b', 'c', 0,     // string "abc"
                                     9, 8, 7, 6, 5, 0, 0, 0,           // opaque[5]
                                     0, 0, 0, 2, 'z', 'y', 0, 0};      // opaque<> copied
  Message m;
  m.Add(Piece{a});
  XdrDecoder d(m);
  EXPECT_EQ(d.String(3), "abc");
  ByteSpan f = d.OpaqueFixed(5);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[4], 5);
  std::array<uint8_t, 2> out{};
  EXPECT_EQ(d.OpaqueCopy(out), 2u);
  EXPECT_EQ(out[0], 'z');
  EXPECT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(RpcXdrTest, OpaqueCopyBoundedByDestination) {
  const std::array<uint8_t, 8> a = {0, 0, 0, 3, 'a', 'b', 'c', 0};
  Message m;
  m.Add(Piece{a});
  XdrDecoder d(m);
  std::array<uint8_t, 2> out{};
  EXPECT_EQ(d.OpaqueCopy(out), 0u);
  EXPECT_EQ(d.error(), XdrError::kTooLong);
}

TEST(RpcXdrTest, DdpResultTakenWhenPlaced) {
  const std::array<uint8_t, 8> stream = {0, 0, 0, 3, 0, 0, 0, 9};  // length word, then next item
  const std::array<uint8_t, 3> placed = {'x', 'y', 'z'};
  ReplyView r;
  r.stream.Add(Piece{stream});
  r.ddp_results[0] = placed;
  r.ddp_result_count = 1;
  XdrDecoder d(r);
  ByteSpan got = d.DdpOpaque(10);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(got.data(), placed.data());
  EXPECT_EQ(d.ddp_results_left(), 0u);
  EXPECT_EQ(d.U32(), 9u);
  EXPECT_TRUE(d.ok());
}

TEST(RpcXdrTest, DdpResultLengthMismatch) {
  const std::array<uint8_t, 4> stream = {0, 0, 0, 4};
  const std::array<uint8_t, 3> placed = {'x', 'y', 'z'};
  ReplyView r;
  r.stream.Add(Piece{stream});
  r.ddp_results[0] = placed;
  r.ddp_result_count = 1;
  XdrDecoder d(r);
  EXPECT_TRUE(d.DdpOpaque(10).empty());
  EXPECT_EQ(d.error(), XdrError::kDdpMismatch);
}

TEST(RpcXdrTest, DdpResultInlineWhenNonePlaced) {
  const std::array<uint8_t, 8> stream = {0, 0, 0, 2, 'o', 'k', 0, 0};
  ReplyView r;
  r.stream.Add(Piece{stream});
  XdrDecoder d(r);
  ByteSpan got = d.DdpOpaque(10);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(std::string(got.begin(), got.end()), "ok");
  EXPECT_EQ(got.data(), stream.data() + 4);
}

TEST(RpcXdrTest, EncoderBuildsPiecesWithExternalBody) {
  std::array<uint8_t, 64> buf{};
  const std::array<uint8_t, 5> body = {1, 2, 3, 4, 5};
  XdrEncoder e(buf);
  e.U32(0xdeadbeef);
  e.DdpOpaque(body, 77);
  e.String("ab");
  e.Hyper(1);
  Message m;
  ASSERT_TRUE(e.Finish(&m));
  ASSERT_EQ(m.count(), 3u);
  EXPECT_FALSE(m[0].ddp);
  EXPECT_EQ(m[0].bytes.size(), 8u);  // word + length word
  EXPECT_TRUE(m[1].ddp);
  EXPECT_EQ(m[1].bytes.data(), body.data());
  EXPECT_EQ(m[1].stag, 77u);
  EXPECT_EQ(m.stream_length(), 8u + 8u + 8u + 8u);
  EXPECT_EQ(e.stream_length(), m.stream_length());
  const std::vector<uint8_t> want = {0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0,
                                     0, 0, 0, 2, 'a', 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(Flatten(m), want);
  // And it reads back.
  XdrDecoder d(m);
  EXPECT_EQ(d.U32(), 0xdeadbeefu);
  EXPECT_EQ(d.Opaque(5).data(), body.data());
  EXPECT_EQ(d.String(2), "ab");
  EXPECT_EQ(d.Hyper(), 1u);
  EXPECT_TRUE(d.ok());
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(RpcXdrTest, EncoderOverflowFailsFinish) {
  std::array<uint8_t, 6> buf{};
  XdrEncoder e(buf);
  e.U32(1);
  e.U32(2);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.error(), XdrError::kOverflow);
  Message m;
  EXPECT_FALSE(e.Finish(&m));
  EXPECT_EQ(m.count(), 0u);
}

TEST(RpcXdrTest, EncoderRunsOutOfPieces) {
  std::array<uint8_t, 256> buf{};
  const std::array<uint8_t, 1> body = {9};
  XdrEncoder e(buf);
  for (int i = 0; i < 5; ++i) e.DdpOpaque(body);  // 2 pieces each
  Message m;
  EXPECT_FALSE(e.Finish(&m));
  EXPECT_EQ(e.error(), XdrError::kOverflow);
}

TEST(RpcXdrTest, EncoderPadsCopiedOpaque) {
  std::array<uint8_t, 16> buf;
  buf.fill(0xee);
  const std::array<uint8_t, 1> b = {0x11};
  XdrEncoder e(buf);
  e.Opaque(b);
  Message m;
  ASSERT_TRUE(e.Finish(&m));
  EXPECT_EQ(Flatten(m), (std::vector<uint8_t>{0, 0, 0, 1, 0x11, 0, 0, 0}));
}

}  // namespace
}  // namespace iwarp::rpc
