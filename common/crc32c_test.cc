#include "common/crc32c.h"

#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace iwarp {
namespace {

std::vector<uint8_t> Filled(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// RFC 3720 B.4: CRC32c examples (the RFC prints the digests in wire order,
// e.g. "aa 36 91 8a" for 32 zero bytes).
TEST(Crc32c, Rfc3720Vectors) {
  EXPECT_EQ(Crc32c(Filled(32, 0x00)), 0x8a9136aau);
  EXPECT_EQ(Crc32c(Filled(32, 0xff)), 0x62a8ab43u);
  std::vector<uint8_t> up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<uint8_t>(i);
    down[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(Crc32c(up), 0x46dd794eu);
  EXPECT_EQ(Crc32c(down), 0x113fdb5cu);
  // The 48-byte iSCSI SCSI Read (10) command PDU of RFC 3720 B.4.
  std::vector<uint8_t> pdu(48, 0);
  pdu[0] = 0x01;
  pdu[1] = 0xc0;
  pdu[16] = 0x14;
  pdu[22] = 0x04;
  pdu[27] = 0x14;
  pdu[31] = 0x18;
  pdu[32] = 0x28;
  pdu[40] = 0x02;
  EXPECT_EQ(Crc32c(pdu), 0xd9963a56u);
  // RFC 3720 lists the digest in wire order, "56 3a 96 d9": the same least
  // significant byte first order MPA uses.
  std::array<uint8_t, 4> wire{};
  StoreCrc32cWire(wire.data(), Crc32c(pdu));
  EXPECT_EQ(wire, (std::array<uint8_t, 4>{0x56, 0x3a, 0x96, 0xd9}));
}

TEST(Crc32c, EmptyInputIsZero) {
  EXPECT_EQ(Crc32c(ByteSpan{}), 0u);
  Crc32cAccumulator acc;
  EXPECT_EQ(acc.Value(), 0u);
  acc.Update(nullptr, 0);
  EXPECT_EQ(acc.Value(), 0u);
}

// RFC 5044 4.4 Figure 5: the CRC covers the leading Marker, ULPDU_Length and
// the 42-byte ULPDU, and goes on the wire as 52 23 99 83.
TEST(Crc32c, Rfc5044Figure5WireOrder) {
  std::vector<uint8_t> fpdu(48, 0);
  fpdu[5] = 0x2a;  // ULPDU_Length 42
  fpdu[6] = 0x41;  // DDP control: Send, Last
  fpdu[7] = 0x43;
  fpdu[0x13] = 0x01;  // MSN 1
  const uint32_t crc = Crc32c(fpdu);
  EXPECT_EQ(crc, 0x83992352u);
  std::array<uint8_t, 4> wire{};
  StoreCrc32cWire(wire.data(), crc);
  EXPECT_EQ(wire, (std::array<uint8_t, 4>{0x52, 0x23, 0x99, 0x83}));
  EXPECT_EQ(LoadCrc32cWire(wire.data()), crc);
}

TEST(Crc32c, AccumulatorMatchesOneShotForEverySplit) {
  const auto data = Random(300, 1);
  const uint32_t want = Crc32c(data);
  for (size_t a = 0; a <= data.size(); a += 7) {
    for (size_t b = a; b <= data.size(); b += 13) {
      Crc32cAccumulator acc;
      acc.Update(ByteSpan(data).first(a));
      acc.Update(ByteSpan(data).subspan(a, b - a));
      acc.Update(ByteSpan(data).subspan(b));
      ASSERT_EQ(acc.Value(), want) << a << " " << b;
    }
  }
}

TEST(Crc32c, AccumulatorValueDoesNotEndAccumulation) {
  const auto data = Random(100, 2);
  Crc32cAccumulator acc;
  acc.Update(ByteSpan(data).first(40));
  EXPECT_EQ(acc.Value(), Crc32c(ByteSpan(data).first(40)));
  acc.Update(ByteSpan(data).subspan(40));
  EXPECT_EQ(acc.Value(), Crc32c(data));
  acc.Reset();
  acc.Update(ByteSpan(data).first(10));
  EXPECT_EQ(acc.Value(), Crc32c(ByteSpan(data).first(10)));
}

TEST(Crc32c, SingleBitFlipChangesCrc) {
  auto data = Random(1024, 3);
  const uint32_t base = Crc32c(data);
  for (size_t i = 0; i < data.size(); i += 37) {
    for (int bit = 0; bit < 8; ++bit) {
      data[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_NE(Crc32c(data), base) << i << ":" << bit;
      data[i] ^= static_cast<uint8_t>(1u << bit);
    }
  }
}

// Sizes around the block size, odd offsets, and a prefix already in the
// accumulator: the copy is exact and the CRC equals the one-shot value.
TEST(Crc32c, CopyAndCrcCopiesExactlyAndMatches) {
  const auto src = Random(3 * kCopyCrc32cBlock + 64, 4);
  const size_t sizes[] = {0, 1, 3, 63, 64, 65, kCopyCrc32cBlock - 1, kCopyCrc32cBlock,
                          kCopyCrc32cBlock + 1, 2 * kCopyCrc32cBlock + 17,
                          3 * kCopyCrc32cBlock + 5};
  for (size_t n : sizes) {
    for (size_t off : {size_t{0}, size_t{1}, size_t{7}}) {
      std::vector<uint8_t> dst(n + 2, 0xee);
      Crc32cAccumulator acc;
      acc.Update(src.data(), 5);  // a header already folded in
      CopyAndCrc32c(dst.data() + 1, src.data() + off, n, acc);
      ASSERT_EQ(0, std::memcmp(dst.data() + 1, src.data() + off, n)) << n;
      EXPECT_EQ(dst[0], 0xee);  // no byte written outside [dst, dst + n)
      EXPECT_EQ(dst[n + 1], 0xee);
      Crc32cAccumulator want;
      want.Update(src.data(), 5);
      want.Update(src.data() + off, n);
      EXPECT_EQ(acc.Value(), want.Value()) << n << "+" << off;
    }
  }
}

TEST(Crc32c, BlockedCopyAgreesForEveryBlockSize) {
  const auto src = Random(10000, 5);
  const uint32_t want = Crc32c(src);
  for (size_t block : {size_t{0}, size_t{1}, size_t{64}, size_t{1000}, size_t{16384}}) {
    std::vector<uint8_t> dst(src.size());
    Crc32cAccumulator acc;
    internal::CopyAndCrc32cBlocked(dst.data(), src.data(), src.size(), acc, block);
    EXPECT_EQ(dst, src) << block;
    EXPECT_EQ(acc.Value(), want) << block;
  }
}

#if defined(__x86_64__)
// XINUSE (XGETBV with ECX = 1, where the CPU has it): which register state
// components are not in their initial configuration.
bool ReadXinuse(uint64_t* out) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 0xd) return false;
  __cpuid(1, a, b, c, d);
  if ((c & bit_OSXSAVE) == 0) return false;
  __cpuid_count(0xd, 1, a, b, c, d);
  if ((a & (1u << 2)) == 0) return false;  // no XGETBV with ECX = 1
  uint32_t lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  *out = (uint64_t{hi} << 32) | lo;
  return true;
}

// After a CRC the vector registers' upper halves are clean (XINUSE bit 2,
// the YMM upper halves, and bit 6, the ZMM upper halves of registers 0-15).
// ISA-L's AVX-512 kernel leaves them dirty, and every legacy-SSE
// instruction after it would pay a state transition (crc32c.cc).
TEST(Crc32c, LeavesTheVectorUpperStateClean) {
  uint64_t x = 0;
  if (!ReadXinuse(&x)) {
    GTEST_SKIP() << "this CPU cannot report register state in use (no XGETBV with ECX=1)";
  }
  const std::vector<uint8_t> data = Random(64 * 1024, 5);
  std::vector<uint8_t> dst(data.size());
  constexpr uint64_t kUpper = (1u << 2) | (1u << 6);
  for (size_t n : {size_t{20}, size_t{1428}, data.size()}) {
    const uint32_t crc = Crc32c(ByteSpan(data.data(), n));
    ASSERT_TRUE(ReadXinuse(&x));
    EXPECT_EQ(x & kUpper, 0u) << "after Crc32c of " << n << " bytes (crc " << crc << ")";
    Crc32cAccumulator acc;
    CopyAndCrc32c(dst.data(), data.data(), n, acc);
    ASSERT_TRUE(ReadXinuse(&x));
    EXPECT_EQ(x & kUpper, 0u) << "after CopyAndCrc32c of " << n << " bytes";
  }
}
#endif

}  // namespace
}  // namespace iwarp
