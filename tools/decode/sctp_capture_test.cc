// iwarp-decode on DDP over SCTP that usrsctp really sent: two endpoints of
// this process's usrsctp stack exchange RDMAP Sends on several DDP streams
// (sessions initiated, accepted, rejected, terminated and reused) over an
// in-memory link that reorders, duplicates and drops; every packet as the
// receiver got it goes to a pcap, and the analyser must decode all of it with
// no violation and the exact counts. Hand-written captures check that
// DDP-SSN faults are named.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ddp/rdmap.h"
#include "ddp/segmenter.h"
#include "gtest/gtest.h"
#include "sctp/ddp_session.h"
#include "sctp/sctp_test_link.h"
#include "sctp/usrsctp_host.h"
#include "tools/decode/analyzer.h"
#include "tools/decode/capture.h"

namespace iwarp::decode {
namespace {

using sctp::DdpAssociation;
using sctp::DdpListener;
using sctp::SendResult;

char g_addr_a;  // AF_CONN cookies: the client (198.18.0.2) and the server (198.18.0.1)
char g_addr_b;
constexpr Endpoint kClientIp{0xC6120002, 0};
constexpr Endpoint kServerIp{0xC6120001, 0};

struct Decoded {
  Summary summary;
  std::string text;
};

Decoded Decode(const std::string& path) {
  std::ostringstream out;
  AnalyzerOptions o;
  o.rpc = AnalyzerOptions::Rpc::kOff;
  Analyzer a(out, o);
  const absl::Status s = ReadCapture(
      path, [&](const L4Packet& p) { a.OnPacket(p); },
      [&](uint64_t f, FrameResult r) { a.OnBadFrame(f, r); });
  EXPECT_TRUE(s.ok()) << s;
  a.Finish();
  return Decoded{a.summary(), out.str()};
}

struct Side : sctp::DdpLlpEvents {
  DdpAssociation* assoc = nullptr;
  bool up = false;
  bool reject_next = false;
  std::map<uint16_t, int> initiates, accepted, rejected, ended;
  std::map<uint16_t, uint64_t> segment_bytes;
  uint64_t segments = 0;
  void OnAssociationUp() override { up = true; }
  void OnInitiate(uint16_t s, ByteSpan) override {
    ++initiates[s];
    const std::vector<uint8_t> pd(40, 0x11);
    if (reject_next) {
      reject_next = false;
      EXPECT_EQ(assoc->Reject(s, ByteSpan(pd)), SendResult::kOk);
    } else {
      EXPECT_EQ(assoc->Accept(s, ByteSpan(pd)), SendResult::kOk);
    }
  }
  void OnAccepted(uint16_t s, ByteSpan) override { ++accepted[s]; }
  void OnRejected(uint16_t s, ByteSpan) override { ++rejected[s]; }
  void OnStreamEnded(uint16_t s, sctp::StreamEnd) override { ++ended[s]; }
  void OnSegment(uint16_t s, ByteSpan seg) override {
    ++segments;
    segment_bytes[s] += seg.size();
  }
};

class SctpCaptureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sctp::HostConfig hc;
    auto h = sctp::UsrsctpHost::Create(hc);
    ASSERT_TRUE(h.ok()) << h.status();
    host_ = h->release();  // lives until exit: usrsctp has one stack per process
    host_->RegisterConn(&g_addr_a);
    host_->RegisterConn(&g_addr_b);
  }

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iwarp_sctp_capture_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  static sctp::UsrsctpHost* host_;
  std::filesystem::path dir_;
};

sctp::UsrsctpHost* SctpCaptureTest::host_ = nullptr;

// One RDMAP Send of `length` bytes on `stream`, segmented at MULPDU and
// sent as far as the SCTP send buffer allows; Pump() resumes.
class OutgoingSend {
 public:
  OutgoingSend(DdpAssociation& a, uint16_t stream, uint32_t msn, uint32_t length)
      : a_(a), stream_(stream), seg_(Message(msn, length), a.mulpdu()), payload_(length),
        buf_(a.mulpdu()) {
    for (uint32_t i = 0; i < length; ++i) payload_[i] = static_cast<uint8_t>(i * 7 + msn);
  }
  // True once every segment has been accepted by the association.
  bool Pump() {
    for (;;) {
      if (pending_ == 0) {
        ddp::SegmentDesc d;
        if (!seg_.Next(MutableByteSpan(buf_), &d)) return true;
        std::copy_n(payload_.begin() + d.message_offset, d.payload_length,
                    buf_.begin() + d.header_length);
        pending_ = size_t{d.header_length} + d.payload_length;
      }
      const SendResult r = a_.SendSegment(stream_, ByteSpan(buf_.data(), pending_));
      if (r == SendResult::kWouldBlock) return false;
      EXPECT_EQ(r, SendResult::kOk);
      pending_ = 0;
      ++segments_;
    }
  }
  int segments() const { return segments_; }

 private:
  static ddp::OutboundMessage Message(uint32_t msn, uint32_t length) {
    ddp::OutboundMessage m;
    m.tagged = false;
    m.rsvd_ulp0 = rdmap::MakeControl(rdmap::Opcode::kSend);
    m.qn = rdmap::kQnSend;
    m.msn = Seq32(msn);
    m.length = length;
    return m;
  }
  DdpAssociation& a_;
  uint16_t stream_;
  ddp::Segmenter seg_;
  std::vector<uint8_t> payload_;
  std::vector<uint8_t> buf_;
  size_t pending_ = 0;
  int segments_ = 0;
};

TEST_F(SctpCaptureTest, UsrsctpTrafficThroughAnImpairedLinkDecodesCleanly) {
  const std::string path = Path("usrsctp.pcap");
  CaptureWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  size_t max_packet = 0;
  sctp::testing::MemLink link(*host_);
  link.Join(&g_addr_a, &g_addr_b);
  link.set_delivery_tap([&](void* to, ByteSpan p) {
    ASSERT_GE(p.size(), sctp::kSctpHeaderSize);
    Endpoint src = to == &g_addr_b ? kClientIp : kServerIp;
    Endpoint dst = to == &g_addr_b ? kServerIp : kClientIp;
    src.port = LoadBe16(p.data());
    dst.port = LoadBe16(p.data() + 2);
    if (!sctp::SctpCrcValid(p)) return;  // a corrupted packet: not what the peer accepted
    max_packet = std::max(max_packet, p.size());
    w.Sctp(src, dst, LoadBe32(p.data() + 4), p.subspan(sctp::kSctpHeaderSize));
  });

  sctp::AssociationConfig cfg;
  cfg.rto_initial_ms = 100;
  cfg.rto_min_ms = 20;
  cfg.rto_max_ms = 400;
  Side client, server;
  auto l = DdpListener::Listen(*host_, &g_addr_b, 4791, cfg);
  ASSERT_TRUE(l.ok()) << l.status();
  auto c = DdpAssociation::Connect(*host_, &g_addr_a, 40000, 4791, cfg, &client);
  ASSERT_TRUE(c.ok()) << c.status();
  client.assoc = c->get();
  std::unique_ptr<DdpAssociation> srv;
  auto run_until = [&](auto done) {
    const uint64_t end = link.now_ms() + 10000;
    while (link.now_ms() < end) {
      if (srv == nullptr) {
        srv = (*l)->Accept(&server);
        if (srv != nullptr) server.assoc = srv.get();
      }
      (*c)->Service();
      if (srv != nullptr) srv->Service();
      if (done()) return true;
      link.Step();
    }
    return false;
  };
  ASSERT_TRUE(run_until([&] { return client.up && server.up; }));

  link.set_impairment(sctp::testing::Impairment{.loss = 0.03, .duplicate = 0.05, .reorder = 0.2,
                                                .seed = 7});
  // Streams 1 and 2: sessions; stream 3: rejected.
  const std::vector<uint8_t> pd(100, 0x22);
  ASSERT_EQ(client.assoc->Initiate(1, ByteSpan(pd)), SendResult::kOk);
  ASSERT_EQ(client.assoc->Initiate(2, ByteSpan(pd)), SendResult::kOk);
  ASSERT_TRUE(run_until([&] { return client.accepted[1] == 1 && client.accepted[2] == 1; }));
  server.reject_next = true;
  ASSERT_EQ(client.assoc->Initiate(3, {}), SendResult::kOk);
  ASSERT_TRUE(run_until([&] { return client.rejected[3] == 1; }));

  // Sends of many sizes both ways (multi-segment ones included).
  const uint32_t sizes[] = {0, 1, 100, 1400, 1450, 3000, 9000, 20000};
  uint64_t segments_sent = 0, messages_sent = 0;
  uint32_t msn[2][3] = {{1, 1, 1}, {1, 1, 1}};  // [side][stream]
  for (int round = 0; round < 6; ++round) {
    for (uint16_t s : {1, 2}) {
      for (uint32_t size : sizes) {
        for (int side = 0; side < 2; ++side) {
          DdpAssociation& a = side == 0 ? *client.assoc : *server.assoc;
          // The send buffer may be full: let the link drain and resume.
          OutgoingSend out(a, s, msn[side][s], size);
          ASSERT_TRUE(run_until([&] { return out.Pump(); }))
              << "round " << round << " stream " << s << " size " << size << " side " << side
              << " client " << int(client.assoc->state()) << " server " << int(server.assoc->state())
              << " qfull " << host_->counter(sctp::HostCounter::kTxQueueFull) << " txover "
              << host_->counter(sctp::HostCounter::kTxOversize) << " badcrc "
              << host_->counter(sctp::HostCounter::kRxBadCrc);
          ++msn[side][s];
          segments_sent += static_cast<uint64_t>(out.segments());
          ++messages_sent;
        }
      }
    }
  }
  ASSERT_TRUE(run_until([&] { return client.segments + server.segments == segments_sent; }))
      << client.segments << "+" << server.segments << " of " << segments_sent << " client "
      << int(client.assoc->state()) << " server " << int(server.assoc->state()) << " qfull "
      << host_->counter(sctp::HostCounter::kTxQueueFull) << " txover "
      << host_->counter(sctp::HostCounter::kTxOversize) << " ends " << client.ended.size() << "/"
      << server.ended.size() << " c-reorderfull "
      << client.assoc->counter(sctp::DdpCounter::kEndReorderFull) << " s-reorderfull "
      << server.assoc->counter(sctp::DdpCounter::kEndReorderFull) << " badssn "
      << client.assoc->counter(sctp::DdpCounter::kEndBadSsn) << "/" << server.assoc->counter(sctp::DdpCounter::kEndBadSsn);
  // Stream 1 ends, then carries a new session (DDP-SSN and MSN from the start).
  ASSERT_EQ(client.assoc->Terminate(1), SendResult::kOk);
  ASSERT_TRUE(run_until([&] { return client.ended[1] == 1 && server.ended[1] == 1; }));
  ASSERT_EQ(client.assoc->Initiate(1, {}), SendResult::kOk);
  ASSERT_TRUE(run_until([&] { return client.accepted[1] == 2; }));
  OutgoingSend again(*client.assoc, 1, 1, 5000);
  ASSERT_TRUE(run_until([&] { return again.Pump(); }));
  segments_sent += static_cast<uint64_t>(again.segments());
  ++messages_sent;
  ASSERT_TRUE(run_until([&] { return client.segments + server.segments == segments_sent; }));
  link.set_impairment({});
  link.set_delivery_tap(nullptr);
  ASSERT_TRUE(w.Close().ok());
  srv.reset();
  c->reset();
  l->reset();
  for (int i = 0; i < 20; ++i) link.Step();

  const Decoded r = Decode(path);
  SCOPED_TRACE(r.text.substr(0, 20000));
  EXPECT_EQ(r.summary.violations, 0u);
  EXPECT_EQ(r.summary.sctp_associations, 1u);
  // Initiate x4 (1, 2, 3, 1 again), Accept x3, Reject x1, Terminate x2.
  EXPECT_EQ(r.summary.session_control, 10u);
  EXPECT_EQ(r.summary.ddp_segments, segments_sent);
  EXPECT_EQ(r.summary.rdmap_messages, messages_sent);
  EXPECT_EQ(r.text.find("waiting for DDP-SSN"), std::string::npos);
  EXPECT_GT(link.reordered(), 0u);
  // No packet, bundled ones included, exceeds the 1480-byte SCTP packet of
  // the 1500-byte IPv4 path (HostConfig::max_packet 1480 drops and counts
  // larger ones: usrsctp bundled to 1488 bytes before spp_pathmtu left out
  // the common header).
  EXPECT_EQ(max_packet, 1480u);
  EXPECT_EQ(host_->counter(sctp::HostCounter::kTxOversize), 0u);
}

// Hand-built DATA chunks (RFC 9260 3.3.1) for the fault captures.
std::vector<uint8_t> DataChunk(uint32_t tsn, uint16_t stream, uint32_t ppid, ByteSpan user) {
  std::vector<uint8_t> c(16 + user.size());
  c[0] = 0;     // DATA
  c[1] = 0x07;  // U, B, E
  StoreBe16(c.data() + 2, static_cast<uint16_t>(c.size()));
  StoreBe32(c.data() + 4, tsn);
  StoreBe16(c.data() + 8, stream);
  StoreBe16(c.data() + 10, 0);
  StoreBe32(c.data() + 12, ppid);
  std::copy(user.begin(), user.end(), c.begin() + 16);
  while (c.size() % 4 != 0) c.push_back(0);
  return c;
}

std::vector<uint8_t> Control(uint16_t ssn, uint16_t fc) {
  std::vector<uint8_t> u(4);
  StoreBe16(u.data(), ssn);
  StoreBe16(u.data() + 2, fc);
  return u;
}

std::vector<uint8_t> SendSegment(uint16_t ssn, uint32_t msn) {
  // DDP-SSN + untagged DDP header (RFC 5041 4.3) of a one-segment Send.
  std::vector<uint8_t> u(2 + 18 + 4, 0xab);
  StoreBe16(u.data(), ssn);
  u[2] = 0x41;  // L=1, DV=1
  u[3] = rdmap::MakeControl(rdmap::Opcode::kSend);
  StoreBe32(u.data() + 4, 0);
  StoreBe32(u.data() + 8, rdmap::kQnSend);
  StoreBe32(u.data() + 12, msn);
  StoreBe32(u.data() + 16, 0);
  return u;
}

TEST_F(SctpCaptureTest, DdpSsnFaultsAreNamed) {
  const std::string path = Path("faults.pcap");
  {
    CaptureWriter w;
    ASSERT_TRUE(w.Open(path).ok());
    Endpoint c = kClientIp, s = kServerIp;
    c.port = 40001;
    s.port = 4791;
    uint32_t tsn_c = 100, tsn_s = 500;
    auto cs = [&](uint16_t stream, uint32_t ppid, const std::vector<uint8_t>& u) {
      w.Sctp(c, s, 1, ByteSpan(DataChunk(tsn_c++, stream, ppid, ByteSpan(u))));
    };
    auto sc = [&](uint16_t stream, uint32_t ppid, const std::vector<uint8_t>& u) {
      w.Sctp(s, c, 2, ByteSpan(DataChunk(tsn_s++, stream, ppid, ByteSpan(u))));
    };
    // Stream 1: a clean session whose segments arrive out of DDP-SSN order.
    cs(1, 17, Control(0, 1));
    sc(1, 17, Control(0, 2));
    cs(1, 16, SendSegment(2, 2));
    cs(1, 16, SendSegment(1, 1));
    // Stream 2: the same DDP-SSN twice under different TSNs.
    cs(2, 17, Control(0, 1));
    sc(2, 17, Control(0, 2));
    cs(2, 16, SendSegment(1, 1));
    cs(2, 16, SendSegment(1, 2));
    // Stream 3: a session that does not start at DDP-SSN 0.
    cs(3, 17, Control(7, 1));
    sc(3, 17, Control(0, 2));
    cs(3, 16, SendSegment(8, 1));
    // Stream 4: a gap never filled.
    cs(4, 17, Control(0, 1));
    sc(4, 17, Control(0, 2));
    cs(4, 16, SendSegment(3, 1));
    ASSERT_TRUE(w.Close().ok());
  }
  const Decoded r = Decode(path);
  SCOPED_TRACE(r.text);
  EXPECT_EQ(r.summary.violations, 2u);
  EXPECT_NE(r.text.find("VIOLATION: DDP-SSN 1 repeated or behind the next expected 2 (RFC 5043 10)"),
            std::string::npos);
  EXPECT_NE(r.text.find("VIOLATION: session starts at DDP-SSN 7, not 0 (RFC 5043 6.1)"),
            std::string::npos);
  EXPECT_NE(r.text.find("capture ends with 1 chunks waiting for DDP-SSN 1"), std::string::npos);
  // Stream 1's two Sends decoded in DDP-SSN (= MSN) order: no MSN complaint.
  EXPECT_EQ(r.text.find("s1    VIOLATION"), std::string::npos);
  EXPECT_EQ(r.summary.rdmap_messages, 4u);
}

}  // namespace
}  // namespace iwarp::decode
