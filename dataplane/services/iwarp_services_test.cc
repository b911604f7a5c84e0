// The iwarp_responder and iwarp_client services over two real tcp_lite
// stacks (and real engine QPs), joined by tcp_lite's in-memory test link on a
// virtual clock.
#include "dataplane/services/iwarp_services.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::dataplane {
namespace {

using tcp::TcpStack;
using tcp::testing::kIpA;
using tcp::testing::kIpB;
using tcp::testing::Link;

constexpr uint16_t kPort = 9999;

std::string Hex(const Sha256::Digest& d) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

// The SHA-256 a run of `op` must report (iwarp_services.h: message i carries
// the pattern from i * msg; a read returns the slot's setup pattern).
std::string ExpectedSha(config::IwarpOp op, uint64_t msg, uint64_t count, uint32_t qd) {
  Sha256 h;
  std::vector<uint64_t> written(qd);
  for (uint32_t s = 0; s < qd; ++s) written[s] = s * msg;
  std::vector<uint8_t> buf(msg);
  for (uint64_t i = 0; i < count; ++i) {
    config::IwarpOp o = op;
    if (o == config::IwarpOp::kMixed) {
      constexpr config::IwarpOp kCycle[] = {config::IwarpOp::kWrite, config::IwarpOp::kRead,
                                            config::IwarpOp::kSend};
      o = kCycle[i % 3];
    }
    uint64_t off = i * msg;
    if (o == config::IwarpOp::kWrite) written[i % qd] = off;
    if (o == config::IwarpOp::kRead) off = written[i % qd];
    FillPattern(off, MutableByteSpan(buf));
    h.Update(ByteSpan(buf));
  }
  return Hex(h.Finish());
}

class IwarpServicesTest : public ::testing::Test {
 protected:
  void Make(Link::Impairment imp = {}) {
    link_ = std::make_unique<Link>(50, imp);
    tcp::TcpOptions o;
    o.max_connections = 16;
    o.send_buffer_bytes = 256 * 1024;
    o.receive_buffer_bytes = 256 * 1024;
    o.rto_min_us = 10000;
    o.rto_initial_us = 100000;
    o.delayed_ack_us = 0;
    const uint32_t ip_a = kIpA, ip_b = kIpB;
    auto a = TcpStack::Create(o, std::span<const uint32_t>(&ip_a, 1), link_->port(0), isn_, 0);
    auto b = TcpStack::Create(o, std::span<const uint32_t>(&ip_b, 1), link_->port(1), isn_, 0);
    ASSERT_TRUE(a.ok() && b.ok());
    a_ = std::move(*a);
    b_ = std::move(*b);
    link_->Attach(a_.get(), b_.get());
  }

  IwarpService* Responder(config::ServiceConfig cfg = {}) {
    cfg.name = "r";
    cfg.type = config::ServiceType::kIwarpResponder;
    cfg.port = kPort;
    auto s = IwarpService::Create(cfg, iw_, a_.get(), &clock_, 16, kIpA);
    EXPECT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE((*s)->Start().ok());
    services_.push_back(std::move(*s));
    return services_.back().get();
  }

  IwarpService* Client(config::IwarpOp op, uint32_t msg, uint64_t count, uint32_t qd,
                       bool crc = true, bool markers = false) {
    config::ServiceConfig cfg;
    cfg.name = "c";
    cfg.type = config::ServiceType::kIwarpClient;
    cfg.remote = kIpA;
    cfg.remote_port = kPort;
    cfg.op = op;
    cfg.message_bytes = msg;
    cfg.count = count;
    cfg.queue_depth = qd;
    cfg.crc = crc;
    cfg.markers = markers;
    auto s = IwarpService::Create(cfg, iw_, b_.get(), &clock_, 16, kIpB);
    EXPECT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE((*s)->Start().ok());
    services_.push_back(std::move(*s));
    return services_.back().get();
  }

  // Runs the link, polling every service, until every client run finished
  // or `max_us` of virtual time passed.
  bool RunClients(uint64_t max_us) {
    bool done = false;
    link_->idle_hook = [&] {
      clock_.now_us = link_->now;
      for (auto& s : services_) s->Poll(link_->now / 1000);
      done = true;
      for (auto& s : services_) {
        if (s->config().type == config::ServiceType::kIwarpClient && !s->run_result().finished) {
          done = false;
        }
      }
      return done;
    };
    link_->RunUntil(link_->now + max_us);
    // Let the closes finish (responder QPs are recycled after them).
    link_->idle_hook = [&] {
      clock_.now_us = link_->now;
      for (auto& s : services_) s->Poll(link_->now / 1000);
      return false;
    };
    link_->RunUntil(link_->now + 200'000);
    link_->idle_hook = nullptr;
    return done;
  }

  config::IwarpConfig iw_ = [] {
    config::IwarpConfig c;
    c.qps_per_service = 2;
    c.scratch_bytes = 256 * 1024;
    c.recv_buffers = 4;
    c.recv_buffer_bytes = 64 * 1024;
    return c;
  }();
  tcp::IsnGenerator isn_ = tcp::testing::TestIsn();
  ServiceClock clock_;
  std::unique_ptr<Link> link_;
  // Destroyed before the stacks' users vanish: services first, then stacks.
  std::unique_ptr<TcpStack> a_, b_;
  std::vector<std::unique_ptr<IwarpService>> services_;

  void TearDown() override {
    a_.reset();
    b_.reset();
    services_.clear();
  }
};

TEST(ResponderPrivateData, RoundTripsAndRejects) {
  ResponderPrivateData pd{0x1234'56AB, 0x1000'0000, 1 << 20, 65536, 16};
  uint8_t buf[kResponderPdSize];
  ASSERT_TRUE(EncodeResponderPd(pd, MutableByteSpan(buf)));
  // The documented layout, byte for byte.
  const uint8_t want[kResponderPdSize] = {
      0x49, 0x57, 0x52, 0x50, 1, 0, 0, 0,  0x12, 0x34, 0x56, 0xAB, 0, 0, 0, 0,
      0, 0, 0, 0, 0x10, 0, 0, 0,  0, 0, 0, 0, 0, 0x10, 0, 0,
      0, 1, 0, 0, 0, 0, 0, 16};
  EXPECT_EQ(0, std::memcmp(buf, want, sizeof(buf)));
  ResponderPrivateData back;
  ASSERT_TRUE(DecodeResponderPd(ByteSpan(buf), &back));
  EXPECT_EQ(back.stag, pd.stag);
  EXPECT_EQ(back.to, pd.to);
  EXPECT_EQ(back.length, pd.length);
  EXPECT_EQ(back.recv_buffer_bytes, pd.recv_buffer_bytes);
  EXPECT_EQ(back.recv_buffers, pd.recv_buffers);
  EXPECT_FALSE(DecodeResponderPd(ByteSpan(buf, kResponderPdSize - 1), &back));
  EXPECT_FALSE(DecodeResponderPd(ByteSpan(), &back));
  buf[0] ^= 1;
  EXPECT_FALSE(DecodeResponderPd(ByteSpan(buf), &back));
  buf[0] ^= 1;
  buf[4] = 2;  // version
  EXPECT_FALSE(DecodeResponderPd(ByteSpan(buf), &back));
  uint8_t small[8];
  EXPECT_FALSE(EncodeResponderPd(pd, MutableByteSpan(small)));
}

TEST_F(IwarpServicesTest, EveryOpMovesVerifiedData) {
  Make();
  IwarpService* r = Responder();
  struct Case {
    config::IwarpOp op;
    uint32_t msg;
    uint64_t count;
    uint32_t qd;
  };
  const Case cases[] = {{config::IwarpOp::kWrite, 4096, 40, 4},
                        {config::IwarpOp::kRead, 10000, 20, 3},
                        {config::IwarpOp::kSend, 65536, 12, 4},
                        {config::IwarpOp::kMixed, 1, 30, 2},
                        {config::IwarpOp::kSend, 0, 5, 1}};
  uint64_t sends = 0;
  for (const Case& c : cases) {
    IwarpService* cl = Client(c.op, c.msg, c.count, c.qd);
    ASSERT_TRUE(RunClients(20'000'000)) << config::ToString(c.op) << " " << c.msg;
    const IwarpRunResult res = cl->run_result();
    EXPECT_TRUE(res.ok) << config::ToString(c.op) << " " << c.msg;
    EXPECT_EQ(res.messages, c.count);
    EXPECT_EQ(res.bytes, c.count * c.msg);
    EXPECT_EQ(Hex(res.sha256), ExpectedSha(c.op, c.msg, c.count, c.qd));
    EXPECT_EQ(cl->iwarp_counters().verify_failures, 0u);
    EXPECT_EQ(cl->iwarp_counters().completion_errors, 0u);
    if (c.op == config::IwarpOp::kSend) sends += c.count;
    if (c.op == config::IwarpOp::kMixed) sends += c.count / 3;
  }
  const IwarpServiceCounters& rc = r->iwarp_counters();
  EXPECT_EQ(rc.established, 5u);
  EXPECT_EQ(rc.setup_failed, 0u);
  EXPECT_EQ(rc.sends_echoed, sends);
  EXPECT_EQ(rc.echo_post_failed, 0u);
  EXPECT_EQ(rc.terminates_sent, 0u);
  // Five connections through a pool of two: every finished QP was replaced.
  EXPECT_EQ(rc.qps_recycled, 5u);
  EXPECT_EQ(r->recent_count(), 5u);
  EXPECT_EQ(r->counters().active, 0u);
}

TEST_F(IwarpServicesTest, LossyLinkStillDeliversIdenticalData) {
  Make(Link::Impairment{0.03, 0.02, 0.05, 11});
  Responder();
  IwarpService* cl = Client(config::IwarpOp::kMixed, 20000, 45, 4);
  ASSERT_TRUE(RunClients(60'000'000));
  EXPECT_TRUE(cl->run_result().ok);
  EXPECT_EQ(Hex(cl->run_result().sha256), ExpectedSha(config::IwarpOp::kMixed, 20000, 45, 4));
  EXPECT_GT(link_->dropped, 0u);
}

TEST_F(IwarpServicesTest, MarkersAndNoCrcNegotiated) {
  Make();
  config::ServiceConfig rc;
  rc.crc = false;
  rc.markers = true;  // the responder asks the client for Markers
  Responder(rc);
  IwarpService* cl = Client(config::IwarpOp::kWrite, 3000, 10, 2, /*crc=*/false, /*markers=*/true);
  IwarpQpInfo info[1];
  bool seen = false;
  link_->idle_hook = [&] {
    clock_.now_us = link_->now;
    for (auto& s : services_) s->Poll(link_->now / 1000);
    if (!seen && cl->ListQps(info) == 1 && info[0].state == engine::QpState::kRts) seen = true;
    return cl->run_result().finished;
  };
  link_->RunUntil(link_->now + 5'000'000);
  link_->idle_hook = nullptr;
  ASSERT_TRUE(seen);
  EXPECT_FALSE(info[0].negotiated.crc);
  EXPECT_TRUE(info[0].negotiated.tx_markers);
  EXPECT_TRUE(info[0].negotiated.rx_markers);
  EXPECT_TRUE(cl->run_result().ok);
}

TEST_F(IwarpServicesTest, ScratchTooSmallIsRefusedByTheClient) {
  Make();
  IwarpService* r = Responder();
  // 4 slots of 128 KiB need 512 KiB; the responder offers 256 KiB.
  IwarpService* cl = Client(config::IwarpOp::kWrite, 128 * 1024, 4, 4);
  ASSERT_TRUE(RunClients(5'000'000));
  EXPECT_FALSE(cl->run_result().ok);
  EXPECT_EQ(cl->run_result().messages, 0u);
  EXPECT_EQ(cl->iwarp_counters().bad_private_data, 1u);
  EXPECT_EQ(r->iwarp_counters().completion_errors, 0u);
}

TEST_F(IwarpServicesTest, SendsWithoutResponderReceivesAreNotPosted) {
  Make();
  iw_.recv_buffers = 0;  // below what config allows: a foreign responder's private data
  Responder();
  IwarpService* cl = Client(config::IwarpOp::kSend, 100, 4, 2);
  ASSERT_TRUE(RunClients(5'000'000));
  EXPECT_FALSE(cl->run_result().ok);
  EXPECT_EQ(cl->iwarp_counters().bad_private_data, 1u);
  EXPECT_EQ(cl->iwarp_counters().terminates_received, 0u);
}

TEST_F(IwarpServicesTest, ConcurrentClientsBeyondThePoolAreRefused) {
  Make();
  IwarpService* r = Responder();  // a pool of two QPs
  IwarpService* c1 = Client(config::IwarpOp::kWrite, 8192, 200, 2);
  IwarpService* c2 = Client(config::IwarpOp::kSend, 8192, 200, 2);
  IwarpService* c3 = Client(config::IwarpOp::kRead, 8192, 200, 2);
  ASSERT_TRUE(RunClients(20'000'000));
  EXPECT_TRUE(c1->run_result().ok);
  EXPECT_TRUE(c2->run_result().ok);
  // The third found no idle QP: its valid MPA Request got a Reject Reply
  // (not an RST) naming the reason, and the refusal is counted.
  EXPECT_FALSE(c3->run_result().ok);
  EXPECT_EQ(c3->run_result().connect_error, engine::ConnectError::kRejected);
  EXPECT_EQ(a_->stats().listen_refused, 0u);
  EXPECT_EQ(r->iwarp_counters().connect_requests, 3u);
  EXPECT_EQ(r->iwarp_counters().replies_sent, 2u);
  EXPECT_EQ(r->iwarp_counters().refused_no_qp, 1u);
  EXPECT_EQ(r->iwarp_counters().rejects_sent, 1u);
  EXPECT_EQ(r->iwarp_counters().established, 2u);
  // Both pool QPs were replaced once their connections ended.
  EXPECT_EQ(r->iwarp_counters().qps_recycled, 2u);
}

TEST_F(IwarpServicesTest, NoResponderMeansConnectFailure) {
  Make();
  IwarpService* cl = Client(config::IwarpOp::kSend, 10, 1, 1);
  ASSERT_TRUE(RunClients(20'000'000));
  EXPECT_FALSE(cl->run_result().ok);
  EXPECT_EQ(cl->run_result().connect_error, engine::ConnectError::kTcpFailed);
  EXPECT_EQ(cl->iwarp_counters().setup_failed, 1u);
}

}  // namespace
}  // namespace iwarp::dataplane
