// MpaGate and the gated Listener: connections hold no QP until their MPA
// Request is valid; idle and half-open connections are bounded per listener
// and per source, time out, and give way to newer ones; every refusal after a
// valid Request is an MPA Reject Reply with its reason (RFC 5044 7.1.2).
#include "iwarp/mpa_gate.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"

namespace iwarp::engine {
namespace {

using testing::kPort;
using testing::MutatingPort;
using testing::RecordingObserver;
using testing::TestMemory;

// Remote addresses of side a: three sources.
constexpr uint32_t kSrc1 = tcp::testing::kIpA;
constexpr uint32_t kSrc2 = tcp::testing::kIpA + 16;
constexpr uint32_t kSrc3 = tcp::testing::kIpA + 32;

// A raw TCP initiator: sends `bytes` once connected, records what comes back
// and how the connection ended.
struct RawPeer final : tcp::TcpUser {
  RawPeer(tcp::TcpStack& s, const uint64_t& clock, std::vector<uint8_t> b)
      : stack(s), now(clock), bytes(std::move(b)) {}
  void OnConnected(tcp::ConnId c) override {
    connected = true;
    if (!bytes.empty()) stack.Send(c, ByteSpan(bytes), now);
  }
  size_t OnData(tcp::ConnId, uint64_t, ByteSpan d) override {
    received.insert(received.end(), d.begin(), d.end());
    return d.size();
  }
  void OnPeerFin(tcp::ConnId) override { fin = true; }
  void OnClosed(tcp::ConnId, tcp::CloseReason r) override { closed = r; }
  tcp::TcpStack& stack;
  const uint64_t& now;  // the link's clock (TSval and timers follow it)
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> received;
  bool connected = false;
  bool fin = false;
  std::optional<tcp::CloseReason> closed;
};

std::vector<uint8_t> Request(uint8_t revision, size_t ulp_pd, bool enhanced = true) {
  mpa::StartupFrame f;
  f.type = mpa::FrameType::kRequest;
  f.crc = true;
  f.revision = revision;
  if (enhanced && revision == 2) {
    mpa::IrdOrd io;
    io.ird = 8;
    io.ord = 8;
    io.peer_to_peer = true;
    io.write_rtr = true;
    f.ird_ord = io;
  }
  std::vector<uint8_t> pd(ulp_pd, 0x5A);
  f.private_data = ByteSpan(pd);
  std::vector<uint8_t> out(mpa::StartupFrameSize(f));
  EXPECT_EQ(mpa::EncodeStartupFrame(f, MutableByteSpan(out)).status, mpa::FrameStatus::kOk);
  return out;
}

class GateTest : public ::testing::Test {
 protected:
  void Build(const MpaGateOptions& g, uint32_t qps) {
    a_port_ = std::make_unique<MutatingPort>(link_, 0);
    b_port_ = std::make_unique<MutatingPort>(link_, 1);
    tcp::TcpOptions t = testing::PairTcpOptions();
    t.max_connections = 64;
    t.delayed_ack_us = 0;
    const uint32_t ip_a[] = {kSrc1, kSrc2, kSrc3};
    const uint32_t ip_b[] = {tcp::testing::kIpB};
    a_ = *tcp::TcpStack::Create(t, ip_a, *a_port_, isn_, 0);
    b_ = *tcp::TcpStack::Create(t, ip_b, *b_port_, isn_, 0);
    link_.Attach(a_.get(), b_.get());
    QpOptions o;
    for (uint32_t i = 0; i < qps; ++i) qps_.push_back(*Qp::Create(o, *b_, mem_, obs_));
    listener_ = *Listener::Create(*b_, qps, g);
    ASSERT_TRUE(listener_->Listen(kPort, link_.now).ok());
    for (auto& q : qps_) ASSERT_TRUE(listener_->AddQp(q.get()));
  }
  ~GateTest() override {
    listener_.reset();
    qps_.clear();
    b_.reset();
    a_.reset();
  }

  RawPeer* Open(uint32_t src, std::vector<uint8_t> bytes) {
    peers_.push_back(std::make_unique<RawPeer>(*a_, link_.now, std::move(bytes)));
    EXPECT_TRUE(a_->Connect(src, tcp::testing::kIpB, kPort, *peers_.back(), 0, link_.now).ok());
    return peers_.back().get();
  }
  void Run(uint64_t us, const std::function<bool()>& done = nullptr) {
    link_.idle_hook = [&] {
      listener_->Poll(link_.now);
      for (auto& q : qps_) q->Poll(link_.now);
      return done && done();
    };
    link_.RunUntil(link_.now + us);
    link_.idle_hook = nullptr;
  }
  const MpaGateCounters& counters() const { return listener_->gate().counters(); }
  size_t Bound() const {
    size_t n = 0;
    for (const auto& q : qps_) n += q->state() != QpState::kIdle ? 1 : 0;
    return n;
  }

  tcp::testing::Link link_{20, {}};
  tcp::IsnGenerator isn_{tcp::testing::TestIsn()};
  std::unique_ptr<MutatingPort> a_port_, b_port_;
  TestMemory mem_;
  RecordingObserver obs_;
  std::unique_ptr<tcp::TcpStack> a_, b_;
  std::vector<std::unique_ptr<Qp>> qps_;
  std::unique_ptr<Listener> listener_;
  std::vector<std::unique_ptr<RawPeer>> peers_;
};

// Decodes the Reject Reply a peer received.
mpa::StartupFrame ReplyOf(const RawPeer& p) {
  mpa::StartupFrame f;
  const mpa::FrameResult r =
      mpa::DecodeStartupFrame(ByteSpan(p.received), mpa::FrameType::kReply, &f);
  EXPECT_EQ(r.status, mpa::FrameStatus::kOk);
  EXPECT_EQ(r.size, p.received.size()) << "nothing after the Reply";
  return f;
}

std::string Text(ByteSpan b) { return std::string(b.begin(), b.end()); }

// Idle connections hold no QP: with one QP and several silent connections,
// a real initiator that arrives last is still served.
TEST_F(GateTest, IdleConnectionsTakeNoQp) {
  Build(MpaGateOptions{}, 1);
  for (int i = 0; i < 6; ++i) Open(kSrc1, {});
  Run(10'000);
  EXPECT_EQ(listener_->gate().pending(), 6u);
  EXPECT_EQ(Bound(), 0u);
  RawPeer* healthy = Open(kSrc2, Request(2, 16));
  Run(50'000, [&] { return !healthy->received.empty(); });
  const mpa::StartupFrame rep = ReplyOf(*healthy);
  EXPECT_FALSE(rep.reject);
  EXPECT_EQ(Bound(), 1u);
  EXPECT_EQ(counters().requests, 1u);
  EXPECT_EQ(counters().passive_opens, 7u);
}

// A source at max_pending_per_source gives up its own longest-waiting
// connection (RST) for each new one; a healthy initiator behind the same
// address, and any other source, still gets in.
TEST_F(GateTest, PerSourceLimit) {
  MpaGateOptions g;
  g.max_pending_per_source = 3;
  Build(g, 2);
  std::vector<RawPeer*> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(Open(kSrc1, {}));
    Run(1'000);
  }
  Run(20'000);
  EXPECT_EQ(idle[0]->closed, tcp::CloseReason::kResetByPeer);
  EXPECT_EQ(idle[1]->closed, tcp::CloseReason::kResetByPeer);
  for (int i = 2; i < 5; ++i) EXPECT_FALSE(idle[i]->closed.has_value()) << i;
  EXPECT_EQ(counters().refused_per_source, 2u);
  EXPECT_EQ(counters().evicted, 0u);
  EXPECT_EQ(listener_->gate().pending(), 3u);
  RawPeer* same_source = Open(kSrc1, Request(2, 0));
  RawPeer* other_source = Open(kSrc2, Request(2, 0));
  Run(50'000, [&] { return !same_source->received.empty() && !other_source->received.empty(); });
  EXPECT_FALSE(ReplyOf(*same_source).reject);
  EXPECT_FALSE(ReplyOf(*other_source).reject);
  EXPECT_EQ(counters().refused_per_source, 3u);  // the newcomer took idle[2]'s place
  EXPECT_EQ(Bound(), 2u);
}

// A full table resets the connection that waited longest for the newcomer.
TEST_F(GateTest, FullTableEvictsTheOldest) {
  MpaGateOptions g;
  g.max_pending = 4;
  g.max_pending_per_source = 4;
  Build(g, 1);
  std::vector<RawPeer*> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(Open(i < 2 ? kSrc1 : kSrc3, {}));
    Run(1'000);
  }
  RawPeer* healthy = Open(kSrc2, Request(2, 8));
  Run(50'000, [&] { return !healthy->received.empty(); });
  EXPECT_FALSE(ReplyOf(*healthy).reject);
  EXPECT_EQ(counters().evicted, 1u);
  EXPECT_EQ(idle[0]->closed, tcp::CloseReason::kResetByPeer);  // the oldest
  for (int i = 1; i < 4; ++i) EXPECT_FALSE(idle[i]->closed.has_value()) << i;
}

// No complete Request within request_timeout_us: RST, counted; a partial one
// times out the same way.
TEST_F(GateTest, RequestTimeout) {
  MpaGateOptions g;
  g.request_timeout_us = 200'000;
  Build(g, 1);
  RawPeer* quiet = Open(kSrc1, {});
  std::vector<uint8_t> half = Request(2, 40);
  half.resize(25);
  RawPeer* partial = Open(kSrc1, half);
  Run(150'000);
  EXPECT_FALSE(quiet->closed.has_value());
  EXPECT_FALSE(partial->closed.has_value());
  Run(200'000);
  EXPECT_EQ(quiet->closed, tcp::CloseReason::kResetByPeer);
  EXPECT_EQ(partial->closed, tcp::CloseReason::kResetByPeer);
  EXPECT_EQ(counters().request_timeouts, 2u);
  EXPECT_EQ(listener_->gate().pending(), 0u);
}

// RFC 5044 7.1.2 rule 2: a valid Request whose private data we do not take
// gets a Reply with R=1, the Request's revision, the IRD/ORD block when the
// Request had one, the reason as private data, then FIN. The limit counts
// the ULP's bytes only: 256 bytes after the 4-byte block are accepted.
TEST_F(GateTest, PrivateDataLimitCountsTheUlpBytes) {
  Build(MpaGateOptions{}, 2);
  RawPeer* at_limit = Open(kSrc1, Request(2, 256));
  RawPeer* over = Open(kSrc2, Request(2, 257));
  Run(100'000, [&] { return over->fin && !at_limit->received.empty(); });
  EXPECT_FALSE(ReplyOf(*at_limit).reject);
  const mpa::StartupFrame rep = ReplyOf(*over);
  EXPECT_TRUE(rep.reject);
  EXPECT_EQ(rep.revision, 2);
  EXPECT_TRUE(rep.crc);
  ASSERT_TRUE(rep.ird_ord.has_value());
  EXPECT_EQ(Text(rep.private_data), "iwarpd: private data over the limit");
  EXPECT_TRUE(over->fin);
  EXPECT_EQ(counters().refused_private_data, 1u);
  EXPECT_EQ(counters().rejects_sent, 1u);
  EXPECT_EQ(Bound(), 1u);
}

// With every QP bound, a further valid Request gets a Reject Reply naming the
// reason (Rev 1: no IRD/ORD block), not an RST.
TEST_F(GateTest, NoQpFreeIsARejectReply) {
  Build(MpaGateOptions{}, 1);
  RawPeer* first = Open(kSrc1, Request(2, 0));
  Run(50'000, [&] { return !first->received.empty(); });
  EXPECT_FALSE(ReplyOf(*first).reject);
  RawPeer* second = Open(kSrc2, Request(1, 5));
  Run(100'000, [&] { return second->fin; });
  const mpa::StartupFrame rep = ReplyOf(*second);
  EXPECT_TRUE(rep.reject);
  EXPECT_EQ(rep.revision, 1);
  EXPECT_FALSE(rep.ird_ord.has_value());
  EXPECT_EQ(Text(rep.private_data), "iwarpd: no QP free on this listener");
  EXPECT_EQ(counters().refused_no_qp, 1u);
  EXPECT_EQ(counters().rejects_sent, 1u);
  // A peer that does not close after our FIN is reset after the linger.
  Run(kRejectLingerUs + 100'000);
  EXPECT_EQ(second->closed, tcp::CloseReason::kResetByPeer);
  EXPECT_EQ(listener_->gate().pending(), 0u);
}

// Not an MPA Request (RFC 5044 7.1.2 rules 2, 5, 8): RST, no Reply, no QP.
TEST_F(GateTest, BadRequestsAreReset) {
  Build(MpaGateOptions{}, 1);
  std::vector<uint8_t> bad_key = Request(2, 0);
  bad_key[3] ^= 1;
  std::vector<uint8_t> reply_key = Request(2, 0);
  reply_key[11] = 'p';  // "MPA ID Rep Frame"
  reply_key[12] = 'R';
  std::vector<uint8_t> rev3 = Request(2, 0);
  rev3[17] = 3;
  std::vector<uint8_t> pd_513 = Request(2, 0);
  pd_513[18] = 0x02;
  pd_513[19] = 0x01;
  std::vector<RawPeer*> ps = {Open(kSrc1, bad_key), Open(kSrc1, reply_key), Open(kSrc1, rev3),
                              Open(kSrc2, pd_513)};
  Run(100'000);
  for (RawPeer* p : ps) {
    EXPECT_TRUE(p->received.empty());
    EXPECT_EQ(p->closed, tcp::CloseReason::kResetByPeer);
  }
  EXPECT_EQ(counters().bad_requests, 4u);
  EXPECT_EQ(Bound(), 0u);
}

// A peer that closes before sending its Request frees its slot at once.
TEST_F(GateTest, PeerCloseFreesTheSlot) {
  Build(MpaGateOptions{}, 1);
  RawPeer* p = Open(kSrc1, {});
  Run(10'000);
  EXPECT_EQ(listener_->gate().pending(), 1u);
  tcp::TcpConnInfo info;
  ASSERT_GT(a_->ListConnections(std::span<tcp::TcpConnInfo>(&info, 1)), 0u);
  a_->Shutdown(info.id, link_.now);
  Run(10'000);
  EXPECT_EQ(listener_->gate().pending(), 0u);
  EXPECT_TRUE(p->closed.has_value());
  EXPECT_EQ(counters().request_timeouts, 0u);
}

// The gate takes the owner's clock at Listen: a connection accepted before
// its first Poll, on a clock far from zero, is not taken for timed out.
TEST_F(GateTest, ClockAtListenNotZero) {
  link_.now = 100'000'000;
  Build(MpaGateOptions{}, 1);
  RawPeer* p = Open(kSrc1, Request(2, 0));
  Run(50'000, [&] { return !p->received.empty(); });
  EXPECT_FALSE(ReplyOf(*p).reject);
  EXPECT_EQ(counters().request_timeouts, 0u);
}

TEST(GateOptions, Validated) {
  tcp::testing::Link link{20, {}};
  MutatingPort port(link, 0);
  const uint32_t ip[] = {tcp::testing::kIpA};
  tcp::IsnGenerator isn(tcp::testing::TestIsn());
  auto stack = *tcp::TcpStack::Create(testing::PairTcpOptions(), ip, port, isn, 0);
  MpaGateOptions g;
  g.max_private_data = 509;
  EXPECT_FALSE(Listener::Create(*stack, 1, g).ok());
  g = MpaGateOptions{};
  g.max_pending = 0;
  EXPECT_FALSE(Listener::Create(*stack, 1, g).ok());
}

}  // namespace
}  // namespace iwarp::engine
