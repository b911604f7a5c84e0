#include "common/bytes.h"

#include <array>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp {
namespace {

TEST(Bytes, BigEndianRoundTrip) {
  std::array<uint8_t, 14> buf{};
  ByteWriter w(buf);
  w.U16(0x0102);
  w.U32(0x03040506);
  w.U64(0x0708090a0b0c0d0eULL);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(buf[0], 0x01);
  EXPECT_EQ(buf[5], 0x06);
  EXPECT_EQ(buf[13], 0x0e);
  ByteReader r(buf);
  EXPECT_EQ(r.U16(), 0x0102);
  EXPECT_EQ(r.U32(), 0x03040506u);
  EXPECT_EQ(r.U64(), 0x0708090a0b0c0d0eULL);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(Bytes, ReaderFailsSoftlyPastTheEnd) {
  const std::vector<uint8_t> buf = {0xaa, 0xbb, 0xcc};
  ByteReader r(buf);
  EXPECT_EQ(r.U16(), 0xaabb);
  EXPECT_EQ(r.U16(), 0);  // only one byte left
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.U8(), 0);  // stays failed even though a byte would fit
  EXPECT_TRUE(r.Bytes(1).empty());
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(Bytes, WriterRefusesOverflowAndWritesNothing) {
  std::array<uint8_t, 3> buf{0x11, 0x22, 0x33};
  ByteWriter w(buf);
  w.U8(0x44);
  w.U32(0xdeadbeef);
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(w.offset(), 1u);
  EXPECT_EQ(buf[1], 0x22);
  EXPECT_EQ(buf[2], 0x33);
}

}  // namespace
}  // namespace iwarp
