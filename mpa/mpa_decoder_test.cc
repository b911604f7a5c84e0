#include "mpa/mpa_decoder.h"

#include <algorithm>
#include <random>
#include <vector>

#include "common/crc32c.h"
#include "gtest/gtest.h"
#include "mpa/mpa_test_vectors.h"

namespace iwarp::mpa {
namespace {

using Bytes = std::vector<uint8_t>;

struct Delivered {
  Bytes ulpdu;
  uint32_t fpdu_seq;
  const uint8_t* where;
};

class RecordingSink : public UlpduSink {
 public:
  void OnUlpdu(ByteSpan ulpdu, Seq32 fpdu_seq) override {
    got.push_back({Bytes(ulpdu.begin(), ulpdu.end()), fpdu_seq.value(), ulpdu.data()});
  }
  std::vector<Delivered> got;
};

// An encoded stream: the FPDUs of `ulpdus` back to back from `start`.
struct Stream {
  Bytes wire;
  std::vector<Bytes> ulpdus;
  std::vector<uint32_t> fpdu_seqs;  // ULPDU_Length field of each
};

Stream Build(const std::vector<Bytes>& ulpdus, const FpduConfig& c, uint32_t start) {
  Stream s;
  s.ulpdus = ulpdus;
  uint32_t seq = start;
  for (const Bytes& u : ulpdus) {
    const size_t size = FpduWireSize(u.size(), Seq32(seq), c);
    const size_t at = s.wire.size();
    s.wire.resize(at + size);
    const FpduEncodeResult r = EncodeFpdu({}, u, Seq32(seq), c, MutableByteSpan(s.wire).subspan(at));
    EXPECT_EQ(r.status, FpduStatus::kOk);
    const bool lead = c.markers && DistanceToMarker(Seq32(seq), c.marker_origin) == 0;
    s.fpdu_seqs.push_back(seq + (lead ? 4 : 0));
    seq += static_cast<uint32_t>(size);
  }
  return s;
}

Bytes RandomBytes(std::mt19937& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// Feeds `wire` in pieces whose sizes come from `rng` (1..max_piece).
FeedResult FeedInPieces(FpduDecoder& d, ByteSpan wire, RecordingSink& sink, std::mt19937& rng,
                        size_t max_piece) {
  FeedResult total;
  size_t pos = 0;
  while (pos < wire.size()) {
    const size_t n = std::min<size_t>(1 + rng() % max_piece, wire.size() - pos);
    const FeedResult r = d.Feed(wire.subspan(pos, n), sink);
    total.ulpdus += r.ulpdus;
    total.consumed += r.consumed;
    total.status = r.status;
    if (r.status != DecodeStatus::kOk) break;
    EXPECT_EQ(r.consumed, n);
    pos += n;
  }
  return total;
}

Bytes Figure5Ulpdu() {
  Bytes u = testing::DdpSendHeader(1);
  u.resize(42, 0);
  return u;
}

// RFC 5044 Figure 5 is accepted, whole and one octet at a time.
TEST(MpaDecoder, AcceptsRfc5044Figure5) {
  const Bytes fig5 = testing::Rfc5044Figure5();
  for (size_t piece : {fig5.size(), size_t{1}, size_t{3}}) {
    FpduDecoder d({true, true, Seq32(0)}, Seq32(0), 1024);
    RecordingSink sink;
    size_t ulpdus = 0;
    for (size_t i = 0; i < fig5.size(); i += piece) {
      const FeedResult r = d.Feed(ByteSpan(fig5).subspan(i, std::min(piece, fig5.size() - i)), sink);
      ASSERT_EQ(r.status, DecodeStatus::kOk);
      ulpdus += r.ulpdus;
    }
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(ulpdus, 1u);
    EXPECT_EQ(sink.got[0].ulpdu, Figure5Ulpdu());
    EXPECT_EQ(sink.got[0].fpdu_seq, 4u);
    EXPECT_EQ(d.stats().markers, 1u);
    EXPECT_EQ(d.next_seq(), Seq32(0x34));
    EXPECT_TRUE(d.at_fpdu_boundary());
  }
}

// Figure 6 after the 492-octet first FPDU the RFC describes, and Figure 6
// alone with the decoder started at 0x1ec.
TEST(MpaDecoder, AcceptsRfc5044Figure6) {
  const FpduConfig c{true, true, Seq32(0)};
  Bytes first = testing::DdpSendHeader(1);
  first.resize(482, 0);
  Stream s = Build({first}, c, 0);
  ASSERT_EQ(s.wire.size(), 0x1ecu);
  const Bytes fig6 = testing::Rfc5044Figure6();
  s.wire.insert(s.wire.end(), fig6.begin(), fig6.end());
  Bytes second = testing::DdpSendHeader(2);
  second.resize(42, 0);

  FpduDecoder d(c, Seq32(0), 1024);
  RecordingSink sink;
  EXPECT_EQ(d.Feed(s.wire, sink).status, DecodeStatus::kOk);
  ASSERT_EQ(sink.got.size(), 2u);
  EXPECT_EQ(sink.got[0].ulpdu, first);
  EXPECT_EQ(sink.got[1].ulpdu, second);
  EXPECT_EQ(sink.got[1].fpdu_seq, 0x1ecu);
  EXPECT_EQ(d.stats().markers, 2u);

  FpduDecoder alone(c, Seq32(testing::kFigure6Seq), 1024);
  RecordingSink sink2;
  EXPECT_EQ(alone.Feed(fig6, sink2).status, DecodeStatus::kOk);
  ASSERT_EQ(sink2.got.size(), 1u);
  EXPECT_EQ(sink2.got[0].ulpdu, second);
}

TEST(MpaDecoder, CorruptedFigure5IsCrcError) {
  Bytes fig5 = testing::Rfc5044Figure5();
  fig5[0x20] ^= 0x01;  // a data octet
  FpduDecoder d({true, true, Seq32(0)}, Seq32(0), 1024);
  RecordingSink sink;
  const FeedResult r = d.Feed(fig5, sink);
  EXPECT_EQ(r.status, DecodeStatus::kCrcError);
  EXPECT_EQ(ToMpaError(r.status), MpaError::kCrcError);
  EXPECT_EQ(static_cast<int>(ToMpaError(r.status)), 2);
  EXPECT_TRUE(sink.got.empty());
  EXPECT_EQ(d.error_fpdu_seq(), Seq32(4));
  // Without CRC checking the same octets are accepted (RFC 5044 4.1: the
  // field MUST NOT be checked).
  FpduDecoder no_crc({true, false, Seq32(0)}, Seq32(0), 1024);
  EXPECT_EQ(no_crc.Feed(fig5, sink).status, DecodeStatus::kOk);
  EXPECT_EQ(sink.got.size(), 1u);
}

// Rewrites the CRC of a one-FPDU stream after editing it.
void FixCrc(Bytes& fpdu) {
  StoreCrc32cWire(fpdu.data() + fpdu.size() - 4, Crc32c(ByteSpan(fpdu).first(fpdu.size() - 4)));
}

// RFC 5044 8 code 3: the CRC is good but a Marker disagrees.
TEST(MpaDecoder, WrongFpduptrWithGoodCrcIsMarkerMismatch) {
  Bytes fig6 = testing::Rfc5044Figure6();
  fig6[0x203 - 0x1ec] = 0x18;  // FPDUPTR 0x18 instead of 0x14
  FixCrc(fig6);
  FpduDecoder d({true, true, Seq32(0)}, Seq32(testing::kFigure6Seq), 1024);
  RecordingSink sink;
  const FeedResult r = d.Feed(fig6, sink);
  EXPECT_EQ(r.status, DecodeStatus::kMarkerMismatch);
  EXPECT_EQ(static_cast<int>(ToMpaError(r.status)), 3);
  EXPECT_TRUE(sink.got.empty());
  EXPECT_EQ(d.error_fpdu_seq(), Seq32(0x1ec));

  // A Marker between FPDUs must carry 0.
  Bytes fig5 = testing::Rfc5044Figure5();
  fig5[3] = 0x04;
  FixCrc(fig5);
  FpduDecoder d5({true, true, Seq32(0)}, Seq32(0), 1024);
  EXPECT_EQ(d5.Feed(fig5, sink).status, DecodeStatus::kMarkerMismatch);
  EXPECT_TRUE(sink.got.empty());
}

TEST(MpaDecoder, BadCrcWinsOverMarkerMismatch) {
  Bytes fig6 = testing::Rfc5044Figure6();
  fig6[0x203 - 0x1ec] = 0x18;  // CRC left stale
  FpduDecoder d({true, true, Seq32(0)}, Seq32(testing::kFigure6Seq), 1024);
  RecordingSink sink;
  EXPECT_EQ(d.Feed(fig6, sink).status, DecodeStatus::kCrcError);
}

TEST(MpaDecoder, MarkerMismatchWithoutCrc) {
  Bytes fig6 = testing::Rfc5044Figure6();
  fig6[0x202 - 0x1ec] = 0x01;  // FPDUPTR 0x0114
  FpduDecoder d({true, false, Seq32(0)}, Seq32(testing::kFigure6Seq), 1024);
  RecordingSink sink;
  EXPECT_EQ(d.Feed(fig6, sink).status, DecodeStatus::kMarkerMismatch);
  EXPECT_TRUE(sink.got.empty());
}

TEST(MpaDecoder, FpduptrLowBitsAndReservedAreIgnored) {
  Bytes fig6 = testing::Rfc5044Figure6();
  fig6[0x203 - 0x1ec] = 0x17;  // 0x14 | 3
  fig6[0x200 - 0x1ec] = 0xAB;  // RESERVED
  FixCrc(fig6);
  FpduDecoder d({true, true, Seq32(0)}, Seq32(testing::kFigure6Seq), 1024);
  RecordingSink sink;
  EXPECT_EQ(d.Feed(fig6, sink).status, DecodeStatus::kOk);
  EXPECT_EQ(sink.got.size(), 1u);
}

TEST(MpaDecoder, UlpduLengthAboveMaximumIsRefusedFromTheHeader) {
  FpduDecoder d({false, true, Seq32(100)}, Seq32(100), 1000);
  RecordingSink sink;
  const Bytes hdr = {0x03, 0xE9};  // 1001
  EXPECT_EQ(d.Feed(ByteSpan(hdr).first(1), sink).status, DecodeStatus::kOk);
  const FeedResult r = d.Feed(ByteSpan(hdr).subspan(1), sink);
  EXPECT_EQ(r.status, DecodeStatus::kUlpduTooLong);
  EXPECT_EQ(d.error_fpdu_seq(), Seq32(100));
  // Exactly the maximum is fine.
  FpduDecoder ok({false, true, Seq32(0)}, Seq32(0), 1000);
  const Stream s = Build({Bytes(1000, 7)}, {false, true, Seq32(0)}, 0);
  EXPECT_EQ(ok.Feed(s.wire, sink).status, DecodeStatus::kOk);
  // Whole FPDU in one piece (the in-place path) is checked the same way.
  FpduDecoder whole({false, true, Seq32(0)}, Seq32(0), 999);
  EXPECT_EQ(whole.Feed(s.wire, sink).status, DecodeStatus::kUlpduTooLong);
  // The configured maximum cannot exceed RFC 5044's 64768.
  FpduDecoder capped({false, true, Seq32(0)}, Seq32(0), 65535);
  EXPECT_EQ(capped.max_ulpdu_length(), kMaxUlpduLength);
}

TEST(MpaDecoder, ErrorStateIsTerminal) {
  const FpduConfig c{false, true, Seq32(0)};
  Stream s = Build({Bytes(10, 1), Bytes(20, 2), Bytes(30, 3)}, c, 0);
  s.wire[20] ^= 0xff;  // inside the second FPDU
  FpduDecoder d(c, Seq32(0), 100);
  RecordingSink sink;
  const FeedResult r = d.Feed(s.wire, sink);
  EXPECT_EQ(r.status, DecodeStatus::kCrcError);
  EXPECT_EQ(r.ulpdus, 1u);
  EXPECT_LT(r.consumed, s.wire.size());
  ASSERT_EQ(sink.got.size(), 1u);
  const Stream good = Build({Bytes(4, 4)}, c, d.next_seq().value());
  const FeedResult again = d.Feed(good.wire, sink);
  EXPECT_EQ(again.status, DecodeStatus::kCrcError);
  EXPECT_EQ(again.consumed, 0u);
  EXPECT_EQ(again.ulpdus, 0u);
  EXPECT_EQ(sink.got.size(), 1u);
  EXPECT_EQ(d.status(), DecodeStatus::kCrcError);
}

TEST(MpaDecoder, WholeFpdusWithoutMarkersAreDeliveredInPlace) {
  const FpduConfig c{false, true, Seq32(0)};
  const Stream s = Build({Bytes(0), Bytes(1, 9), Bytes(100, 8), Bytes(1454, 7)}, c, 0);
  FpduDecoder d(c, Seq32(0), 2000);
  RecordingSink sink;
  EXPECT_EQ(d.Feed(s.wire, sink).status, DecodeStatus::kOk);
  ASSERT_EQ(sink.got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sink.got[i].ulpdu, s.ulpdus[i]);
    EXPECT_EQ(sink.got[i].fpdu_seq, s.fpdu_seqs[i]);
    // Points into the fed bytes, right after ULPDU_Length.
    EXPECT_EQ(sink.got[i].where, s.wire.data() + s.fpdu_seqs[i] + 2);
  }
  EXPECT_EQ(d.stats().fpdus_in_place, 4u);
}

// RFC 5044 4.3: an FPDU that ends exactly at a Marker slot; the Marker falls
// between FPDUs, carries 0 and belongs to the next FPDU.
TEST(MpaDecoder, MarkerBetweenFpdusMidStream) {
  const FpduConfig c{true, true, Seq32(0)};
  const Stream s = Build({Bytes(502, 1), Bytes(40, 2)}, c, 0);
  ASSERT_EQ(s.fpdu_seqs[1], 516u);
  EXPECT_EQ(LoadBe32(s.wire.data() + 512), 0u);  // the between-FPDUs Marker
  EXPECT_EQ(LoadBe16(s.wire.data() + 516), 40u);
  // Its CRC covers the Marker: CRC of octets 512..(end - 4).
  EXPECT_EQ(LoadCrc32cWire(s.wire.data() + s.wire.size() - 4),
            Crc32c(ByteSpan(s.wire).subspan(512, s.wire.size() - 4 - 512)));
  for (size_t cut : {512u, 513u, 514u, 515u, 516u}) {
    FpduDecoder d(c, Seq32(0), 1000);
    RecordingSink sink;
    ASSERT_EQ(d.Feed(ByteSpan(s.wire).first(cut), sink).status, DecodeStatus::kOk);
    EXPECT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(d.at_fpdu_boundary(), cut == 512) << cut;
    ASSERT_EQ(d.Feed(ByteSpan(s.wire).subspan(cut), sink).status, DecodeStatus::kOk);
    ASSERT_EQ(sink.got.size(), 2u);
    EXPECT_EQ(sink.got[1].ulpdu, s.ulpdus[1]);
    EXPECT_EQ(sink.got[1].fpdu_seq, 516u);
    EXPECT_EQ(d.stats().markers, 2u);
  }
}

TEST(MpaDecoder, EmptyFeedDoesNothing) {
  FpduDecoder d({true, true, Seq32(0)}, Seq32(0), 100);
  RecordingSink sink;
  const FeedResult r = d.Feed({}, sink);
  EXPECT_EQ(r.status, DecodeStatus::kOk);
  EXPECT_EQ(r.consumed, 0u);
  EXPECT_TRUE(d.at_fpdu_boundary());
}

struct RoundTripCase {
  bool markers;
  bool crc;
  size_t max_ulpdu;
  size_t max_piece;
};

// Random ULPDU sizes (0..max), random Marker phases and origins (wrapping
// too), random splits down to single octets.
TEST(MpaDecoder, RoundTripsRandomStreamsInRandomPieces) {
  std::mt19937 rng(2024);
  const RoundTripCase cases[] = {
      {true, true, 2000, 1},   {true, true, 2000, 7},     {true, true, 3000, 1500},
      {false, true, 2000, 1},  {false, true, 3000, 9000}, {true, false, 2000, 600},
      {false, false, 600, 64}, {true, true, 64768, 20000}, {false, true, 64768, 70000},
  };
  for (const RoundTripCase& tc : cases) {
    for (int iter = 0; iter < 6; ++iter) {
      const uint32_t origin = iter % 2 ? static_cast<uint32_t>(rng()) : 0xFFFFFFFFu - 2000;
      const uint32_t start = origin + 4 * static_cast<uint32_t>(rng() % 300);
      const FpduConfig c{tc.markers, tc.crc, Seq32(origin)};
      std::vector<Bytes> ulpdus;
      size_t total = 0;
      while (total < 30000) {
        const size_t len = rng() % 4 == 0 ? rng() % 8 : rng() % (tc.max_ulpdu + 1);
        ulpdus.push_back(RandomBytes(rng, len));
        total += len;
      }
      const Stream s = Build(ulpdus, c, start);
      FpduDecoder d(c, Seq32(start), tc.max_ulpdu);
      RecordingSink sink;
      const FeedResult r = FeedInPieces(d, s.wire, sink, rng, tc.max_piece);
      ASSERT_EQ(r.status, DecodeStatus::kOk) << DecodeStatusName(r.status);
      ASSERT_EQ(sink.got.size(), ulpdus.size());
      EXPECT_EQ(r.ulpdus, ulpdus.size());
      for (size_t i = 0; i < ulpdus.size(); ++i) {
        ASSERT_EQ(sink.got[i].ulpdu, ulpdus[i]) << i;
        ASSERT_EQ(sink.got[i].fpdu_seq, s.fpdu_seqs[i]) << i;
      }
      EXPECT_TRUE(d.at_fpdu_boundary());
      EXPECT_EQ(d.next_seq(), Seq32(start + static_cast<uint32_t>(s.wire.size())));
      EXPECT_EQ(d.stats().fpdus, ulpdus.size());
      EXPECT_EQ(d.stats().octets, s.wire.size());
    }
  }
}

// Any prefix: no crash, exactly the FPDUs wholly inside it, never a partial.
TEST(MpaDecoder, TruncatedStreamsDeliverOnlyCompleteFpdus) {
  std::mt19937 rng(5);
  const FpduConfig c{true, true, Seq32(0)};
  const Stream s = Build({RandomBytes(rng, 700), RandomBytes(rng, 3), RandomBytes(rng, 0),
                          RandomBytes(rng, 1200)},
                         c, 40);
  std::vector<size_t> ends;  // end offset of each FPDU
  {
    size_t off = 0;
    uint32_t seq = 40;
    for (const Bytes& u : s.ulpdus) {
      const size_t size = FpduWireSize(u.size(), Seq32(seq), c);
      off += size;
      seq += static_cast<uint32_t>(size);
      ends.push_back(off);
    }
  }
  for (size_t n = 0; n <= s.wire.size(); ++n) {
    FpduDecoder d(c, Seq32(40), 2000);
    RecordingSink sink;
    const FeedResult r = d.Feed(ByteSpan(s.wire).first(n), sink);
    ASSERT_EQ(r.status, DecodeStatus::kOk) << n;
    const size_t complete = static_cast<size_t>(std::count_if(ends.begin(), ends.end(),
                                                              [n](size_t e) { return e <= n; }));
    ASSERT_EQ(sink.got.size(), complete) << n;
    EXPECT_EQ(d.at_fpdu_boundary(), n == 0 || std::find(ends.begin(), ends.end(), n) != ends.end())
        << n;
  }
}

// Flipping any single octet of a CRC-protected stream is caught: the decoder
// delivers only the FPDUs before the damaged one and reports an error. The
// stream ends with enough intact FPDUs that a lengthened FPDU still ends
// (and fails its CRC) before the data runs out.
void ExpectEveryCorruptionCaught(const FpduConfig& c, uint32_t start) {
  std::mt19937 rng(99);
  std::vector<Bytes> ulpdus = {RandomBytes(rng, 30), RandomBytes(rng, 600), RandomBytes(rng, 1),
                               RandomBytes(rng, 0), RandomBytes(rng, 257)};
  const size_t checked = ulpdus.size();
  for (int i = 0; i < 8; ++i) ulpdus.push_back(RandomBytes(rng, 400));
  const Stream s = Build(ulpdus, c, start);
  size_t checked_end = 0;
  {
    uint32_t seq = start;
    for (size_t i = 0; i < checked; ++i) {
      const size_t size = FpduWireSize(ulpdus[i].size(), Seq32(seq), c);
      checked_end += size;
      seq += static_cast<uint32_t>(size);
    }
  }
  for (size_t pos = 0; pos < checked_end; ++pos) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      Bytes bad = s.wire;
      bad[pos] ^= flip;
      FpduDecoder d(c, Seq32(start), 1000);
      RecordingSink sink;
      const FeedResult r = d.Feed(bad, sink);
      ASSERT_NE(r.status, DecodeStatus::kOk) << "octet " << pos << " ^" << int{flip};
      ASSERT_LT(sink.got.size(), ulpdus.size());
      for (size_t i = 0; i < sink.got.size(); ++i) {
        ASSERT_EQ(sink.got[i].ulpdu, ulpdus[i]) << "octet " << pos;
      }
    }
  }
}

TEST(MpaDecoder, EverySingleOctetCorruptionIsCaughtWithMarkersAndCrc) {
  ExpectEveryCorruptionCaught({true, true, Seq32(0)}, 0);
  ExpectEveryCorruptionCaught({true, true, Seq32(0xFFFFFF00u)}, 0xFFFFFF00u + 300);
}

TEST(MpaDecoder, EverySingleOctetCorruptionIsCaughtWithCrcOnly) {
  ExpectEveryCorruptionCaught({false, true, Seq32(0)}, 12345);
}

// With Markers but no CRC, damage to any FPDUPTR is still reported.
TEST(MpaDecoder, EveryFpduptrCorruptionIsCaughtWithoutCrc) {
  std::mt19937 rng(3);
  const FpduConfig c{true, false, Seq32(0)};
  std::vector<Bytes> ulpdus;
  for (int i = 0; i < 20; ++i) ulpdus.push_back(RandomBytes(rng, rng() % 900));
  const Stream s = Build(ulpdus, c, 0);
  for (size_t slot = 0; slot + 4 <= s.wire.size(); slot += 512) {
    for (uint8_t flip : {uint8_t{0x04}, uint8_t{0x80}}) {
      Bytes bad = s.wire;
      bad[slot + 3] ^= flip;
      bad[slot + 2] ^= static_cast<uint8_t>(flip >> 4);
      FpduDecoder d(c, Seq32(0), 1000);
      RecordingSink sink;
      const FeedResult r = d.Feed(bad, sink);
      EXPECT_EQ(r.status, DecodeStatus::kMarkerMismatch) << slot;
    }
  }
}

}  // namespace
}  // namespace iwarp::mpa
