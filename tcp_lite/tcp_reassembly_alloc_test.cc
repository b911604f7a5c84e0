// House style rule 13: the steady state allocates nothing. This binary
// replaces the global allocation functions with counting ones, then runs
// reordered, duplicated and overlapping segments, capacity drops, SACK
// generation, Clear() and a FIN through a reassembler and checks that the
// count did not move after construction.
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"
#include "tcp_lite/tcp_reassembly.h"

namespace iwarp::tcp {
namespace {

class CountingSink : public ReasmSink {
 public:
  void OnDeliver(const ReasmPiece& p) override { bytes += p.data.size(); }
  void OnRelease(SegmentHandle) override { ++released; }
  uint64_t bytes = 0;
  uint64_t released = 0;
};

TEST(ReassemblyAlloc, SteadyStateAllocatesNothing) {
  std::vector<uint8_t> payload(1500, 0xa5);
  CountingSink sink;
  ReasmConfig c;
  c.max_segments = 8;
  c.max_bytes = 8000;
  c.window = 20000;
  const Seq32 isn(0xFFFFF000u);
  Reassembler reasm(c, isn, sink);
  SackBlock blocks[kMaxSackBlocks];
  uint64_t inserted = 0;
  size_t sack_total = 0;

  const uint64_t before = testutil::AllocationCount();
  Seq32 base = isn;
  for (int round = 0; round < 200; ++round) {
    // Ten segments of 1000 octets: arrive as 9, 7, 5, 3, 1 (5 held), a
    // duplicate of 5, an overlap of 6 and 7, then 0, 2, 4, 6, 8 fill in.
    const int order[] = {9, 7, 5, 3, 1, 5, 0, 2, 4, 6, 8};
    for (const int i : order) {
      reasm.Insert(ReasmSegment{base + 1000u * static_cast<uint32_t>(i),
                                ByteSpan(payload).first(1000), false, inserted++});
      sack_total += reasm.SackBlocks(blocks);
      if (i == 5) {
        reasm.Insert(ReasmSegment{base + 6500u, ByteSpan(payload).first(1000), false, inserted++});
      }
    }
    base += 10000;
    if (round % 50 == 49) {
      reasm.Insert(ReasmSegment{base + 3000u, ByteSpan(payload).first(100), false, inserted++});
      reasm.Clear();
    }
  }
  reasm.Insert(ReasmSegment{base, ByteSpan(payload).first(10), true, inserted++});
  EXPECT_EQ(testutil::AllocationCount(), before);
  EXPECT_TRUE(reasm.fin_delivered());
  EXPECT_EQ(sink.bytes, 200u * 10000u + 10u);
  EXPECT_EQ(sink.released, inserted);
  EXPECT_GT(sack_total, 0u);
}

}  // namespace
}  // namespace iwarp::tcp
