// The DDP/RDMAP engine over SCTP (RFC 5043): two engines on two ends of one
// usrsctp stack (two AF_CONN addresses) joined by the in-memory link of
// sctp/sctp_test_link.h. Every segment really goes through usrsctp and the
// RFC 5043 session layer; only the wire is simulated.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"
#include "iwarp/sctp_llp.h"
#include "sctp/ddp_session.h"
#include "sctp/sctp_test_link.h"
#include "sctp/usrsctp_host.h"

namespace iwarp::engine {
namespace {

using ::iwarp::engine::testing::RecordingObserver;
using ::iwarp::engine::testing::TestMemory;
using ::iwarp::sctp::testing::RunLinkUntil;
using ::iwarp::sctp::testing::Impairment;
using ::iwarp::sctp::testing::MemLink;

char g_addr_a;
char g_addr_b;
sctp::UsrsctpHost* g_host = nullptr;

// usrsctp allows one stack per process: one host for the whole binary.
class HostEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    sctp::HostConfig hc;
    auto h = sctp::UsrsctpHost::Create(hc);
    ASSERT_TRUE(h.ok()) << h.status();
    host_ = std::move(*h);
    g_host = host_.get();
    g_host->RegisterConn(&g_addr_a);
    g_host->RegisterConn(&g_addr_b);
  }

 private:
  std::unique_ptr<sctp::UsrsctpHost> host_;  // left alive until exit (see sctp tests)
};

::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new HostEnvironment);

sctp::AssociationConfig TestConfig() {
  sctp::AssociationConfig c;
  c.rto_initial_ms = 100;
  c.rto_min_ms = 20;
  c.rto_max_ms = 400;
  return c;
}

uint16_t NextPort() {
  static uint16_t port = 7000;
  return port++;
}

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

std::vector<uint8_t> Str(std::string_view s) { return {s.begin(), s.end()}; }

std::string Sha(ByteSpan b) { return ToHex(Sha256::Hash(b)); }

// One engine on one stream.
struct End {
  TestMemory mem;
  RecordingObserver obs;
  std::unique_ptr<Qp> qp;
  std::vector<Completion> cqes;
  void Drain() {
    Completion c[64];
    for (size_t n; (n = qp->PollCompletions(std::span<Completion>(c))) > 0;) {
      cqes.insert(cqes.end(), c, c + n);
    }
  }
};

class QpSctpTest : public ::testing::Test {
 protected:
  QpSctpTest() : link_(*g_host) { link_.Join(&g_addr_a, &g_addr_b); }

  ~QpSctpTest() override {
    for (auto& e : ends_) e->qp.reset();
    client_.reset();
    server_.reset();
    listener_.reset();
    RunFor(5);  // let the ABORTs go out before the next test
  }

  void OpenAssociation(const sctp::AssociationConfig& cfg = TestConfig()) {
    const uint16_t sport = NextPort();
    const uint16_t cport = NextPort();
    auto l = sctp::DdpListener::Listen(*g_host, &g_addr_b, sport, cfg);
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::move(*l);
    auto c = sctp::DdpAssociation::Connect(*g_host, &g_addr_a, cport, sport, cfg, &cs_);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
    cs_.set_association(client_.get());
    ASSERT_TRUE(RunUntil([&] {
      return server_ != nullptr && client_->state() == sctp::DdpAssociation::State::kUp &&
             server_->state() == sctp::DdpAssociation::State::kUp;
    }));
  }

  // A client/server engine pair on `stream`, connected (if `connect`).
  std::pair<End*, End*> OpenPair(uint16_t stream, const QpOptions& oc = {},
                                 const QpOptions& os = {}, std::string_view pd = "hello",
                                 bool connect = true) {
    ends_.push_back(std::make_unique<End>());
    End* c = ends_.back().get();
    ends_.push_back(std::make_unique<End>());
    End* s = ends_.back().get();
    auto qc = cs_.CreateQp(stream, oc, c->mem, c->obs);
    auto qs = ss_.CreateQp(stream, os, s->mem, s->obs);
    EXPECT_TRUE(qc.ok()) << qc.status();
    EXPECT_TRUE(qs.ok()) << qs.status();
    if (!qc.ok() || !qs.ok()) return {nullptr, nullptr};
    c->qp = std::move(*qc);
    s->qp = std::move(*qs);
    if (connect) {
      const auto v = Str(pd);
      EXPECT_TRUE(c->qp->ConnectLlp(ByteSpan(v), link_.now_ms() * 1000).ok());
      EXPECT_TRUE(RunUntil([&] { return c->obs.established && s->obs.established; }))
          << "stream " << stream;
    }
    return {c, s};
  }

  void Service() {
    if (server_ == nullptr && listener_ != nullptr) {
      server_ = listener_->Accept(&ss_);
      if (server_ != nullptr) ss_.set_association(server_.get());
    }
    if (client_ != nullptr) client_->Service();
    if (server_ != nullptr) server_->Service();
    for (auto& e : ends_) {
      if (e->qp == nullptr) continue;
      e->qp->Poll(link_.now_ms() * 1000);
      e->Drain();
    }
  }

  template <typename F>
  bool RunUntil(F done, uint64_t timeout_ms = 20000) {
    return RunLinkUntil(link_, [this] { Service(); }, done, timeout_ms);
  }
  void RunFor(uint64_t ms) {
    RunUntil([] { return false; }, ms);
  }

  // Send, RDMA Write and RDMA Read of `size` bytes between c (initiator) and
  // s; compares SHA-256 of every sink with its source.
  void Transfers(End& c, End& s, size_t size, uint32_t seed) {
    const std::vector<uint8_t> src = Pattern(size, seed);
    const std::vector<uint8_t> src2 = Pattern(size, seed + 7);
    const size_t rsize = size == 0 ? 1 : size;
    const uint32_t c_src = c.mem.Register(rsize, 0);
    const uint32_t c_sink = c.mem.Register(rsize, ddp::kAccessAll);
    const uint32_t s_recv = s.mem.Register(rsize, ddp::kAccessLocalWrite);
    const uint32_t s_wsink = s.mem.Register(rsize, ddp::kAccessRemoteWrite, 0x7000'0000);
    const uint32_t s_rsrc = s.mem.Register(rsize, ddp::kAccessRemoteRead, 0x9000'0000);
    std::copy(src.begin(), src.end(), c.mem.Bytes(c_src).begin());
    std::copy(src2.begin(), src2.end(), s.mem.Bytes(s_rsrc).begin());
    const uint32_t len = static_cast<uint32_t>(size);
    const size_t c0 = c.cqes.size(), s0 = s.cqes.size();
    ASSERT_EQ(s.qp->PostRecv(RecvWr{100, LocalSge{s_recv, 0x10000, len}}), PostStatus::kOk);
    ASSERT_EQ(c.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{c_src, 0x10000, len}}),
              PostStatus::kOk);
    ASSERT_EQ(c.qp->PostSend(SendWr{2, WrOpcode::kRdmaWrite, LocalSge{c_src, 0x10000, len}, s_wsink,
                                    0x7000'0000}),
              PostStatus::kOk);
    ASSERT_EQ(c.qp->PostSend(SendWr{3, WrOpcode::kRdmaRead, LocalSge{c_sink, 0x10000, len}, s_rsrc,
                                    0x9000'0000}),
              PostStatus::kOk);
    ASSERT_TRUE(RunUntil([&] { return c.cqes.size() >= c0 + 3 && s.cqes.size() >= s0 + 1; }, 40000))
        << "completions " << c.cqes.size() - c0 << " / " << s.cqes.size() - s0;
    ASSERT_EQ(c.cqes.size(), c0 + 3);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(c.cqes[c0 + i].wr_id, i + 1);
      EXPECT_EQ(c.cqes[c0 + i].status, WcStatus::kSuccess) << WcStatusName(c.cqes[c0 + i].status);
    }
    EXPECT_EQ(c.cqes[c0 + 2].opcode, WcOpcode::kRdmaRead);
    ASSERT_EQ(s.cqes.size(), s0 + 1);
    EXPECT_EQ(s.cqes[s0].wr_id, 100u);
    EXPECT_EQ(s.cqes[s0].status, WcStatus::kSuccess);
    EXPECT_EQ(s.cqes[s0].byte_len, len);
    EXPECT_EQ(Sha(s.mem.Bytes(s_recv).first(size)), Sha(ByteSpan(src)));
    EXPECT_EQ(Sha(s.mem.Bytes(s_wsink).first(size)), Sha(ByteSpan(src)));
    EXPECT_EQ(Sha(c.mem.Bytes(c_sink).first(size)), Sha(ByteSpan(src2)));
    EXPECT_TRUE(c.mem.GuardsIntact());
    EXPECT_TRUE(s.mem.GuardsIntact());
    EXPECT_EQ(c.qp->stats().terminates_sent + s.qp->stats().terminates_sent, 0u);
  }

  MemLink link_;
  SctpStreams cs_{8}, ss_{8};
  std::unique_ptr<sctp::DdpListener> listener_;
  std::unique_ptr<sctp::DdpAssociation> client_, server_;
  std::vector<std::unique_ptr<End>> ends_;
};

TEST_F(QpSctpTest, SetupCarriesPrivateDataAndIrdOrd) {
  OpenAssociation();
  QpOptions oc, os;
  oc.mpa.ird = 4;
  oc.mpa.ord = 8;
  os.mpa.ird = 2;
  os.mpa.ord = 16;
  ends_.push_back(std::make_unique<End>());
  End* c = ends_.back().get();
  ends_.push_back(std::make_unique<End>());
  End* s = ends_.back().get();
  s->obs.reply_pd = Str("welcome");
  c->qp = *cs_.CreateQp(3, oc, c->mem, c->obs);
  s->qp = *ss_.CreateQp(3, os, s->mem, s->obs);
  const auto pd = Str("hello sctp");
  ASSERT_TRUE(c->qp->ConnectLlp(ByteSpan(pd), 0).ok());
  EXPECT_EQ(c->qp->state(), QpState::kAwaitReply);
  ASSERT_TRUE(RunUntil([&] { return c->obs.established && s->obs.established; }));
  EXPECT_EQ(s->obs.requests, 1);
  EXPECT_EQ(s->obs.request_revision, 0);  // no MPA
  EXPECT_EQ(s->obs.request_pd, pd);       // the IRD/ORD block is not the application's
  EXPECT_EQ(s->obs.peer_pd, pd);
  EXPECT_EQ(c->obs.peer_pd, Str("welcome"));
  EXPECT_EQ(c->qp->state(), QpState::kRts);
  EXPECT_EQ(s->qp->state(), QpState::kRts);
  // RFC 6581: ORD clamped to the peer's IRD.
  EXPECT_EQ(c->qp->negotiated().ord, 2);
  EXPECT_EQ(c->qp->negotiated().ird, 4);
  EXPECT_EQ(s->qp->negotiated().ord, 4);
  EXPECT_EQ(s->qp->negotiated().ird, 2);
  EXPECT_FALSE(c->qp->negotiated().crc);
  EXPECT_FALSE(c->qp->negotiated().tx_markers);
  // The session layer saw one Initiate and one Accept on stream 3.
  EXPECT_TRUE(client_->StreamOpen(3));
  EXPECT_TRUE(server_->StreamOpen(3));
  // TCP entry points are refused on an SCTP QP.
  EXPECT_FALSE(c->qp->Connect(1, 2, 3, {}, 0).ok());
  EXPECT_FALSE(c->qp->AttachPassive(tcp::ConnId{}));
}

TEST_F(QpSctpTest, RejectCarriesPrivateData) {
  OpenAssociation();
  const auto pair_1 = OpenPair(1, {}, {}, "", /*connect=*/false);
  End* c = pair_1.first;
  End* s = pair_1.second;
  ASSERT_NE(c, nullptr);
  s->obs.accept = false;
  s->obs.reply_pd = Str("go away");
  const auto pd = Str("may I");
  ASSERT_TRUE(c->qp->ConnectLlp(ByteSpan(pd), 0).ok());
  ASSERT_TRUE(RunUntil([&] { return c->obs.failed != ConnectError::kNone; }));
  EXPECT_EQ(c->obs.failed, ConnectError::kRejected);
  EXPECT_EQ(c->obs.peer_pd, Str("go away"));
  EXPECT_EQ(s->obs.failed, ConnectError::kRejectedLocally);
  EXPECT_EQ(s->obs.request_pd, pd);
  EXPECT_EQ(c->qp->state(), QpState::kError);
  EXPECT_EQ(s->qp->state(), QpState::kError);
  EXPECT_FALSE(c->obs.established);
  EXPECT_FALSE(s->obs.established);
  EXPECT_TRUE(client_->StreamIdle(1));  // RFC 5043 6.3: the stream is idle again
}

TEST_F(QpSctpTest, InitiateOnAStreamWithoutQpIsRejected) {
  OpenAssociation();
  End c;
  c.qp = *cs_.CreateQp(2, {}, c.mem, c.obs);
  ASSERT_TRUE(c.qp->ConnectLlp({}, 0).ok());
  ASSERT_TRUE(RunUntil([&] {
    Service();
    return c.obs.failed != ConnectError::kNone;
  }));
  EXPECT_EQ(c.obs.failed, ConnectError::kRejected);
  EXPECT_EQ(ss_.initiates_refused(), 1u);
  c.qp.reset();
}

// SG lists over SCTP: a Send gathered from 4 SGEs (one empty) into a receive
// of 3 SGEs, and a Write gathered into one sink; the segments stay full
// (as many DDP segments as one SGE of the summed length would take).
TEST_F(QpSctpTest, MultiSgeSendAndWriteKeepFullSegments) {
  OpenAssociation();
  const auto pair = OpenPair(0);
  End* c = pair.first;
  End* s = pair.second;
  ASSERT_NE(c, nullptr);
  constexpr uint32_t kTotal = 10000 + 30001 + 777;
  const std::vector<uint8_t> data = Pattern(kTotal, 31);
  const uint32_t src1 = c->mem.Register(65536, 0);
  const uint32_t src2 = c->mem.Register(65536, 0, 0x20000);
  std::memcpy(c->mem.Bytes(src1).data() + 5, data.data(), 10000);
  std::memcpy(c->mem.Bytes(src2).data() + 100, data.data() + 10000, 30001);
  std::memcpy(c->mem.Bytes(src1).data() + 20000, data.data() + 40001, 777);
  SgeList sgl;
  sgl.Add(LocalSge{src1, 0x10000 + 5, 10000});
  sgl.Add(LocalSge{src2, 0x20000, 0});
  sgl.Add(LocalSge{src2, 0x20000 + 100, 30001});
  sgl.Add(LocalSge{src1, 0x10000 + 20000, 777});
  const uint32_t recv = s->mem.Register(65536, ddp::kAccessLocalWrite);
  const uint32_t wsink = s->mem.Register(65536, ddp::kAccessRemoteWrite, 0x7000'0000);
  SgeList rl;
  rl.Add(LocalSge{recv, 0x10000 + 40000, 5000});
  rl.Add(LocalSge{recv, 0x10000, 20000});
  rl.Add(LocalSge{recv, 0x10000 + 20000, 20000});
  const uint64_t out0 = c->qp->stats().fpdus_out;
  ASSERT_EQ(s->qp->PostRecv(RecvWr{100, rl}), PostStatus::kOk);
  ASSERT_EQ(c->qp->PostSend(SendWr{1, WrOpcode::kSend, sgl}), PostStatus::kOk);
  ASSERT_EQ(c->qp->PostSend(SendWr{2, WrOpcode::kRdmaWrite, sgl, wsink, 0x7000'0000}),
            PostStatus::kOk);
  // Over SCTP a Write completes when taken: wait for its placement too.
  ASSERT_TRUE(RunUntil([&] {
    return c->cqes.size() >= 2 && s->cqes.size() >= 1 && s->qp->stats().messages_in >= 2;
  }, 40000));
  ASSERT_EQ(c->cqes.size(), 2u);
  EXPECT_EQ(c->cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c->cqes[1].status, WcStatus::kSuccess);
  EXPECT_EQ(c->cqes[1].byte_len, kTotal);
  ASSERT_EQ(s->cqes.size(), 1u);
  EXPECT_EQ(s->cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(s->cqes[0].byte_len, kTotal);
  const uint8_t* r = s->mem.Bytes(recv).data();
  EXPECT_EQ(std::memcmp(r + 40000, data.data(), 5000), 0);
  EXPECT_EQ(std::memcmp(r, data.data() + 5000, 20000), 0);
  EXPECT_EQ(std::memcmp(r + 20000, data.data() + 25000, kTotal - 25000), 0);
  EXPECT_EQ(r[20000 + kTotal - 25000], 0);  // past the message, inside the last SGE
  EXPECT_EQ(std::memcmp(s->mem.Bytes(wsink).data(), data.data(), kTotal), 0);
  const uint32_t mulpdu = client_->mulpdu();
  const auto segments = [&](size_t header) {
    const size_t per = mulpdu - header;
    return (kTotal + per - 1) / per;
  };
  EXPECT_EQ(c->qp->stats().fpdus_out - out0,
            segments(ddp::kUntaggedHeaderSize) + segments(ddp::kTaggedHeaderSize));
  EXPECT_TRUE(c->mem.GuardsIntact());
  EXPECT_TRUE(s->mem.GuardsIntact());
}

class QpSctpSizes : public QpSctpTest, public ::testing::WithParamInterface<size_t> {};

TEST_P(QpSctpSizes, SendWriteReadSha256) {
  OpenAssociation();
  const auto pair_2 = OpenPair(0);
  End* c = pair_2.first;
  End* s = pair_2.second;
  ASSERT_NE(c, nullptr);
  Transfers(*c, *s, GetParam(), static_cast<uint32_t>(GetParam() + 3));
  // RFC 5043 9: no segment beyond the association's MULPDU; one DDP segment
  // per SCTP DATA chunk (the session counts them).
  const uint32_t mulpdu = client_->mulpdu();
  const size_t payload_per = mulpdu - ddp::kTaggedHeaderSize;
  EXPECT_GE(c->qp->stats().fpdus_out, GetParam() / payload_per);
  EXPECT_EQ(client_->counter(sctp::DdpCounter::kTxSegments), c->qp->stats().fpdus_out);
  EXPECT_EQ(server_->counter(sctp::DdpCounter::kRxSegments), s->qp->stats().fpdus_in);
  // 1 MiB does not fit the 256 KiB SCTP send buffer: the engine met
  // would-block and resumed from Poll.
  if (GetParam() >= (size_t{1} << 20)) {
    EXPECT_GT(c->qp->stats().tx_blocked, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, QpSctpSizes,
                         ::testing::Values(size_t{0}, size_t{1}, size_t{4096}, size_t{65536},
                                           size_t{1} << 20),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           return "B" + std::to_string(i.param);
                         });

TEST_F(QpSctpTest, SeveralStreamsOnOneAssociation) {
  OpenAssociation();
  std::vector<std::pair<End*, End*>> pairs;
  for (uint16_t st : {0, 1, 5}) {
    pairs.push_back(OpenPair(st));
    ASSERT_NE(pairs.back().first, nullptr);
  }
  // All three streams carry traffic at the same time.
  const size_t kSize = 200'000;
  std::vector<std::vector<uint8_t>> src;
  std::vector<uint32_t> sinks;
  for (size_t i = 0; i < pairs.size(); ++i) {
    End* c = pairs[i].first;
    End* s = pairs[i].second;
    src.push_back(Pattern(kSize, static_cast<uint32_t>(40 + i)));
    const uint32_t a = c->mem.Register(kSize, 0);
    std::copy(src[i].begin(), src[i].end(), c->mem.Bytes(a).begin());
    const uint32_t sink = s->mem.Register(kSize, ddp::kAccessRemoteWrite | ddp::kAccessLocalWrite);
    sinks.push_back(sink);
    ASSERT_EQ(c->qp->PostSend(SendWr{7, WrOpcode::kRdmaWrite,
                                     LocalSge{a, 0x10000, static_cast<uint32_t>(kSize)}, sink,
                                     0x10000}),
              PostStatus::kOk);
  }
  ASSERT_TRUE(RunUntil([&] {
    for (auto& p : pairs) {
      if (p.first->cqes.empty()) return false;
    }
    return true;
  }));
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(pairs[i].first->cqes[0].status, WcStatus::kSuccess);
  }
  // The last segment may still be in flight when SCTP took it: wait for placement.
  ASSERT_TRUE(RunUntil([&] {
    for (auto& p : pairs) {
      if (p.second->qp->stats().bytes_placed < kSize) return false;
    }
    return true;
  }));
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(Sha(pairs[i].second->mem.Bytes(sinks[i])), Sha(ByteSpan(src[i]))) << "pair " << i;
  }
  // And each still does a full Send / Write / Read round.
  for (size_t i = 0; i < pairs.size(); ++i) {
    Transfers(*pairs[i].first, *pairs[i].second, 4096, static_cast<uint32_t>(90 + i));
  }
}

TEST_F(QpSctpTest, InvalidStagIsTerminatedWhileAnotherStreamKeepsWorking) {
  OpenAssociation();
  const auto pair_3 = OpenPair(1);
  End* bad_c = pair_3.first;
  End* bad_s = pair_3.second;
  const auto pair_4 = OpenPair(2);
  End* ok_c = pair_4.first;
  End* ok_s = pair_4.second;
  ASSERT_NE(bad_c, nullptr);
  ASSERT_NE(ok_c, nullptr);
  const uint32_t a = bad_c->mem.Register(64, ddp::kAccessAll);
  const uint32_t sink = bad_s->mem.Register(64, ddp::kAccessRemoteWrite | ddp::kAccessRemoteRead);
  // An STag the responder never registered (another index), then a valid
  // Read behind it.
  ASSERT_EQ(bad_c->qp->PostSend(SendWr{9, WrOpcode::kRdmaWrite, LocalSge{a, 0x10000, 16},
                                       sink + 0x100, 0x10000}),
            PostStatus::kOk);
  ASSERT_EQ(bad_c->qp->PostSend(SendWr{10, WrOpcode::kRdmaRead, LocalSge{a, 0x10000, 16}, sink,
                                       0x10000}),
            PostStatus::kOk);
  ASSERT_TRUE(RunUntil([&] { return bad_c->cqes.size() >= 2 && bad_s->obs.disconnected; }));
  // RFC 5041 7.2: DDP layer, tagged buffer error, invalid STag.
  ASSERT_EQ(bad_s->obs.term_sent.size(), 1u);
  EXPECT_EQ(bad_s->obs.term_sent[0].layer, rdmap::kLayerDdp);
  EXPECT_EQ(bad_s->obs.term_sent[0].etype, ddp::kEtypeTaggedBuffer);
  EXPECT_EQ(bad_s->obs.term_sent[0].code, 0x00);
  ASSERT_EQ(bad_c->obs.term_received.size(), 1u);
  EXPECT_EQ(bad_c->obs.term_received[0], bad_s->obs.term_sent[0]);
  // The Write completed when SCTP took it (SegmentLlp contract; RFC 5040
  // 5.5: a Write completion says nothing of remote placement). The Read
  // behind it, the oldest unfinished work request, carries the Terminate.
  ASSERT_EQ(bad_c->cqes.size(), 2u);
  EXPECT_EQ(bad_c->cqes[0].wr_id, 9u);
  EXPECT_EQ(bad_c->cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(bad_c->cqes[1].wr_id, 10u);
  EXPECT_EQ(bad_c->cqes[1].status, WcStatus::kRemoteAccess) << WcStatusName(bad_c->cqes[1].status);
  EXPECT_EQ(bad_c->cqes[1].term, bad_s->obs.term_sent[0]);
  EXPECT_EQ(bad_s->qp->stats().bytes_placed, 0u);
  ASSERT_TRUE(RunUntil([&] { return bad_c->obs.disconnected; }));
  EXPECT_EQ(bad_c->qp->state(), QpState::kError);
  EXPECT_EQ(bad_s->qp->state(), QpState::kError);
  EXPECT_EQ(bad_c->qp->end(), QpEnd::kTerminate);
  EXPECT_EQ(bad_s->qp->end(), QpEnd::kTerminate);
  EXPECT_TRUE(client_->StreamIdle(1));
  // RFC 5043 11.3: the other stream and the association are untouched.
  EXPECT_EQ(client_->state(), sctp::DdpAssociation::State::kUp);
  EXPECT_EQ(ok_c->qp->state(), QpState::kRts);
  Transfers(*ok_c, *ok_s, 65536, 5);
}

TEST_F(QpSctpTest, LossReorderDuplicationKeepDataIdentical) {
  OpenAssociation();
  const auto pair_5 = OpenPair(4);
  End* c = pair_5.first;
  End* s = pair_5.second;
  ASSERT_NE(c, nullptr);
  Impairment imp;
  imp.loss = 0.02;
  imp.duplicate = 0.02;
  imp.reorder = 0.05;
  imp.seed = 11;
  link_.set_impairment(imp);
  Transfers(*c, *s, 1 << 20, 77);
  EXPECT_GT(link_.dropped(), 0u);
  EXPECT_GT(link_.duplicated(), 0u);
  EXPECT_GT(link_.reordered(), 0u);
  link_.set_impairment(Impairment{});
}

TEST_F(QpSctpTest, GracefulCloseFlushesTheReceiveQueue) {
  OpenAssociation();
  const auto pair_6 = OpenPair(6);
  End* c = pair_6.first;
  End* s = pair_6.second;
  ASSERT_NE(c, nullptr);
  const uint32_t buf = s->mem.Register(16, ddp::kAccessLocalWrite);
  ASSERT_EQ(s->qp->PostRecv(RecvWr{55, LocalSge{buf, 0x10000, 16}}), PostStatus::kOk);
  c->qp->Close(link_.now_ms() * 1000);
  ASSERT_TRUE(RunUntil([&] { return c->obs.disconnected && s->obs.disconnected; }));
  ASSERT_EQ(s->cqes.size(), 1u);
  EXPECT_EQ(s->cqes[0].wr_id, 55u);
  EXPECT_EQ(s->cqes[0].status, WcStatus::kFlushed);
  EXPECT_TRUE(client_->StreamIdle(6));
  EXPECT_TRUE(server_->StreamIdle(6));
  // RFC 5043 6.2 session Terminates both ways, no RDMAP Terminate: closed on
  // both sides, not an error.
  for (End* e : {c, s}) {
    EXPECT_EQ(e->qp->state(), QpState::kClosed) << QpStateName(e->qp->state());
    EXPECT_EQ(e->qp->end(), QpEnd::kClosed) << QpEndName(e->qp->end());
    EXPECT_EQ(e->qp->PostSend(SendWr{3, WrOpcode::kSend, LocalSge{}}), PostStatus::kNotConnected);
  }
  EXPECT_FALSE(c->qp->ConnectLlp({}, link_.now_ms() * 1000).ok());
}

TEST_F(QpSctpTest, AbortFlushesBothEnds) {
  OpenAssociation();
  const auto pair = OpenPair(7);
  End* c = pair.first;
  End* s = pair.second;
  ASSERT_NE(c, nullptr);
  const uint32_t cb = c->mem.Register(16, ddp::kAccessLocalWrite);
  const uint32_t sb = s->mem.Register(16, ddp::kAccessLocalWrite);
  ASSERT_EQ(c->qp->PostRecv(RecvWr{1, LocalSge{cb, 0x10000, 16}}), PostStatus::kOk);
  ASSERT_EQ(s->qp->PostRecv(RecvWr{2, LocalSge{sb, 0x10000, 16}}), PostStatus::kOk);
  c->qp->Abort(link_.now_ms() * 1000);
  ASSERT_TRUE(RunUntil([&] { return c->obs.disconnected && s->obs.disconnected; }));
  ASSERT_EQ(c->cqes.size(), 1u);
  EXPECT_EQ(c->cqes[0].status, WcStatus::kFlushed);
  ASSERT_EQ(s->cqes.size(), 1u);
  EXPECT_EQ(s->cqes[0].status, WcStatus::kFlushed);
  EXPECT_EQ(c->qp->state(), QpState::kError);
  EXPECT_EQ(c->qp->end(), QpEnd::kAborted);
  // RFC 5043 has one session Terminate for both kinds of close: the peer of
  // an abort sees an orderly session end (its receive still flushed).
  EXPECT_EQ(s->qp->state(), QpState::kClosed);
  EXPECT_EQ(c->qp->PostSend(SendWr{3, WrOpcode::kSend, LocalSge{}}), PostStatus::kNotConnected);
  EXPECT_EQ(s->qp->PostSend(SendWr{4, WrOpcode::kSend, LocalSge{}}), PostStatus::kNotConnected);
  // The association outlives the stream.
  EXPECT_EQ(client_->state(), sctp::DdpAssociation::State::kUp);
}

// RFC 5043 11.3: the association going down ends every session on it in
// error (not a graceful close); posted receives are flushed.
TEST_F(QpSctpTest, AssociationDownIsAnError) {
  OpenAssociation();
  const auto pair = OpenPair(5);
  End* c = pair.first;
  ASSERT_NE(c, nullptr);
  const uint32_t cb = c->mem.Register(16, ddp::kAccessLocalWrite);
  ASSERT_EQ(c->qp->PostRecv(RecvWr{12, LocalSge{cb, 0x10000, 16}}), PostStatus::kOk);
  cs_.OnAssociationDown();  // what the association's owner reports
  c->Drain();
  EXPECT_TRUE(c->obs.disconnected);
  EXPECT_EQ(c->qp->state(), QpState::kError);
  EXPECT_EQ(c->qp->end(), QpEnd::kLlpFailed) << QpEndName(c->qp->end());
  ASSERT_EQ(c->cqes.size(), 1u);
  EXPECT_EQ(c->cqes[0].wr_id, 12u);
  EXPECT_EQ(c->cqes[0].status, WcStatus::kFlushed);
}

TEST_F(QpSctpTest, UnansweredInitiateTimesOut) {
  OpenAssociation();
  QpOptions o;
  o.mpa.reply_timeout_us = 50'000;
  End c;
  c.qp = *cs_.CreateQp(4, o, c.mem, c.obs);
  Impairment all_lost;
  all_lost.loss = 1.0;
  link_.set_impairment(all_lost);
  ASSERT_TRUE(c.qp->ConnectLlp({}, link_.now_ms() * 1000).ok());
  ASSERT_TRUE(RunUntil([&] {
    c.qp->Poll(link_.now_ms() * 1000);
    return c.obs.failed != ConnectError::kNone;
  }, 2000));
  EXPECT_EQ(c.obs.failed, ConnectError::kTimeout);
  EXPECT_EQ(c.qp->state(), QpState::kError);
  link_.set_impairment(Impairment{});
  c.qp.reset();
}

}  // namespace
}  // namespace iwarp::engine
