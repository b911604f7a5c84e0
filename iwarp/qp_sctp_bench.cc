// The engine over SCTP (RFC 5043) beside the same engine over tcp_lite + MPA
// (CRC, no Markers), one core, DPDK-free, both ends run by this thread:
//
//   write_bw  64 MiB of RDMA Writes (1 MiB each, up to 16 outstanding) into a
//             registered region of the peer engine; every figure includes
//             sender and receiver (DDP segmentation, checks, placement and the
//             transport with its acknowledgements).
//
// Rates are per CPU second of this process (CLOCK_PROCESS_CPUTIME_ID, so
// usrsctp's internal thread counts too). The baseline measured in the same
// run is memcpy of the same 64 MiB in 1 MiB chunks. Run through
// `meson test --benchmark` (tools/bench.sh); never part of the test suites.
// The machine is shared and noisy: compare the ratios.
#include <time.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"
#include "iwarp/sctp_llp.h"
#include "sctp/ddp_session.h"
#include "sctp/sctp_test_link.h"
#include "sctp/usrsctp_host.h"

namespace iwarp::engine {
namespace {

constexpr size_t kTotal = 64u << 20;
constexpr uint32_t kMsg = 1u << 20;

double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

uint64_t MonotonicUs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000 + uint64_t(ts.tv_nsec) / 1000;
}

double MemcpyBaseline() {
  std::vector<uint8_t> s(kMsg, 0x5A), d(kMsg);
  const double t0 = CpuNow();
  for (size_t i = 0; i < kTotal / kMsg; ++i) {
    s[i] = static_cast<uint8_t>(i);
    std::memcpy(d.data(), s.data(), kMsg);
    asm volatile("" : : "r"(d.data()) : "memory");
  }
  return CpuNow() - t0;
}

char g_addr_a, g_addr_b;

// Posts Writes (16 outstanding) on `qa` and steps until all completed.
// Returns CPU seconds or < 0 on failure.
template <typename StepFn>
double RunWrites(Qp& qa, uint32_t src, uint32_t sink, StepFn step) {
  const size_t msgs = kTotal / kMsg;
  size_t posted = 0, done = 0;
  Completion c[32];
  const double t0 = CpuNow();
  while (done < msgs) {
    while (posted < msgs && posted - done < 16) {
      SendWr wr{posted, WrOpcode::kRdmaWrite, LocalSge{src, 0x10000, kMsg}, sink, 0x10000};
      if (qa.PostSend(wr) != PostStatus::kOk) break;
      ++posted;
    }
    step();
    const size_t n = qa.PollCompletions(std::span<Completion>(c));
    for (size_t i = 0; i < n; ++i) {
      if (c[i].status != WcStatus::kSuccess) return -1;
    }
    done += n;
    if (qa.state() != QpState::kRts) return -1;
  }
  return CpuNow() - t0;
}

QpOptions Options() {
  QpOptions o;
  o.sq_depth = 32;
  return o;
}

double SctpWrites(sctp::UsrsctpHost& host, uint64_t* segments) {
  sctp::testing::RingLink ring(host, &g_addr_a, &g_addr_b);
  sctp::AssociationConfig cfg;
  cfg.send_buffer = 1 << 20;
  cfg.receive_buffer = 1 << 20;
  cfg.rto_initial_ms = 100;
  cfg.rto_min_ms = 20;
  cfg.rto_max_ms = 400;
  SctpStreams cs(cfg.streams), ss(cfg.streams);
  auto l = sctp::DdpListener::Listen(host, &g_addr_b, 9000, cfg);
  auto c = sctp::DdpAssociation::Connect(host, &g_addr_a, 9001, 9000, cfg, &cs);
  if (!l.ok() || !c.ok()) return -1;
  cs.set_association(c->get());
  std::unique_ptr<sctp::DdpAssociation> srv;
  testing::TestMemory ma, mb;
  testing::RecordingObserver oa, ob;
  std::unique_ptr<Qp> qa, qb;
  auto step = [&] {
    ring.Step();
    if (srv == nullptr && (srv = (*l)->Accept(&ss)) != nullptr) ss.set_association(srv.get());
    (*c)->Service();
    if (srv != nullptr) srv->Service();
    const uint64_t now = MonotonicUs();
    if (qa != nullptr) qa->Poll(now);
    if (qb != nullptr) qb->Poll(now);
  };
  const uint64_t start = MonotonicUs();
  while (MonotonicUs() - start < 5'000'000 &&
         !(srv != nullptr && (*c)->state() == sctp::DdpAssociation::State::kUp &&
           srv->state() == sctp::DdpAssociation::State::kUp)) {
    step();
  }
  if (srv == nullptr) return -1;
  qa = *cs.CreateQp(0, Options(), ma, oa);
  qb = *ss.CreateQp(0, Options(), mb, ob);
  if (!qa->ConnectLlp({}, MonotonicUs()).ok()) return -1;
  while (MonotonicUs() - start < 5'000'000 && !(oa.established && ob.established)) step();
  if (!oa.established) return -1;
  const uint32_t src = ma.Register(kMsg, 0);
  const uint32_t sink = mb.Register(kMsg, ddp::kAccessRemoteWrite);
  std::memset(ma.Bytes(src).data(), 0x5A, kMsg);
  double s = RunWrites(*qa, src, sink, step);
  // Writes complete when SCTP took them; the figure runs until the last
  // byte is placed at the peer.
  const double t1 = CpuNow();
  while (s >= 0 && qb->stats().bytes_placed < kTotal && MonotonicUs() - start < 60'000'000) step();
  if (s >= 0) s += CpuNow() - t1;
  if (qb->stats().bytes_placed < kTotal) s = -1;
  if (mb.Bytes(sink)[kMsg / 2] != 0x5A) s = -1;
  *segments = qa->stats().fpdus_out;
  qa.reset();
  qb.reset();
  srv.reset();
  c->reset();
  l->reset();
  for (int i = 0; i < 10; ++i) ring.Step();
  return s;
}

double TcpWrites(uint64_t* segments) {
  QpOptions o = Options();
  testing::RingPair pair(o, MonotonicUs());
  if (!pair.ConnectWithin(MonotonicUs, 5'000'000)) return -1;
  const uint32_t src = pair.ma.Register(kMsg, 0);
  const uint32_t sink = pair.mb.Register(kMsg, ddp::kAccessRemoteWrite);
  std::memset(pair.ma.Bytes(src).data(), 0x5A, kMsg);
  uint64_t steps = 0, now = MonotonicUs();
  const double s = RunWrites(*pair.qa, src, sink, [&] {
    if ((++steps & 15) == 1) now = MonotonicUs();
    pair.Step(now);
  });
  *segments = pair.qa->stats().fpdus_out;
  if (pair.mb.Bytes(sink)[kMsg / 2] != 0x5A) return -1;
  return s;
}

int RunAll() {
  auto h = sctp::UsrsctpHost::Create(sctp::HostConfig{});
  if (!h.ok()) {
    std::printf("usrsctp host: %s\n", std::string(h.status().message()).c_str());
    return 1;
  }
  (*h)->RegisterConn(&g_addr_a);
  (*h)->RegisterConn(&g_addr_b);
  int rc = 0;
  uint64_t seg_sctp = 0, seg_tcp = 0;
  const double base = MemcpyBaseline();
  const double s_sctp = SctpWrites(**h, &seg_sctp);
  const double s_tcp = TcpWrites(&seg_tcp);
  const double base_mbs = kTotal / base / 1e6;
  if (s_sctp <= 0) {
    std::printf("write_bw sctp  transfer failed\n");
    rc = 1;
  } else {
    const double mbs = kTotal / s_sctp / 1e6;
    std::printf("write_bw sctp      64 MiB in 1 MiB Writes: iwarp %8.1f MB/CPU-s   memcpy baseline "
                "%8.1f MB/CPU-s   ratio %.3f   ddp segments %llu\n",
                mbs, base_mbs, mbs / base_mbs, static_cast<unsigned long long>(seg_sctp));
  }
  if (s_tcp <= 0) {
    std::printf("write_bw tcp+mpa  transfer failed\n");
    rc = 1;
  } else {
    const double mbs = kTotal / s_tcp / 1e6;
    std::printf("write_bw tcp+mpa   64 MiB in 1 MiB Writes: iwarp %8.1f MB/CPU-s   memcpy baseline "
                "%8.1f MB/CPU-s   ratio %.3f   fpdus %llu\n",
                mbs, base_mbs, mbs / base_mbs, static_cast<unsigned long long>(seg_tcp));
  }
  return rc;
}

}  // namespace
}  // namespace iwarp::engine

int main() { return iwarp::engine::RunAll(); }
