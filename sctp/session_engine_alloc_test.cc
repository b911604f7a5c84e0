// Proves the RFC 5043 session engine allocates nothing after construction
// (house style rule 13): sessions opened, segments sent and received out of
// DDP-SSN order, streams failed, terminated and reused. Global operator new
// is replaced in this binary only, to count. The output is a test double of
// the SCTP socket (the real one, usrsctp, allocates mbufs by design); it
// loops every chunk back into a second engine, so both sides run for real.
#include <cstdint>
#include <vector>

#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"
#include "sctp/session_engine.h"

namespace iwarp::sctp {
namespace {

// Chunk loopback between two engines, delivering each burst in reverse
// order (maximal reordering within a burst). Preallocated.
class LoopbackOutput : public ChunkOutput {
 public:
  struct Chunk {
    uint16_t stream;
    uint32_t ppid;
    uint32_t length;
    uint8_t bytes[kMinMaxDdpSegmentSize + kSsnSize];
  };
  explicit LoopbackOutput(size_t capacity) : queue_(capacity) {}
  void set_peer(SessionEngine* peer) { peer_ = peer; }
  SendResult SendChunk(uint16_t stream, uint32_t ppid, ByteSpan user_data) override {
    if (count_ == queue_.size()) return SendResult::kWouldBlock;
    Chunk& c = queue_[count_++];
    c.stream = stream;
    c.ppid = ppid;
    c.length = static_cast<uint32_t>(user_data.size());
    std::copy(user_data.begin(), user_data.end(), c.bytes);
    return SendResult::kOk;
  }
  // Delivers the queued burst to the peer, last chunk first.
  void Flush() {
    const size_t n = count_;
    count_ = 0;
    for (size_t i = n; i > 0; --i) {
      const Chunk& c = queue_[i - 1];
      peer_->OnChunk(c.stream, c.ppid, true, ByteSpan(c.bytes, c.length));
    }
  }

 private:
  std::vector<Chunk> queue_;
  size_t count_ = 0;
  SessionEngine* peer_ = nullptr;
};

struct Counting : DdpLlpEvents {
  SessionEngine* engine = nullptr;
  uint64_t segments = 0, bytes = 0, ended = 0, accepted = 0;
  void OnInitiate(uint16_t s, ByteSpan) override { engine->Accept(s, {}); }
  void OnAccepted(uint16_t, ByteSpan) override { ++accepted; }
  void OnSegment(uint16_t, ByteSpan seg) override {
    ++segments;
    bytes += seg.size();
  }
  void OnStreamEnded(uint16_t, StreamEnd) override { ++ended; }
};

TEST(SessionEngineAlloc, SteadyStateAllocatesNothing) {
  SessionEngineConfig cfg;
  cfg.streams = 4;
  cfg.mulpdu = kMinMaxDdpSegmentSize;
  cfg.reorder_window = 64;
  cfg.reorder_chunks = 64;
  LoopbackOutput a_out(64), b_out(64);
  Counting a_ev, b_ev;
  SessionEngine a(cfg, &a_out, &a_ev), b(cfg, &b_out, &b_ev);
  a_ev.engine = &a;
  b_ev.engine = &b;
  a_out.set_peer(&b);
  b_out.set_peer(&a);
  std::vector<uint8_t> seg(kMinMaxDdpSegmentSize, 0x5a);
  const std::vector<uint8_t> bogus = {0x7f, 0xff, 0x41};  // DDP-SSN 32767

  const uint64_t before = testutil::AllocationCount();
  for (int round = 0; round < 50; ++round) {
    for (uint16_t s = 0; s < 4; ++s) ASSERT_EQ(a.Initiate(s, ByteSpan(seg.data(), 100)), SendResult::kOk);
    a_out.Flush();
    b_out.Flush();
    for (int i = 0; i < 10; ++i) {
      for (uint16_t s = 0; s < 4; ++s) {
        for (int k = 0; k < 3; ++k) {
          ASSERT_EQ(a.SendSegment(s, ByteSpan(seg.data(), 1 + (i * 37 + s + k) % seg.size())), SendResult::kOk);
          ASSERT_EQ(b.SendSegment(s, ByteSpan(seg.data(), 1 + (i * 53 + s + k) % seg.size())), SendResult::kOk);
        }
      }
      a_out.Flush();
      b_out.Flush();
    }
    // Stream 3 fails on a bogus DDP-SSN; the others terminate cleanly.
    b.OnChunk(3, kPpidDdpSegment, true, ByteSpan(bogus));
    for (uint16_t s = 0; s < 3; ++s) ASSERT_EQ(a.Terminate(s), SendResult::kOk);
    a_out.Flush();
    b_out.Flush();
    a_out.Flush();
    b_out.Flush();
  }
  EXPECT_EQ(testutil::AllocationCount(), before);
  EXPECT_EQ(b_ev.segments, 50u * 120u);
  EXPECT_EQ(a_ev.segments, 50u * 120u);
  EXPECT_EQ(a_ev.accepted, 50u * 4u);
  EXPECT_GT(b.counter(DdpCounter::kRxReordered), 0u);
  EXPECT_EQ(b.counter(DdpCounter::kEndBadSsn), 50u);
  for (uint16_t s = 0; s < 4; ++s) {
    EXPECT_TRUE(a.StreamIdle(s)) << s;
    EXPECT_TRUE(b.StreamIdle(s)) << s;
  }
}

// A Terminate that meets a full send buffer is owed, not refused: the
// caller's session is over, and the Terminate goes out with its DDP-SSN once
// FlushDeferred finds room, so the peer answers and both streams go idle.
TEST(SessionEngineTerminate, FullSendBufferOwesTheTerminate) {
  SessionEngineConfig cfg;
  cfg.streams = 2;
  LoopbackOutput a_out(4), b_out(4);
  Counting a_ev, b_ev;
  SessionEngine a(cfg, &a_out, &a_ev), b(cfg, &b_out, &b_ev);
  a_ev.engine = &a;
  b_ev.engine = &b;
  a_out.set_peer(&b);
  b_out.set_peer(&a);
  ASSERT_EQ(a.Initiate(0, {}), SendResult::kOk);
  a_out.Flush();
  b_out.Flush();
  ASSERT_EQ(a_ev.accepted, 1u);
  std::vector<uint8_t> seg(100, 0x11);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(a.SendSegment(0, ByteSpan(seg)), SendResult::kOk);
  ASSERT_EQ(a.SendSegment(0, ByteSpan(seg)), SendResult::kWouldBlock);  // buffer full
  EXPECT_EQ(a.Terminate(0), SendResult::kOk);
  EXPECT_EQ(a.counter(DdpCounter::kTerminateDeferred), 1u);
  EXPECT_FALSE(a.StreamIdle(0));
  EXPECT_EQ(a.SendSegment(0, ByteSpan(seg)), SendResult::kWrongState);  // the session is over
  a_out.Flush();  // the four segments reach b (in reverse order: reordered)
  a.FlushDeferred();
  a_out.Flush();  // the Terminate
  b_out.Flush();  // b's answering Terminate
  EXPECT_EQ(b_ev.segments, 4u);
  EXPECT_EQ(b.ends(StreamEnd::kPeerTerminate), 1u);
  EXPECT_EQ(a.ends(StreamEnd::kClosed), 1u);
  EXPECT_TRUE(a.StreamIdle(0));
  EXPECT_TRUE(b.StreamIdle(0));
}

TEST(SessionEngineAlloc, CounterSeesAllocations) {
  const uint64_t before = testutil::AllocationCount();
  auto* p = new std::vector<int>(100);
  delete p;
  EXPECT_GT(testutil::AllocationCount(), before);
}

}  // namespace
}  // namespace iwarp::sctp
