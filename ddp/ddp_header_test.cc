#include "ddp/ddp_header.h"

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::ddp {
namespace {

using Bytes = std::vector<uint8_t>;

TEST(DdpHeader, EncodesTaggedHeaderByteExact) {
  DdpHeader h;
  h.tagged = true;
  h.last = true;
  h.rsvd_ulp0 = 0x40;
  h.stag = 0x11223344;
  h.to = 0x0102030405060708ull;
  std::array<uint8_t, 14> out{};
  ASSERT_EQ(EncodeHeader(h, out), 14u);
  const std::array<uint8_t, 14> want = {0xC1, 0x40, 0x11, 0x22, 0x33, 0x44, 0x01,
                                        0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  EXPECT_EQ(out, want);
}

TEST(DdpHeader, EncodesUntaggedHeaderByteExact) {
  DdpHeader h;
  h.tagged = false;
  h.last = false;
  h.rsvd_ulp0 = 0x44;
  h.rsvd_ulp1 = 0xCAFEBABE;
  h.qn = 2;
  h.msn = Seq32(0x01020304);
  h.mo = 0x00000A0B;
  std::array<uint8_t, 18> out{};
  ASSERT_EQ(EncodeHeader(h, out), 18u);
  const std::array<uint8_t, 18> want = {0x01, 0x44, 0xCA, 0xFE, 0xBA, 0xBE, 0x00, 0x00, 0x00,
                                        0x02, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x0A, 0x0B};
  EXPECT_EQ(out, want);
}

TEST(DdpHeader, EncodeRefusesShortBufferAndWritesNothing) {
  DdpHeader h;
  h.tagged = false;
  std::array<uint8_t, 17> out;
  out.fill(0xEE);
  EXPECT_EQ(EncodeHeader(h, out), 0u);
  for (uint8_t b : out) EXPECT_EQ(b, 0xEE);
}

TEST(DdpHeader, ParsesUntaggedFixture) {
  const Bytes in = {0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                    0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x05, 0xCA, 0xAA, 0xBB};
  DdpHeader h;
  ASSERT_EQ(ParseHeader(in, &h), HeaderStatus::kOk);
  EXPECT_FALSE(h.tagged);
  EXPECT_TRUE(h.last);
  EXPECT_EQ(h.rsvd_ulp0, 0x43);
  EXPECT_EQ(h.qn, 0u);
  EXPECT_EQ(h.msn, Seq32(7));
  EXPECT_EQ(h.mo, 1482u);
  EXPECT_EQ(h.size(), 18u);
}

TEST(DdpHeader, ReservedBitsAreIgnoredOnReceiveAndZeroOnTransmit) {
  // RFC 5041 4.1: Rsvd "MUST be set to zero on transmit, and not checked on receive".
  const Bytes in = {0xBD, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  DdpHeader h;
  ASSERT_EQ(ParseHeader(in, &h), HeaderStatus::kOk);
  EXPECT_TRUE(h.tagged);
  EXPECT_FALSE(h.last);
  EXPECT_EQ(h.stag, 1u);
  std::array<uint8_t, 14> out{};
  ASSERT_EQ(EncodeHeader(h, out), 14u);
  EXPECT_EQ(out[0], 0x81);
}

TEST(DdpHeader, RejectsEveryOtherVersionAndReportsTheModel) {
  for (uint8_t dv : {0, 2, 3}) {
    for (bool tagged : {false, true}) {
      Bytes in(18, 0);
      in[0] = static_cast<uint8_t>(dv | (tagged ? kCtrlTagged : 0));
      DdpHeader h;
      EXPECT_EQ(ParseHeader(in, &h), HeaderStatus::kBadVersion) << int{dv};
      EXPECT_EQ(h.tagged, tagged);
    }
  }
}

TEST(DdpHeader, TruncatedAtEveryLength) {
  for (bool tagged : {false, true}) {
    const size_t full = tagged ? kTaggedHeaderSize : kUntaggedHeaderSize;
    Bytes in(full, 0);
    in[0] = static_cast<uint8_t>(kDdpVersion | (tagged ? kCtrlTagged : 0));
    for (size_t n = 0; n < full; ++n) {
      DdpHeader h;
      EXPECT_EQ(ParseHeader(ByteSpan(in.data(), n), &h), HeaderStatus::kTruncated)
          << "tagged=" << tagged << " n=" << n;
    }
    DdpHeader h;
    EXPECT_EQ(ParseHeader(in, &h), HeaderStatus::kOk);
  }
}

TEST(DdpHeader, RandomFieldsRoundTrip) {
  std::mt19937_64 rng(5041);
  for (int i = 0; i < 20000; ++i) {
    DdpHeader h;
    h.tagged = (rng() & 1) != 0;
    h.last = (rng() & 1) != 0;
    h.rsvd_ulp0 = static_cast<uint8_t>(rng());
    if (h.tagged) {
      h.stag = static_cast<uint32_t>(rng());
      h.to = rng();
    } else {
      h.rsvd_ulp1 = static_cast<uint32_t>(rng());
      h.qn = static_cast<uint32_t>(rng());
      h.msn = Seq32(static_cast<uint32_t>(rng()));
      h.mo = static_cast<uint32_t>(rng());
    }
    std::array<uint8_t, kMaxHeaderSize + 4> buf{};
    const size_t n = EncodeHeader(h, buf);
    ASSERT_EQ(n, h.size());
    DdpHeader back;
    ASSERT_EQ(ParseHeader(ByteSpan(buf.data(), n), &back), HeaderStatus::kOk);
    ASSERT_EQ(back, h);
  }
}

TEST(DdpHeader, RandomBytesNeverCrashAndReencodeUpToReservedBits) {
  std::mt19937 rng(41);
  for (int i = 0; i < 50000; ++i) {
    Bytes in(rng() % 24);
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    DdpHeader h;
    if (ParseHeader(in, &h) != HeaderStatus::kOk) continue;
    std::array<uint8_t, kMaxHeaderSize> out{};
    ASSERT_EQ(EncodeHeader(h, out), h.size());
    ASSERT_EQ(out[0], in[0] & ~kCtrlReserved);
    for (size_t k = 1; k < h.size(); ++k) ASSERT_EQ(out[k], in[k]);
  }
}

}  // namespace
}  // namespace iwarp::ddp
