#include "ddp/segmenter.h"

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ddp/rdmap.h"
#include "gtest/gtest.h"

namespace iwarp::ddp {
namespace {

using Bytes = std::vector<uint8_t>;

struct Produced {
  Bytes header;
  SegmentDesc seg;
};

std::vector<Produced> Drain(Segmenter& s) {
  std::vector<Produced> out;
  std::array<uint8_t, kMaxHeaderSize> hdr{};
  SegmentDesc seg;
  while (s.Next(hdr, &seg)) {
    out.push_back({Bytes(hdr.begin(), hdr.begin() + seg.header_length), seg});
    if (out.size() > 1'000'000) break;
  }
  return out;
}

// RFC 5041 5.2, tagged example: 2048 octets, initial TO 16384, MULPDU 1500 ->
// TO 16384 with 1486 octets, then TO 17870 with 562 octets.
TEST(Segmenter, Rfc5041TaggedExampleByteExact) {
  const OutboundMessage msg = rdmap::RdmaWriteMessage(0x12345678, 16384, 2048);
  Segmenter s(msg, 1500);
  ASSERT_EQ(s.status(), SegmentStatus::kOk);
  EXPECT_EQ(s.RemainingSegments(), 2u);
  const auto segs = Drain(s);
  ASSERT_EQ(segs.size(), 2u);
  const Bytes first = {0x81, 0x40, 0x12, 0x34, 0x56, 0x78, 0x00,
                       0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00};
  const Bytes second = {0xC1, 0x40, 0x12, 0x34, 0x56, 0x78, 0x00,
                        0x00, 0x00, 0x00, 0x00, 0x00, 0x45, 0xCE};
  EXPECT_EQ(segs[0].header, first);
  EXPECT_EQ(segs[0].seg.message_offset, 0u);
  EXPECT_EQ(segs[0].seg.payload_length, 1486u);
  EXPECT_FALSE(segs[0].seg.last);
  EXPECT_EQ(segs[1].header, second);
  EXPECT_EQ(segs[1].seg.message_offset, 1486u);
  EXPECT_EQ(segs[1].seg.payload_length, 562u);
  EXPECT_TRUE(segs[1].seg.last);
  EXPECT_EQ(14u + segs[0].seg.payload_length, 1500u);
  EXPECT_TRUE(s.done());
}

// RFC 5041 5.2, untagged example: 2048 octets, MULPDU 1500 -> MO 0 with 1482
// octets, then MO 1482 with 566 octets; QN and MSN unchanged.
TEST(Segmenter, Rfc5041UntaggedExampleByteExact) {
  const OutboundMessage msg = rdmap::SendMessage(rdmap::Opcode::kSend, Seq32(1), 2048);
  Segmenter s(msg, 1500);
  const auto segs = Drain(s);
  ASSERT_EQ(segs.size(), 2u);
  const Bytes first = {0x01, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                       0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
  const Bytes second = {0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                        0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x05, 0xCA};
  EXPECT_EQ(segs[0].header, first);
  EXPECT_EQ(segs[0].seg.payload_length, 1482u);
  EXPECT_EQ(segs[1].header, second);
  EXPECT_EQ(segs[1].seg.message_offset, 1482u);
  EXPECT_EQ(segs[1].seg.payload_length, 566u);
  EXPECT_TRUE(segs[1].seg.last);
}

TEST(Segmenter, ZeroLengthMessageIsOneLastSegment) {
  for (bool tagged : {false, true}) {
    const OutboundMessage msg = tagged ? rdmap::RdmaWriteMessage(1, 0, 0)
                                       : rdmap::SendMessage(rdmap::Opcode::kSend, Seq32(1), 0);
    Segmenter s(msg, 1500);
    EXPECT_EQ(s.RemainingSegments(), 1u);
    const auto segs = Drain(s);
    ASSERT_EQ(segs.size(), 1u);
    EXPECT_EQ(segs[0].seg.payload_length, 0u);
    EXPECT_TRUE(segs[0].seg.last);
    EXPECT_EQ(segs[0].header[0] & kCtrlLast, kCtrlLast);
  }
}

TEST(Segmenter, ExactFitIsOneSegmentAndOneMoreByteIsTwo) {
  Segmenter a(rdmap::RdmaWriteMessage(1, 0, 1500 - 14), 1500);
  EXPECT_EQ(Drain(a).size(), 1u);
  Segmenter b(rdmap::RdmaWriteMessage(1, 0, 1500 - 14 + 1), 1500);
  const auto segs = Drain(b);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[1].seg.payload_length, 1u);
}

TEST(Segmenter, RejectsMulpduThatCannotCarryAByte) {
  Segmenter tagged(rdmap::RdmaWriteMessage(1, 0, 10), 14);
  EXPECT_EQ(tagged.status(), SegmentStatus::kMulpduTooSmall);
  EXPECT_EQ(Drain(tagged).size(), 0u);
  Segmenter untagged(rdmap::SendMessage(rdmap::Opcode::kSend, Seq32(1), 10), 18);
  EXPECT_EQ(untagged.status(), SegmentStatus::kMulpduTooSmall);
  Segmenter smallest(rdmap::SendMessage(rdmap::Opcode::kSend, Seq32(1), 3), 19);
  ASSERT_EQ(smallest.status(), SegmentStatus::kOk);
  EXPECT_EQ(Drain(smallest).size(), 3u);
}

TEST(Segmenter, RefusesTaggedMessageWhoseToWraps) {
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  // RFC 5041 7.1: the 64-bit sum TO + length must not wrap, so a message
  // whose sum is exactly 2^64 (last byte at TO 2^64 - 1) already wraps.
  Segmenter wraps(rdmap::RdmaWriteMessage(1, top - 9, 10), 1500);
  EXPECT_EQ(wraps.status(), SegmentStatus::kToWrap);
  EXPECT_EQ(Drain(wraps).size(), 0u);
  Segmenter fits(rdmap::RdmaWriteMessage(1, top - 9, 9), 1500);
  EXPECT_EQ(fits.status(), SegmentStatus::kOk);
  EXPECT_EQ(Drain(fits).size(), 1u);
}

TEST(Segmenter, ShortHeaderBufferConsumesNothing) {
  Segmenter s(rdmap::SendMessage(rdmap::Opcode::kSend, Seq32(1), 100), 1500);
  std::array<uint8_t, 17> small{};
  SegmentDesc seg;
  EXPECT_FALSE(s.Next(small, &seg));
  EXPECT_FALSE(s.done());
  EXPECT_EQ(Drain(s).size(), 1u);
}

TEST(Segmenter, MulpduChangeAppliesToLaterSegmentsOnly) {
  Segmenter s(rdmap::RdmaWriteMessage(7, 1000, 3000), 1014);  // 1000 bytes each
  std::array<uint8_t, kMaxHeaderSize> hdr{};
  SegmentDesc seg;
  ASSERT_TRUE(s.Next(hdr, &seg));
  EXPECT_EQ(seg.payload_length, 1000u);
  EXPECT_FALSE(s.SetMulpdu(14));  // unusable: kept the old one
  ASSERT_TRUE(s.SetMulpdu(514));  // 500 bytes each from now on
  EXPECT_EQ(s.RemainingSegments(), 4u);
  const auto rest = Drain(s);
  ASSERT_EQ(rest.size(), 4u);
  EXPECT_EQ(rest[0].seg.message_offset, 1000u);
  EXPECT_EQ(rest[3].seg.payload_length, 500u);
  EXPECT_TRUE(rest[3].seg.last);
}

// Property: for random sizes and MULPDUs the segments tile the message in
// order, respect the MULPDU, carry TO/MO = start + offset, keep STag / QN /
// MSN / RsvdULP, and set L on the last one only.
TEST(Segmenter, RandomMessagesTileExactly) {
  std::mt19937_64 rng(52);
  for (int iter = 0; iter < 3000; ++iter) {
    const bool tagged = (rng() & 1) != 0;
    const uint32_t length = (rng() % 4 == 0) ? static_cast<uint32_t>(rng() % 64)
                                             : static_cast<uint32_t>(rng() % 200000);
    const uint32_t mulpdu = 19 + static_cast<uint32_t>(rng() % 9000);
    OutboundMessage msg;
    msg.tagged = tagged;
    msg.rsvd_ulp0 = static_cast<uint8_t>(rng());
    msg.rsvd_ulp1 = static_cast<uint32_t>(rng());
    msg.stag = static_cast<uint32_t>(rng());
    msg.to = rng() >> 1;  // no wrap
    msg.qn = static_cast<uint32_t>(rng());
    msg.msn = Seq32(static_cast<uint32_t>(rng()));
    msg.length = length;
    Segmenter s(msg, mulpdu);
    ASSERT_EQ(s.status(), SegmentStatus::kOk);
    const uint32_t expect_count = s.RemainingSegments();
    const auto segs = Drain(s);
    ASSERT_EQ(segs.size(), expect_count);
    uint64_t next = 0;
    for (size_t i = 0; i < segs.size(); ++i) {
      const auto& p = segs[i];
      ASSERT_LE(p.header.size() + p.seg.payload_length, mulpdu);
      ASSERT_EQ(p.seg.message_offset, next);
      ASSERT_EQ(p.seg.last, i + 1 == segs.size());
      if (length != 0) {
        ASSERT_GT(p.seg.payload_length, 0u);
      }
      DdpHeader h;
      ASSERT_EQ(ParseHeader(p.header, &h), HeaderStatus::kOk);
      ASSERT_EQ(h.tagged, tagged);
      ASSERT_EQ(h.last, p.seg.last);
      ASSERT_EQ(h.rsvd_ulp0, msg.rsvd_ulp0);
      if (tagged) {
        ASSERT_EQ(h.stag, msg.stag);
        ASSERT_EQ(h.to, msg.to + next);
      } else {
        ASSERT_EQ(h.rsvd_ulp1, msg.rsvd_ulp1);
        ASSERT_EQ(h.qn, msg.qn);
        ASSERT_EQ(h.msn, msg.msn);
        ASSERT_EQ(h.mo, next);
      }
      next += p.seg.payload_length;
    }
    ASSERT_EQ(next, length);
  }
}

}  // namespace
}  // namespace iwarp::ddp
