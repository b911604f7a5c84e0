#include "ddp/placement.h"

#include <cstdint>
#include <limits>

#include "ddp/test_tables.h"
#include "gtest/gtest.h"

namespace iwarp::ddp {
namespace {

using testing::FakeQueues;
using testing::FakeStagTable;

constexpr uint32_t kPd = 7;
constexpr uint32_t kStream = 42;
constexpr uint32_t kStag = 0x00000501;  // index 5, key 0x01

TEST(DdpErrorNumbers, MatchRfc5041Section72) {
  struct Row {
    DdpError e;
    uint8_t etype, code;
  };
  const Row rows[] = {
      {DdpError::kLocalCatastrophic, 0x0, 0x00},
      {DdpError::kTaggedInvalidStag, 0x1, 0x00},
      {DdpError::kTaggedBaseBounds, 0x1, 0x01},
      {DdpError::kTaggedStagNotAssociated, 0x1, 0x02},
      {DdpError::kTaggedToWrap, 0x1, 0x03},
      {DdpError::kTaggedBadVersion, 0x1, 0x04},
      {DdpError::kUntaggedInvalidQn, 0x2, 0x01},
      {DdpError::kUntaggedNoBuffer, 0x2, 0x02},
      {DdpError::kUntaggedMsnRange, 0x2, 0x03},
      {DdpError::kUntaggedInvalidMo, 0x2, 0x04},
      {DdpError::kUntaggedTooLong, 0x2, 0x05},
      {DdpError::kUntaggedBadVersion, 0x2, 0x06},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(ToErrorNumber(r.e), (ErrorNumber{r.etype, r.code})) << DdpErrorName(r.e);
    EXPECT_NE(DdpErrorName(r.e), "invalid");
  }
  EXPECT_EQ(BadVersionError(true), DdpError::kTaggedBadVersion);
  EXPECT_EQ(BadVersionError(false), DdpError::kUntaggedBadVersion);
}

class TaggedChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    TaggedRegion r;
    r.stag = kStag;
    r.base_to = 0x10000;
    r.length = 0x1000;
    r.access = kAccessRemoteWrite;
    r.pd = kPd;
    r.stream_id = kAnyStream;
    r.valid = true;
    r.handle = 0xABCD;
    table_.Put(r);
  }
  TaggedRegion& region() { return table_.Mutable(kStag); }

  DdpError Check(uint32_t stag, uint64_t to, uint32_t len) {
    DdpHeader h;
    h.tagged = true;
    h.stag = stag;
    h.to = to;
    placement_ = Placement{};
    return CheckTagged(h, len, stream_, table_, &placement_, nullptr);
  }

  FakeStagTable table_;
  StreamIdentity stream_{kPd, kStream};
  Placement placement_;
};

TEST_F(TaggedChecks, ValidSegmentGivesRegionOffset) {
  EXPECT_EQ(Check(kStag, 0x10010, 0x20), DdpError::kNone);
  EXPECT_EQ(placement_, (Placement{0xABCD, 0x10, 0x20}));
  // Exactly up to the last byte of the region.
  EXPECT_EQ(Check(kStag, 0x10000, 0x1000), DdpError::kNone);
  EXPECT_EQ(Check(kStag, 0x10FFF, 1), DdpError::kNone);
}

// RFC 5041 7.1 tagged check 1: an STag nobody registered.
TEST_F(TaggedChecks, UnknownStagIsInvalidStag) {
  EXPECT_EQ(Check(0x00000901, 0x10000, 1), DdpError::kTaggedInvalidStag);
  EXPECT_EQ(placement_, Placement{});
}

// RFC 5041 7.1 tagged check 2: the STag no longer has a buffer.
TEST_F(TaggedChecks, InvalidatedRegionIsInvalidStag) {
  region().valid = false;
  EXPECT_EQ(Check(kStag, 0x10000, 1), DdpError::kTaggedInvalidStag);
}

TEST_F(TaggedChecks, StaleKeyIsInvalidStag) {
  EXPECT_EQ(Check(kStag + 1, 0x10000, 1), DdpError::kTaggedInvalidStag);  // same index, key 0x02
}

// RFC 5041 8.2: PD and stream association.
TEST_F(TaggedChecks, OtherProtectionDomainIsNotAssociated) {
  region().pd = kPd + 1;
  EXPECT_EQ(Check(kStag, 0x10000, 1), DdpError::kTaggedStagNotAssociated);
}

TEST_F(TaggedChecks, RegionBoundToOtherStreamIsNotAssociated) {
  region().stream_id = kStream + 1;
  EXPECT_EQ(Check(kStag, 0x10000, 1), DdpError::kTaggedStagNotAssociated);
  region().stream_id = kStream;
  EXPECT_EQ(Check(kStag, 0x10000, 1), DdpError::kNone);
}

// RFC 5041 7.1 tagged check 3: TO outside the registered range.
TEST_F(TaggedChecks, ToBelowBaseOrPastEndIsBaseBounds) {
  EXPECT_EQ(Check(kStag, 0xFFFF, 1), DdpError::kTaggedBaseBounds);
  EXPECT_EQ(Check(kStag, 0x11000, 1), DdpError::kTaggedBaseBounds);
}

// RFC 5041 7.1 tagged check 4: TO + length past the end.
TEST_F(TaggedChecks, PayloadRunningPastEndIsBaseBounds) {
  EXPECT_EQ(Check(kStag, 0x10FFF, 2), DdpError::kTaggedBaseBounds);
  EXPECT_EQ(Check(kStag, 0x10000, 0x1001), DdpError::kTaggedBaseBounds);
}

// RFC 5041 7.1 tagged check 5: the 64-bit sum wraps.
TEST_F(TaggedChecks, WrappingSumIsToWrap) {
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  region().base_to = top - 0xFF;  // a region at the very top of TO space
  region().length = 0x1000;       // (its end lies beyond 2^64)
  EXPECT_EQ(Check(kStag, top - 0xFF, 0x100), DdpError::kTaggedToWrap);
  // The sum is taken literally: TO + length == 2^64 wraps too.
  EXPECT_EQ(Check(kStag, top, 1), DdpError::kTaggedToWrap);
  EXPECT_EQ(Check(kStag, top - 1, 1), DdpError::kNone);
}

// RFC 5041 5.2: zero-length tagged segments are not checked at all.
TEST_F(TaggedChecks, ZeroLengthSegmentSkipsStagAndToChecks) {
  const TaggedRegion* found = &region();
  DdpHeader h;
  h.tagged = true;
  h.stag = 0xDEAD0000;
  h.to = 0xFFFFFFFFFFFFFFFFull;
  EXPECT_EQ(CheckTagged(h, 0, stream_, table_, &placement_, &found), DdpError::kNone);
  EXPECT_EQ(found, nullptr);
  EXPECT_EQ(placement_.length, 0u);
}

class UntaggedChecks : public ::testing::Test {
 protected:
  DdpError Check(uint32_t qn, uint32_t msn, uint32_t mo, uint32_t len) {
    DdpHeader h;
    h.tagged = false;
    h.qn = qn;
    h.msn = Seq32(msn);
    h.mo = mo;
    placement_ = Placement{};
    return CheckUntagged(h, len, queues_, &placement_);
  }
  FakeQueues queues_;
  Placement placement_;
};

TEST_F(UntaggedChecks, ValidSegmentGoesToTheBufferOfItsMsn) {
  queues_.Post(0, 100, 1024);
  queues_.Post(0, 200, 512);
  EXPECT_EQ(Check(0, 1, 0, 1024), DdpError::kNone);
  EXPECT_EQ(placement_, (Placement{100, 0, 1024}));
  EXPECT_EQ(Check(0, 2, 500, 12), DdpError::kNone);
  EXPECT_EQ(placement_, (Placement{200, 500, 12}));
}

// RFC 5041 7.1 untagged check 1.
TEST_F(UntaggedChecks, UnknownQueueIsInvalidQn) {
  queues_.Post(0, 100, 1024);
  EXPECT_EQ(Check(3, 1, 0, 1), DdpError::kUntaggedInvalidQn);
  EXPECT_EQ(Check(0xFFFFFFFF, 1, 0, 1), DdpError::kUntaggedInvalidQn);
}

// RFC 5041 7.1 untagged check 2.
TEST_F(UntaggedChecks, NothingPostedIsNoBuffer) {
  EXPECT_EQ(Check(0, 1, 0, 1), DdpError::kUntaggedNoBuffer);
  queues_.Post(0, 100, 1024);
  EXPECT_EQ(Check(0, 2, 0, 1), DdpError::kUntaggedNoBuffer);  // inside depth, not posted
}

// RFC 5041 7.1 untagged check 5.
TEST_F(UntaggedChecks, MsnOutsideTheQueueWindowIsMsnRange) {
  queues_.Post(0, 100, 1024);
  queues_.queue(0).window.first_msn = Seq32(10);
  EXPECT_EQ(Check(0, 9, 0, 1), DdpError::kUntaggedMsnRange);   // already completed
  EXPECT_EQ(Check(0, 18, 0, 1), DdpError::kUntaggedMsnRange);  // beyond the depth of 8
  EXPECT_EQ(Check(0, 17, 0, 1), DdpError::kUntaggedNoBuffer);  // last legal MSN, no buffer
  EXPECT_EQ(Check(0, 10, 0, 1), DdpError::kNone);
}

TEST_F(UntaggedChecks, MsnWindowWrapsModulo2To32) {
  queues_.queue(1).window.first_msn = Seq32(0xFFFFFFFF);
  queues_.Post(1, 1, 28);
  queues_.Post(1, 2, 28);
  EXPECT_EQ(Check(1, 0xFFFFFFFF, 0, 28), DdpError::kNone);
  EXPECT_EQ(Check(1, 0, 0, 28), DdpError::kNone);
  EXPECT_EQ(placement_.handle, 2u);
  EXPECT_EQ(Check(1, 0xFFFFFFFE, 0, 28), DdpError::kUntaggedMsnRange);
}

// RFC 5041 7.1 untagged check 3.
TEST_F(UntaggedChecks, MoPastTheBufferIsInvalidMo) {
  queues_.Post(0, 100, 1024);
  EXPECT_EQ(Check(0, 1, 1024, 1), DdpError::kUntaggedInvalidMo);
  EXPECT_EQ(Check(0, 1, 0xFFFFFFFF, 1), DdpError::kUntaggedInvalidMo);
}

// RFC 5041 7.1 untagged check 4.
TEST_F(UntaggedChecks, PayloadPastTheBufferIsTooLong) {
  queues_.Post(0, 100, 1024);
  EXPECT_EQ(Check(0, 1, 1000, 25), DdpError::kUntaggedTooLong);
  EXPECT_EQ(Check(0, 1, 0, 0xFFFFFFFF), DdpError::kUntaggedTooLong);
  EXPECT_EQ(Check(0, 1, 1000, 24), DdpError::kNone);
}

TEST_F(UntaggedChecks, ZeroLengthSegmentStillNeedsABuffer) {
  EXPECT_EQ(Check(0, 1, 0, 0), DdpError::kUntaggedNoBuffer);
  queues_.Post(0, 100, 0);  // a zero-length receive buffer
  EXPECT_EQ(Check(0, 1, 0, 0), DdpError::kNone);
  EXPECT_EQ(placement_, (Placement{100, 0, 0}));
}

TEST_F(UntaggedChecks, ZeroLengthSegmentCannotClaimAnOffsetPastTheBuffer) {
  queues_.Post(0, 100, 4096);
  EXPECT_EQ(Check(0, 1, 4096, 0), DdpError::kNone);  // message length 4096
  EXPECT_EQ(Check(0, 1, 0x02000000, 0), DdpError::kUntaggedInvalidMo);
}

}  // namespace
}  // namespace iwarp::ddp
