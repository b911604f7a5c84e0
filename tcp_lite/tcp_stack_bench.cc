// TcpStack cost on one core, DPDK-free: two stacks joined by a preallocated
// in-memory packet ring, both run by this thread (so every figure includes
// both ends: sender and receiver work, ACKs, timers).
//
//   bulk      one-way transfer of 64 MiB, 1448-byte segments; goodput in
//             bytes/s beside memcpy of the same 64 MiB (in 16 KiB chunks) as
//             the baseline measured in this run; once with the receive
//             checksum verified in software, once as if the NIC verified it
//   rr64      64-byte request / 64-byte response ping-pong; transactions/s
//             beside memcpy of the same 128 bytes per transaction
//
// Run through `meson test --benchmark` (tools/bench.sh); never part of the
// test suites. The machine is shared and noisy: compare the ratios.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "tcp_lite/tcp_stack.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::tcp {
namespace {

using testing::kIpA;
using testing::kIpB;
using testing::RingLink;
using testing::TestIsn;

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

class Endpoint : public TcpUser {
 public:
  TcpUser* OnAccept(ConnId c, const FourTuple&) override {
    conn = c;
    return this;
  }
  void OnConnected(ConnId c) override { conn = c; }
  size_t OnData(ConnId, uint64_t, ByteSpan d) override {
    received += d.size();
    last = d.empty() ? 0 : d.back();
    return d.size();
  }
  ConnId conn;
  uint64_t received = 0;
  uint8_t last = 0;
};

struct Pair {
  Pair() : link(0) {
    TcpOptions o;
    o.max_connections = 4;
    o.send_buffer_bytes = 512 * 1024;
    o.receive_buffer_bytes = 512 * 1024;
    o.delayed_ack_us = 200;
    const uint32_t ip_a[] = {kIpA};
    const uint32_t ip_b[] = {kIpB};
    a = std::move(*TcpStack::Create(o, ip_a, link.to_b, isn, 0));
    b = std::move(*TcpStack::Create(o, ip_b, link.to_a, isn, 0));
    (void)b->Listen(4791, server);
    (void)a->Connect(kIpA, kIpB, 4791, client, 0, 0);
    for (int i = 0; i < 10; ++i) Step();
  }
  void Step() {
    now += 5;
    link.Deliver(1, *b, now, check);
    link.Deliver(0, *a, now, check);
    a->RunTimers(now);
    b->RunTimers(now);
  }
  IsnGenerator isn = TestIsn();
  RingLink link;
  std::unique_ptr<TcpStack> a, b;
  Endpoint client, server;
  uint64_t now = 0;
  ChecksumCheck check = ChecksumCheck::kVerify;
};

void Bulk(ChecksumCheck check) {
  constexpr uint64_t kBytes = 64 << 20;
  std::vector<uint8_t> chunk(16384, 0x5A);
  std::vector<uint8_t> dst(kBytes);
  // Baseline: memcpy of the same bytes in the same chunks.
  auto t0 = Clock::now();
  for (uint64_t off = 0; off < kBytes; off += chunk.size()) {
    std::memcpy(dst.data() + off, chunk.data(), chunk.size());
  }
  auto t1 = Clock::now();
  const double memcpy_s = Seconds(t0, t1);

  Pair p;
  p.check = check;
  uint64_t sent = 0;
  t0 = Clock::now();
  while (p.server.received < kBytes) {
    while (sent < kBytes) {
      const size_t n = p.a->Send(p.client.conn, ByteSpan(chunk), p.now);
      sent += n;
      if (n < chunk.size()) break;
    }
    p.Step();
  }
  t1 = Clock::now();
  const double tcp_s = Seconds(t0, t1);
  std::printf("bulk   64 MiB one way, rx checksum %-8s: tcp_lite %8.1f MB/s   memcpy baseline %8.1f MB/s   ratio %.3f"
              "   (%llu segments out, %llu retransmitted)\n",
              check == ChecksumCheck::kVerify ? "software" : "offload",
              kBytes / tcp_s / 1e6, kBytes / memcpy_s / 1e6, memcpy_s / tcp_s,
              static_cast<unsigned long long>(p.a->stats().segments_out),
              static_cast<unsigned long long>(p.a->stats().retransmitted_segments));
  if (dst[kBytes / 2] != 0x5A) std::printf("(baseline check failed)\n");
}

void RequestResponse() {
  constexpr int kTransactions = 200'000;
  uint8_t req[64], resp[64], sink[128];
  std::memset(req, 1, sizeof(req));
  std::memset(resp, 2, sizeof(resp));
  auto t0 = Clock::now();
  for (int i = 0; i < kTransactions; ++i) {
    req[0] = static_cast<uint8_t>(i);
    std::memcpy(sink, req, 64);
    std::memcpy(sink + 64, resp, 64);
    asm volatile("" : : "r"(sink) : "memory");
  }
  auto t1 = Clock::now();
  const double memcpy_s = Seconds(t0, t1);

  Pair p;
  t0 = Clock::now();
  for (int i = 0; i < kTransactions; ++i) {
    const uint64_t want = p.server.received + 64;
    p.a->Send(p.client.conn, ByteSpan(req), p.now);
    while (p.server.received < want) p.Step();
    const uint64_t want2 = p.client.received + 64;
    p.b->Send(p.server.conn, ByteSpan(resp), p.now);
    while (p.client.received < want2) p.Step();
  }
  t1 = Clock::now();
  const double tcp_s = Seconds(t0, t1);
  std::printf("rr64   64 B request + 64 B response: tcp_lite %10.0f trans/s   memcpy baseline %12.0f "
              "trans/s   (%.2f us per transaction, both stacks)\n",
              kTransactions / tcp_s, kTransactions / memcpy_s, tcp_s / kTransactions * 1e6);
}

}  // namespace
}  // namespace iwarp::tcp

int main() {
  iwarp::tcp::Bulk(iwarp::tcp::ChecksumCheck::kVerify);
  iwarp::tcp::Bulk(iwarp::tcp::ChecksumCheck::kSkip);
  iwarp::tcp::RequestResponse();
  return 0;
}
