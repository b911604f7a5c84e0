// STYLE.md rule 13 for the iWARP services: once a connection is in Full
// Operation, an iwarp_client run against an iwarp_responder (every op, with
// losses) allocates nothing on either side. This binary replaces the global
// allocation functions with counting ones and runs over tcp_lite's
// allocation-free RingLink. (Connection setup allocates: the engine's receive
// decoder at Full Operation, and the responder's replacement QP after a
// connection ended; both are control path, outside the measured window.)
#include <memory>
#include <vector>

#include "common/testing/alloc_counter.h"
#include "dataplane/services/iwarp_services.h"
#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::dataplane {
namespace {

using tcp::TcpStack;
using tcp::testing::kIpA;
using tcp::testing::kIpB;
using tcp::testing::RingLink;

TEST(IwarpServicesAlloc, RunAllocatesNothing) {
  for (config::IwarpOp op : {config::IwarpOp::kWrite, config::IwarpOp::kRead,
                             config::IwarpOp::kSend, config::IwarpOp::kMixed}) {
    RingLink link(/*drop_every=*/89);
    tcp::IsnGenerator isn = tcp::testing::TestIsn();
    tcp::TcpOptions o;
    o.max_connections = 8;
    o.send_buffer_bytes = 256 * 1024;
    o.receive_buffer_bytes = 256 * 1024;
    o.rto_min_us = 10000;
    o.rto_initial_us = 50000;
    o.time_wait_s = 0;
    const uint32_t ip_a = kIpA, ip_b = kIpB;
    auto a = TcpStack::Create(o, std::span<const uint32_t>(&ip_a, 1), link.to_b, isn, 0);
    auto b = TcpStack::Create(o, std::span<const uint32_t>(&ip_b, 1), link.to_a, isn, 0);
    ASSERT_TRUE(a.ok() && b.ok());
    ServiceClock clock;
    config::IwarpConfig iw;
    iw.qps_per_service = 1;
    iw.scratch_bytes = 1 << 20;
    iw.recv_buffers = 8;
    iw.recv_buffer_bytes = 32768;
    config::ServiceConfig rc;
    rc.name = "r";
    rc.type = config::ServiceType::kIwarpResponder;
    rc.port = 9999;
    config::ServiceConfig cc;
    cc.name = "c";
    cc.type = config::ServiceType::kIwarpClient;
    cc.remote = kIpA;
    cc.remote_port = 9999;
    cc.op = op;
    cc.message_bytes = 20000;
    cc.count = 300;
    cc.queue_depth = 8;
    auto r = IwarpService::Create(rc, iw, a->get(), &clock, o.max_connections, kIpA);
    auto c = IwarpService::Create(cc, iw, b->get(), &clock, o.max_connections, kIpB);
    ASSERT_TRUE(r.ok() && c.ok());
    ASSERT_TRUE((*r)->Start().ok());
    ASSERT_TRUE((*c)->Start().ok());

    uint64_t now = 0;
    auto step = [&] {
      now += 100;
      clock.now_us = now;
      link.Deliver(0, **a, now);
      link.Deliver(1, **b, now);
      (*a)->RunTimers(now);
      (*b)->RunTimers(now);
      (*r)->Poll(now / 1000);
      (*c)->Poll(now / 1000);
    };
    int i = 0;
    for (; i < 100000 && (*c)->iwarp_counters().established == 0; ++i) step();
    ASSERT_EQ((*c)->iwarp_counters().established, 1u) << config::ToString(op);
    // Let the responder reach Full Operation too (it does on the RTR).
    for (int k = 0; k < 50; ++k) step();
    const uint64_t before = testutil::AllocationCount();
    for (; i < 2000000 && !(*c)->run_result().finished; ++i) step();
    const uint64_t during = testutil::AllocationCount() - before;
    ASSERT_TRUE((*c)->run_result().finished) << config::ToString(op);
    EXPECT_TRUE((*c)->run_result().ok) << config::ToString(op);
    EXPECT_EQ((*c)->run_result().messages, 300u);
    EXPECT_EQ(during, 0u) << config::ToString(op) << ": allocations during the run";
    // Losses (every 89th packet) were repaired by retransmission.
    EXPECT_GT((*b)->stats().retransmitted_segments + (*a)->stats().retransmitted_segments, 0u);
    // The stacks go first, while their users (the services' QPs) exist.
    a->reset();
    b->reset();
  }
}

}  // namespace
}  // namespace iwarp::dataplane
