// Fuzz target: the MPA gate of a listening port (mpa_gate.h) under arbitrary
// connection patterns and arbitrary startup bytes from several sources.
//
// A Listener with a pool of two QPs and a small gate (4 waiting connections,
// 2 per source, a 20 ms Request timeout) on one in-memory TcpStack; the other
// stack opens connections from three addresses. The input is a list of
// operations:
//   op & 3 == 0: open a connection from source (op >> 2) % 3
//   op & 3 == 1: then a length byte n and n bytes: written on connection
//                (op >> 2) % 8 (a valid MPA Request when the bytes are "R",
//                so that binding is reached)
//   op & 3 == 2: close connection (op >> 2) % 8 (FIN, or RST when op & 0x80)
//   op & 3 == 3: advance the clock by (op >> 2) * 1 ms
//
// Traps on: more waiting connections than max_pending, more from one source
// than max_pending_per_source, more QPs bound than the pool, a Reply sent on
// a connection whose Request was not valid, counters that do not add up.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "iwarp/mpa_gate.h"
#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"

namespace {

using namespace iwarp;  // NOLINT: fuzz driver

void Check(bool ok) {
  if (!ok) std::abort();
}

struct Peer final : tcp::TcpUser {
  size_t OnData(tcp::ConnId, uint64_t, ByteSpan d) override {
    received += d.size();
    return d.size();
  }
  void OnClosed(tcp::ConnId, tcp::CloseReason) override { closed = true; }
  tcp::ConnId conn;
  size_t received = 0;
  bool closed = false;
  std::vector<uint8_t> sent;  // the first kMaxRequestBytes written
};

std::vector<uint8_t> ValidRequest() {
  mpa::StartupFrame f;
  f.type = mpa::FrameType::kRequest;
  f.crc = true;
  f.revision = 2;
  f.ird_ord = mpa::IrdOrd{4, 4, true, false, true, false};
  std::vector<uint8_t> out(mpa::StartupFrameSize(f));
  (void)mpa::EncodeStartupFrame(f, MutableByteSpan(out));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tcp::testing::Link link(20, {});
  tcp::IsnGenerator isn(tcp::testing::TestIsn());
  engine::testing::MutatingPort pa(link, 0), pb(link, 1);
  tcp::TcpOptions t;
  t.max_connections = 16;
  t.max_listeners = 2;
  t.send_buffer_bytes = 16 * 1024;
  t.receive_buffer_bytes = 16 * 1024;
  t.delayed_ack_us = 0;
  const uint32_t src[] = {tcp::testing::kIpA, tcp::testing::kIpA + 1, tcp::testing::kIpA + 2};
  const uint32_t dst[] = {tcp::testing::kIpB};
  std::unique_ptr<tcp::TcpStack> a = *tcp::TcpStack::Create(t, src, pa, isn, 0);
  std::unique_ptr<tcp::TcpStack> b = *tcp::TcpStack::Create(t, dst, pb, isn, 0);
  link.Attach(a.get(), b.get());
  engine::testing::TestMemory mem;
  engine::testing::RecordingObserver obs;
  std::vector<std::unique_ptr<engine::Qp>> qps;
  for (int i = 0; i < 2; ++i) qps.push_back(*engine::Qp::Create(engine::QpOptions{}, *b, mem, obs));
  engine::MpaGateOptions g;
  g.max_pending = 4;
  g.max_pending_per_source = 2;
  g.request_timeout_us = 20'000;
  std::unique_ptr<engine::Listener> listener = *engine::Listener::Create(*b, 2, g);
  Check(listener->Listen(engine::testing::kPort, link.now).ok());
  for (auto& q : qps) listener->AddQp(q.get());

  std::vector<std::unique_ptr<Peer>> peers;
  const std::vector<uint8_t> request = ValidRequest();
  auto run = [&](uint64_t us) {
    link.idle_hook = [&] {
      listener->Poll(link.now);
      for (auto& q : qps) q->Poll(link.now);
      const engine::MpaGate& gate = listener->gate();
      Check(gate.pending() <= g.max_pending);
      return false;
    };
    link.RunUntil(link.now + us);
    link.idle_hook = nullptr;
  };

  size_t i = 0;
  while (i < size && peers.size() < 64) {
    const uint8_t op = data[i++];
    switch (op & 3) {
      case 0: {
        auto p = std::make_unique<Peer>();
        absl::StatusOr<tcp::ConnId> c =
            a->Connect(src[(op >> 2) % 3], tcp::testing::kIpB, engine::testing::kPort, *p, 0,
                       link.now);
        if (c.ok()) {
          p->conn = *c;
          peers.push_back(std::move(p));
        }
        break;
      }
      case 1: {
        if (i >= size) break;
        size_t n = data[i++];
        n = std::min(n, size - i);
        ByteSpan bytes(data + i, n);
        i += n;
        if (peers.empty()) break;
        Peer& p = *peers[(op >> 2) % peers.size()];
        if (n == 1 && bytes[0] == 'R') bytes = ByteSpan(request);
        const size_t took = a->Send(p.conn, bytes, link.now);
        const size_t keep = std::min(took, engine::kMaxRequestBytes - std::min(
                                                 p.sent.size(), engine::kMaxRequestBytes));
        p.sent.insert(p.sent.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
        break;
      }
      case 2: {
        if (peers.empty()) break;
        Peer& p = *peers[(op >> 2) % peers.size()];
        if ((op & 0x80) != 0) {
          a->Abort(p.conn, link.now);
        } else {
          a->Shutdown(p.conn, link.now);
        }
        break;
      }
      case 3:
        run(static_cast<uint64_t>(op >> 2) * 1000);
        break;
    }
    run(200);
  }
  run(100'000);

  const engine::MpaGateCounters& c = listener->gate().counters();
  size_t bound = 0;
  for (auto& q : qps) bound += q->state() != engine::QpState::kIdle ? 1 : 0;
  Check(bound <= 2);
  // Every valid Request reached the owner; no QP was bound without one.
  Check(obs.requests <= static_cast<int>(c.requests));
  Check(c.requests + c.bad_requests + c.refused_private_data <= c.passive_opens);
  Check(c.rejects_sent <= c.refused_no_qp + c.refused_private_data);
  // Nobody got a byte back without having sent a valid Request first (a
  // Reply, or a Reject, answers only a Request; the gate never speaks first).
  for (const auto& p : peers) {
    if (p->received == 0) continue;
    mpa::StartupFrame f;
    Check(mpa::DecodeStartupFrame(ByteSpan(p->sent), mpa::FrameType::kRequest, &f).status ==
          mpa::FrameStatus::kOk);
  }
  listener.reset();
  qps.clear();
  b.reset();
  a.reset();
  return 0;
}
