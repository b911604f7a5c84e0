// DDP segment transport cost on one core, DPDK-free: the same DDP segments
// carried (a) by two usrsctp endpoints (RFC 5043: DDP-SSN, unordered DATA
// chunks, ISA-L CRC32c in UsrsctpHost) and (b) by two tcp_lite TcpStacks with
// MPA framing (RFC 5044 FPDUs with CRC32c, no Markers), each over a
// preallocated in-memory packet ring, both ends run by this thread. Every
// figure includes both ends (sender and receiver work, SACK/ACK, timers).
//
//   goodput   20000 DDP segments of 1400 bytes one way: bytes/s of DDP
//             segments delivered in order
//   rate      200000 DDP segments of 64 bytes one way: segments/s
//   +bundle   the same with AssociationConfig::bundle_sends: the segments
//             sent in one pass of the loop share packets (Flush() before
//             the packets move), as SctpEndpoint runs it in iwarpd
//   echo      64-byte segments echoed by the receiver, 16 outstanding (the
//             pattern of tools/bench.sh sctp's send row): echoes/s without
//             and with bundle_sends, the first being the baseline
//
// "pkts" counts packets in both directions (data and SACK/ACK).
//
// Rates are per CPU second of this process (CLOCK_PROCESS_CPUTIME_ID, so
// usrsctp's internal thread counts too), not per wall-clock second.
//
// The baseline measured in the same run is memcpy of the same bytes in the
// same segment sizes. Run through `meson test --benchmark` (tools/bench.sh);
// never part of the test suites. The machine is shared and noisy: compare
// the ratios.
#include <time.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mpa/mpa_decoder.h"
#include "mpa/mpa_fpdu.h"
#include "sctp/ddp_session.h"
#include "sctp/sctp_test_link.h"
#include "sctp/usrsctp_host.h"
#include "tcp_lite/tcp_stack.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp {
namespace {

// Process CPU seconds (all threads): the machine is shared, and wall time
// includes whatever else ran on the core.
double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// A DDP segment as DDP hands it to the LLP: an untagged header (RFC 5041
// 4.3) and payload. Content does not matter to either transport.
std::vector<uint8_t> MakeSegment(size_t size) {
  std::vector<uint8_t> s(size, 0x5a);
  s[0] = 0x41;
  s[1] = 0x43;
  return s;
}

double MemcpyBaseline(size_t seg, uint64_t count) {
  const std::vector<uint8_t> src = MakeSegment(seg);
  std::vector<uint8_t> dst(seg * 64);
  const double t0 = CpuNow();
  for (uint64_t i = 0; i < count; ++i) {
    std::memcpy(dst.data() + (i % 64) * seg, src.data(), seg);
    asm volatile("" : : "r"(dst.data()) : "memory");
  }
  return CpuNow() - t0;
}

// ---- SCTP ------------------------------------------------------------------

char g_addr_a, g_addr_b;

struct SctpSide : sctp::DdpLlpEvents {
  sctp::DdpAssociation* assoc = nullptr;
  bool up = false, accepted = false;
  uint64_t segments = 0, bytes = 0;
  bool echo = false;  // send every received segment back
  void OnAssociationUp() override { up = true; }
  void OnInitiate(uint16_t s, ByteSpan) override { assoc->Accept(s, {}); }
  void OnAccepted(uint16_t, ByteSpan) override { accepted = true; }
  void OnSegment(uint16_t, ByteSpan seg) override {
    ++segments;
    bytes += seg.size();
    if (echo) assoc->SendSegment(0, seg);
  }
};

double SctpRun(sctp::UsrsctpHost& host, uint16_t port, size_t seg_size, uint64_t count,
               bool bundle, uint64_t depth, uint64_t* packets) {
  sctp::testing::RingLink ring(host, &g_addr_a, &g_addr_b);
  sctp::AssociationConfig cfg;
  cfg.send_buffer = 1 << 20;
  cfg.receive_buffer = 1 << 20;
  cfg.rto_initial_ms = 100;
  cfg.rto_min_ms = 20;
  cfg.rto_max_ms = 400;
  cfg.bundle_sends = bundle;
  SctpSide client, server;
  auto l = sctp::DdpListener::Listen(host, &g_addr_b, port, cfg);
  auto c = sctp::DdpAssociation::Connect(host, &g_addr_a, static_cast<uint16_t>(port + 1), port, cfg,
                                         &client);
  if (!l.ok() || !c.ok()) {
    std::printf("sctp set-up failed\n");
    return 0;
  }
  client.assoc = c->get();
  std::unique_ptr<sctp::DdpAssociation> srv;
  auto service = [&] {
    if (srv == nullptr && (srv = (*l)->Accept(&server)) != nullptr) server.assoc = srv.get();
    (*c)->Service();
    if (srv != nullptr) srv->Service();
    (*c)->Flush();
    if (srv != nullptr) srv->Flush();
  };
  while (!client.accepted) {
    service();
    if (client.up && srv != nullptr && server.up && client.assoc->StreamIdle(0)) {
      client.assoc->Initiate(0, {});
    }
    ring.Step();
  }
  const std::vector<uint8_t> seg = MakeSegment(seg_size);
  const uint64_t tx0 = host.counter(sctp::HostCounter::kTxPackets);
  uint64_t sent = 0;
  const double t0 = CpuNow();
  if (depth == 0) {
    while (server.segments < count) {
      while (sent < count && client.assoc->SendSegment(0, ByteSpan(seg)) == sctp::SendResult::kOk) {
        ++sent;
      }
      client.assoc->Flush();
      ring.Step();
      service();
    }
  } else {
    server.echo = true;
    while (client.segments < count) {
      while (sent < count && sent - client.segments < depth &&
             client.assoc->SendSegment(0, ByteSpan(seg)) == sctp::SendResult::kOk) {
        ++sent;
      }
      client.assoc->Flush();
      ring.Step();
      service();
    }
  }
  const double s = CpuNow() - t0;
  *packets = host.counter(sctp::HostCounter::kTxPackets) - tx0;
  srv.reset();
  c->reset();
  l->reset();
  for (int i = 0; i < 10; ++i) ring.Step();
  return s;
}

// ---- TCP + MPA ---------------------------------------------------------------

struct TcpEnd : tcp::TcpUser, mpa::UlpduSink {
  TcpEnd() : decoder(mpa::FpduConfig{}, Seq32(0), mpa::kMaxUlpduLength) {}
  tcp::TcpUser* OnAccept(tcp::ConnId c, const tcp::FourTuple&) override {
    conn = c;
    return this;
  }
  void OnConnected(tcp::ConnId c) override { conn = c; }
  size_t OnData(tcp::ConnId, uint64_t, ByteSpan d) override {
    decoder.Feed(d, *this);
    return d.size();
  }
  void OnUlpdu(ByteSpan ulpdu, Seq32) override {
    ++segments;
    bytes += ulpdu.size();
  }
  tcp::ConnId conn;
  mpa::FpduDecoder decoder;
  uint64_t segments = 0, bytes = 0;
};

double TcpRun(size_t seg_size, uint64_t count, uint64_t* packets) {
  tcp::testing::RingLink link(0);
  tcp::TcpOptions o;
  o.max_connections = 4;
  o.send_buffer_bytes = 1 << 20;
  o.receive_buffer_bytes = 1 << 20;
  o.delayed_ack_us = 200;
  const uint32_t ip_a[] = {tcp::testing::kIpA};
  const uint32_t ip_b[] = {tcp::testing::kIpB};
  tcp::IsnGenerator isn = tcp::testing::TestIsn();
  auto a = std::move(*tcp::TcpStack::Create(o, ip_a, link.to_b, isn, 0));
  auto b = std::move(*tcp::TcpStack::Create(o, ip_b, link.to_a, isn, 0));
  TcpEnd client, server;
  (void)b->Listen(4791, server);
  (void)a->Connect(tcp::testing::kIpA, tcp::testing::kIpB, 4791, client, 0, 0);
  uint64_t now = 0;
  auto step = [&] {
    now += 5;
    link.Deliver(1, *b, now, tcp::ChecksumCheck::kVerify);
    link.Deliver(0, *a, now, tcp::ChecksumCheck::kVerify);
    a->RunTimers(now);
    b->RunTimers(now);
  };
  for (int i = 0; i < 10; ++i) step();
  // Full Operation starts at sequence 0 of the MPA stream on both ends
  // (the benchmark skips the MPA Request/Reply exchange: not per segment).
  const std::vector<uint8_t> seg = MakeSegment(seg_size);
  std::vector<uint8_t> fpdu(mpa::FpduSizeWithoutMarkers(seg_size));
  const uint64_t out0 = a->stats().segments_out + b->stats().segments_out;
  uint64_t sent = 0;
  size_t pending_off = 0, pending_len = 0;
  Seq32 seq(0);
  const double t0 = CpuNow();
  while (server.segments < count) {
    for (;;) {
      if (pending_len == 0) {
        if (sent == count) break;
        const auto r = mpa::EncodeFpdu(ByteSpan(seg), {}, seq, mpa::FpduConfig{}, MutableByteSpan(fpdu));
        seq += static_cast<uint32_t>(r.size);
        pending_off = 0;
        pending_len = r.size;
        ++sent;
      }
      const size_t n = a->Send(client.conn, ByteSpan(fpdu.data() + pending_off, pending_len), now);
      pending_off += n;
      pending_len -= n;
      if (pending_len != 0) break;
    }
    step();
  }
  const double s = CpuNow() - t0;
  *packets = a->stats().segments_out + b->stats().segments_out - out0;
  if (server.decoder.status() != mpa::DecodeStatus::kOk) std::printf("(MPA decode failed)\n");
  return s;
}

void Report(const char* what, size_t seg, uint64_t count, double sctp_s, uint64_t sctp_pkts,
            double tcp_s, uint64_t tcp_pkts) {
  const double memcpy_s = MemcpyBaseline(seg, count);
  const double bytes = double(seg) * double(count);
  std::printf(
      "%-14s %6llu x %4zu B: sctp+rfc5043 %8.1f MB/s %9.0f seg/s (%llu pkts)   tcp_lite+mpa %8.1f MB/s "
      "%9.0f seg/s (%llu pkts)   memcpy baseline %9.1f MB/s   sctp/tcp %.2f   sctp/memcpy %.4f\n",
      what, static_cast<unsigned long long>(count), seg, bytes / sctp_s / 1e6, count / sctp_s,
      static_cast<unsigned long long>(sctp_pkts), bytes / tcp_s / 1e6, count / tcp_s,
      static_cast<unsigned long long>(tcp_pkts), bytes / memcpy_s / 1e6, tcp_s / sctp_s,
      memcpy_s / sctp_s);
}

}  // namespace
}  // namespace iwarp

// Arguments: none runs every case; "echo-off" / "echo-on" run only the
// echo case without / with bundling (for profiling one of them).
int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  using namespace iwarp;  // NOLINT: benchmark driver
  sctp::HostConfig hc;
  hc.tx_queue_packets = 4096;
  auto host = sctp::UsrsctpHost::Create(hc);
  if (!host.ok()) {
    std::printf("usrsctp: %s\n", std::string(host.status().message()).c_str());
    return 1;
  }
  (*host)->RegisterConn(&g_addr_a);
  (*host)->RegisterConn(&g_addr_b);
  struct Case {
    const char* name;
    size_t seg;
    uint64_t count;
    bool bundle;
  } cases[] = {{"goodput", 1400, 20000, false},
               {"goodput+bundle", 1400, 20000, true},
               {"rate", 64, 200000, false},
               {"rate+bundle", 64, 200000, true}};
  uint16_t port = 6000;
  if (only == "echo-off" || only == "echo-on") {
    uint64_t p = 0;
    const double sec = SctpRun(**host, port, 64, 200000, only == "echo-on", 16, &p);
    std::printf("%s: %.0f echo/s (%llu pkts)\n", only.c_str(), 200000 / sec,
                static_cast<unsigned long long>(p));
    (void)host->release();
    return 0;
  }
  for (const Case& k : cases) {
    uint64_t sp = 0, tp = 0;
    const double s = SctpRun(**host, port, k.seg, k.count, k.bundle, /*depth=*/0, &sp);
    port = static_cast<uint16_t>(port + 2);
    const double t = TcpRun(k.seg, k.count, &tp);
    Report(k.name, k.seg, k.count, s, sp, t, tp);
  }
  {
    constexpr uint64_t kEchoes = 100000;
    uint64_t p_off = 0, p_on = 0;
    const double off = SctpRun(**host, port, 64, kEchoes, false, 16, &p_off);
    port = static_cast<uint16_t>(port + 2);
    const double on = SctpRun(**host, port, 64, kEchoes, true, 16, &p_on);
    port = static_cast<uint16_t>(port + 2);
    std::printf(
        "echo, 16 out  %6llu x   64 B: sctp+rfc5043 %9.0f echo/s (%llu pkts)   +bundle %9.0f echo/s "
        "(%llu pkts)   bundle/baseline %.2f\n",
        static_cast<unsigned long long>(kEchoes), kEchoes / off,
        static_cast<unsigned long long>(p_off), kEchoes / on, static_cast<unsigned long long>(p_on),
        off / on);
  }
  // The host stays alive to exit (usrsctp_finish waits for closing sockets).
  (void)host->release();
  return 0;
}
