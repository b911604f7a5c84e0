#include "mpa/mpa_frame.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::mpa {
namespace {

std::vector<uint8_t> Bytes(std::string_view s) { return std::vector<uint8_t>(s.begin(), s.end()); }

std::vector<uint8_t> Encode(const StartupFrame& f) {
  std::vector<uint8_t> out(StartupFrameSize(f));
  const FrameResult r = EncodeStartupFrame(f, out);
  EXPECT_EQ(r.status, FrameStatus::kOk) << FrameStatusName(r.status);
  EXPECT_EQ(r.size, out.size());
  return out;
}

// Header of a frame built by hand: key, flags, rev, PD_Length.
std::vector<uint8_t> Header(std::string_view key, uint8_t flags, uint8_t rev, uint16_t pd_len) {
  std::vector<uint8_t> v = Bytes(key);
  v.push_back(flags);
  v.push_back(rev);
  v.push_back(static_cast<uint8_t>(pd_len >> 8));
  v.push_back(static_cast<uint8_t>(pd_len));
  return v;
}

TEST(MpaFrame, KeysAreTheRfcBytes) {
  // RFC 5044 7.1.1: 4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65 (Req).
  const std::vector<uint8_t> req = {0x4D, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
                                    0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6D, 0x65};
  EXPECT_EQ(Bytes(kRequestKey), req);
  std::vector<uint8_t> rep = req;
  rep[9] = 0x70;  // 'p'
  EXPECT_EQ(Bytes(kReplyKey), rep);
}

TEST(MpaFrame, EncodesRev1RequestByteExact) {
  StartupFrame f;
  f.type = FrameType::kRequest;
  f.markers = true;
  f.crc = true;
  f.revision = kRevision1;
  const std::vector<uint8_t> pd = {0xde, 0xad, 0xbe};
  f.private_data = pd;
  std::vector<uint8_t> want = Header(kRequestKey, 0xC0, 1, 3);
  want.insert(want.end(), pd.begin(), pd.end());
  EXPECT_EQ(Encode(f), want);
}

TEST(MpaFrame, EncodesRev2ReplyWithIrdOrdByteExact) {
  StartupFrame f;
  f.type = FrameType::kReply;
  f.crc = true;
  f.reject = true;
  f.revision = kRevision2;
  IrdOrd io;
  io.ird = 0x0080;
  io.ord = 0x3FFF;
  io.peer_to_peer = true;
  io.read_rtr = true;
  f.ird_ord = io;
  const std::vector<uint8_t> pd = {1, 2};
  f.private_data = pd;
  std::vector<uint8_t> want = Header(kReplyKey, 0x40 | 0x20 | 0x10, 2, 6);
  // IRD word: A | 0x80; ORD word: D | 0x3FFF.
  want.insert(want.end(), {0x80, 0x80, 0x7F, 0xFF, 1, 2});
  EXPECT_EQ(Encode(f), want);
  StartupFrame d;
  const FrameResult r = DecodeStartupFrame(want, FrameType::kReply, &d);
  ASSERT_EQ(r.status, FrameStatus::kOk);
  EXPECT_EQ(r.size, want.size());
  EXPECT_TRUE(SameFrame(d, f));
}

TEST(MpaFrame, DecodesEveryIrdOrdControlBit) {
  struct Case {
    uint8_t b[4];
    IrdOrd want;
  };
  const Case cases[] = {
      {{0x80, 0x00, 0x00, 0x00}, {0, 0, true, false, false, false}},
      {{0x40, 0x00, 0x00, 0x00}, {0, 0, false, true, false, false}},
      {{0x00, 0x00, 0x80, 0x00}, {0, 0, false, false, true, false}},
      {{0x00, 0x00, 0x40, 0x00}, {0, 0, false, false, false, true}},
      {{0x3F, 0xFF, 0x00, 0x01}, {0x3FFF, 1, false, false, false, false}},
      {{0xFF, 0xFF, 0xFF, 0xFF}, {0x3FFF, 0x3FFF, true, true, true, true}},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> in = Header(kRequestKey, 0x10, 2, 4);
    in.insert(in.end(), c.b, c.b + 4);
    StartupFrame d;
    ASSERT_EQ(DecodeStartupFrame(in, FrameType::kRequest, &d).status, FrameStatus::kOk);
    ASSERT_TRUE(d.ird_ord.has_value());
    EXPECT_EQ(*d.ird_ord, c.want);
    EXPECT_TRUE(d.private_data.empty());
    EXPECT_EQ(Encode(d), in);  // and back to the same bytes
  }
}

TEST(MpaFrame, DecodesRequestWithoutEnhancedBlock) {
  std::vector<uint8_t> in = Header(kRequestKey, 0x80, 1, 2);
  in.insert(in.end(), {0xAA, 0xBB});
  StartupFrame d;
  const FrameResult r = DecodeStartupFrame(in, FrameType::kRequest, &d);
  ASSERT_EQ(r.status, FrameStatus::kOk);
  EXPECT_EQ(r.size, 22u);
  EXPECT_TRUE(d.markers);
  EXPECT_FALSE(d.crc);
  EXPECT_EQ(d.revision, 1);
  EXPECT_FALSE(d.ird_ord.has_value());
  ASSERT_EQ(d.private_data.size(), 2u);
  EXPECT_EQ(d.private_data.data(), in.data() + 20);  // a view, not a copy
}

TEST(MpaFrame, TrailingBytesAreNotPartOfTheFrame) {
  std::vector<uint8_t> in = Header(kReplyKey, 0x40, 2, 0);
  in.insert(in.end(), {0x00, 0x2a, 0x41});  // the start of an FPDU
  StartupFrame d;
  const FrameResult r = DecodeStartupFrame(in, FrameType::kReply, &d);
  EXPECT_EQ(r.status, FrameStatus::kOk);
  EXPECT_EQ(r.size, 20u);
}

TEST(MpaFrame, EveryTruncationAsksForMoreBytes) {
  std::vector<uint8_t> in = Header(kRequestKey, 0x50, 2, 10);
  in.insert(in.end(), {0, 8, 0, 8, 1, 2, 3, 4, 5, 6});
  for (size_t n = 0; n < in.size(); ++n) {
    StartupFrame d;
    const FrameResult r =
        DecodeStartupFrame(ByteSpan(in).first(n), FrameType::kRequest, &d);
    ASSERT_EQ(r.status, FrameStatus::kNeedMoreBytes) << n;
    EXPECT_EQ(r.size, n < 20 ? 20u : 30u) << n;
  }
  StartupFrame d;
  EXPECT_EQ(DecodeStartupFrame(in, FrameType::kRequest, &d).status, FrameStatus::kOk);
}

TEST(MpaFrame, BadKeyIsReportedAsSoonAsItDiffers) {
  std::vector<uint8_t> in = Header(kRequestKey, 0, 1, 0);
  in[3] = 'X';
  StartupFrame d;
  EXPECT_EQ(DecodeStartupFrame(ByteSpan(in).first(3), FrameType::kRequest, &d).status,
            FrameStatus::kNeedMoreBytes);
  const FrameResult r = DecodeStartupFrame(ByteSpan(in).first(4), FrameType::kRequest, &d);
  EXPECT_EQ(r.status, FrameStatus::kBadKey);
  EXPECT_EQ(ToMpaError(r.status), MpaError::kInvalidStartupFrame);
  // Lower case is a different key too.
  std::vector<uint8_t> lower = Header("mpa id req frame", 0, 1, 0);
  EXPECT_EQ(DecodeStartupFrame(lower, FrameType::kRequest, &d).status, FrameStatus::kBadKey);
}

TEST(MpaFrame, OtherKeyIsUnexpectedFrameType) {
  // RFC 5044 7.1.2 rule 8: a Request where a Reply is due means both ends
  // started as Initiator.
  const std::vector<uint8_t> req = Header(kRequestKey, 0, 2, 0);
  StartupFrame d;
  EXPECT_EQ(DecodeStartupFrame(req, FrameType::kReply, &d).status,
            FrameStatus::kUnexpectedFrameType);
  EXPECT_EQ(DecodeStartupFrame(ByteSpan(req).first(12), FrameType::kReply, &d).status,
            FrameStatus::kNeedMoreBytes);
  const std::vector<uint8_t> rep = Header(kReplyKey, 0, 2, 0);
  EXPECT_EQ(DecodeStartupFrame(rep, FrameType::kRequest, &d).status,
            FrameStatus::kUnexpectedFrameType);
}

TEST(MpaFrame, RevisionOtherThanOneOrTwoIsRejected) {
  StartupFrame d;
  for (int rev : {0, 3, 255}) {
    EXPECT_EQ(DecodeStartupFrame(Header(kRequestKey, 0, static_cast<uint8_t>(rev), 0),
                                 FrameType::kRequest, &d)
                  .status,
              FrameStatus::kBadRevision)
        << rev;
  }
  for (int rev : {1, 2}) {
    EXPECT_EQ(DecodeStartupFrame(Header(kRequestKey, 0, static_cast<uint8_t>(rev), 0),
                                 FrameType::kRequest, &d)
                  .status,
              FrameStatus::kOk);
    EXPECT_EQ(d.revision, rev);
  }
}

TEST(MpaFrame, ReservedBitsAreIgnoredUnlessAskedToReject) {
  const std::vector<uint8_t> in = Header(kRequestKey, 0x45, 1, 0);
  StartupFrame d;
  ASSERT_EQ(DecodeStartupFrame(in, FrameType::kRequest, &d).status, FrameStatus::kOk);
  EXPECT_EQ(d.reserved, 0x05);
  EXPECT_TRUE(d.crc);
  FrameDecodeOptions strict;
  strict.reject_reserved_bits = true;
  EXPECT_EQ(DecodeStartupFrame(in, FrameType::kRequest, &d, strict).status,
            FrameStatus::kReservedBitsSet);
  // We never send them.
  StartupFrame f;
  f.reserved = 1;
  std::vector<uint8_t> out(64);
  EXPECT_EQ(EncodeStartupFrame(f, out).status, FrameStatus::kReservedBitsSet);
}

TEST(MpaFrame, RejectBitIsIgnoredInRequestAndReadInReply) {
  StartupFrame d;
  ASSERT_EQ(DecodeStartupFrame(Header(kRequestKey, 0x20, 1, 0), FrameType::kRequest, &d).status,
            FrameStatus::kOk);
  EXPECT_FALSE(d.reject);
  ASSERT_EQ(DecodeStartupFrame(Header(kReplyKey, 0x20, 1, 0), FrameType::kReply, &d).status,
            FrameStatus::kOk);
  EXPECT_TRUE(d.reject);
  StartupFrame f;
  f.reject = true;
  std::vector<uint8_t> out(64);
  EXPECT_EQ(EncodeStartupFrame(f, out).status, FrameStatus::kRejectInRequest);
}

TEST(MpaFrame, PrivateDataLimit) {
  StartupFrame d;
  // 512 is allowed (RFC 5044 7.1.1) ...
  std::vector<uint8_t> ok = Header(kRequestKey, 0, 1, 512);
  ok.resize(20 + 512, 0x5a);
  ASSERT_EQ(DecodeStartupFrame(ok, FrameType::kRequest, &d).status, FrameStatus::kOk);
  EXPECT_EQ(d.private_data.size(), 512u);
  // ... 513 is not, and is reported from the header alone.
  const std::vector<uint8_t> big = Header(kRequestKey, 0, 1, 513);
  const FrameResult r = DecodeStartupFrame(big, FrameType::kRequest, &d);
  EXPECT_EQ(r.status, FrameStatus::kPrivateDataTooLong);
  EXPECT_EQ(ToMpaError(r.status), MpaError::kInvalidStartupFrame);
  EXPECT_EQ(DecodeStartupFrame(Header(kRequestKey, 0, 1, 0xFFFF), FrameType::kRequest, &d).status,
            FrameStatus::kPrivateDataTooLong);
  // A local limit (the Consumer's buffer, rule 9).
  FrameDecodeOptions small;
  small.max_private_data = 256;
  std::vector<uint8_t> pd257 = Header(kRequestKey, 0, 1, 257);
  pd257.resize(20 + 257);
  EXPECT_EQ(DecodeStartupFrame(pd257, FrameType::kRequest, &d, small).status,
            FrameStatus::kPrivateDataTooLong);
  // Encode: the IRD/ORD block counts towards the 512.
  StartupFrame f;
  f.ird_ord = IrdOrd{};
  std::vector<uint8_t> pd(509);
  f.private_data = pd;
  std::vector<uint8_t> out(600);
  EXPECT_EQ(EncodeStartupFrame(f, out).status, FrameStatus::kPrivateDataTooLong);
  f.private_data = ByteSpan(pd).first(508);
  EXPECT_EQ(EncodeStartupFrame(f, out).status, FrameStatus::kOk);
}

TEST(MpaFrame, EnhancedBitNeedsRev2AndFourOctets) {
  StartupFrame d;
  // Rev 1: 0x10 is a Res bit, not checked on reception (RFC 5044 7.1.1); the
  // four private data octets stay private data.
  std::vector<uint8_t> rev1 = Header(kRequestKey, 0x50, 1, 4);
  rev1.resize(24);
  rev1[20] = 0xde;
  ASSERT_EQ(DecodeStartupFrame(rev1, FrameType::kRequest, &d).status, FrameStatus::kOk);
  EXPECT_FALSE(d.ird_ord.has_value());
  EXPECT_TRUE(d.crc);
  EXPECT_EQ(d.reserved, 0x10);
  ASSERT_EQ(d.private_data.size(), 4u);
  EXPECT_EQ(d.private_data[0], 0xde);
  FrameDecodeOptions strict;
  strict.reject_reserved_bits = true;
  EXPECT_EQ(DecodeStartupFrame(rev1, FrameType::kRequest, &d, strict).status,
            FrameStatus::kReservedBitsSet);
  for (uint16_t pd_len = 0; pd_len < 4; ++pd_len) {
    std::vector<uint8_t> in = Header(kRequestKey, 0x10, 2, pd_len);
    in.resize(20 + pd_len);
    EXPECT_EQ(DecodeStartupFrame(in, FrameType::kRequest, &d).status,
              FrameStatus::kIrdOrdMissing)
        << pd_len;
  }
  StartupFrame f;
  f.revision = 1;
  f.ird_ord = IrdOrd{};
  std::vector<uint8_t> out(64);
  EXPECT_EQ(EncodeStartupFrame(f, out).status, FrameStatus::kEnhancedNeedsRev2);
}

TEST(MpaFrame, EncodeRejectsBadInput) {
  std::vector<uint8_t> out(64);
  StartupFrame f;
  f.revision = 3;
  EXPECT_EQ(EncodeStartupFrame(f, out).status, FrameStatus::kBadRevision);
  f.revision = 2;
  f.ird_ord = IrdOrd{0x4000, 0, false, false, false, false};
  EXPECT_EQ(EncodeStartupFrame(f, out).status, FrameStatus::kIrdOrdOutOfRange);
  f.ird_ord = IrdOrd{0, 0x4000, false, false, false, false};
  EXPECT_EQ(EncodeStartupFrame(f, out).status, FrameStatus::kIrdOrdOutOfRange);
  f.ird_ord = IrdOrd{};
  EXPECT_EQ(EncodeStartupFrame(f, MutableByteSpan(out).first(23)).status,
            FrameStatus::kBufferTooSmall);
  EXPECT_EQ(EncodeStartupFrame(f, MutableByteSpan(out).first(24)).status, FrameStatus::kOk);
}

TEST(MpaFrame, StatusNamesAreDistinct) {
  EXPECT_EQ(FrameStatusName(FrameStatus::kBadKey), "bad_key");
  EXPECT_EQ(FrameStatusName(FrameStatus::kPrivateDataTooLong), "private_data_too_long");
  EXPECT_EQ(ToMpaError(FrameStatus::kOk), MpaError::kNone);
  EXPECT_EQ(ToMpaError(FrameStatus::kNeedMoreBytes), MpaError::kNone);
  EXPECT_EQ(static_cast<int>(MpaError::kInvalidStartupFrame), 4);
  EXPECT_EQ(static_cast<int>(MpaError::kNoMatchingRtr), 7);
}

}  // namespace
}  // namespace iwarp::mpa
