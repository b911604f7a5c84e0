// The iwarp_responder and iwarp_client services with transport: sctp, in one
// process: one SctpEndpoint (usrsctp has one stack per process), whose
// packets for the client's remote address are fed back in as coming from
// that address, so responder and clients meet on one AF_CONN link. Every
// chunk goes through usrsctp and the RFC 5043 session layer; only the IPv4
// layer and DPDK are left out (tests/sctp_dataplane.py runs two daemons).
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/services/iwarp_services.h"
#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::dataplane {
namespace {

using tcp::testing::kIpA;
using tcp::testing::kIpB;

constexpr uint16_t kStreams = 8;

sctp::SctpEndpoint* g_ep = nullptr;

class EndpointEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    sctp::EndpointConfig c;
    c.local_ip = kIpB;
    c.association.streams = kStreams;
    c.association.rto_initial_ms = 200;
    c.association.rto_min_ms = 50;
    c.association.rto_max_ms = 1000;
    auto ep = sctp::SctpEndpoint::Create(c);
    ASSERT_TRUE(ep.ok()) << ep.status();
    ep_ = std::move(*ep);
    g_ep = ep_.get();
  }
  // Left alive until exit (see sctp/endpoint_test.cc).
 private:
  std::unique_ptr<sctp::SctpEndpoint> ep_;
};

::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new EndpointEnvironment);

uint64_t NowUs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string Hex(const Sha256::Digest& d) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

// What a run reports (iwarp_services.h), for write / read / send.
std::string ExpectedSha(config::IwarpOp op, uint64_t msg, uint64_t count, uint32_t qd) {
  Sha256 h;
  std::vector<uint64_t> written(qd);
  for (uint32_t s = 0; s < qd; ++s) written[s] = s * msg;
  std::vector<uint8_t> buf(msg);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t off = i * msg;
    if (op == config::IwarpOp::kWrite) written[i % qd] = off;
    if (op == config::IwarpOp::kRead) off = written[i % qd];
    FillPattern(off, MutableByteSpan(buf));
    h.Update(ByteSpan(buf));
  }
  return Hex(h.Finish());
}

// Feeds every packet back in as coming from its destination.
struct Reflector : sctp::DatagramSink {
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> pending;
  uint64_t packets = 0;
  void Transmit(uint32_t dst_ip, ByteSpan p) override {
    ++packets;
    pending.emplace_back(dst_ip, std::vector<uint8_t>(p.begin(), p.end()));
  }
  void Deliver() {
    auto batch = std::move(pending);
    pending.clear();
    for (auto& [ip, bytes] : batch) g_ep->Input(ip, ByteSpan(bytes));
  }
};

class IwarpSctpServicesTest : public ::testing::Test {
 protected:
  IwarpSctpServicesTest() {
    // The services' TcpService base needs a stack; nothing runs on it.
    link_ = std::make_unique<tcp::testing::Link>(50, tcp::testing::Link::Impairment{});
    tcp::TcpOptions o;
    o.max_connections = 4;
    const uint32_t ip = kIpB;
    auto s = tcp::TcpStack::Create(o, std::span<const uint32_t>(&ip, 1), link_->port(0), isn_, 0);
    EXPECT_TRUE(s.ok());
    stack_ = std::move(*s);
    host_ = std::make_unique<SctpServiceHost>(g_ep, kStreams);
    iw_.qps_per_service = 4;
    iw_.scratch_bytes = 256 * 1024;
    iw_.recv_buffers = 4;
    iw_.recv_buffer_bytes = 64 * 1024;
  }
  ~IwarpSctpServicesTest() override {
    services_.clear();
    host_.reset();
    Run([] { return false; }, 50);  // ABORTs out before the next test
  }

  IwarpService* Add(config::ServiceConfig cfg) {
    cfg.transport = config::IwarpTransport::kSctp;
    auto s = IwarpService::Create(cfg, iw_, stack_.get(), &clock_, 4, kIpB, host_.get());
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return nullptr;
    absl::Status st = (*s)->Start();
    EXPECT_TRUE(st.ok()) << st;
    services_.push_back(std::move(*s));
    return services_.back().get();
  }
  IwarpService* Responder(uint16_t port) {
    config::ServiceConfig c;
    c.name = "r";
    c.type = config::ServiceType::kIwarpResponder;
    c.port = port;
    return Add(c);
  }
  IwarpService* Client(const char* name, uint16_t port, config::IwarpOp op, uint32_t msg,
                       uint64_t count, uint32_t qd, int32_t stream = -1) {
    config::ServiceConfig c;
    c.name = name;
    c.type = config::ServiceType::kIwarpClient;
    c.remote = kIpA;  // fed back in as coming from kIpA
    c.remote_port = port;
    c.op = op;
    c.message_bytes = msg;
    c.count = count;
    c.queue_depth = qd;
    c.stream = stream;
    return Add(c);
  }

  template <typename F>
  bool Run(F done, uint64_t timeout_ms = 20000) {
    const uint64_t end = NowUs() + timeout_ms * 1000;
    while (NowUs() < end) {
      clock_.now_us = NowUs();
      g_ep->Poll(clock_.now_us / 1000);
      for (auto& s : services_) s->Poll(clock_.now_us / 1000);
      if (done()) return true;
      if (g_ep->Drain(wire_) == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      wire_.Deliver();
    }
    return done();
  }
  bool RunClients() {
    return Run([&] {
      for (auto& s : services_) {
        if (s->config().type == config::ServiceType::kIwarpClient && !s->run_result().finished) {
          return false;
        }
      }
      return true;
    });
  }

  tcp::IsnGenerator isn_ = *tcp::IsnGenerator::Create();
  std::unique_ptr<tcp::testing::Link> link_;
  std::unique_ptr<tcp::TcpStack> stack_;
  std::unique_ptr<SctpServiceHost> host_;
  config::IwarpConfig iw_;
  ServiceClock clock_;
  Reflector wire_;
  std::vector<std::unique_ptr<IwarpService>> services_;
};

TEST_F(IwarpSctpServicesTest, ThreeClientsShareOneAssociationOnTheirOwnStreams) {
  IwarpService* r = Responder(6001);
  IwarpService* w = Client("w", 6001, config::IwarpOp::kWrite, 4096, 40, 4);
  IwarpService* rd = Client("rd", 6001, config::IwarpOp::kRead, 65536, 10, 2);
  IwarpService* s = Client("s", 6001, config::IwarpOp::kSend, 1000, 30, 4);
  ASSERT_TRUE(RunClients());
  struct Want {
    IwarpService* svc;
    config::IwarpOp op;
    uint64_t msg, count;
    uint32_t qd;
  };
  for (const Want& x : {Want{w, config::IwarpOp::kWrite, 4096, 40, 4},
                        Want{rd, config::IwarpOp::kRead, 65536, 10, 2},
                        Want{s, config::IwarpOp::kSend, 1000, 30, 4}}) {
    const IwarpRunResult res = x.svc->run_result();
    EXPECT_TRUE(res.ok) << x.svc->config().name;
    EXPECT_EQ(res.messages, x.count);
    EXPECT_EQ(Hex(res.sha256), ExpectedSha(x.op, x.msg, x.count, x.qd)) << x.svc->config().name;
  }
  // One association for the three; the responder served three sessions on it.
  EXPECT_EQ(w->iwarp_counters().associations + rd->iwarp_counters().associations +
                s->iwarp_counters().associations,
            1u);
  // The last client's SHUTDOWN ends the association on both sides; the
  // responder then drops its end (the client's stays with the host).
  auto up = [] {
    size_t n = 0;
    g_ep->ForEachAssociation([&n](const sctp::SctpAssociation& a) {
      n += a.ddp().state() == sctp::DdpAssociation::State::kUp;
    });
    return n;
  };
  ASSERT_TRUE(Run([&] { return up() == 0 && g_ep->associations() == 1; }, 5000))
      << up() << " up, " << g_ep->associations() << " tracked";
  const IwarpServiceCounters rc = r->iwarp_counters();
  EXPECT_EQ(rc.associations, 1u);
  EXPECT_EQ(rc.established, 3u);
  EXPECT_EQ(rc.sends_echoed, 30u);
  EXPECT_EQ(rc.initiates_refused, 0u);
  EXPECT_EQ(rc.terminates_sent, 0u);
}

TEST_F(IwarpSctpServicesTest, InitiateOnAStreamWithoutQpIsRejected) {
  IwarpService* r = Responder(6002);  // QPs on streams 0..3
  IwarpService* ok = Client("ok", 6002, config::IwarpOp::kWrite, 4096, 8, 2, 1);
  IwarpService* bad = Client("bad", 6002, config::IwarpOp::kWrite, 4096, 8, 2, 5);
  ASSERT_TRUE(RunClients());
  EXPECT_TRUE(ok->run_result().ok);
  EXPECT_FALSE(bad->run_result().ok);
  EXPECT_EQ(bad->run_result().connect_error, engine::ConnectError::kRejected);
  EXPECT_EQ(bad->iwarp_counters().setup_failed, 1u);
  EXPECT_EQ(r->iwarp_counters().initiates_refused, 1u);
  EXPECT_EQ(r->iwarp_counters().established, 1u);
}

TEST_F(IwarpSctpServicesTest, StreamBeyondTheAssociationIsAStartError) {
  config::ServiceConfig c;
  c.name = "far";
  c.type = config::ServiceType::kIwarpClient;
  c.transport = config::IwarpTransport::kSctp;
  c.remote = kIpA;
  c.remote_port = 6003;
  c.stream = kStreams;
  auto s = IwarpService::Create(c, iw_, stack_.get(), &clock_, 4, kIpB, host_.get());
  ASSERT_TRUE(s.ok());
  absl::Status st = (*s)->Start();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  // Without an SCTP host (sctp disabled, or not worker 0) it cannot be made.
  EXPECT_EQ(IwarpService::Create(c, iw_, stack_.get(), &clock_, 4, kIpB).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace iwarp::dataplane
