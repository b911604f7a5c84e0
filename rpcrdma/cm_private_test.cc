#include "rpcrdma/cm_private.h"

#include <array>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::rpcrdma {
namespace {

using Bytes = std::vector<uint8_t>;

TEST(CmPrivateTest, LinuxDefaultsByteExact) {
  // What a Linux client with 4 KiB inline thresholds that accepts remote
  // invalidation sends.
  CmPrivateData pd{.remote_invalidation = true, .send_size = 4096, .receive_size = 4096};
  std::array<uint8_t, 8> out{};
  ASSERT_EQ(EncodeCmPrivateData(pd, out), CmPrivateStatus::kOk);
  const std::array<uint8_t, 8> want = {
      0xf6, 0xab, 0x0e, 0x18,  // Format Identifier
      0x01,                    // Version 1
      0x01,                    // Flags: Remote Invalidation
      0x03,                    // Send Size: 4096 / 1024 - 1
      0x03,                    // Receive Size: 4096 / 1024 - 1
  };
  EXPECT_EQ(out, want);
  CmPrivateData back;
  ASSERT_EQ(DecodeCmPrivateData(out, &back), CmPrivateStatus::kOk);
  EXPECT_EQ(back, pd);
}

TEST(CmPrivateTest, SizesEncodeAsKibMinusOne) {
  std::array<uint8_t, 8> out{};
  CmPrivateData pd{.remote_invalidation = false, .send_size = 1024, .receive_size = 256 * 1024};
  ASSERT_EQ(EncodeCmPrivateData(pd, out), CmPrivateStatus::kOk);
  EXPECT_EQ(out[5], 0x00);  // no flags
  EXPECT_EQ(out[6], 0x00);  // 1 KiB
  EXPECT_EQ(out[7], 0xff);  // 256 KiB
  // Not a multiple of 1 KiB: rounded down, never up.
  pd.send_size = 4095;
  pd.receive_size = 9000;
  ASSERT_EQ(EncodeCmPrivateData(pd, out), CmPrivateStatus::kOk);
  EXPECT_EQ(out[6], 0x02);  // 3072
  EXPECT_EQ(out[7], 0x07);  // 8192
  // Out of range.
  pd.send_size = 1023;
  EXPECT_EQ(EncodeCmPrivateData(pd, out), CmPrivateStatus::kSizeOutOfRange);
  pd.send_size = 1024;
  pd.receive_size = 256 * 1024 + 1;
  EXPECT_EQ(EncodeCmPrivateData(pd, out), CmPrivateStatus::kSizeOutOfRange);
  pd.receive_size = 0;
  EXPECT_EQ(EncodeCmPrivateData(pd, out), CmPrivateStatus::kSizeOutOfRange);
  pd.receive_size = 2048;
  EXPECT_EQ(EncodeCmPrivateData(pd, std::span(out).first(7)), CmPrivateStatus::kBufferTooSmall);
}

TEST(CmPrivateTest, DecodeEveryByteValueOfTheSizes) {
  for (int v = 0; v < 256; ++v) {
    const std::array<uint8_t, 8> in = {0xf6, 0xab, 0x0e, 0x18, 1, 0,
                                       static_cast<uint8_t>(v), static_cast<uint8_t>(255 - v)};
    CmPrivateData pd;
    ASSERT_EQ(DecodeCmPrivateData(in, &pd), CmPrivateStatus::kOk);
    EXPECT_EQ(pd.send_size, static_cast<uint32_t>(v + 1) * 1024);
    EXPECT_EQ(pd.receive_size, static_cast<uint32_t>(256 - v) * 1024);
    std::array<uint8_t, 8> again{};
    ASSERT_EQ(EncodeCmPrivateData(pd, again), CmPrivateStatus::kOk);
    EXPECT_EQ(again, in);
  }
}

TEST(CmPrivateTest, DecodeValidation) {
  CmPrivateData pd;
  const Bytes good = {0xf6, 0xab, 0x0e, 0x18, 1, 0x01, 3, 31};
  for (size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(DecodeCmPrivateData(cut, &pd), CmPrivateStatus::kTruncated) << n;
  }
  // Another protocol's private data (here byte-swapped magic): treat as absent.
  EXPECT_EQ(DecodeCmPrivateData(Bytes{0x18, 0x0e, 0xab, 0xf6, 1, 0, 3, 3}, &pd),
            CmPrivateStatus::kNotRpcRdma);
  EXPECT_EQ(DecodeCmPrivateData(Bytes{0xf6, 0xab, 0x0e, 0x18, 2, 0, 3, 3}, &pd),
            CmPrivateStatus::kBadVersion);
  EXPECT_EQ(DecodeCmPrivateData(Bytes{0xf6, 0xab, 0x0e, 0x18, 0, 0, 3, 3}, &pd),
            CmPrivateStatus::kBadVersion);
  // Reserved flag bits are ignored; trailing transport padding too.
  Bytes padded = {0xf6, 0xab, 0x0e, 0x18, 1, 0xfe, 3, 31};
  padded.resize(56, 0);
  ASSERT_EQ(DecodeCmPrivateData(padded, &pd), CmPrivateStatus::kOk);
  EXPECT_FALSE(pd.remote_invalidation);
  EXPECT_EQ(pd.send_size, 4096u);
  EXPECT_EQ(pd.receive_size, 32768u);
  ASSERT_EQ(DecodeCmPrivateData(good, &pd), CmPrivateStatus::kOk);
  EXPECT_TRUE(pd.remote_invalidation);
}

}  // namespace
}  // namespace iwarp::rpcrdma
