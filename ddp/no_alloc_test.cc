// Proves that the per-segment paths (segmentation, receive checks, Terminate
// construction and parsing) allocate nothing: this test binary replaces the
// global operator new with a counting one.
#include <array>
#include <atomic>
#include <cstdlib>
#include <new>

#include "ddp/rdmap.h"
#include "ddp/test_tables.h"
#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"

namespace iwarp::rdmap {
namespace {

TEST(NoAllocation, SteadyStateSegmentPathsDoNotAllocate) {
  ddp::testing::FakeStagTable stags;
  ddp::TaggedRegion r;
  r.stag = 0x101;
  r.length = 1 << 20;
  r.access = ddp::kAccessRemoteWrite;
  r.valid = true;
  stags.Put(r);
  ddp::testing::FakeQueues queues;
  queues.Post(kQnSend, 1, 8192);
  RxContext ctx;
  ctx.stags = &stags;
  ctx.queues = &queues;

  std::array<uint8_t, 1500> frame{};
  std::array<uint8_t, kMaxTerminateSize> term{};
  uint64_t placed = 0;
  size_t terminate_bytes = 0;

  const uint64_t before = testutil::AllocationCount();
  for (int iter = 0; iter < 200; ++iter) {
    const ddp::OutboundMessage msgs[] = {RdmaWriteMessage(0x101, 0, 64 * 1024),
                                         SendMessage(Opcode::kSend, Seq32(1), 8192),
                                         SendMessage(Opcode::kSend, Seq32(2), 100)};
    for (const auto& m : msgs) {
      ddp::Segmenter s(m, static_cast<uint32_t>(frame.size()));
      ddp::SegmentDesc d;
      while (s.Next(frame, &d)) {
        const ByteSpan seg(frame.data(), d.header_length + d.payload_length);
        const SegmentVerdict v = CheckSegment(seg, ctx);
        if (v.ok) {
          placed += v.placement.length;
        } else {
          terminate_bytes += BuildTerminate(v, seg, term);
          Terminate t;
          size_t used = 0;
          ParseTerminate(term, &t, &used);
        }
      }
    }
  }
  const uint64_t after = testutil::AllocationCount();
  EXPECT_EQ(after, before);
  // The work really happened: 64 KiB + 8 KiB placed per round, and the Send
  // with MSN 2 (no buffer) produced a Terminate each round.
  EXPECT_EQ(placed, 200u * (64 * 1024 + 8192));
  EXPECT_EQ(terminate_bytes, 200u * 24u);
}

}  // namespace
}  // namespace iwarp::rdmap
