// House rule 13: after connection setup the engine's fast path allocates
// nothing. Two engines over the preallocated packet ring exchange Sends,
// RDMA Writes and RDMA Reads (CRC and Markers on) while global operator new
// is counted. Own binary: it replaces operator new.
#include <atomic>
#include <cstdlib>
#include <new>

#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"
#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"

namespace iwarp::engine {
namespace {

TEST(QpAlloc, SteadyStateSendWriteReadAllocatesNothing) {
  uint64_t clock = 1'000'000;
  auto now = [&] { return clock += 20; };
  QpOptions o;
  o.mpa.crc = true;
  o.mpa.want_markers = true;
  testing::RingPair p(o, clock);
  ASSERT_TRUE(p.Connect(now));
  constexpr uint32_t kLen = 256 * 1024;
  const uint32_t src = p.ma.Register(kLen, 0);
  const uint32_t rsink = p.ma.Register(kLen, ddp::kAccessAll);
  const uint32_t recv = p.mb.Register(kLen, ddp::kAccessLocalWrite);
  const uint32_t wsink = p.mb.Register(kLen, ddp::kAccessRemoteWrite);
  const uint32_t rsrc = p.mb.Register(kLen, ddp::kAccessRemoteRead);

  auto round = [&](uint64_t id) {
    if (p.qb->PostRecv(RecvWr{id, LocalSge{recv, 0x10000, kLen}}) != PostStatus::kOk) return false;
    if (p.qa->PostSend(SendWr{id, WrOpcode::kSend, LocalSge{src, 0x10000, kLen}}) !=
        PostStatus::kOk) {
      return false;
    }
    if (p.qa->PostSend(SendWr{id + 1, WrOpcode::kRdmaWrite, LocalSge{src, 0x10000, kLen}, wsink,
                              0x10000}) != PostStatus::kOk) {
      return false;
    }
    if (p.qa->PostSend(SendWr{id + 2, WrOpcode::kRdmaRead, LocalSge{rsink, 0x10000, kLen}, rsrc,
                              0x10000}) != PostStatus::kOk) {
      return false;
    }
    Completion c[8];
    size_t a_done = 0, b_done = 0;
    for (int i = 0; i < 200000 && (a_done < 3 || b_done < 1); ++i) {
      p.Step(now());
      const size_t na = p.qa->PollCompletions(std::span<Completion>(c));
      for (size_t k = 0; k < na; ++k) {
        if (c[k].status != WcStatus::kSuccess) return false;
      }
      a_done += na;
      b_done += p.qb->PollCompletions(std::span<Completion>(c));
    }
    return a_done == 3 && b_done == 1;
  };
  ASSERT_TRUE(round(10));  // warm-up
  const uint64_t before = testutil::AllocationCount();
  ASSERT_GT(before, 0u);  // the counting hook is live (setup allocated)
  for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(round(100 + 10 * i));
  EXPECT_EQ(testutil::AllocationCount() - before, 0u);
  EXPECT_GT(p.qb->stats().bytes_placed, 8u * 2 * kLen);
  EXPECT_GT(p.qa->stats().bytes_placed, 8u * kLen);
}

}  // namespace
}  // namespace iwarp::engine
