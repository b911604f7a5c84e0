#include "common/checksum.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp {
namespace {

TEST(Checksum, Rfc1071NumericalExample) {
  // RFC 1071 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (one's complement).
  const std::vector<uint8_t> data = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(ChecksumFold(ChecksumAdd(0, data)), static_cast<uint16_t>(~0xddf2));
  EXPECT_EQ(InternetChecksum(data), static_cast<uint16_t>(~0xddf2));
}

TEST(Checksum, KnownIpv4HeaderVerifiesToZero) {
  // A captured IPv4/UDP header with checksum b861.
  const std::vector<uint8_t> hdr = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
                                    0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
                                    0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(InternetChecksum(hdr), 0);
  std::vector<uint8_t> zeroed = hdr;
  zeroed[10] = zeroed[11] = 0;
  EXPECT_EQ(InternetChecksum(zeroed), 0xb861);
}

TEST(Checksum, OddLengthPadsWithZero) {
  const std::vector<uint8_t> odd = {0x12, 0x34, 0x56};
  const std::vector<uint8_t> padded = {0x12, 0x34, 0x56, 0x00};
  EXPECT_EQ(InternetChecksum(odd), InternetChecksum(padded));
  EXPECT_EQ(InternetChecksum(odd), static_cast<uint16_t>(~(0x1234 + 0x5600)));
}

TEST(Checksum, IncrementalUpdateMatchesRecomputation) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<uint8_t> data(2 + (rng() % 64) * 2);
    for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
    const uint16_t before = InternetChecksum(data);
    const size_t word = (rng() % (data.size() / 2)) * 2;
    const uint16_t old_word = LoadBe16(&data[word]);
    const uint16_t new_word = static_cast<uint16_t>(rng());
    StoreBe16(&data[word], new_word);
    const uint16_t full = InternetChecksum(data);
    const uint16_t inc = ChecksumAdjust(before, old_word, new_word);
    // RFC 1624 3: eqn. 3 may give 0xffff where recomputation gives 0 (both
    // are one's complement zero); they verify alike.
    if (full == 0 && inc == 0xffff) continue;
    ASSERT_EQ(inc, full) << "iteration " << iter;
  }
}

// The definition itself, one big-endian word at a time (RFC 1071 4.1).
uint16_t ReferenceChecksum(uint32_t sum, const uint8_t* p, size_t n) {
  uint64_t acc = sum;
  size_t i = 0;
  for (; i + 1 < n; i += 2) acc += LoadBe16(p + i);
  if (i < n) acc += static_cast<uint64_t>(p[i]) << 8;
  while (acc >> 16) acc = (acc & 0xffffu) + (acc >> 16);
  return static_cast<uint16_t>(~acc & 0xffffu);
}

TEST(Checksum, WideWordSumMatchesTheDefinitionForEveryLengthAndAlignment) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buf(9000 + 8);
  for (int iter = 0; iter < 3000; ++iter) {
    for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
    // Some all-0xff runs to push the accumulator towards its carries.
    if (iter % 7 == 0) std::fill(buf.begin(), buf.end(), 0xff);
    const size_t offset = rng() % 8;
    const size_t len = iter < 200 ? static_cast<size_t>(iter) : rng() % 9001;
    const uint32_t start = iter % 3 == 0 ? 0 : static_cast<uint32_t>(rng());
    ASSERT_EQ(ChecksumFold(ChecksumAdd(start, ByteSpan(buf.data() + offset, len))),
              ReferenceChecksum(start, buf.data() + offset, len))
        << "iteration " << iter << " offset " << offset << " length " << len;
  }
}

TEST(Checksum, EveryImplementationMatchesTheDefinitionAtOddOffsetsAndLengths) {
  std::mt19937 rng(13);
  std::vector<uint8_t> random(70000 + 64);
  for (uint8_t& b : random) b = static_cast<uint8_t>(rng());
  // All-0xff data drives every lane towards its carries.
  const std::vector<uint8_t> ones(random.size(), 0xff);
  std::vector<uint8_t> dst(random.size());
  int checked = 0;
  for (ChecksumImpl impl : {ChecksumImpl::kPortable, ChecksumImpl::kSse2, ChecksumImpl::kAvx2}) {
    if (!ChecksumImplAvailable(impl)) {
      std::printf("[ SKIPPED  ] %s: not available on this CPU or build\n",
                  std::string(ChecksumImplName(impl)).c_str());
      continue;
    }
    ++checked;
    for (int iter = 0; iter < 1500; ++iter) {
      if (iter % 10 == 1) random[rng() % random.size()] ^= static_cast<uint8_t>(rng() | 1);
      const std::vector<uint8_t>& buf = iter % 5 == 0 ? ones : random;
      const size_t offset = rng() % 64;
      const size_t len = iter < 300 ? static_cast<size_t>(iter)
                         : iter % 50 == 0 ? 65536 + rng() % 4000
                                          : rng() % 9001;
      const uint32_t start = iter % 3 == 0 ? 0 : static_cast<uint32_t>(rng());
      const ByteSpan src(buf.data() + offset, len);
      const uint16_t want = ReferenceChecksum(start, src.data(), len);
      ASSERT_EQ(ChecksumFold(ChecksumAddWith(impl, start, src)), want)
          << ChecksumImplName(impl) << " iteration " << iter << " offset " << offset
          << " length " << len;
      // The copying variant: same sum, bytes copied exactly, nothing written
      // past the end (dst offset differs from src offset: unaligned stores).
      const size_t doff = (offset * 7 + 3) % 64;
      std::fill(dst.begin(), dst.end(), 0xa5);
      ASSERT_EQ(ChecksumFold(ChecksumCopyWith(impl, dst.data() + doff, src, start)), want)
          << ChecksumImplName(impl) << " copy, iteration " << iter;
      ASSERT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + static_cast<ptrdiff_t>(doff)));
      ASSERT_TRUE(std::all_of(dst.begin(), dst.begin() + static_cast<ptrdiff_t>(doff),
                              [](uint8_t b) { return b == 0xa5; }));
      ASSERT_TRUE(std::all_of(dst.begin() + static_cast<ptrdiff_t>(doff + len), dst.end(),
                              [](uint8_t b) { return b == 0xa5; }));
    }
  }
  EXPECT_GE(checked, 1);
}

TEST(Checksum, DefaultEntryPointsUseTheChosenImplementation) {
  std::vector<uint8_t> buf(3001);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 37 + 1);
  EXPECT_TRUE(ChecksumImplAvailable(ChecksumImplInUse()));
  EXPECT_EQ(ChecksumAdd(5, buf), ChecksumAddWith(ChecksumImplInUse(), 5, buf));
  std::vector<uint8_t> dst(buf.size());
  EXPECT_EQ(ChecksumFold(ChecksumCopy(dst.data(), buf, 5)),
            ReferenceChecksum(5, buf.data(), buf.size()));
  EXPECT_EQ(dst, buf);
#if defined(__x86_64__)
  EXPECT_NE(ChecksumImplInUse(), ChecksumImpl::kPortable) << "x86-64 always has SSE2";
#endif
}

TEST(Checksum, EvenPiecesChainLikeOneSpan) {
  std::mt19937 rng(12);
  std::vector<uint8_t> buf(4096);
  for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
  for (int iter = 0; iter < 500; ++iter) {
    const size_t cut = (rng() % (buf.size() / 2)) * 2;  // pieces of even length chain
    const ByteSpan all(buf);
    const uint32_t chained = ChecksumAdd(ChecksumAdd(0, all.first(cut)), all.subspan(cut));
    ASSERT_EQ(ChecksumFold(chained), InternetChecksum(all)) << "cut " << cut;
  }
}

}  // namespace
}  // namespace iwarp
