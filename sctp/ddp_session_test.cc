// Two endpoints of the one usrsctp stack of this process (two AF_CONN
// addresses) joined by an in-memory link: every chunk really goes through
// usrsctp, the CRC32c through ISA-L, the sessions through RFC 5043 rules.
#include <arpa/inet.h>
#include <usrsctp.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sctp/ddp_session.h"
#include "sctp/sctp_test_link.h"
#include "sctp/usrsctp_host.h"

namespace iwarp::sctp {
namespace {

using testing::Impairment;
using testing::MemLink;
using testing::RunLinkUntil;

// AF_CONN address cookies of the two ends.
char g_addr_a;
char g_addr_b;

UsrsctpHost* g_host = nullptr;

// usrsctp allows one stack per process: one host for the whole test binary.
class HostEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    HostConfig hc;
    hc.max_packet = 9000;  // the largest path MTU a test uses, less 20
    auto h = UsrsctpHost::Create(hc);
    ASSERT_TRUE(h.ok()) << h.status();
    host_ = std::move(*h);
    g_host = host_.get();
    g_host->RegisterConn(&g_addr_a);
    g_host->RegisterConn(&g_addr_b);
  }
  // The host is left alive until exit: usrsctp_finish blocks on the
  // iterator thread of a torn-down stack for no gain in a test binary.
 private:
  std::unique_ptr<UsrsctpHost> host_;
};

::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new HostEnvironment);

// Retransmission timers scaled to an in-memory link, so that tests with
// loss finish in seconds.
AssociationConfig TestConfig() {
  AssociationConfig c;
  c.rto_initial_ms = 100;
  c.rto_min_ms = 20;
  c.rto_max_ms = 400;
  return c;
}

uint16_t NextPort() {
  static uint16_t port = 5000;
  return port++;
}

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

struct Recorder : DdpLlpEvents {
  bool up = false;
  bool down = false;
  bool auto_accept = false;
  DdpAssociation* assoc = nullptr;
  std::vector<uint8_t> accept_pd;
  std::map<uint16_t, std::vector<uint8_t>> initiate_pd, accepted_pd, rejected_pd;
  std::vector<std::pair<uint16_t, StreamEnd>> ended;
  std::map<uint16_t, std::vector<std::vector<uint8_t>>> segments;

  void OnAssociationUp() override { up = true; }
  void OnAssociationDown() override { down = true; }
  void OnInitiate(uint16_t s, ByteSpan pd) override {
    initiate_pd[s].assign(pd.begin(), pd.end());
    if (auto_accept && assoc != nullptr) {
      EXPECT_EQ(assoc->Accept(s, ByteSpan(accept_pd)), SendResult::kOk);
    }
  }
  void OnAccepted(uint16_t s, ByteSpan pd) override { accepted_pd[s].assign(pd.begin(), pd.end()); }
  void OnRejected(uint16_t s, ByteSpan pd) override { rejected_pd[s].assign(pd.begin(), pd.end()); }
  void OnStreamEnded(uint16_t s, StreamEnd why) override { ended.emplace_back(s, why); }
  void OnSegment(uint16_t s, ByteSpan seg) override { segments[s].emplace_back(seg.begin(), seg.end()); }
  bool Ended(uint16_t s, StreamEnd why) const {
    for (const auto& e : ended) {
      if (e.first == s && e.second == why) return true;
    }
    return false;
  }
};

class SctpDdpTest : public ::testing::Test {
 protected:
  SctpDdpTest() : link_(*g_host) { link_.Join(&g_addr_a, &g_addr_b); }

  ~SctpDdpTest() override {
    client_.reset();
    server_.reset();
    listener_.reset();
    // Let the ABORTs go out and be processed before the next test.
    RunFor(5);
  }

  // Listens on B, connects from A, runs until both sides decided.
  void Open(const AssociationConfig& ccfg, const AssociationConfig& scfg) {
    const uint16_t sport = NextPort();
    const uint16_t cport = NextPort();
    auto l = DdpListener::Listen(*g_host, &g_addr_b, sport, scfg);
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::move(*l);
    auto c = DdpAssociation::Connect(*g_host, &g_addr_a, cport, sport, ccfg, &cev_);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
    cev_.assoc = client_.get();
    RunUntil([&] {
      return (cev_.up || cev_.down) && server_ != nullptr && (sev_.up || sev_.down);
    });
  }
  void Open(const AssociationConfig& cfg = TestConfig()) { Open(cfg, cfg); }

  void Service() {
    if (server_ == nullptr && listener_ != nullptr) {
      server_ = listener_->Accept(&sev_);
      if (server_ != nullptr) sev_.assoc = server_.get();
    }
    if (client_ != nullptr) client_->Service();
    if (server_ != nullptr) server_->Service();
  }

  // Runs link and associations until `done` or `timeout_ms` of real time.
  template <typename F>
  bool RunUntil(F done, uint64_t timeout_ms = 10000) {
    return RunLinkUntil(link_, [this] { Service(); }, done, timeout_ms);
  }
  // Runs for `ms` of real time.
  void RunFor(uint64_t ms) {
    RunUntil([] { return false; }, ms);
  }

  // Initiate on `s` from the client, auto-accepted by the server.
  void OpenStream(uint16_t s, std::string_view ipd = "hello", std::string_view apd = "welcome") {
    sev_.auto_accept = true;
    sev_.accept_pd = Bytes(apd);
    const auto pd = Bytes(ipd);
    cev_.accepted_pd.erase(s);
    ASSERT_EQ(client_->Initiate(s, ByteSpan(pd)), SendResult::kOk);
    ASSERT_TRUE(RunUntil([&] { return cev_.accepted_pd.count(s) > 0; })) << "stream " << s;
  }

  MemLink link_;
  Recorder cev_, sev_;
  std::unique_ptr<DdpListener> listener_;
  std::unique_ptr<DdpAssociation> client_, server_;
};

TEST(UsrsctpHostTest, SecondHostInOneProcessIsRefused) {
  auto second = UsrsctpHost::Create(HostConfig{});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("one global stack"), std::string_view::npos);
  EXPECT_EQ(UsrsctpHost::Current(), g_host);
}

TEST(AssociationConfigTest, BadConfigurationsAreRefusedByName) {
  auto refused = [](AssociationConfig c) {
    auto a = DdpAssociation::Connect(*g_host, &g_addr_a, 4999, 4998, c, nullptr);
    EXPECT_FALSE(a.ok());
    return a.ok() ? std::string() : std::string(a.status().message());
  };
  AssociationConfig c = TestConfig();
  c.path_mtu = 9000 + 20 + 1;  // beyond the host's 9000-byte packets
  EXPECT_NE(refused(c).find("max_packet"), std::string::npos);
  c = TestConfig();
  c.reorder_window = 1000;
  EXPECT_NE(refused(c).find("reorder_window"), std::string::npos);
  c = TestConfig();
  c.rto_min_ms = 500;  // above rto_initial_ms
  EXPECT_NE(refused(c).find("rto_min_ms"), std::string::npos);
  c = TestConfig();
  c.streams = 0;
  EXPECT_NE(refused(c).find("streams"), std::string::npos);
  c = TestConfig();
  c.path_mtu = 500;
  EXPECT_NE(refused(c).find("path_mtu"), std::string::npos);
}

// RFC 5043 10: the reorder store holds every full-size chunk the larger
// socket buffer can have beyond a gap, plus one per stream; never below the
// 512 / 1024 defaults, never beyond 32768.
TEST(AssociationConfigTest, ReorderStoreIsSizedFromTheBuffers) {
  AssociationConfig c;  // MTU 1500: 1450-byte segments, 1452-byte chunks
  SizeReorderStore(&c);  // 256 KiB
  EXPECT_EQ(c.reorder_chunks, 512u);
  EXPECT_EQ(c.reorder_window, 1024u);
  c.receive_buffer = 1 << 20;
  SizeReorderStore(&c);
  EXPECT_EQ(c.reorder_chunks, 723u + 8u);  // ceil(1048576 / 1452) + 8 streams
  EXPECT_EQ(c.reorder_window, 1024u);
  c.send_buffer = 4 << 20;
  SizeReorderStore(&c);
  EXPECT_EQ(c.reorder_chunks, 2889u + 8u);
  EXPECT_EQ(c.reorder_window, 4096u);
  c.send_buffer = 64 << 20;
  SizeReorderStore(&c);
  EXPECT_EQ(c.reorder_chunks, 32768u);
  EXPECT_EQ(c.reorder_window, 32768u);
}

TEST_F(SctpDdpTest, AssociationComesUpWithDdpAdaptationOnBothSides) {
  Open();
  ASSERT_NE(server_, nullptr);
  EXPECT_TRUE(cev_.up);
  EXPECT_TRUE(sev_.up);
  EXPECT_EQ(client_->state(), DdpAssociation::State::kUp);
  EXPECT_EQ(server_->state(), DdpAssociation::State::kUp);
  // 1500-byte IPv4 path: 1480-byte SCTP packets, 12 + 16 bytes of headers,
  // 2 bytes of DDP-SSN.
  EXPECT_EQ(client_->mulpdu(), 1450u);
  EXPECT_EQ(server_->mulpdu(), 1450u);
}

TEST_F(SctpDdpTest, PeerWithoutAdaptationIndicationIsRefusedForDdp) {
  AssociationConfig plain = TestConfig();
  plain.adaptation_indication = std::nullopt;  // a plain SCTP endpoint
  Open(plain, TestConfig());
  ASSERT_NE(server_, nullptr);
  // RFC 5043 11.1: the DDP end saw no indication from its peer and aborted.
  EXPECT_EQ(server_->state(), DdpAssociation::State::kRefused);
  EXPECT_EQ(server_->counter(DdpCounter::kAssocRefusedNoDdp), 1u);
  EXPECT_FALSE(sev_.up);
  EXPECT_TRUE(sev_.down);
  EXPECT_EQ(server_->Initiate(0, {}), SendResult::kNotUp);
  // The plain end saw the association come and go (ABORT).
  EXPECT_TRUE(RunUntil([&] { return cev_.down; }));
}

TEST_F(SctpDdpTest, PeerWithAnotherAdaptationIsRefusedForDdp) {
  AssociationConfig other = TestConfig();
  other.adaptation_indication = 0x00000002;
  Open(TestConfig(), other);
  ASSERT_NE(server_, nullptr);
  EXPECT_EQ(client_->state(), DdpAssociation::State::kRefused);
  EXPECT_EQ(client_->counter(DdpCounter::kAssocRefusedOther), 1u);
  EXPECT_EQ(client_->SendSegment(0, ByteSpan(Bytes("x"))), SendResult::kNotUp);
}

TEST_F(SctpDdpTest, InitiateAcceptWithPrivateDataThenSegmentsBothWays) {
  Open();
  const auto pd = Pattern(512, 7);  // RFC 5043 5.2.3 maximum
  sev_.auto_accept = true;
  sev_.accept_pd = Pattern(300, 8);
  ASSERT_EQ(client_->Initiate(3, ByteSpan(pd)), SendResult::kOk);
  // The active side may not send before the Accept (RFC 5043 6.6).
  EXPECT_EQ(client_->SendSegment(3, ByteSpan(Bytes("early"))), SendResult::kWrongState);
  ASSERT_TRUE(RunUntil([&] { return cev_.accepted_pd.count(3) > 0; }));
  EXPECT_EQ(sev_.initiate_pd[3], pd);
  EXPECT_EQ(cev_.accepted_pd[3], sev_.accept_pd);
  EXPECT_TRUE(client_->StreamOpen(3));
  EXPECT_TRUE(server_->StreamOpen(3));

  const auto a = Bytes("ddp segment one");
  const auto b = Pattern(client_->mulpdu(), 9);
  ASSERT_EQ(client_->SendSegment(3, ByteSpan(a)), SendResult::kOk);
  ASSERT_EQ(client_->SendSegment(3, ByteSpan(b)), SendResult::kOk);
  ASSERT_EQ(server_->SendSegment(3, ByteSpan(a)), SendResult::kOk);
  ASSERT_TRUE(RunUntil([&] { return sev_.segments[3].size() == 2 && cev_.segments[3].size() == 1; }));
  EXPECT_EQ(sev_.segments[3][0], a);
  EXPECT_EQ(sev_.segments[3][1], b);
  EXPECT_EQ(cev_.segments[3][0], a);
  EXPECT_EQ(server_->counter(DdpCounter::kRxSegments), 2u);
  EXPECT_EQ(client_->counter(DdpCounter::kTxSegments), 2u);
  // Limits of the LLP interface.
  EXPECT_EQ(client_->SendSegment(3, ByteSpan(Pattern(client_->mulpdu() + 1, 1))),
            SendResult::kTooLarge);
  EXPECT_EQ(client_->SendSegment(3, {}), SendResult::kEmpty);
  EXPECT_EQ(client_->Initiate(2, ByteSpan(Pattern(513, 1))), SendResult::kTooLarge);
  EXPECT_EQ(client_->SendSegment(client_->streams(), ByteSpan(a)), SendResult::kBadStream);
}

TEST_F(SctpDdpTest, RejectCarriesPrivateDataAndLeavesTheStreamIdle) {
  Open();
  const auto ipd = Bytes("may I");
  ASSERT_EQ(client_->Initiate(1, ByteSpan(ipd)), SendResult::kOk);
  ASSERT_TRUE(RunUntil([&] { return sev_.initiate_pd.count(1) > 0; }));
  const auto rpd = Bytes("no: wrong protection domain");
  ASSERT_EQ(server_->Reject(1, ByteSpan(rpd)), SendResult::kOk);
  ASSERT_TRUE(RunUntil([&] { return cev_.rejected_pd.count(1) > 0; }));
  EXPECT_EQ(cev_.rejected_pd[1], rpd);
  EXPECT_TRUE(client_->StreamIdle(1));
  EXPECT_TRUE(server_->StreamIdle(1));
  // A new session on the same stream starts again at DDP-SSN 0 and works.
  OpenStream(1);
  ASSERT_EQ(client_->SendSegment(1, ByteSpan(ipd)), SendResult::kOk);
  ASSERT_TRUE(RunUntil([&] { return sev_.segments[1].size() == 1; }));
  EXPECT_EQ(sev_.segments[1][0], ipd);
}

TEST_F(SctpDdpTest, TerminateEndsBothDirectionsAndTheStreamIsReusable) {
  Open();
  OpenStream(2);
  const auto last = Bytes("last words");
  ASSERT_EQ(server_->SendSegment(2, ByteSpan(last)), SendResult::kOk);
  ASSERT_EQ(server_->Terminate(2), SendResult::kOk);
  EXPECT_EQ(server_->SendSegment(2, ByteSpan(last)), SendResult::kWrongState);
  ASSERT_TRUE(RunUntil([&] { return sev_.Ended(2, StreamEnd::kClosed); }));
  // The segment before the Terminate arrived first (DDP-SSN order).
  ASSERT_EQ(cev_.segments[2].size(), 1u);
  EXPECT_EQ(cev_.segments[2][0], last);
  EXPECT_TRUE(cev_.Ended(2, StreamEnd::kPeerTerminate));
  EXPECT_TRUE(client_->StreamIdle(2));
  EXPECT_TRUE(server_->StreamIdle(2));
  OpenStream(2, "again", "ok");
  EXPECT_TRUE(client_->StreamOpen(2));
}

TEST_F(SctpDdpTest, InitiatesBeyondThePendingLimitAreAnsweredWithTerminate) {
  AssociationConfig cfg = TestConfig();
  cfg.max_pending_initiates = 2;
  Open(cfg);
  for (uint16_t s = 0; s < 3; ++s) ASSERT_EQ(client_->Initiate(s, {}), SendResult::kOk);
  ASSERT_TRUE(RunUntil([&] { return cev_.ended.size() == 1; }));
  // RFC 5043 6.4: two wait for the ULP, the third is refused by the layer.
  EXPECT_EQ(sev_.initiate_pd.size(), 2u);
  EXPECT_EQ(server_->counter(DdpCounter::kInitiateLimit), 1u);
  EXPECT_EQ(cev_.ended[0].second, StreamEnd::kPeerRefused);
  const uint16_t refused = cev_.ended[0].first;
  EXPECT_EQ(sev_.initiate_pd.count(refused), 0u);
  EXPECT_TRUE(client_->StreamIdle(refused));
  // Accepting one frees a slot: the refused stream can be initiated again.
  const uint16_t first = sev_.initiate_pd.begin()->first;
  ASSERT_EQ(server_->Accept(first, {}), SendResult::kOk);
  ASSERT_EQ(client_->Initiate(refused, {}), SendResult::kOk);
  ASSERT_TRUE(RunUntil([&] { return sev_.initiate_pd.count(refused) > 0; }));
}

TEST_F(SctpDdpTest, SeveralStreamsCarryIndependentSessions) {
  AssociationConfig cfg = TestConfig();
  cfg.streams = 16;
  Open(cfg);
  for (uint16_t s = 0; s < 16; s += 3) OpenStream(s);
  for (int round = 0; round < 20; ++round) {
    for (uint16_t s = 0; s < 16; s += 3) {
      const auto seg = Pattern(100 + s * 10 + static_cast<size_t>(round), s * 100u + round);
      ASSERT_EQ(client_->SendSegment(s, ByteSpan(seg)), SendResult::kOk);
    }
  }
  ASSERT_TRUE(RunUntil([&] { return server_->counter(DdpCounter::kRxSegments) == 6 * 20; }));
  for (uint16_t s = 0; s < 16; s += 3) {
    ASSERT_EQ(sev_.segments[s].size(), 20u);
    for (int round = 0; round < 20; ++round) {
      EXPECT_EQ(sev_.segments[s][static_cast<size_t>(round)],
                Pattern(100 + s * 10 + static_cast<size_t>(round), s * 100u + round));
    }
  }
  EXPECT_EQ(sev_.segments.count(1), 0u);
}

// Segments of many sizes through loss, duplication and reordering; every
// stream's segments arrive intact and in DDP-SSN order.
TEST_F(SctpDdpTest, ImpairedLinkDeliversEverySegmentInOrder) {
  Open();
  OpenStream(0);
  OpenStream(1);
  OpenStream(4);
  link_.set_impairment(Impairment{.loss = 0.05, .duplicate = 0.03, .reorder = 0.15,
                                  .corrupt = 0.02, .seed = 42});
  const uint16_t kStreams[] = {0, 1, 4};
  const size_t mulpdu = client_->mulpdu();
  const size_t sizes[] = {1, 2, 3, 7, 64, 100, 515, 516, 517, 1000, mulpdu - 1, mulpdu};
  constexpr int kPerStream = 300;
  std::map<uint16_t, int> sent_c, sent_s;
  auto size_of = [&](int i) { return sizes[static_cast<size_t>(i) % std::size(sizes)]; };
  const bool done = RunUntil(
      [&] {
        for (uint16_t s : kStreams) {
          while (sent_c[s] < kPerStream) {
            const auto seg = Pattern(size_of(sent_c[s]), s * 7919u + static_cast<uint32_t>(sent_c[s]));
            if (client_->SendSegment(s, ByteSpan(seg)) != SendResult::kOk) break;
            ++sent_c[s];
          }
          while (sent_s[s] < kPerStream) {
            const auto seg = Pattern(size_of(sent_s[s] + 5), s * 104729u + static_cast<uint32_t>(sent_s[s]));
            if (server_->SendSegment(s, ByteSpan(seg)) != SendResult::kOk) break;
            ++sent_s[s];
          }
        }
        for (uint16_t s : kStreams) {
          if (sev_.segments[s].size() < kPerStream || cev_.segments[s].size() < kPerStream) {
            return false;
          }
        }
        return true;
      },
      200000);
  ASSERT_TRUE(done) << "server got " << server_->counter(DdpCounter::kRxSegments)
                    << " client got " << client_->counter(DdpCounter::kRxSegments);
  for (uint16_t s : kStreams) {
    ASSERT_EQ(sev_.segments[s].size(), size_t{kPerStream});
    ASSERT_EQ(cev_.segments[s].size(), size_t{kPerStream});
    for (int i = 0; i < kPerStream; ++i) {
      ASSERT_EQ(sev_.segments[s][size_t(i)],
                Pattern(size_of(i), s * 7919u + static_cast<uint32_t>(i)))
          << "stream " << s << " segment " << i;
      ASSERT_EQ(cev_.segments[s][size_t(i)],
                Pattern(size_of(i + 5), s * 104729u + static_cast<uint32_t>(i)))
          << "stream " << s << " segment " << i;
    }
  }
  // No packet above the 1480-byte SCTP packet of a 1500-byte IPv4 path.
  EXPECT_EQ(g_host->counter(HostCounter::kTxOversize), 0u);
  // The impairment really happened and was really dealt with.
  EXPECT_GT(link_.dropped(), 0u);
  EXPECT_GT(link_.duplicated(), 0u);
  EXPECT_GT(link_.corrupted(), 0u);
  EXPECT_GT(g_host->counter(HostCounter::kRxBadCrc), 0u);
  EXPECT_GT(server_->counter(DdpCounter::kRxReordered) + client_->counter(DdpCounter::kRxReordered),
            0u);
  EXPECT_TRUE(cev_.ended.empty());
  EXPECT_TRUE(sev_.ended.empty());
}

TEST_F(SctpDdpTest, CorruptedPacketsAreCountedAndDroppedBeforeUsrsctp) {
  Open();
  OpenStream(0);
  const uint64_t bad_before = g_host->counter(HostCounter::kRxBadCrc);
  const uint64_t rx_before = g_host->counter(HostCounter::kRxPackets);
  link_.set_impairment(Impairment{.corrupt = 1.0, .seed = 3});
  const auto seg = Bytes("never arrives intact");
  ASSERT_EQ(client_->SendSegment(0, ByteSpan(seg)), SendResult::kOk);
  RunFor(50);
  EXPECT_GT(g_host->counter(HostCounter::kRxBadCrc), bad_before);
  EXPECT_EQ(g_host->counter(HostCounter::kRxPackets), rx_before);  // nothing reached usrsctp
  EXPECT_TRUE(sev_.segments[0].empty());
  // A clean link again: SCTP retransmits, the segment arrives once.
  link_.set_impairment(Impairment{});
  ASSERT_TRUE(RunUntil([&] { return !sev_.segments[0].empty(); }));
  EXPECT_EQ(sev_.segments[0].size(), 1u);
  EXPECT_EQ(sev_.segments[0][0], seg);
}

TEST_F(SctpDdpTest, OurCrcMatchesUsrsctpsOwnAndNothingFragmentsAtTheMtu) {
  Open();
  OpenStream(0);
  size_t packets = 0, data_chunks = 0, max_packet = 0, crc_checked = 0;
  bool all_unfragmented_unordered = true;
  link_.set_tap([&](void*, ByteSpan p) {
    ++packets;
    max_packet = std::max(max_packet, p.size());
    // usrsctp's own CRC32c over the packet with a zero checksum field must
    // equal what UsrsctpHost wrote (same value, same byte order).
    std::vector<uint8_t> copy(p.begin(), p.end());
    std::memset(copy.data() + kSctpChecksumOffset, 0, 4);
    const uint32_t theirs = usrsctp_crc32c(copy.data(), copy.size());
    uint32_t ours;
    std::memcpy(&ours, p.data() + kSctpChecksumOffset, 4);
    if (theirs == ours) ++crc_checked;
    // Walk the chunks: DATA chunks (type 0) must be unordered (U) and
    // unfragmented (B and E), RFC 5043 9 and 10.
    size_t off = kSctpHeaderSize;
    while (off + 4 <= p.size()) {
      const uint8_t type = p[off];
      const uint8_t flags = p[off + 1];
      const uint16_t len = LoadBe16(p.data() + off + 2);
      if (len < 4) break;
      if (type == 0) {
        ++data_chunks;
        if ((flags & 0x07) != 0x07) all_unfragmented_unordered = false;
      }
      off += (len + 3u) & ~3u;
    }
  });
  // Full-size segments, then small and large ones mixed: no packet may
  // exceed the 1480-byte SCTP packet (bundling is checked under load in
  // tools/decode/sctp_capture_test.cc).
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(client_->SendSegment(0, ByteSpan(Pattern(client_->mulpdu(), 11))), SendResult::kOk);
  }
  for (int i = 0; i < 200; ++i) {
    const size_t n = i % 2 == 0 ? 36 : 1400 + static_cast<size_t>(i % 50);
    ASSERT_EQ(client_->SendSegment(0, ByteSpan(Pattern(n, 12))), SendResult::kOk);
  }
  ASSERT_TRUE(RunUntil([&] { return sev_.segments[0].size() == 220; }));
  link_.set_tap(nullptr);
  EXPECT_GE(data_chunks, 220u);
  EXPECT_TRUE(all_unfragmented_unordered);
  EXPECT_EQ(crc_checked, packets);
  EXPECT_EQ(max_packet, 1480u);  // a full-size chunk fills the 1480-byte SCTP packet exactly
}

TEST_F(SctpDdpTest, MulpduFollowsTheConfiguredPathMtu) {
  AssociationConfig cfg = TestConfig();
  cfg.path_mtu = 9000;
  Open(cfg);
  EXPECT_EQ(client_->mulpdu(), 9000u - 20 - 12 - 16 - 2);
  OpenStream(0);
  const auto big = Pattern(client_->mulpdu(), 5);
  ASSERT_EQ(client_->SendSegment(0, ByteSpan(big)), SendResult::kOk);
  ASSERT_TRUE(RunUntil([&] { return sev_.segments[0].size() == 1; }));
  EXPECT_EQ(sev_.segments[0][0], big);
  // Small MTU: never below the 516-byte floor of RFC 5043 9.
  AssociationConfig small;
  small.path_mtu = 576 + 20;
  EXPECT_EQ(AssociationMulpdu(small), 576u - 12 - 16 - 2);
  // usrsctp's fragmentation point is a multiple of 4: one byte more MTU
  // does not make a larger segment.
  small.path_mtu = 577 + 20;
  EXPECT_EQ(AssociationMulpdu(small), 576u - 12 - 16 - 2);
  EXPECT_GE(AssociationMulpdu(small), 516u);
}

// A peer that breaks the rules, written with the plain usrsctp socket API:
// it speaks the adaptation's wire format by hand.
class RawPeer {
 public:
  RawPeer(void* conn, uint16_t lport, uint16_t rport) {
    so_ = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, nullptr, nullptr, 0, nullptr);
    usrsctp_set_non_blocking(so_, 1);
    sctp_initmsg init{};
    init.sinit_num_ostreams = 8;
    init.sinit_max_instreams = 8;
    usrsctp_setsockopt(so_, IPPROTO_SCTP, SCTP_INITMSG, &init, sizeof(init));
    sctp_setadaptation ad{kDdpAdaptationIndication};
    usrsctp_setsockopt(so_, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, &ad, sizeof(ad));
    const int on = 1;
    usrsctp_setsockopt(so_, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof(on));
    usrsctp_setsockopt(so_, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof(on));
    sctp_rtoinfo rto{0, 100, 400, 20};
    usrsctp_setsockopt(so_, IPPROTO_SCTP, SCTP_RTOINFO, &rto, sizeof(rto));
    sockaddr_conn a{};
    a.sconn_family = AF_CONN;
    a.sconn_port = htons(lport);
    a.sconn_addr = conn;
    usrsctp_bind(so_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    a.sconn_port = htons(rport);
    usrsctp_connect(so_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  ~RawPeer() { usrsctp_close(so_); }
  bool Send(uint16_t sid, uint32_t ppid, const std::vector<uint8_t>& user_data) {
    sctp_sndinfo snd{};
    snd.snd_sid = sid;
    snd.snd_flags = SCTP_UNORDERED;
    snd.snd_ppid = htonl(ppid);
    return usrsctp_sendv(so_, user_data.data(), user_data.size(), nullptr, 0, &snd, sizeof(snd),
                         SCTP_SENDV_SNDINFO, 0) >= 0;
  }
  bool Control(uint16_t sid, uint16_t ssn, uint16_t fc) {
    std::vector<uint8_t> m(4);
    StoreBe16(m.data(), ssn);
    StoreBe16(m.data() + 2, fc);
    return Send(sid, kPpidSessionControl, m);
  }
  bool Segment(uint16_t sid, uint16_t ssn, std::string_view body) {
    std::vector<uint8_t> m(2);
    StoreBe16(m.data(), ssn);
    m.insert(m.end(), body.begin(), body.end());
    return Send(sid, kPpidDdpSegment, m);
  }
  // Drains whatever the peer sent; returns (and forgets) the function codes
  // of the session control messages received on `sid` so far.
  std::vector<uint16_t> ControlsOn(uint16_t sid) {
    for (;;) {
      uint8_t buf[2048];
      sctp_rcvinfo info{};
      socklen_t infolen = sizeof(info);
      unsigned int infotype = 0;
      int flags = 0;
      const ssize_t n = usrsctp_recvv(so_, buf, sizeof(buf), nullptr, nullptr, &info, &infolen,
                                      &infotype, &flags);
      if (n <= 0) break;
      if ((flags & MSG_NOTIFICATION) == 0 && infotype == SCTP_RECVV_RCVINFO &&
          ntohl(info.rcv_ppid) == kPpidSessionControl && n >= 4) {
        controls_[info.rcv_sid].push_back(LoadBe16(buf + 2));
      }
    }
    std::vector<uint16_t> out;
    out.swap(controls_[sid]);
    return out;
  }

 private:
  struct socket* so_;
  std::map<uint16_t, std::vector<uint16_t>> controls_;
};

class SctpDdpRawPeerTest : public SctpDdpTest {
 protected:
  void OpenRaw() {
    const uint16_t sport = NextPort();
    auto l = DdpListener::Listen(*g_host, &g_addr_b, sport, TestConfig());
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::move(*l);
    raw_ = std::make_unique<RawPeer>(&g_addr_a, NextPort(), sport);
    sev_.auto_accept = true;
    ASSERT_TRUE(RunUntil([&] { return server_ != nullptr && sev_.up; }));
  }
  void Run() { RunFor(30); }
  ~SctpDdpRawPeerTest() override { raw_.reset(); }
  std::unique_ptr<RawPeer> raw_;
};

TEST_F(SctpDdpRawPeerTest, RulesBrokenOnOneStreamEndOnlyThatStream) {
  OpenRaw();
  // Streams 1..5 get sessions; segments flow on all of them.
  for (uint16_t s = 1; s <= 5; ++s) ASSERT_TRUE(raw_->Control(s, 0, 1));  // Initiate
  Run();
  ASSERT_EQ(sev_.initiate_pd.size(), 5u);
  for (uint16_t s = 1; s <= 5; ++s) {
    ASSERT_TRUE(server_->StreamOpen(s));
    EXPECT_EQ(raw_->ControlsOn(s), std::vector<uint16_t>{2});  // Accept
  }
  // Stream 1: DDP-SSN far beyond anything in flight (RFC 5043 10).
  ASSERT_TRUE(raw_->Segment(1, 40000, "bogus"));
  // Stream 2: the same DDP-SSN twice (a duplicate SCTP already filtered).
  ASSERT_TRUE(raw_->Segment(2, 1, "first"));
  ASSERT_TRUE(raw_->Segment(2, 1, "again"));
  // Stream 3: an Accept from the active side (no legal sequence has it).
  ASSERT_TRUE(raw_->Control(3, 1, 2));
  // Stream 4: a DDP-SSN behind the next expected one.
  ASSERT_TRUE(raw_->Segment(4, 1, "one"));
  Run();
  ASSERT_TRUE(raw_->Segment(4, 0, "behind"));
  // Stream 5: well-behaved, out of order within the window.
  ASSERT_TRUE(raw_->Segment(5, 2, "second"));
  ASSERT_TRUE(raw_->Segment(5, 1, "first"));
  Run();
  EXPECT_TRUE(sev_.Ended(1, StreamEnd::kBadSsn));
  EXPECT_TRUE(sev_.Ended(2, StreamEnd::kBadSsn));
  EXPECT_TRUE(sev_.Ended(3, StreamEnd::kIllegalSequence));
  EXPECT_TRUE(sev_.Ended(4, StreamEnd::kBadSsn));
  EXPECT_EQ(server_->counter(DdpCounter::kEndBadSsn), 3u);
  EXPECT_EQ(server_->counter(DdpCounter::kEndIllegalSequence), 1u);
  EXPECT_EQ(sev_.segments[2].size(), 1u);  // "first" was delivered, the duplicate was not
  ASSERT_EQ(sev_.segments[4].size(), 1u);
  // The failed streams sent their Terminate (RFC 5043 6.1).
  for (uint16_t s = 1; s <= 4; ++s) {
    EXPECT_EQ(raw_->ControlsOn(s), std::vector<uint16_t>{4}) << "stream " << s;
    EXPECT_FALSE(server_->StreamOpen(s));
  }
  // Stream 5 is untouched and in order; the association is still up.
  ASSERT_EQ(sev_.segments[5].size(), 2u);
  EXPECT_EQ(sev_.segments[5][0], Bytes("first"));
  EXPECT_EQ(sev_.segments[5][1], Bytes("second"));
  EXPECT_TRUE(server_->StreamOpen(5));
  EXPECT_EQ(server_->state(), DdpAssociation::State::kUp);
  ASSERT_EQ(server_->SendSegment(5, ByteSpan(Bytes("still here"))), SendResult::kOk);
  // After the peer's Terminate, a failed stream is idle and usable again.
  ASSERT_TRUE(raw_->Control(1, 1, 4));
  Run();
  EXPECT_TRUE(server_->StreamIdle(1));
  ASSERT_TRUE(raw_->Control(1, 0, 1));
  EXPECT_TRUE(RunUntil([&] { return server_->StreamOpen(1); }));
}

TEST_F(SctpDdpRawPeerTest, MalformedControlAndOversizeSegmentEndTheStream) {
  OpenRaw();
  ASSERT_TRUE(raw_->Control(1, 0, 1));
  ASSERT_TRUE(raw_->Control(2, 0, 1));
  ASSERT_TRUE(raw_->Control(3, 0, 1));
  Run();
  // Stream 1: unknown function code 9.
  ASSERT_TRUE(raw_->Control(1, 1, 9));
  // Stream 2: a segment above the advertised maximum (RFC 5043 9).
  std::vector<uint8_t> big(2 + server_->mulpdu() + 1, 0x5a);
  StoreBe16(big.data(), 1);
  ASSERT_TRUE(raw_->Send(2, kPpidDdpSegment, big));
  // Stream 3: a PPID this layer does not know is dropped, stream unharmed.
  ASSERT_TRUE(raw_->Send(3, 99, Bytes("xx")));
  Run();
  EXPECT_TRUE(sev_.Ended(1, StreamEnd::kMalformed));
  EXPECT_TRUE(sev_.Ended(2, StreamEnd::kMalformed));
  EXPECT_EQ(server_->counter(DdpCounter::kEndMalformed), 2u);
  EXPECT_EQ(server_->counter(DdpCounter::kDropBadPpid), 1u);
  EXPECT_TRUE(server_->StreamOpen(3));
}

}  // namespace
}  // namespace iwarp::sctp

