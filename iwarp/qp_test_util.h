// Test helpers for the iWARP engine: a MemoryDomain over plain vectors with
// guard bytes around every region and a FixedStagTable, a recording
// QpObserver, and two engines over two TcpStacks joined by the in-memory
// tcp_lite test link on a virtual clock. Test-only.
#ifndef IWARPD_IWARP_QP_TEST_UTIL_H_
#define IWARPD_IWARP_QP_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ddp/stag_table.h"
#include "iwarp/qp.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::engine::testing {

inline constexpr size_t kGuard = 64;
inline constexpr uint8_t kGuardByte = 0xEE;

// Regions live in vectors with kGuard guard bytes on both sides; the engine
// only ever sees the inner span.
class TestMemory final : public MemoryDomain {
 public:
  TestMemory() : table_(4096) {}

  const ddp::StagTable& stags() const override { return table_; }
  MutableByteSpan Resolve(uint64_t handle) override {
    if (handle >= regions_.size()) return MutableByteSpan();
    auto& v = regions_[handle];
    return MutableByteSpan(v.data() + kGuard, v.size() - 2 * kGuard);
  }
  ddp::StagStatus InvalidateRemote(uint32_t stag, uint32_t pd) override {
    return table_.Invalidate(stag, pd, true);
  }

  // Registers `length` bytes at TO `base_to`; returns the STag.
  uint32_t Register(size_t length, uint8_t access, uint64_t base_to = 0x10000, uint32_t pd = 0) {
    std::vector<uint8_t> v(length + 2 * kGuard, 0);
    std::fill(v.begin(), v.begin() + kGuard, kGuardByte);
    std::fill(v.end() - kGuard, v.end(), kGuardByte);
    regions_.push_back(std::move(v));
    ddp::TaggedRegion r;
    r.base_to = base_to;
    r.length = length;
    r.access = access;
    r.pd = pd;
    r.valid = true;
    r.handle = regions_.size() - 1;
    const uint32_t stag = *table_.Register(r);
    handles_[stag] = r.handle;
    return stag;
  }
  MutableByteSpan Bytes(uint32_t stag) { return Resolve(handles_.at(stag)); }
  bool GuardsIntact() const {
    for (const auto& v : regions_) {
      for (size_t i = 0; i < kGuard; ++i) {
        if (v[i] != kGuardByte || v[v.size() - 1 - i] != kGuardByte) return false;
      }
    }
    return true;
  }
  ddp::FixedStagTable& table() { return table_; }

 private:
  ddp::FixedStagTable table_;
  std::vector<std::vector<uint8_t>> regions_;
  std::map<uint32_t, uint64_t> handles_;
};

class RecordingObserver final : public QpObserver {
 public:
  AcceptDecision OnConnectRequest(Qp&, const mpa::StartupFrame& req) override {
    ++requests;
    request_pd.assign(req.private_data.begin(), req.private_data.end());
    request_revision = req.revision;
    return AcceptDecision{accept, ByteSpan(reply_pd)};
  }
  void OnEstablished(Qp&, ByteSpan pd) override {
    established = true;
    peer_pd.assign(pd.begin(), pd.end());
  }
  void OnConnectFailed(Qp&, ConnectError e, ByteSpan pd) override {
    failed = e;
    peer_pd.assign(pd.begin(), pd.end());
  }
  void OnTerminate(Qp&, const rdmap::TerminateCode& c, bool sent) override {
    (sent ? term_sent : term_received).push_back(c);
  }
  void OnDisconnected(Qp&) override { disconnected = true; }

  bool accept = true;
  std::vector<uint8_t> reply_pd;
  int requests = 0;
  uint8_t request_revision = 0;
  std::vector<uint8_t> request_pd;
  bool established = false;
  ConnectError failed = ConnectError::kNone;
  std::vector<uint8_t> peer_pd;
  std::vector<rdmap::TerminateCode> term_sent, term_received;
  bool disconnected = false;
};

// A TcpOutput feeding the Link, with an optional mutation of each segment.
class MutatingPort final : public tcp::TcpOutput {
 public:
  MutatingPort(tcp::testing::Link& link, int side) : link_(link), side_(side) {}
  bool EmitSegment(uint32_t src, uint32_t dst, ByteSpan hdr,
                   std::span<const ByteSpan> payload) override {
    std::vector<uint8_t> b(hdr.begin(), hdr.end());
    for (ByteSpan p : payload) b.insert(b.end(), p.begin(), p.end());
    if (mutate) mutate(b, hdr.size());
    link_.Enqueue(side_, src, dst, std::move(b));
    return true;
  }
  // (segment bytes, TCP header length)
  std::function<void(std::vector<uint8_t>&, size_t)> mutate;

 private:
  tcp::testing::Link& link_;
  int side_;
};

struct Side {
  // Destroyed in reverse: the stack goes first, while its user (qp) and
  // output (port) still exist.
  std::unique_ptr<MutatingPort> port;
  TestMemory mem;
  RecordingObserver obs;
  std::unique_ptr<Qp> qp;
  std::unique_ptr<tcp::TcpStack> stack;
  std::vector<Completion> cqes;

  void Drain() {
    Completion c[64];
    for (;;) {
      const size_t n = qp->PollCompletions(std::span<Completion>(c));
      if (n == 0) break;
      cqes.insert(cqes.end(), c, c + n);
    }
  }
};

inline constexpr uint16_t kPort = 4791;

// The TCP options of a test pair: the stack's defaults with a table of 8
// connections instead of 256. Each slot's send and receive buffers are
// allocated up front (512 KiB by default): 256 slots are 128 MiB per stack,
// which meson's MALLOC_PERTURB_ writes in full for every test (83 s for this
// binary instead of 3).
inline tcp::TcpOptions PairTcpOptions() {
  tcp::TcpOptions t;
  t.max_connections = 8;
  return t;
}

// Side a (initiator, kIpA) and side b (responder, kIpB).
class Pair {
 public:
  Pair(const QpOptions& oa, const QpOptions& ob, tcp::testing::Link::Impairment imp = {},
       tcp::TcpOptions topt = PairTcpOptions())
      : link(20, imp), isn(tcp::testing::TestIsn()) {
    a.port = std::make_unique<MutatingPort>(link, 0);
    b.port = std::make_unique<MutatingPort>(link, 1);
    const uint32_t ip_a[] = {tcp::testing::kIpA};
    const uint32_t ip_b[] = {tcp::testing::kIpB};
    topt.delayed_ack_us = 0;
    a.stack = *tcp::TcpStack::Create(topt, ip_a, *a.port, isn, 0);
    b.stack = *tcp::TcpStack::Create(topt, ip_b, *b.port, isn, 0);
    link.Attach(a.stack.get(), b.stack.get());
    a.qp = *Qp::Create(oa, *a.stack, a.mem, a.obs);
    b.qp = *Qp::Create(ob, *b.stack, b.mem, b.obs);
    listener = *Listener::Create(*b.stack, 4, MpaGateOptions{});
    (void)listener->Listen(kPort, link.now);
    listener->AddQp(b.qp.get());
  }

  absl::Status Connect(ByteSpan pd = {}) {
    return a.qp->Connect(tcp::testing::kIpA, tcp::testing::kIpB, kPort, pd, link.now);
  }

  // Runs the link (and both engines' Poll) until `done` or `max_us` elapse.
  bool RunUntil(const std::function<bool()>& done, uint64_t max_us) {
    bool hit = false;
    link.idle_hook = [&] {
      listener->Poll(link.now);
      a.qp->Poll(link.now);
      b.qp->Poll(link.now);
      a.Drain();
      b.Drain();
      hit = done();
      return hit;
    };
    link.RunUntil(link.now + max_us);
    link.idle_hook = nullptr;
    return hit;
  }
  bool Establish(ByteSpan pd = {}) {
    if (!Connect(pd).ok()) return false;
    return RunUntil([&] { return a.obs.established && b.obs.established; }, 2'000'000);
  }

  tcp::testing::Link link;
  tcp::IsnGenerator isn;
  Side a, b;
  std::unique_ptr<Listener> listener;
};

// Two engines over two stacks joined by tcp_lite's preallocated packet ring
// (no allocation per packet), driven on a caller-supplied clock: for the
// benchmark and the allocation test.
class RingPair {
 public:
  RingPair(const QpOptions& o, uint64_t now_us) : isn(tcp::testing::TestIsn()) {
    tcp::TcpOptions t;
    t.max_connections = 4;
    t.send_buffer_bytes = 1024 * 1024;
    t.receive_buffer_bytes = 1024 * 1024;
    const uint32_t ip_a[] = {tcp::testing::kIpA};
    const uint32_t ip_b[] = {tcp::testing::kIpB};
    a = *tcp::TcpStack::Create(t, ip_a, link.to_b, isn, now_us);
    b = *tcp::TcpStack::Create(t, ip_b, link.to_a, isn, now_us);
    qa = *Qp::Create(o, *a, ma, oa);
    qb = *Qp::Create(o, *b, mb, ob);
    listener = *Listener::Create(*b, 1, MpaGateOptions{});
    (void)listener->Listen(kPort, now_us);
    listener->AddQp(qb.get());
  }
  void Step(uint64_t now_us) {
    link.Deliver(1, *b, now_us);
    link.Deliver(0, *a, now_us);
    a->RunTimers(now_us);
    b->RunTimers(now_us);
    listener->Poll(now_us);
    qa->Poll(now_us);
    qb->Poll(now_us);
  }
  template <typename Clock>
  bool Connect(Clock&& now) {
    if (!qa->Connect(tcp::testing::kIpA, tcp::testing::kIpB, kPort, {}, now()).ok()) return false;
    for (int i = 0; i < 100000 && !(oa.established && ob.established); ++i) Step(now());
    return oa.established && ob.established;
  }
  // As Connect, bounded by `budget_us` of `now` instead of a step count (for
  // a wall clock, where a step may take any time).
  template <typename Clock>
  bool ConnectWithin(Clock&& now, uint64_t budget_us) {
    const uint64_t start = now();
    if (!qa->Connect(tcp::testing::kIpA, tcp::testing::kIpB, kPort, {}, start).ok()) return false;
    for (uint64_t t = start; t - start < budget_us && !(oa.established && ob.established);
         t = now()) {
      Step(t);
    }
    return oa.established && ob.established;
  }

  tcp::testing::RingLink link;
  tcp::IsnGenerator isn;
  TestMemory ma, mb;
  RecordingObserver oa, ob;
  // Destroyed in reverse: the stacks first, while their users exist.
  std::unique_ptr<Qp> qa, qb;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<tcp::TcpStack> a, b;
};

}  // namespace iwarp::engine::testing

#endif  // IWARPD_IWARP_QP_TEST_UTIL_H_
