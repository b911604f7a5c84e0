#include "common/seq.h"

#include "gtest/gtest.h"

namespace iwarp {
namespace {

TEST(Seq, ComparesAcrossWrap) {
  Seq32 a(0xfffffff0u);
  Seq32 b = a + 0x20;  // wraps to 0x10
  EXPECT_EQ(b.value(), 0x10u);
  EXPECT_LT(a, b);
  EXPECT_GT(b, a);
  EXPECT_EQ(b - a, 0x20);
  EXPECT_EQ(a - b, -0x20);
}

TEST(Seq, WindowMembershipAcrossWrap) {
  Seq32 lo(0xffffff00u);
  Seq32 hi = lo + 0x200;
  EXPECT_TRUE(Seq32(0xffffff00u).InWindow(lo, hi));
  EXPECT_TRUE(Seq32(0x000000ffu).InWindow(lo, hi));
  EXPECT_FALSE(Seq32(0x00000100u).InWindow(lo, hi));
  EXPECT_FALSE(Seq32(0xfffffeffu).InWindow(lo, hi));
}

TEST(Seq, SixteenBitSsn) {
  Seq16 a(65535);
  EXPECT_EQ((a + 1).value(), 0);
  EXPECT_LT(a, a + 1);
}

}  // namespace
}  // namespace iwarp
