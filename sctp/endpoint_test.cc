// SctpEndpoint in one process. usrsctp has one stack per process, so one
// endpoint serves the whole binary; associations run from the endpoint to
// itself: packets drained for remote address R are fed back in as if they
// had come from R, so both ends share R's AF_CONN link. Every packet still
// goes through usrsctp, the CRC32c and the RFC 5043 session layer.
#include "sctp/endpoint.h"

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::sctp {
namespace {

constexpr uint32_t kLocalIp = 0xC6120001;  // 198.18.0.1
constexpr uint32_t kPeerA = 0xC6120002;    // 198.18.0.2
constexpr uint32_t kPeerB = 0xC6120003;    // 198.18.0.3
constexpr uint32_t kMaxPeers = 6;
// Short, so that the reclaim test runs in about a second; every other test
// keeps its peers busy (associations) or does not care whether they stay.
constexpr uint32_t kPeerIdleMs = 300;

SctpEndpoint* g_ep = nullptr;

class EndpointEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    EndpointConfig c;
    c.local_ip = kLocalIp;
    c.max_peers = kMaxPeers;
    c.max_associations = 8;
    c.peer_idle_ms = kPeerIdleMs;
    c.association.rto_initial_ms = 100;
    c.association.rto_min_ms = 20;
    c.association.rto_max_ms = 400;
    auto ep = SctpEndpoint::Create(c);
    ASSERT_TRUE(ep.ok()) << ep.status();
    ep_ = std::move(*ep);
    g_ep = ep_.get();
  }
  // Left alive until exit (as in ddp_session_test: usrsctp_finish waits for
  // the iterator thread for no gain in a test binary).
 private:
  std::unique_ptr<SctpEndpoint> ep_;
};

::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new EndpointEnvironment);

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Feeds every drained packet back in as coming from its destination, and
// counts packets per destination.
struct Reflector : DatagramSink {
  std::map<uint32_t, int> per_dst;
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> pending;
  void Transmit(uint32_t dst_ip, ByteSpan p) override {
    ++per_dst[dst_ip];
    pending.emplace_back(dst_ip, std::vector<uint8_t>(p.begin(), p.end()));
  }
  void Deliver() {
    auto batch = std::move(pending);
    pending.clear();
    for (auto& [ip, bytes] : batch) g_ep->Input(ip, ByteSpan(bytes));
  }
};

struct Events : DdpLlpEvents {
  SctpAssociation* assoc = nullptr;
  bool up = false, down = false, auto_accept = false;
  std::map<uint16_t, std::vector<uint8_t>> received;
  std::map<uint16_t, bool> accepted, rejected;
  void OnAssociationUp() override { up = true; }
  void OnAssociationDown() override { down = true; }
  void OnInitiate(uint16_t s, ByteSpan) override {
    if (auto_accept) {
      assoc->ddp().Accept(s, {});
    } else {
      assoc->ddp().Reject(s, {});
    }
  }
  void OnAccepted(uint16_t s, ByteSpan) override { accepted[s] = true; }
  void OnRejected(uint16_t s, ByteSpan) override { rejected[s] = true; }
  void OnSegment(uint16_t s, ByteSpan seg) override {
    auto& v = received[s];
    v.insert(v.end(), seg.begin(), seg.end());
  }
};

struct Acceptor : AcceptHandler {
  std::vector<std::unique_ptr<SctpAssociation>> accepted;
  std::vector<std::unique_ptr<Events>> events;
  bool auto_accept = true;
  void OnAssociationAccepted(std::unique_ptr<SctpAssociation> a) override {
    auto ev = std::make_unique<Events>();
    ev->assoc = a.get();
    ev->auto_accept = auto_accept;
    a->set_events(ev.get());
    events.push_back(std::move(ev));
    accepted.push_back(std::move(a));
  }
};

template <typename F>
bool RunUntil(Reflector& r, F done, uint64_t timeout_ms = 10000) {
  const uint64_t end = NowMs() + timeout_ms;
  while (NowMs() < end) {
    g_ep->Poll(NowMs());
    if (done()) return true;
    if (g_ep->Drain(r) == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    r.Deliver();
  }
  return done();
}

// Every test starts from a quiet endpoint, whatever ran before it (tests
// share the process's one endpoint; gtest_shuffle reorders them): no
// tracked association, no packet waiting to go out and no peer holding a
// link (idle links are given back after kPeerIdleMs).
class SctpEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(g_ep, nullptr);
    Reflector r;
    ASSERT_TRUE(RunUntil(r, [] {
      return g_ep->associations() == 0 && g_ep->outbound_pending() == 0 && g_ep->peers() == 0;
    }, 20 * kPeerIdleMs))
        << "endpoint not quiet: " << g_ep->associations() << " associations, "
        << g_ep->outbound_pending() << " packets queued, " << g_ep->peers() << " peers";
  }
};

TEST_F(SctpEndpointTest, SecondEndpointInOneProcessIsRefused) {
  auto second = SctpEndpoint::Create(EndpointConfig{});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SctpEndpointTest, PacketFromUnknownAddressWithNoListenerIsDroppedAndCounted) {
  const uint64_t before = g_ep->counter(EndpointCounter::kRxNoPeer);
  std::vector<uint8_t> pkt(32, 0);
  SctpFillCrc(MutableByteSpan(pkt));
  g_ep->Input(0xC61200F0, ByteSpan(pkt));
  EXPECT_EQ(g_ep->counter(EndpointCounter::kRxNoPeer), before + 1);
  EXPECT_EQ(g_ep->CookieOf(0xC61200F0), nullptr);
}

TEST_F(SctpEndpointTest, AssociationsToTwoAddressesCarryDataOnTheirOwnLinks) {
  Acceptor acceptor;
  auto listener = g_ep->Listen(7100, &acceptor);
  ASSERT_TRUE(listener.ok()) << listener.status();

  Events ca, cb;
  auto a = g_ep->Connect(kPeerA, 7100, &ca);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = g_ep->Connect(kPeerB, 7100, &cb);
  ASSERT_TRUE(b.ok()) << b.status();
  ca.assoc = a->get();
  cb.assoc = b->get();
  // Distinct cookies per remote address.
  ASSERT_NE(g_ep->CookieOf(kPeerA), nullptr);
  ASSERT_NE(g_ep->CookieOf(kPeerB), nullptr);
  EXPECT_NE(g_ep->CookieOf(kPeerA), g_ep->CookieOf(kPeerB));

  Reflector r;
  ASSERT_TRUE(RunUntil(r, [&] {
    return ca.up && cb.up && acceptor.accepted.size() == 2 && acceptor.events[0]->up &&
           acceptor.events[1]->up;
  }));
  EXPECT_EQ(g_ep->associations(), 4u);
  EXPECT_GE(g_ep->counter(EndpointCounter::kAccepts), 2u);
  // The accepted ends know the address their peer came from.
  std::map<uint32_t, Events*> server_of;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(acceptor.accepted[i]->passive());
    server_of[acceptor.accepted[i]->remote_ip()] = acceptor.events[i].get();
  }
  ASSERT_EQ(server_of.count(kPeerA), 1u);
  ASSERT_EQ(server_of.count(kPeerB), 1u);
  // Only the two remote addresses were ever sent to.
  for (const auto& [ip, n] : r.per_dst) {
    EXPECT_TRUE(ip == kPeerA || ip == kPeerB) << std::hex << ip;
  }

  // One DDP session per association, different payloads.
  ASSERT_EQ((*a)->ddp().Initiate(1, {}), SendResult::kOk);
  ASSERT_EQ((*b)->ddp().Initiate(1, {}), SendResult::kOk);
  ASSERT_TRUE(RunUntil(r, [&] { return ca.accepted[1] && cb.accepted[1]; }));
  std::vector<uint8_t> pa(4000), pb(3000);
  for (size_t i = 0; i < pa.size(); ++i) pa[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < pb.size(); ++i) pb[i] = static_cast<uint8_t>(i * 13 + 1);
  const size_t seg = (*a)->ddp().mulpdu();
  for (size_t off = 0; off < pa.size(); off += seg) {
    ASSERT_EQ((*a)->ddp().SendSegment(1, ByteSpan(pa).subspan(off, std::min(seg, pa.size() - off))),
              SendResult::kOk);
  }
  for (size_t off = 0; off < pb.size(); off += seg) {
    ASSERT_EQ((*b)->ddp().SendSegment(1, ByteSpan(pb).subspan(off, std::min(seg, pb.size() - off))),
              SendResult::kOk);
  }
  ASSERT_TRUE(RunUntil(r, [&] {
    return server_of[kPeerA]->received[1].size() == pa.size() &&
           server_of[kPeerB]->received[1].size() == pb.size();
  }));
  EXPECT_EQ(server_of[kPeerA]->received[1], pa);
  EXPECT_EQ(server_of[kPeerB]->received[1], pb);

  // Closing one side aborts it; the other side sees the association end.
  a->reset();
  ASSERT_TRUE(RunUntil(r, [&] { return server_of[kPeerA]->down; }));
  EXPECT_FALSE(server_of[kPeerB]->down);
  b->reset();
  ASSERT_TRUE(RunUntil(r, [&] { return server_of[kPeerB]->down; }));
  acceptor.accepted.clear();
  EXPECT_EQ(g_ep->associations(), 0u);
}

// The stop path: every live association is aborted at once (both ends here,
// the endpoint talks to itself), its sessions end, and the ABORTs are queued
// for Drain; handles stay valid and are let go afterwards.
TEST_F(SctpEndpointTest, AbortAllEndsEveryLiveAssociationWithAnAbort) {
  Acceptor acceptor;
  auto listener = g_ep->Listen(7104, &acceptor);
  ASSERT_TRUE(listener.ok()) << listener.status();
  Events c;
  auto a = g_ep->Connect(kPeerA, 7104, &c);
  ASSERT_TRUE(a.ok()) << a.status();
  c.assoc = a->get();
  Reflector r;
  ASSERT_TRUE(RunUntil(r, [&] { return c.up && acceptor.accepted.size() == 1 &&
                                       acceptor.events[0]->up; }));
  ASSERT_EQ((*a)->ddp().Initiate(0, {}), SendResult::kOk);
  ASSERT_TRUE(RunUntil(r, [&] { return c.accepted[0]; }));
  const uint64_t ended = g_ep->ends_total(StreamEnd::kAssociationDown);
  EXPECT_EQ(g_ep->AbortAll(), 2u);
  EXPECT_TRUE(c.down);
  EXPECT_TRUE(acceptor.events[0]->down);
  EXPECT_EQ((*a)->ddp().state(), DdpAssociation::State::kDown);
  EXPECT_GT(g_ep->outbound_pending(), 0u);  // the ABORTs
  EXPECT_EQ(g_ep->AbortAll(), 0u);          // nothing left alive
  a->reset();
  acceptor.accepted.clear();
  EXPECT_EQ(g_ep->ends_total(StreamEnd::kAssociationDown), ended + 2);
  EXPECT_EQ(g_ep->associations(), 0u);
}

TEST_F(SctpEndpointTest, AcceptedAssociationWithoutEventsRejectsSessions) {
  struct Dropper : AcceptHandler {
    std::unique_ptr<SctpAssociation> kept;
    void OnAssociationAccepted(std::unique_ptr<SctpAssociation> a) override { kept = std::move(a); }
  } keeper;
  auto listener = g_ep->Listen(7101, &keeper);
  ASSERT_TRUE(listener.ok()) << listener.status();
  Events c;
  auto a = g_ep->Connect(kPeerA, 7101, &c);
  ASSERT_TRUE(a.ok()) << a.status();
  c.assoc = a->get();
  Reflector r;
  ASSERT_TRUE(RunUntil(r, [&] { return c.up && keeper.kept != nullptr; }));
  ASSERT_EQ((*a)->ddp().Initiate(0, {}), SendResult::kOk);
  ASSERT_TRUE(RunUntil(r, [&] { return c.rejected[0]; }));
  EXPECT_FALSE(c.accepted[0]);
  a->reset();
  keeper.kept.reset();
  RunUntil(r, [] { return false; }, 50);
}

// Send batches (EndpointConfig::bundle_sends, on by default): segments sent
// between two Drain() calls share packets, keep their DDP-SSN order and
// bytes, and none is lost when usrsctp's send buffer fills or the
// association shuts down right after a send.
struct Session {
  Acceptor acceptor;
  Events client;
  std::unique_ptr<SctpListener> listener;
  std::unique_ptr<SctpAssociation> assoc;
  Events* server = nullptr;
};

void OpenSession(Session& s, uint16_t port, uint16_t stream, Reflector& r) {
  auto l = g_ep->Listen(port, &s.acceptor);
  ASSERT_TRUE(l.ok()) << l.status();
  s.listener = std::move(*l);
  auto a = g_ep->Connect(kPeerA, port, &s.client);
  ASSERT_TRUE(a.ok()) << a.status();
  s.assoc = std::move(*a);
  s.client.assoc = s.assoc.get();
  ASSERT_TRUE(RunUntil(r, [&] { return s.client.up && s.acceptor.accepted.size() == 1; }));
  s.server = s.acceptor.events[0].get();
  ASSERT_EQ(s.assoc->ddp().Initiate(stream, {}), SendResult::kOk);
  ASSERT_TRUE(RunUntil(r, [&] { return s.client.accepted[stream]; }));
  // Everything acknowledged, nothing in flight.
  RunUntil(r, [] { return false; }, 50);
}

TEST_F(SctpEndpointTest, SmallSegmentsOfOneBatchShareAPacket) {
  ASSERT_TRUE(g_ep->config().bundle_sends);
  Reflector r;
  Session s;
  OpenSession(s, 7104, 3, r);
  if (HasFatalFailure()) return;
  // 16 segments of 64 bytes (the 64-byte Send of tools/bench.sh sctp): one
  // packet each unbundled; about 100 bytes per DATA chunk bundled, so at
  // most two full packets, and one more if usrsctp sent the first chunk
  // alone (nothing in flight: Nagle does not hold it).
  std::vector<uint8_t> all;
  for (int i = 0; i < 16; ++i) {
    std::vector<uint8_t> seg(64);
    for (size_t j = 0; j < seg.size(); ++j) seg[j] = static_cast<uint8_t>(i * 16 + j);
    ASSERT_EQ(s.assoc->ddp().SendSegment(3, ByteSpan(seg)), SendResult::kOk);
    all.insert(all.end(), seg.begin(), seg.end());
  }
  const uint64_t flushes = s.assoc->ddp().counter(DdpCounter::kTxFlushes);
  EXPECT_TRUE(s.assoc->ddp().flush_pending());
  const size_t packets = g_ep->Drain(r);
  EXPECT_GE(packets, 2u);
  EXPECT_LE(packets, 3u);
  EXPECT_FALSE(s.assoc->ddp().flush_pending());
  EXPECT_EQ(s.assoc->ddp().counter(DdpCounter::kTxFlushes), flushes + 1);
  r.Deliver();
  ASSERT_TRUE(RunUntil(r, [&] { return s.server->received[3].size() == all.size(); }));
  EXPECT_EQ(s.server->received[3], all);  // DDP-SSN order, every byte
  s.assoc.reset();
  RunUntil(r, [&] { return s.server->down; });
}

TEST_F(SctpEndpointTest, BatchBeyondTheSendBufferLosesNothing) {
  Reflector r;
  Session s;
  OpenSession(s, 7105, 0, r);
  if (HasFatalFailure()) return;
  // Full-size segments without draining until usrsctp refuses one (256 KiB
  // send buffer): the refused one is not counted as sent; every accepted
  // one, including the last, which waited for the flush, arrives.
  const size_t seg_size = s.assoc->ddp().mulpdu();
  std::vector<uint8_t> all;
  uint32_t sent = 0;
  for (;; ++sent) {
    std::vector<uint8_t> seg(seg_size, static_cast<uint8_t>(sent * 7 + 1));
    seg[0] = static_cast<uint8_t>(sent >> 8);
    seg[1] = static_cast<uint8_t>(sent);
    const SendResult res = s.assoc->ddp().SendSegment(0, ByteSpan(seg));
    if (res == SendResult::kWouldBlock) break;
    ASSERT_EQ(res, SendResult::kOk);
    all.insert(all.end(), seg.begin(), seg.end());
    ASSERT_LT(sent, 100000u) << "the send buffer never filled";
  }
  EXPECT_GT(sent, 10u);
  EXPECT_TRUE(s.assoc->ddp().flush_pending());
  ASSERT_TRUE(RunUntil(r, [&] { return s.server->received[0].size() == all.size(); }));
  EXPECT_EQ(s.server->received[0], all);
  EXPECT_FALSE(s.assoc->ddp().flush_pending());
  EXPECT_EQ(s.assoc->ddp().counter(DdpCounter::kTxDropAtFlush), 0u);
  s.assoc.reset();
  RunUntil(r, [&] { return s.server->down; });
}

// A full send buffer answers kWouldBlock without calling into usrsctp
// until Service() has run after the input that may hold a SACK; then the
// sends go through again.
TEST_F(SctpEndpointTest, FullSendBufferStaysRefusedUntilTheNextService) {
  Reflector r;
  Session s;
  OpenSession(s, 7107, 2, r);
  if (HasFatalFailure()) return;
  const std::vector<uint8_t> seg(s.assoc->ddp().mulpdu(), 0x42);
  uint64_t sent = 0;
  while (s.assoc->ddp().SendSegment(2, ByteSpan(seg)) == SendResult::kOk) ++sent;
  // Packets both ways (data, then the SACKs for it) but no Poll: usrsctp
  // has freed room, the association has not been told.
  for (int i = 0; i < 20; ++i) {
    g_ep->Drain(r);
    r.Deliver();
  }
  const uint64_t blocked = s.assoc->ddp().counter(DdpCounter::kTxWouldBlock);
  EXPECT_EQ(s.assoc->ddp().SendSegment(2, ByteSpan(seg)), SendResult::kWouldBlock);
  EXPECT_EQ(s.assoc->ddp().counter(DdpCounter::kTxWouldBlock), blocked + 1);
  g_ep->Poll(NowMs());  // services the association after that input
  EXPECT_EQ(s.assoc->ddp().SendSegment(2, ByteSpan(seg)), SendResult::kOk);
  ++sent;
  ASSERT_TRUE(RunUntil(r, [&] { return s.server->received[2].size() == sent * seg.size(); }));
  s.assoc.reset();
  RunUntil(r, [&] { return s.server->down; });
}

TEST_F(SctpEndpointTest, ShutdownRightAfterASendDeliversItFirst) {
  Reflector r;
  Session s;
  OpenSession(s, 7106, 1, r);
  if (HasFatalFailure()) return;
  const std::vector<uint8_t> seg(200, 0x3c);
  ASSERT_EQ(s.assoc->ddp().SendSegment(1, ByteSpan(seg)), SendResult::kOk);
  ASSERT_TRUE(s.assoc->ddp().flush_pending());
  s.assoc->ddp().Shutdown();  // before any Drain
  ASSERT_TRUE(RunUntil(r, [&] { return s.server->down && s.client.down; }));
  EXPECT_EQ(s.server->received[1], seg);
}

TEST_F(SctpEndpointTest, BadChecksumIsCountedByTheHost) {
  // An address with a link (made here by a connect whose INIT is never
  // answered).
  Events c;
  auto a = g_ep->Connect(kPeerA, 7199, &c);
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<uint8_t> pkt(48, 0x5a);
  SctpFillCrc(MutableByteSpan(pkt));
  pkt[20] ^= 1;
  const uint64_t before = g_ep->host_counter(HostCounter::kRxBadCrc);
  g_ep->Input(kPeerA, ByteSpan(pkt));
  EXPECT_EQ(g_ep->host_counter(HostCounter::kRxBadCrc), before + 1);
}

TEST_F(SctpEndpointTest, PeerTableBoundsNewAddresses) {
  Acceptor acceptor;
  auto listener = g_ep->Listen(7102, &acceptor);
  ASSERT_TRUE(listener.ok()) << listener.status();
  std::vector<uint8_t> pkt(32, 0);  // valid CRC; usrsctp ignores the chunks
  SctpFillCrc(MutableByteSpan(pkt));
  std::vector<uint8_t> bad(pkt);
  bad[4] ^= 0xff;
  const uint64_t bad_before = g_ep->counter(EndpointCounter::kRxNewPeerBadCrc);
  g_ep->Input(0xC61200FE, ByteSpan(bad));
  EXPECT_EQ(g_ep->counter(EndpointCounter::kRxNewPeerBadCrc), bad_before + 1);
  EXPECT_EQ(g_ep->CookieOf(0xC61200FE), nullptr);
  uint32_t ip = 0xC6120100;
  while (g_ep->peers() < kMaxPeers) g_ep->Input(ip++, ByteSpan(pkt));
  const uint64_t full = g_ep->counter(EndpointCounter::kRxPeerTableFull);
  g_ep->Input(ip++, ByteSpan(pkt));
  EXPECT_EQ(g_ep->counter(EndpointCounter::kRxPeerTableFull), full + 1);
  EXPECT_EQ(g_ep->peers(), kMaxPeers);
  auto c = g_ep->Connect(ip++, 7102, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
}

// A full peer table empties once its peers are idle without associations,
// a peer with a live association keeps its link however long it is quiet,
// and a reclaimed address can connect again.
TEST_F(SctpEndpointTest, IdlePeersGiveTheirLinksBackAndBusyOnesKeepThem) {
  Reflector r;
  constexpr uint32_t kPeerC = 0xC6120004;  // 198.18.0.4
  Acceptor acceptor;
  auto listener = g_ep->Listen(7103, &acceptor);
  ASSERT_TRUE(listener.ok()) << listener.status();
  // Fill the table with addresses that sent one SCTP packet each.
  std::vector<uint8_t> pkt(32, 0);
  SctpFillCrc(MutableByteSpan(pkt));
  for (uint32_t ip = 0xC6120200; g_ep->peers() < kMaxPeers; ++ip) g_ep->Input(ip, ByteSpan(pkt));
  const uint64_t full = g_ep->counter(EndpointCounter::kRxPeerTableFull);
  g_ep->Input(0xC61202FF, ByteSpan(pkt));
  EXPECT_EQ(g_ep->counter(EndpointCounter::kRxPeerTableFull), full + 1);
  const uint64_t reclaimed = g_ep->counter(EndpointCounter::kPeersReclaimed);
  ASSERT_TRUE(RunUntil(r, [&] { return g_ep->peers() == 0; }, 10 * kPeerIdleMs));
  EXPECT_GE(g_ep->counter(EndpointCounter::kPeersReclaimed), reclaimed + kMaxPeers);

  Events cc;
  auto c = g_ep->Connect(kPeerC, 7103, &cc);
  ASSERT_TRUE(c.ok()) << c.status();
  cc.assoc = c->get();
  ASSERT_TRUE(RunUntil(r, [&] { return cc.up && acceptor.accepted.size() == 1; }));
  void* const cookie = g_ep->CookieOf(kPeerC);
  ASSERT_NE(cookie, nullptr);

  // Quiet for several idle periods (SCTP heartbeats are 30 s apart), but
  // the association holds the link.
  RunUntil(r, [] { return false; }, 4 * kPeerIdleMs);
  EXPECT_EQ(g_ep->CookieOf(kPeerC), cookie);
  EXPECT_EQ((*c)->ddp().state(), DdpAssociation::State::kUp);

  // Without associations the link goes after the idle period.
  const uint64_t before = g_ep->counter(EndpointCounter::kPeersReclaimed);
  c->reset();
  acceptor.accepted.clear();
  ASSERT_TRUE(RunUntil(r, [&] { return g_ep->CookieOf(kPeerC) == nullptr; }, 10 * kPeerIdleMs));
  EXPECT_EQ(g_ep->counter(EndpointCounter::kPeersReclaimed), before + 1);
  EXPECT_EQ(g_ep->associations(), 0u);

  // The address connects again on a fresh link.
  Events again;
  auto c2 = g_ep->Connect(kPeerC, 7103, &again);
  ASSERT_TRUE(c2.ok()) << c2.status();
  again.assoc = c2->get();
  ASSERT_TRUE(RunUntil(r, [&] { return again.up && acceptor.accepted.size() == 1; }));
  ASSERT_EQ((*c2)->ddp().Initiate(2, {}), SendResult::kOk);
  ASSERT_TRUE(RunUntil(r, [&] { return again.accepted[2]; }));
  c2->reset();
  acceptor.accepted.clear();
}

}  // namespace
}  // namespace iwarp::sctp
