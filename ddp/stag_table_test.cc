#include "ddp/stag_table.h"

#include <set>

#include "gtest/gtest.h"

namespace iwarp::ddp {
namespace {

TaggedRegion Region(uint32_t pd, uint64_t base, uint64_t len, uint8_t access) {
  TaggedRegion r;
  r.pd = pd;
  r.base_to = base;
  r.length = len;
  r.access = access;
  return r;
}

TEST(StagTable, RegisterFindsRegionUnderIndexAndKey) {
  FixedStagTable t(8);
  auto s = t.Register(Region(1, 0x1000, 4096, kAccessRemoteWrite));
  ASSERT_TRUE(s.ok());
  EXPECT_NE(StagIndex(*s), 0u);
  const TaggedRegion* r = t.Find(*s);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->stag, *s);
  EXPECT_TRUE(r->valid);
  EXPECT_EQ(r->base_to, 0x1000u);
  // Same index, other key: not found (RFC 5042 5: a guessed STag places nothing).
  EXPECT_EQ(t.Find(MakeStag(StagIndex(*s), static_cast<uint8_t>(StagKey(*s) + 1))), nullptr);
  EXPECT_EQ(t.Find(0), nullptr);
  EXPECT_EQ(t.Find(MakeStag(9, StagKey(*s))), nullptr);  // beyond capacity
  EXPECT_EQ(t.in_use(), 1u);
}

TEST(StagTable, BoundsAndPdThroughCheckRegion) {
  FixedStagTable t(4);
  const uint32_t s = *t.Register(Region(7, 1000, 100, kAccessRemoteWrite));
  const StreamIdentity mine{7, 3}, other{8, 3};
  EXPECT_EQ(CheckRegion(t.Find(s), s, 1000, 100, mine), DdpError::kNone);
  EXPECT_EQ(CheckRegion(t.Find(s), s, 1099, 1, mine), DdpError::kNone);
  EXPECT_EQ(CheckRegion(t.Find(s), s, 999, 1, mine), DdpError::kTaggedBaseBounds);
  EXPECT_EQ(CheckRegion(t.Find(s), s, 1000, 101, mine), DdpError::kTaggedBaseBounds);
  EXPECT_EQ(CheckRegion(t.Find(s), s, 1050, ~0ull, mine), DdpError::kTaggedToWrap);
  EXPECT_EQ(CheckRegion(t.Find(s), s, 1000, 1, other), DdpError::kTaggedStagNotAssociated);
}

TEST(StagTable, AccessRightsAreKeptAsRegistered) {
  FixedStagTable t(4);
  const uint32_t ro = *t.Register(Region(1, 0, 10, kAccessRemoteRead));
  const uint32_t lw = *t.Register(Region(1, 0, 10, kAccessLocalWrite | kAccessRemoteWrite));
  EXPECT_EQ(t.Find(ro)->access, kAccessRemoteRead);
  EXPECT_EQ(t.Find(lw)->access & kAccessRemoteRead, 0);
  EXPECT_NE(t.Find(lw)->access & kAccessLocalWrite, 0);
}

TEST(StagTable, InvalidationStopsAccessAndCannotRepeat) {
  FixedStagTable t(4);
  const uint32_t s = *t.Register(Region(1, 0, 10, kAccessRemoteWrite));
  EXPECT_EQ(t.Invalidate(s, 2, true), StagStatus::kWrongPd);
  EXPECT_EQ(t.Invalidate(s, 1, true), StagStatus::kOk);
  ASSERT_NE(t.Find(s), nullptr);
  EXPECT_FALSE(t.Find(s)->valid);
  EXPECT_EQ(CheckRegion(t.Find(s), s, 0, 1, {1, 0}), DdpError::kTaggedInvalidStag);
  EXPECT_EQ(t.Invalidate(s, 1, true), StagStatus::kInvalidStag);
  // Still owned until deregistered.
  EXPECT_EQ(t.in_use(), 1u);
  EXPECT_EQ(t.Deregister(s, 1), StagStatus::kOk);
  EXPECT_EQ(t.in_use(), 0u);
  EXPECT_EQ(t.Deregister(s, 1), StagStatus::kInvalidStag);
}

TEST(StagTable, ProtectedRegionRefusesRemoteInvalidate) {
  FixedStagTable t(4);
  const uint32_t s = *t.Register(Region(1, 0, 10, kAccessRemoteWrite), /*remote_invalidate=*/false);
  EXPECT_EQ(t.Invalidate(s, 1, true), StagStatus::kNotInvalidatable);
  EXPECT_TRUE(t.Find(s)->valid);
  EXPECT_EQ(t.Invalidate(s, 1, false), StagStatus::kOk);
}

TEST(StagTable, DeregisterChecksPd) {
  FixedStagTable t(4);
  const uint32_t s = *t.Register(Region(1, 0, 10, 0));
  EXPECT_EQ(t.Deregister(s, 2), StagStatus::kWrongPd);
  EXPECT_NE(t.Find(s), nullptr);
}

TEST(StagTable, SlotReuseChangesTheKey) {
  FixedStagTable t(1);
  const uint32_t first = *t.Register(Region(1, 0, 10, kAccessRemoteWrite));
  EXPECT_FALSE(t.Register(Region(1, 0, 10, 0)).ok());  // full
  ASSERT_EQ(t.Deregister(first, 1), StagStatus::kOk);
  const uint32_t second = *t.Register(Region(1, 0, 10, kAccessRemoteWrite));
  EXPECT_EQ(StagIndex(first), StagIndex(second));
  EXPECT_NE(first, second);
  EXPECT_EQ(t.Find(first), nullptr);  // the stale STag places nothing
  EXPECT_NE(t.Find(second), nullptr);
}

TEST(StagTable, FifoReuseKeepsStaleStagsUnmatchedLongest) {
  FixedStagTable t(16);
  std::set<uint32_t> seen;
  uint32_t prev = *t.Register(Region(1, 0, 1, 0));
  seen.insert(prev);
  // 16 slots x 255 reuses before any STag value can repeat.
  for (int i = 0; i < 16 * 200; ++i) {
    ASSERT_EQ(t.Deregister(prev, 1), StagStatus::kOk);
    prev = *t.Register(Region(1, 0, 1, 0));
    EXPECT_TRUE(seen.insert(prev).second) << "STag repeated after " << i << " reuses";
  }
  EXPECT_EQ(t.in_use(), 1u);
}

}  // namespace
}  // namespace iwarp::ddp
