// Two TcpStack instances joined by an in-memory link with seeded impairment
// (drop, duplicate, reorder) on a virtual clock: bulk transfer both ways,
// orderly close, byte-exact comparison.
#include <cstdio>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::tcp {
namespace {

using testing::kIpA;
using testing::kIpB;
using testing::Link;
using testing::Pattern;
using testing::TestIsn;

// Sends `tx` as fast as the stack takes it, then shuts down; records what
// arrives.
class Endpoint : public TcpUser {
 public:
  Endpoint(std::vector<uint8_t> tx) : tx_(std::move(tx)) { rx.reserve(tx_.size()); }
  TcpUser* OnAccept(ConnId c, const FourTuple&) override {
    conn = c;
    up = true;
    return this;
  }
  void OnConnected(ConnId c) override {
    conn = c;
    up = true;
  }
  size_t OnData(ConnId, uint64_t off, ByteSpan d) override {
    if (off != rx.size()) ++offset_errors;
    rx.insert(rx.end(), d.begin(), d.end());
    return d.size();
  }
  void OnPeerFin(ConnId) override { peer_fin = true; }
  void OnClosed(ConnId, CloseReason r) override {
    closed = true;
    reason = r;
  }
  void Pump(TcpStack& s, uint64_t now) {
    if (!up || closed || shut) return;
    while (sent < tx_.size()) {
      const size_t chunk = std::min<size_t>(tx_.size() - sent, 16384);
      const size_t n = s.Send(conn, ByteSpan(tx_.data() + sent, chunk), now);
      sent += n;
      if (n < chunk) return;
    }
    s.Shutdown(conn, now);
    shut = true;
  }

  ConnId conn;
  bool up = false, peer_fin = false, closed = false, shut = false;
  CloseReason reason = CloseReason::kAborted;
  std::vector<uint8_t> rx;
  uint64_t offset_errors = 0;
  size_t sent = 0;

 private:
  std::vector<uint8_t> tx_;
};

struct Result {
  uint64_t finish_us = 0;
  uint64_t max_options_and_payload = 0;
  TcpStackStats a, b;
};

Result Transfer(size_t bytes, Link::Impairment imp, TcpOptions opt, uint64_t limit_us,
                bool sums_payload = false) {
  Link link(50, imp);
  link.sums_payload = sums_payload;
  const IsnGenerator isn = TestIsn();
  const uint32_t ip_a[] = {kIpA};
  const uint32_t ip_b[] = {kIpB};
  auto a = TcpStack::Create(opt, ip_a, link.port(0), isn, 0);
  auto b = TcpStack::Create(opt, ip_b, link.port(1), isn, 0);
  EXPECT_TRUE(a.ok() && b.ok());
  link.Attach(a->get(), b->get());
  const auto data_ab = Pattern(bytes, 1);
  const auto data_ba = Pattern(bytes, 2);
  Endpoint client(data_ab), server(data_ba);
  EXPECT_TRUE((*b)->Listen(4791, server).ok());
  EXPECT_TRUE((*a)->Connect(kIpA, kIpB, 4791, client, 0, 0).ok());
  Result res;
  link.idle_hook = [&] {
    client.Pump(**a, link.now);
    server.Pump(**b, link.now);
    return client.closed && server.closed;
  };
  link.RunUntil(limit_us);
  res.finish_us = link.now;
  res.max_options_and_payload = link.max_options_and_payload;
  res.a = (*a)->stats();
  res.b = (*b)->stats();
  std::printf("virtual time %.3f ms; link sent %llu dropped %llu duplicated %llu reordered %llu; "
              "A: rtx %llu timeouts %llu fast %llu sack_rec %llu dsack %llu; "
              "B: rtx %llu timeouts %llu fast %llu sack_rec %llu dsack %llu\n",
              static_cast<double>(link.now) / 1000.0, (unsigned long long)link.sent,
              (unsigned long long)link.dropped, (unsigned long long)link.duplicated,
              (unsigned long long)link.reordered, (unsigned long long)res.a.retransmitted_segments,
              (unsigned long long)res.a.timeouts, (unsigned long long)res.a.fast_retransmits,
              (unsigned long long)res.a.sack_recoveries, (unsigned long long)res.a.dsacks_out,
              (unsigned long long)res.b.retransmitted_segments, (unsigned long long)res.b.timeouts,
              (unsigned long long)res.b.fast_retransmits, (unsigned long long)res.b.sack_recoveries,
              (unsigned long long)res.b.dsacks_out);
  EXPECT_TRUE(client.closed && server.closed) << "virtual time " << link.now;
  EXPECT_EQ(client.reason, CloseReason::kNormal);
  EXPECT_EQ(server.reason, CloseReason::kNormal);
  EXPECT_TRUE(client.peer_fin && server.peer_fin);
  EXPECT_EQ(client.rx.size(), bytes);
  EXPECT_EQ(server.rx.size(), bytes);
  EXPECT_TRUE(client.rx == data_ba) << "client received different bytes";
  EXPECT_TRUE(server.rx == data_ab) << "server received different bytes";
  EXPECT_EQ(client.offset_errors + server.offset_errors, 0u);
  const auto bad_checksum = static_cast<size_t>(DropReason::kTcpBadChecksum);
  EXPECT_EQ(res.a.drops[bad_checksum] + res.b.drops[bad_checksum], 0u);
  return res;
}

TEST(BackToBack, CleanLink16MiBEachWay) {
  TcpOptions o;
  o.max_connections = 4;
  const Result r = Transfer(16 << 20, Link::Impairment{}, o, 10'000'000);
  // 256 KiB windows over a 100 us RTT bound goodput at about 2.6 GB/s each
  // way: 16 MiB cannot take less than 6.4 ms; slow start and the close add
  // a little.
  EXPECT_LT(r.finish_us, 10'000u);
  EXPECT_EQ(r.a.retransmitted_segments + r.b.retransmitted_segments, 0u);
  EXPECT_EQ(r.a.timeouts + r.b.timeouts, 0u);
}

TEST(BackToBack, ImpairedLink16MiBEachWayCubic) {
  TcpOptions o;
  o.max_connections = 4;
  o.congestion_control = CcAlgorithm::kCubic;
  Link::Impairment imp;
  imp.drop = 0.01;
  imp.duplicate = 0.01;
  imp.reorder = 0.02;
  imp.seed = 7;
  const Result r = Transfer(16 << 20, imp, o, 60'000'000);
  EXPECT_LT(r.finish_us, 3'000'000u);
  EXPECT_GT(r.a.retransmitted_segments, 0u);
  EXPECT_GT(r.b.retransmitted_segments, 0u);
  EXPECT_GT(r.a.sack_recoveries + r.b.sack_recoveries, 0u);
  EXPECT_GT(r.a.dsacks_out + r.b.dsacks_out, 0u);
}

// The output sums each payload while copying it (TcpOutput::SumsPayload), as
// the data plane does; with loss, duplicates and reordering, retransmitted and
// re-cut segments must carry right checksums too (every receiver verifies).
TEST(BackToBack, ImpairedLinkWithOutputSummingThePayload) {
  TcpOptions o;
  o.max_connections = 4;
  Link::Impairment imp;
  imp.drop = 0.01;
  imp.duplicate = 0.01;
  imp.reorder = 0.02;
  imp.seed = 11;
  const Result r = Transfer(4 << 20, imp, o, 60'000'000, /*sums_payload=*/true);
  EXPECT_GT(r.a.retransmitted_segments + r.b.retransmitted_segments, 0u);
  EXPECT_GT(r.a.segments_in + r.b.segments_in, 2000u);
}

// RFC 9293 3.7.1, RFC 6691: options count against the MSS. With loss and
// reordering both ways, data segments also carry SACK blocks for what their
// sender holds out of order; no segment may exceed the MSS (a full EMSS with
// timestamps plus a SACK block would make a 9012-byte IP packet at MTU 9000,
// which the port cannot send). Some segments carry exactly the MSS.
TEST(BackToBack, NoSegmentExceedsTheMssWithSackBlocksBothWays) {
  for (uint16_t mtu : {uint16_t{1500}, uint16_t{9000}}) {
    SCOPED_TRACE(mtu);
    TcpOptions o;
    o.max_connections = 4;
    o.mtu = mtu;
    Link::Impairment imp;
    imp.drop = 0.02;
    imp.reorder = 0.05;
    imp.seed = 11;
    const Result r = Transfer(8 << 20, imp, o, 60'000'000);
    EXPECT_GT(r.a.dsacks_out + r.b.dsacks_out + r.a.sack_recoveries + r.b.sack_recoveries, 0u);
    EXPECT_EQ(r.max_options_and_payload, mtu - 40u);
  }
}

TEST(BackToBack, ImpairedLinkNewRenoWithoutSackOrTimestamps) {
  TcpOptions o;
  o.max_connections = 4;
  o.congestion_control = CcAlgorithm::kNewReno;
  o.sack = false;
  o.timestamps = false;
  Link::Impairment imp;
  imp.drop = 0.01;
  imp.duplicate = 0.005;
  imp.reorder = 0.01;
  imp.seed = 11;
  const Result r = Transfer(4 << 20, imp, o, 120'000'000);
  EXPECT_LT(r.finish_us, 5'000'000u);
  EXPECT_GT(r.a.fast_retransmits + r.b.fast_retransmits, 0u);
  EXPECT_EQ(r.a.sack_recoveries + r.b.sack_recoveries, 0u);
}

// 64-byte request / response over a 50 us one-way link: every transaction
// takes one round trip (100 us of virtual time); delayed ACKs and Nagle (off)
// add nothing because the response carries the ACK.
TEST(BackToBack, RequestResponseTakesOneRoundTripEach) {
  Link link(50, Link::Impairment{});
  const IsnGenerator isn = TestIsn();
  TcpOptions opt;
  opt.max_connections = 4;
  const uint32_t ip_a[] = {kIpA};
  const uint32_t ip_b[] = {kIpB};
  auto a = TcpStack::Create(opt, ip_a, link.port(0), isn, 0);
  auto b = TcpStack::Create(opt, ip_b, link.port(1), isn, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  link.Attach(a->get(), b->get());
  Endpoint client({}), server({});
  ASSERT_TRUE((*b)->Listen(4791, server).ok());
  ASSERT_TRUE((*a)->Connect(kIpA, kIpB, 4791, client, 0, 0).ok());
  link.RunUntil(1000, 10);
  ASSERT_TRUE(client.up && server.up);
  const uint8_t msg[64] = {1, 2, 3};
  const uint64_t start = link.now;
  constexpr int kTransactions = 1000;
  for (int i = 0; i < kTransactions; ++i) {
    ASSERT_EQ((*a)->Send(client.conn, ByteSpan(msg), link.now), 64u);
    while (server.rx.size() < 64u * (i + 1)) link.RunUntil(link.now + 10, 10);
    ASSERT_EQ((*b)->Send(server.conn, ByteSpan(msg), link.now), 64u);
    while (client.rx.size() < 64u * (i + 1)) link.RunUntil(link.now + 10, 10);
  }
  const uint64_t per = (link.now - start) / kTransactions;
  std::printf("request/response: %llu us of virtual time per transaction\n",
              static_cast<unsigned long long>(per));
  EXPECT_LE(per, 110u);
  EXPECT_EQ((*a)->stats().retransmitted_segments + (*b)->stats().retransmitted_segments, 0u);
}

// Heavy impairment over many seeds, small buffers and both algorithms: every
// transfer completes with identical bytes and an orderly close.
TEST(BackToBack, HeavyImpairmentManySeeds) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    TcpOptions o;
    o.max_connections = 4;
    o.send_buffer_bytes = 16 * 1024;
    o.receive_buffer_bytes = 16 * 1024;
    o.max_ooo_segments = 4;
    o.congestion_control = seed % 2 ? CcAlgorithm::kCubic : CcAlgorithm::kNewReno;
    o.sack = seed % 3 != 0;
    o.timestamps = seed % 4 != 0;
    o.delayed_ack_us = seed % 5 == 0 ? 0 : 200;
    Link::Impairment imp;
    imp.drop = 0.05;
    imp.duplicate = 0.02;
    imp.reorder = 0.05;
    imp.seed = seed;
    const Result r = Transfer(1 << 20, imp, o, 600'000'000);
    EXPECT_LT(r.finish_us, 120'000'000u);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace iwarp::tcp
