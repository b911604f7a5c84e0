#include "mpa/mpa_fpdu.h"

#include <random>
#include <vector>

#include "common/crc32c.h"
#include "gtest/gtest.h"
#include "mpa/mpa_test_vectors.h"

namespace iwarp::mpa {
namespace {

using testing::DdpSendHeader;

std::vector<uint8_t> Encode(ByteSpan hdr, ByteSpan payload, uint32_t seq, const FpduConfig& c) {
  std::vector<uint8_t> out(FpduWireSize(hdr.size() + payload.size(), Seq32(seq), c));
  const FpduEncodeResult r = EncodeFpdu(hdr, payload, Seq32(seq), c, out);
  EXPECT_EQ(r.status, FpduStatus::kOk);
  EXPECT_EQ(r.size, out.size());
  return out;
}

FpduConfig MarkersAndCrc(uint32_t origin = 0) { return {true, true, Seq32(origin)}; }

// RFC 5044 4.4 Figure 5, byte for byte, CRC included.
TEST(MpaFpdu, EncodesRfc5044Figure5) {
  const std::vector<uint8_t> payload(24, 0);
  EXPECT_EQ(Encode(DdpSendHeader(1), payload, 0, MarkersAndCrc()), testing::Rfc5044Figure5());
}

// RFC 5044 4.4 Figure 6: second FPDU, Marker at 0x200 with FPDUPTR 0x14.
TEST(MpaFpdu, EncodesRfc5044Figure6) {
  const std::vector<uint8_t> payload(24, 0);
  const FpduConfig c = MarkersAndCrc();
  EXPECT_EQ(FpduWireSize(42, Seq32(testing::kFigure6Seq), c), 52u);
  EXPECT_EQ(Encode(DdpSendHeader(2), payload, testing::kFigure6Seq, c), testing::Rfc5044Figure6());
  // The same FPDU with the sequence space wrapped just before it.
  const FpduConfig wrapped = MarkersAndCrc(0xFFFFFF00u);
  EXPECT_EQ(Encode(DdpSendHeader(2), payload, 0xFFFFFF00u + testing::kFigure6Seq, wrapped),
            testing::Rfc5044Figure6());
}

// The whole first 492-octet FPDU the Figure 6 text describes, then Figure 6.
TEST(MpaFpdu, Figure6StreamHasBackToBackFpdus) {
  const FpduConfig c = MarkersAndCrc();
  const std::vector<uint8_t> first_payload(482 - 18, 0);
  EXPECT_EQ(FpduWireSize(482, Seq32(0), c), 492u);
  const auto first = Encode(DdpSendHeader(1), first_payload, 0, c);
  EXPECT_EQ(first.size(), 0x1ecu);
  EXPECT_EQ(std::vector<uint8_t>(first.begin(), first.begin() + 6),
            (std::vector<uint8_t>{0, 0, 0, 0, 0x01, 0xe2}));
}

TEST(MpaFpdu, WithoutMarkersFigure5IsTheSameFpduMinusTheMarker) {
  // Without Markers the CRC covers only ULPDU_Length + ULPDU.
  const std::vector<uint8_t> payload(24, 0);
  const FpduConfig c{false, true, Seq32(0)};
  const auto out = Encode(DdpSendHeader(1), payload, 0, c);
  ASSERT_EQ(out.size(), 48u);
  const auto fig5 = testing::Rfc5044Figure5();
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 44, fig5.begin() + 4));
  EXPECT_EQ(LoadCrc32cWire(out.data() + 44), Crc32c(ByteSpan(out).first(44)));
}

// FrameFpduAround: head + payload + tail is the FPDU EncodeFpdu writes
// without Markers, for every pad length, with and without CRC.
TEST(MpaFpdu, FramedAroundThePayloadEqualsTheEncodedFpdu) {
  const auto hdr = DdpSendHeader(1);
  for (bool crc : {true, false}) {
    for (size_t len : {0, 1, 2, 3, 4, 5, 511, 1000, 1442}) {
      std::vector<uint8_t> payload(len);
      for (size_t i = 0; i < len; ++i) payload[i] = static_cast<uint8_t>(i * 7 + 3);
      const FpduConfig c{false, crc, Seq32(0)};
      const std::vector<uint8_t> want = Encode(hdr, payload, 1000, c);
      uint8_t head[kUlpduLengthSize + 18];
      uint8_t tail[kMaxFpduTail];
      const FpduParts p = FrameFpduAround(hdr, payload, crc, head, tail);
      ASSERT_EQ(p.status, FpduStatus::kOk);
      std::vector<uint8_t> got(head, head + p.head_size);
      got.insert(got.end(), payload.begin(), payload.end());
      got.insert(got.end(), tail, tail + p.tail_size);
      EXPECT_EQ(got, want) << "payload " << len << " crc " << crc;
    }
  }
}

TEST(MpaFpdu, FramedAroundRefusesWhatCannotBeAnFpdu) {
  const auto hdr = DdpSendHeader(1);
  uint8_t head[kUlpduLengthSize + 18];
  uint8_t tail[kMaxFpduTail];
  const std::vector<uint8_t> big(kMaxUlpduLength - hdr.size() + 1);
  EXPECT_EQ(FrameFpduAround(hdr, big, true, head, tail).status, FpduStatus::kUlpduTooLong);
  EXPECT_EQ(FrameFpduAround(hdr, ByteSpan(), true, MutableByteSpan(head, 5), tail).status,
            FpduStatus::kBufferTooSmall);
  EXPECT_EQ(FrameFpduAround(hdr, ByteSpan(), true, head, MutableByteSpan(tail, 3)).status,
            FpduStatus::kBufferTooSmall);
}

TEST(MpaFpdu, CrcDisabledWritesZeroCrcField) {
  const std::vector<uint8_t> payload(24, 0);
  const FpduConfig c{true, false, Seq32(0)};
  auto out = Encode(DdpSendHeader(1), payload, 0, c);
  auto want = testing::Rfc5044Figure5();
  want[48] = want[49] = want[50] = want[51] = 0;
  EXPECT_EQ(out, want);
}

TEST(MpaFpdu, PadsToFourWithZeros) {
  const FpduConfig c{false, true, Seq32(0)};
  for (size_t len = 0; len < 9; ++len) {
    const std::vector<uint8_t> payload(len, 0xff);
    const auto out = Encode({}, payload, 0, c);
    EXPECT_EQ(out.size() % 4, 0u);
    EXPECT_EQ(out.size(), FpduSizeWithoutMarkers(len));
    EXPECT_EQ(LoadBe16(out.data()), len);
    for (size_t i = 2 + len; i < out.size() - 4; ++i) EXPECT_EQ(out[i], 0) << len;
  }
  EXPECT_EQ(FpduSizeWithoutMarkers(0), 8u);
  EXPECT_EQ(FpduSizeWithoutMarkers(2), 8u);
  EXPECT_EQ(FpduSizeWithoutMarkers(3), 12u);
}

// A Marker due right after the PAD belongs to this FPDU and is in its CRC
// (RFC 5044 4.4 rule 1); one due right after the CRC belongs to the next.
TEST(MpaFpdu, MarkerBeforeCrcAndAfterCrc) {
  const FpduConfig c = MarkersAndCrc();
  // FPDU of 16 octets (ULPDU 10) starting 12 before a Marker slot: slot at
  // offset 12 = the CRC position -> Marker between PAD and CRC.
  const std::vector<uint8_t> payload(10, 0x11);
  const uint32_t start = 512 - 12;
  EXPECT_EQ(FpduMarkerCount(10, Seq32(start), c), 1u);
  const auto out = Encode({}, payload, start, c);
  ASSERT_EQ(out.size(), 20u);
  EXPECT_EQ(LoadBe32(out.data() + 12), 12u);  // FPDUPTR back to the header
  EXPECT_EQ(LoadCrc32cWire(out.data() + 16), Crc32c(ByteSpan(out).first(16)));
  // Starting 16 before the slot, the slot is right after the CRC.
  EXPECT_EQ(FpduMarkerCount(10, Seq32(512 - 16), c), 0u);
  EXPECT_EQ(Encode({}, payload, 512 - 16, c).size(), 16u);
}

TEST(MpaFpdu, LargeFpduMarkersAllPointToTheHeader) {
  const FpduConfig c = MarkersAndCrc(1000);
  std::vector<uint8_t> payload(5000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i);
  const uint32_t start = 1000 + 512 * 7 + 100;  // 412 octets before a slot
  const auto out = Encode({}, payload, start, c);
  size_t markers = 0;
  std::vector<uint8_t> stripped;
  for (size_t i = 0; i < out.size();) {
    if ((start + i - 1000) % 512 == 0 && i + 4 <= out.size() - 4) {
      EXPECT_EQ(LoadBe16(out.data() + i), 0u);
      EXPECT_EQ(LoadBe16(out.data() + i + 2), i) << i;  // distance to the header
      ++markers;
      i += 4;
    } else {
      stripped.push_back(out[i++]);
    }
  }
  EXPECT_EQ(markers, FpduMarkerCount(5000, Seq32(start), c));
  EXPECT_EQ(markers, 10u);
  EXPECT_EQ(LoadBe16(stripped.data()), 5000u);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), stripped.begin() + 2));
  EXPECT_EQ(LoadCrc32cWire(out.data() + out.size() - 4), Crc32c(ByteSpan(out).first(out.size() - 4)));
}

TEST(MpaFpdu, WireSizeMatchesEncodedSizeForRandomShapes) {
  std::mt19937 rng(7);
  std::vector<uint8_t> out(kMaxUlpduLength + 1024);
  std::vector<uint8_t> payload(kMaxUlpduLength);
  for (int i = 0; i < 3000; ++i) {
    const size_t len = i < 1500 ? rng() % 2100 : rng() % (kMaxUlpduLength + 1);
    const uint32_t origin = static_cast<uint32_t>(rng());
    const uint32_t start = origin + 4 * (rng() % 100000);
    const FpduConfig c{(rng() & 1) != 0, true, Seq32(origin)};
    const FpduEncodeResult r =
        EncodeFpdu({}, ByteSpan(payload).first(len), Seq32(start), c, out);
    ASSERT_EQ(r.status, FpduStatus::kOk);
    ASSERT_EQ(r.size, FpduWireSize(len, Seq32(start), c)) << len << " " << start - origin;
  }
}

TEST(MpaFpdu, EncodeRejectsBadInput) {
  std::vector<uint8_t> big(kMaxUlpduLength + 1);
  std::vector<uint8_t> out(70000);
  const FpduConfig c = MarkersAndCrc();
  EXPECT_EQ(EncodeFpdu(ByteSpan(big).first(10), ByteSpan(big).first(kMaxUlpduLength - 9),
                       Seq32(0), c, out)
                .status,
            FpduStatus::kUlpduTooLong);
  EXPECT_EQ(EncodeFpdu({}, ByteSpan(big).first(kMaxUlpduLength), Seq32(0), c, out).status,
            FpduStatus::kOk);
  EXPECT_EQ(EncodeFpdu({}, ByteSpan(big).first(4), Seq32(2), c, out).status,
            FpduStatus::kMisaligned);
  const size_t need = FpduWireSize(100, Seq32(0), c);
  EXPECT_EQ(EncodeFpdu({}, ByteSpan(big).first(100), Seq32(0), c,
                       MutableByteSpan(out).first(need - 1))
                .status,
            FpduStatus::kBufferTooSmall);
  // Without Markers any start works.
  EXPECT_EQ(EncodeFpdu({}, ByteSpan(big).first(4), Seq32(2), FpduConfig{}, out).status,
            FpduStatus::kOk);
}

// RFC 5044 4.5 formulas, with their worked values.
TEST(MpaFpdu, MulpduFormula) {
  EXPECT_EQ(Mulpdu(1460, false), 1454u);
  EXPECT_EQ(Mulpdu(1460, true), 1460u - (6 + 4 * 3));
  EXPECT_EQ(Mulpdu(1461, false), 1454u);
  EXPECT_EQ(Mulpdu(8960, true), 8960u - (6 + 4 * 18));
  EXPECT_EQ(Mulpdu(100, false), 128u);  // never below 128
  EXPECT_EQ(Mulpdu(0, true), 128u);
  EXPECT_EQ(Mulpdu(65495, false), kMaxUlpduLength);  // never above 64768
}

// MULPDU is the largest ULPDU whose FPDU fits the EMSS, for every Marker phase.
TEST(MpaFpdu, MulpduFpduFitsEmssAtEveryMarkerPhase) {
  for (uint32_t emss = 140; emss <= 9000; emss += (emss < 2000 ? 1 : 37)) {
    const uint32_t plain = Mulpdu(emss, false);
    const FpduConfig none{false, true, Seq32(0)};
    ASSERT_LE(FpduWireSize(plain, Seq32(0), none), emss) << emss;
    ASSERT_GT(FpduWireSize(plain + 1, Seq32(0), none), emss) << emss;
    const uint32_t marked = Mulpdu(emss, true);
    const FpduConfig c = MarkersAndCrc();
    for (uint32_t phase = 0; phase < 512; phase += 4) {
      ASSERT_LE(FpduWireSize(marked, Seq32(phase), c), emss) << emss << " @" << phase;
    }
  }
}

TEST(MpaFpdu, LocatesFpduFromMarkerInOutOfOrderSegment) {
  // Figure 6's FPDU seen as an out-of-order segment starting at 0x1f0.
  const auto fig6 = testing::Rfc5044Figure6();
  const ByteSpan seg = ByteSpan(fig6).subspan(4);
  auto hit = LocateFpduFromMarker(seg, Seq32(0x1f0), Seq32(0));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->marker_seq, Seq32(0x200));
  EXPECT_EQ(hit->fpdu_seq, Seq32(0x1ec));
  // Figure 5: FPDUPTR 0 -> the header follows the Marker.
  const auto fig5 = testing::Rfc5044Figure5();
  hit = LocateFpduFromMarker(fig5, Seq32(0), Seq32(0));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->fpdu_seq, Seq32(4));
  // A segment that ends inside the Marker, or before it, has none.
  EXPECT_FALSE(LocateFpduFromMarker(ByteSpan(fig6).first(0x203 - 0x1ec), Seq32(0x1ec), Seq32(0)));
  EXPECT_FALSE(LocateFpduFromMarker(ByteSpan(fig6).first(3), Seq32(0x200), Seq32(0)));
  EXPECT_FALSE(LocateFpduFromMarker({}, Seq32(0x200), Seq32(0)));
  // A segment starting just after a Marker slot has to reach the next one.
  EXPECT_FALSE(LocateFpduFromMarker(ByteSpan(fig6).subspan(0x204 - 0x1ec), Seq32(0x204), Seq32(0)));
}

TEST(MpaFpdu, LocateHandlesWrapAndIgnoresLowFpduptrBits) {
  // Marker at 0x00000010 (origin 0xFFFFFE10), FPDUPTR 0x0103 -> 0x100 back.
  std::vector<uint8_t> seg(32, 0xee);
  const uint32_t seg_seq = 0x00000008;
  seg[8] = 0x12;  // RESERVED is ignored on receive
  seg[9] = 0x34;
  seg[10] = 0x01;
  seg[11] = 0x03;
  const auto hit = LocateFpduFromMarker(seg, Seq32(seg_seq), Seq32(0xFFFFFE10u));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->marker_seq, Seq32(0x10));
  EXPECT_EQ(hit->fpdu_seq, Seq32(0xFFFFFF10u));
}

// Every Marker the encoder writes leads LocateFpduFromMarker back to the FPDU.
TEST(MpaFpdu, LocateFindsEncodedFpdusFromAnySegmentStart) {
  std::mt19937 rng(11);
  const uint32_t origin = 0xFFFFF000u;
  const FpduConfig c = MarkersAndCrc(origin);
  std::vector<uint8_t> stream;
  std::vector<uint32_t> fpdu_starts;  // header sequence numbers
  uint32_t seq = origin;
  std::vector<uint8_t> payload(3000, 0x42);
  while (stream.size() < 40000) {
    const size_t len = rng() % payload.size();
    const size_t size = FpduWireSize(len, Seq32(seq), c);
    const size_t at = stream.size();
    stream.resize(at + size);
    ASSERT_EQ(EncodeFpdu({}, ByteSpan(payload).first(len), Seq32(seq), c,
                         MutableByteSpan(stream).subspan(at))
                  .status,
              FpduStatus::kOk);
    fpdu_starts.push_back(seq + (DistanceToMarker(Seq32(seq), c.marker_origin) == 0 ? 4 : 0));
    seq += static_cast<uint32_t>(size);
  }
  for (int i = 0; i < 500; ++i) {
    const size_t off = rng() % (stream.size() - 600);
    const size_t len = 516 + rng() % 80;  // always holds a whole Marker
    const auto hit = LocateFpduFromMarker(ByteSpan(stream).subspan(off, len),
                                          Seq32(origin + static_cast<uint32_t>(off)), c.marker_origin);
    ASSERT_TRUE(hit.has_value()) << off;
    EXPECT_NE(std::find(fpdu_starts.begin(), fpdu_starts.end(), hit->fpdu_seq.value()),
              fpdu_starts.end())
        << off;
  }
}

}  // namespace
}  // namespace iwarp::mpa
