// The services over a real tcp_lite stack, joined to a second stack (the
// client or listener) by tcp_lite's in-memory test link on a virtual clock.
#include "dataplane/services/tcp_services.h"

#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::dataplane {
namespace {

using tcp::ConnId;
using tcp::TcpStack;
using tcp::testing::kIpA;
using tcp::testing::kIpB;
using tcp::testing::Link;
using tcp::testing::RecordingUser;

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

class ServicesTest : public ::testing::Test {
 protected:
  void Make(Link::Impairment imp = {}, uint32_t buffer = 16384) {
    link_ = std::make_unique<Link>(100, imp);
    tcp::TcpOptions o;
    o.max_connections = 8;
    o.syn_backlog = 4;
    o.send_buffer_bytes = buffer;
    o.receive_buffer_bytes = buffer;
    o.rto_min_us = 10000;
    o.rto_initial_us = 100000;
    const uint32_t ip_a = kIpA, ip_b = kIpB;
    auto a = TcpStack::Create(o, std::span<const uint32_t>(&ip_a, 1), link_->port(0), isn_, 0);
    auto b = TcpStack::Create(o, std::span<const uint32_t>(&ip_b, 1), link_->port(1), isn_, 0);
    ASSERT_TRUE(a.ok() && b.ok());
    a_ = std::move(*a);
    b_ = std::move(*b);
    link_->Attach(a_.get(), b_.get());
    link_->idle_hook = [this] {
      clock_.now_us = link_->now;
      for (auto& s : services_) s->Poll(link_->now / 1000);
      PumpClient();
      return false;
    };
  }
  TcpService* Add(config::ServiceConfig cfg) {
    services_.push_back(TcpService::Create(cfg, a_.get(), &clock_, 8, kIpA));
    EXPECT_TRUE(services_.back()->Start().ok());
    return services_.back().get();
  }
  // Sends client_data_ from B as send space allows; half-closes after it.
  void PumpClient() {
    if (!client_conn_.valid() || client_sent_ == client_data_.size() + 1) return;
    while (client_sent_ < client_data_.size()) {
      const size_t n = b_->Send(
          client_conn_, ByteSpan(client_data_).subspan(client_sent_), link_->now);
      if (n == 0) return;
      client_sent_ += n;
    }
    b_->Shutdown(client_conn_, link_->now);
    client_sent_ = client_data_.size() + 1;
  }
  // B connects to A:port and sends `data`, then FIN.
  void ClientSends(uint16_t port, std::vector<uint8_t> data) {
    client_data_ = std::move(data);
    auto c = b_->Connect(kIpB, kIpA, port, client_, 0, link_->now);
    ASSERT_TRUE(c.ok()) << c.status();
    client_conn_ = *c;
  }

  tcp::IsnGenerator isn_ = tcp::testing::TestIsn();
  std::unique_ptr<Link> link_;
  std::unique_ptr<TcpStack> a_, b_;
  ServiceClock clock_;
  std::vector<std::unique_ptr<TcpService>> services_;
  RecordingUser client_;
  ConnId client_conn_;
  std::vector<uint8_t> client_data_;
  size_t client_sent_ = 0;
};

config::ServiceConfig Echo() {
  config::ServiceConfig c;
  c.name = "echo";
  c.type = config::ServiceType::kEcho;
  c.port = 7;
  return c;
}

config::ServiceConfig Sink() {
  config::ServiceConfig c;
  c.name = "sink";
  c.type = config::ServiceType::kSink;
  c.port = 9;
  c.sha256 = true;
  return c;
}

TEST_F(ServicesTest, EchoReturnsEveryByteThroughSmallBuffersThenCloses) {
  Make();
  TcpService* echo = Add(Echo());
  // 20x the buffers: the echo must stall on send space and resume.
  const std::vector<uint8_t> data = Random(320 * 1024, 1);
  ClientSends(7, data);
  link_->RunUntil(20'000'000);
  EXPECT_EQ(client_.data, data);
  EXPECT_TRUE(client_.peer_fin);
  EXPECT_TRUE(client_.closed);
  EXPECT_EQ(echo->counters().accepted, 1u);
  EXPECT_EQ(echo->counters().bytes_out, data.size());
  EXPECT_EQ(echo->counters().closed, 1u);
  EXPECT_EQ(echo->counters().closed_abnormal, 0u);
  EXPECT_EQ(echo->counters().active, 0u);
}

TEST_F(ServicesTest, EchoSurvivesLossAndReordering) {
  Link::Impairment imp;
  imp.drop = 0.03;
  imp.reorder = 0.05;
  imp.seed = 9;
  Make(imp);
  Add(Echo());
  const std::vector<uint8_t> data = Random(100 * 1024, 2);
  ClientSends(7, data);
  link_->RunUntil(60'000'000);
  EXPECT_GT(link_->dropped, 0u);
  EXPECT_EQ(client_.data.size(), data.size());
  EXPECT_EQ(client_.offset_errors, 0u);
  size_t first_diff = 0;
  while (first_diff < std::min(data.size(), client_.data.size()) &&
         data[first_diff] == client_.data[first_diff]) {
    ++first_diff;
  }
  EXPECT_EQ(first_diff, data.size()) << "client sent " << client_sent_ << ", closed "
                                     << client_.closed << ", link sent " << link_->sent;
  EXPECT_TRUE(client_.data == data);
  EXPECT_TRUE(client_.peer_fin);
}

TEST_F(ServicesTest, SinkHashesTheStreamAndAnswersFin) {
  Make();
  TcpService* sink = Add(Sink());
  const std::vector<uint8_t> data = Random(200 * 1024 + 17, 3);
  ClientSends(9, data);
  link_->RunUntil(20'000'000);
  EXPECT_TRUE(client_.peer_fin);  // the sink's FIN after ours
  ASSERT_EQ(sink->recent_count(), 1u);
  const TransferRecord& r = sink->recent(0);
  EXPECT_EQ(r.bytes, data.size());
  EXPECT_TRUE(r.has_sha256);
  EXPECT_EQ(r.sha256, Sha256::Hash(data));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.tuple.remote_addr, kIpB);
  EXPECT_EQ(sink->counters().bytes_in, data.size());
}

TEST_F(ServicesTest, SinkRecordsAResetTransferAsIncomplete) {
  Make();
  TcpService* sink = Add(Sink());
  ClientSends(9, Random(1000, 4));
  client_sent_ = client_data_.size() + 1;  // no FIN: the client aborts instead
  ASSERT_TRUE(b_->Send(client_conn_, ByteSpan(), 0) == 0);
  link_->RunUntil(100'000);
  b_->Abort(client_conn_, link_->now);
  link_->RunUntil(200'000);
  ASSERT_EQ(sink->recent_count(), 1u);
  EXPECT_FALSE(sink->recent(0).complete);
  EXPECT_EQ(sink->recent(0).reason, tcp::CloseReason::kResetByPeer);
  EXPECT_EQ(sink->counters().closed_abnormal, 1u);
}

TEST_F(ServicesTest, SourceSendsThePatternToAListener) {
  Make();
  RecordingUser listener;
  ASSERT_TRUE(b_->Listen(5001, listener).ok());
  config::ServiceConfig c;
  c.name = "push";
  c.type = config::ServiceType::kSource;
  c.remote = kIpB;
  c.remote_port = 5001;
  c.bytes = 150 * 1024 + 3;
  c.connections = 2;
  c.start_delay_ms = 5;
  c.sha256 = true;
  TcpService* src = Add(c);
  link_->RunUntil(4'000);
  EXPECT_EQ(listener.accepted.size(), 0u);  // start_delay_ms not yet over
  link_->RunUntil(20'000'000);
  ASSERT_EQ(listener.accepted.size(), 2u);
  // One RecordingUser serves both connections: their bytes interleave, so
  // check the totals and the pattern through the source's own records.
  EXPECT_EQ(listener.data.size(), 2 * c.bytes);
  std::vector<uint8_t> expected(c.bytes);
  FillPattern(0, expected);
  EXPECT_EQ(expected[250], 250);
  EXPECT_EQ(expected[251], 0);
  ASSERT_EQ(src->recent_count(), 0u);  // still open: the listener has not closed
  for (ConnId id : listener.accepted) b_->Shutdown(id, link_->now);
  link_->RunUntil(40'000'000);
  ASSERT_EQ(src->recent_count(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(src->recent(i).bytes, c.bytes);
    EXPECT_EQ(src->recent(i).sha256, Sha256::Hash(expected));
    EXPECT_TRUE(src->recent(i).complete);
  }
  EXPECT_EQ(src->counters().connected, 2u);
}

TEST_F(ServicesTest, SourceStreamIsThePatternByteForByte) {
  Make();
  RecordingUser listener;
  ASSERT_TRUE(b_->Listen(5001, listener).ok());
  config::ServiceConfig c;
  c.name = "push";
  c.type = config::ServiceType::kSource;
  c.remote = kIpB;
  c.remote_port = 5001;
  c.bytes = 70 * 1024 + 1;
  TcpService* src = Add(c);
  link_->RunUntil(10'000'000);
  std::vector<uint8_t> expected(c.bytes);
  FillPattern(0, expected);
  EXPECT_EQ(listener.data, expected);
  EXPECT_TRUE(listener.peer_fin);
  EXPECT_EQ(src->counters().bytes_out, c.bytes);
}

TEST(FillPattern, StartsAtAnyOffset) {
  std::vector<uint8_t> a(600), b(100);
  FillPattern(0, a);
  FillPattern(500, b);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin() + 500));
  EXPECT_EQ(a[502], 502 % 251);
}

}  // namespace
}  // namespace iwarp::dataplane
