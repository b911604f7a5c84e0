// House style rule 13: once started, the services allocate nothing. This
// binary replaces the global allocation functions with counting ones and runs
// echo, sink (with SHA-256) and source connections to completion over
// tcp_lite's allocation-free RingLink, with losses, after a warm-up that
// creates everything.
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "dataplane/services/tcp_services.h"
#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::dataplane {
namespace {

using tcp::ConnId;
using tcp::TcpStack;
using tcp::testing::kIpA;
using tcp::testing::kIpB;
using tcp::testing::RingLink;

// A client on stack B that sends `n` bytes then FIN, and reads everything;
// allocation-free.
class Client : public tcp::TcpUser {
 public:
  size_t OnData(ConnId, uint64_t, ByteSpan d) override {
    received += d.size();
    return d.size();
  }
  TcpUser* OnAccept(ConnId c, const tcp::FourTuple&) override {
    accepted = c;
    return this;
  }
  void OnPeerFin(ConnId) override { peer_fin = true; }
  void OnClosed(ConnId, tcp::CloseReason) override { closed = true; }
  uint64_t received = 0;
  bool peer_fin = false;
  bool closed = false;
  ConnId accepted;
};

TEST(ServicesAlloc, SteadyStateAllocatesNothing) {
  RingLink link(/*drop_every=*/97);
  tcp::IsnGenerator isn = tcp::testing::TestIsn();
  tcp::TcpOptions o;
  o.max_connections = 8;
  o.syn_backlog = 4;
  o.send_buffer_bytes = 32768;
  o.receive_buffer_bytes = 32768;
  o.rto_min_us = 10000;
  o.rto_initial_us = 50000;
  o.time_wait_s = 0;
  const uint32_t ip_a = kIpA, ip_b = kIpB;
  auto a = TcpStack::Create(o, std::span<const uint32_t>(&ip_a, 1), link.to_b, isn, 0);
  auto b = TcpStack::Create(o, std::span<const uint32_t>(&ip_b, 1), link.to_a, isn, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  ServiceClock clock;
  config::ServiceConfig echo_cfg;
  echo_cfg.name = "echo";
  echo_cfg.type = config::ServiceType::kEcho;
  echo_cfg.port = 7;
  config::ServiceConfig sink_cfg;
  sink_cfg.name = "sink";
  sink_cfg.type = config::ServiceType::kSink;
  sink_cfg.port = 9;
  sink_cfg.sha256 = true;
  config::ServiceConfig src_cfg;
  src_cfg.name = "push";
  src_cfg.type = config::ServiceType::kSource;
  src_cfg.remote = kIpB;
  src_cfg.remote_port = 5001;
  src_cfg.bytes = 300000;
  src_cfg.sha256 = true;
  std::vector<std::unique_ptr<TcpService>> services;
  for (const auto& c : {echo_cfg, sink_cfg, src_cfg}) {
    services.push_back(TcpService::Create(c, a->get(), &clock, o.max_connections, kIpA));
    ASSERT_TRUE(services.back()->Start().ok());
  }
  Client listener;
  ASSERT_TRUE((*b)->Listen(5001, listener).ok());
  std::vector<uint8_t> payload(1 << 16, 0x5a);
  Client echo_client, sink_client;

  uint64_t now = 0;
  auto step = [&] {
    now += 200;
    clock.now_us = now;
    link.Deliver(0, **a, now);
    link.Deliver(1, **b, now);
    (*a)->RunTimers(now);
    (*b)->RunTimers(now);
    for (auto& s : services) s->Poll(now / 1000);
  };
  // Everything is created above; from here on nothing may allocate.
  const uint64_t before = testutil::AllocationCount();
  auto echo_conn = (*b)->Connect(kIpB, kIpA, 7, echo_client, 0, now);
  auto sink_conn = (*b)->Connect(kIpB, kIpA, 9, sink_client, 0, now);
  ASSERT_TRUE(echo_conn.ok() && sink_conn.ok());
  size_t echo_sent = 0, sink_sent = 0;
  constexpr size_t kBytes = 200000;
  bool echo_fin = false, sink_fin = false;
  for (int i = 0; i < 200000 && !(echo_client.closed && sink_client.closed &&
                                  listener.peer_fin); ++i) {
    step();
    if (echo_sent < kBytes) {
      echo_sent += (*b)->Send(*echo_conn, ByteSpan(payload).first(std::min(payload.size(), kBytes - echo_sent)), now);
    } else if (!echo_fin) {
      (*b)->Shutdown(*echo_conn, now);
      echo_fin = true;
    }
    if (sink_sent < kBytes) {
      sink_sent += (*b)->Send(*sink_conn, ByteSpan(payload).first(std::min(payload.size(), kBytes - sink_sent)), now);
    } else if (!sink_fin) {
      (*b)->Shutdown(*sink_conn, now);
      sink_fin = true;
    }
    if (listener.peer_fin && listener.accepted.valid()) {
      (*b)->Shutdown(listener.accepted, now);
      listener.accepted = ConnId{};
    }
  }
  const uint64_t after = testutil::AllocationCount();
  EXPECT_EQ(echo_client.received, kBytes);
  EXPECT_TRUE(sink_client.peer_fin);
  EXPECT_EQ(services[1]->counters().bytes_in, kBytes);
  EXPECT_EQ(listener.received, src_cfg.bytes);
  EXPECT_EQ(after, before) << "allocations in the steady state";
}

}  // namespace
}  // namespace iwarp::dataplane
