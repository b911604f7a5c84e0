#include "rpcrdma/xdr.h"

#include <array>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::rpcrdma {
namespace {

TEST(XdrTest, PaddingAndRoundUp) {
  EXPECT_EQ(XdrPadding(0), 0u);
  EXPECT_EQ(XdrPadding(1), 3u);
  EXPECT_EQ(XdrPadding(2), 2u);
  EXPECT_EQ(XdrPadding(3), 1u);
  EXPECT_EQ(XdrPadding(4), 0u);
  EXPECT_EQ(XdrRoundUp(0), 0u);
  EXPECT_EQ(XdrRoundUp(5), 8u);
  EXPECT_EQ(XdrRoundUp(0xffffffffu), 0x100000000u);  // no 32-bit wrap
  EXPECT_TRUE(XdrAligned(12));
  EXPECT_FALSE(XdrAligned(14));
}

TEST(XdrTest, ReadsBigEndianItems) {
  const std::array<uint8_t, 20> in = {
      0x01, 0x02, 0x03, 0x04,                          // uint32 0x01020304
      0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,  // hyper 0x800000000000002a
      0x00, 0x00, 0x00, 0x01,                          // TRUE
      0x00, 0x00, 0x00, 0x00,                          // FALSE
  };
  XdrReader r(in);
  EXPECT_EQ(r.U32(), 0x01020304u);
  EXPECT_EQ(r.Hyper(), 0x800000000000002aull);
  EXPECT_TRUE(r.Bool());
  EXPECT_FALSE(r.Present());
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.offset(), 20u);
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(XdrTest, BooleanOtherThanZeroOrOneIsAnError) {
  const std::array<uint8_t, 8> in = {0, 0, 0, 2, 0, 0, 0, 1};
  XdrReader r(in);
  EXPECT_FALSE(r.Bool());
  EXPECT_EQ(r.status(), XdrStatus::kBadBool);
  // Sticky: later reads yield zero and keep the first status.
  EXPECT_EQ(r.U32(), 0u);
  EXPECT_EQ(r.status(), XdrStatus::kBadBool);
}

TEST(XdrTest, TruncationIsStickyAndReadsNothing) {
  const std::array<uint8_t, 6> in = {0, 0, 0, 7, 0xff, 0xff};
  XdrReader r(in);
  EXPECT_EQ(r.U32(), 7u);
  EXPECT_EQ(r.U32(), 0u);  // two bytes left
  EXPECT_EQ(r.status(), XdrStatus::kTruncated);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_FALSE(r.Has(0));

  const std::array<uint8_t, 7> seven = {1, 2, 3, 4, 5, 6, 7};
  XdrReader h(seven);
  EXPECT_EQ(h.Hyper(), 0u);  // one byte short of a hyper
  EXPECT_EQ(h.status(), XdrStatus::kTruncated);
  EXPECT_EQ(h.offset(), 0u);

  XdrReader s(in);
  EXPECT_FALSE(s.Skip(8));
  EXPECT_EQ(s.status(), XdrStatus::kTruncated);
}

TEST(XdrTest, WriterWritesBigEndianAndPads) {
  std::array<uint8_t, 24> out{};
  out.fill(0xee);
  XdrWriter w(out);
  w.U32(0xdeadbeef);
  w.Hyper(0x0102030405060708ull);
  w.Bool(true);
  const std::array<uint8_t, 3> op = {0xaa, 0xbb, 0xcc};
  w.OpaqueFixed(op);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w.offset(), 20u);
  const std::array<uint8_t, 24> want = {
      0xde, 0xad, 0xbe, 0xef,                          // uint32
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // hyper
      0x00, 0x00, 0x00, 0x01,                          // TRUE
      0xaa, 0xbb, 0xcc, 0x00,                          // opaque[3] + one zero pad byte
      0xee, 0xee, 0xee, 0xee,                          // untouched
  };
  EXPECT_EQ(out, want);
}

TEST(XdrTest, WriterRefusesWhatDoesNotFit) {
  std::array<uint8_t, 6> out{};
  XdrWriter w(out);
  w.U32(1);
  w.U32(2);  // does not fit
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(w.offset(), 4u);
  EXPECT_EQ(out[4], 0);
}

}  // namespace
}  // namespace iwarp::rpcrdma
