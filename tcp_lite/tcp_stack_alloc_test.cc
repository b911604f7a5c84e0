// House style rule 13: after start-up the TCP engine allocates nothing. This
// binary replaces the global allocation functions with counting ones, sets up
// two stacks joined by a preallocated packet ring, and checks that a bulk
// transfer both ways with drops (RTO, fast retransmit, SACK recovery,
// out-of-order reassembly, delayed ACKs, timers) and an orderly close leave
// the count unchanged.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::tcp {
namespace {

using testing::kIpA;
using testing::kIpB;
using testing::RingLink;
using testing::TestIsn;

class Sink : public TcpUser {
 public:
  TcpUser* OnAccept(ConnId c, const FourTuple&) override {
    conn = c;
    return this;
  }
  void OnConnected(ConnId c) override { conn = c; }
  size_t OnData(ConnId, uint64_t, ByteSpan d) override {
    for (uint8_t b : d) sum += b;
    received += d.size();
    return d.size();
  }
  void OnClosed(ConnId, CloseReason r) override {
    closed = true;
    reason = r;
  }
  ConnId conn;
  uint64_t received = 0;
  uint64_t sum = 0;
  bool closed = false;
  CloseReason reason = CloseReason::kAborted;
};

TEST(TcpStackAlloc, SteadyStateTransferAllocatesNothing) {
  RingLink link(53);  // every 53rd packet lost
  TcpOptions o;
  o.max_connections = 4;
  o.send_buffer_bytes = 128 * 1024;
  o.receive_buffer_bytes = 128 * 1024;
  const IsnGenerator isn = TestIsn();
  const uint32_t ip_a[] = {kIpA};
  const uint32_t ip_b[] = {kIpB};
  auto a = TcpStack::Create(o, ip_a, link.to_b, isn, 0);
  auto b = TcpStack::Create(o, ip_b, link.to_a, isn, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  Sink client, server;
  ASSERT_TRUE((*b)->Listen(4791, server).ok());
  std::vector<uint8_t> chunk(16384);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<uint8_t>(i * 7);

  const uint64_t before = testutil::AllocationCount();
  auto id = (*a)->Connect(kIpA, kIpB, 4791, client, 0, 0);
  ASSERT_TRUE(id.ok());
  constexpr uint64_t kBytes = 32 << 20;
  uint64_t sent_a = 0, sent_b = 0;
  bool shut = false;
  uint64_t now = 0;
  for (int step = 0; step < 2'000'000 && !(client.closed && server.closed); ++step) {
    now += 20;
    link.Deliver(1, **b, now);
    link.Deliver(0, **a, now);
    (*a)->RunTimers(now);
    (*b)->RunTimers(now);
    if (client.conn.valid() && sent_a < kBytes) {
      sent_a += (*a)->Send(client.conn, ByteSpan(chunk).first(std::min<uint64_t>(chunk.size(), kBytes - sent_a)), now);
    }
    if (server.conn.valid() && sent_b < kBytes) {
      sent_b += (*b)->Send(server.conn, ByteSpan(chunk).first(std::min<uint64_t>(chunk.size(), kBytes - sent_b)), now);
    }
    if (!shut && sent_a == kBytes && sent_b == kBytes) {
      (*a)->Shutdown(client.conn, now);
      (*b)->Shutdown(server.conn, now);
      shut = true;
    }
  }
  const uint64_t after = testutil::AllocationCount();
  EXPECT_EQ(after - before, 0u) << "allocations during connect, transfer and close";
  EXPECT_EQ(client.received, kBytes);
  EXPECT_EQ(server.received, kBytes);
  EXPECT_TRUE(client.closed && server.closed);
  EXPECT_EQ(client.reason, CloseReason::kNormal);
  EXPECT_GT((*a)->stats().retransmitted_segments, 0u);
  EXPECT_GT((*a)->stats().ooo_segments + (*b)->stats().ooo_segments, 0u);
}

}  // namespace
}  // namespace iwarp::tcp
