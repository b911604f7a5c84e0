// Post-to-completion cost through the daemon's loopback QP engine, next to
// baselines measured in the same run:
//   BM_Copy              copying the same bytes between two memfd mappings
//                        (the data movement alone)
//   BM_RingRoundTrip     an SQE through one shared-memory SPSC ring and a CQE
//                        back through another (the queueing alone: no
//                        checks, no copy)
//   BM_LoopbackWrite     iwarp_post_send(RDMA Write) -> the daemon's engine
//                        checks the STags and copies -> iwarp_poll_cq, one
//                        at a time
//
// Every figure is for one core: the engine's PollQueues() runs inline on the
// benchmark thread after each post (a second spinning thread on these shared
// 2-core machines measures the scheduler, not the code). The daemon runs it
// on its own thread; the CPU work per operation is the same.
//   BM_LoopbackWriteBatch the same with 32 work requests per post
//   BM_LoopbackSend      Send into a posted receive, one at a time
// Run with tools/bench.sh libiwarp_loopback (meson benchmark()).
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <cstring>
#include <thread>

#include "appif/shm.h"
#include "appif/shm_layout.h"
#include "appif/spsc_ring.h"
#include "appif/session_server.h"
#include "benchmark/benchmark.h"
#include "libiwarp/iwarp.h"

namespace iwarp::appif {
namespace {

// The engine's copy alone: memmove between two memfd mappings, as the
// daemon copies between two registered regions.
void BM_Copy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto a = Mapping::CreateMemfd("bench-a", 1 << 20);
  auto b = Mapping::CreateMemfd("bench-b", 1 << 20);
  if (!a.ok() || !b.ok()) {
    state.SkipWithError("memfd");
    return;
  }
  std::memset(a->data(), 1, 1 << 20);
  std::memset(b->data(), 0, 1 << 20);
  for (auto _ : state) {
    std::memmove(b->data(), a->data(), n);
    benchmark::DoNotOptimize(b->data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_Copy)->Arg(64)->Arg(4096)->Arg(65536);

void BM_RingRoundTrip(benchmark::State& state) {
  auto sq_mem = Mapping::CreateMemfd("bench-sq", RingBytes<Sqe>(256));
  auto cq_mem = Mapping::CreateMemfd("bench-cq", RingBytes<Cqe>(256));
  if (!sq_mem.ok() || !cq_mem.ok()) {
    state.SkipWithError("memfd");
    return;
  }
  SpscRing<Sqe> sq_prod(sq_mem->data(), 256), sq_cons(sq_mem->data(), 256);
  SpscRing<Cqe> cq_prod(cq_mem->data(), 256), cq_cons(cq_mem->data(), 256);
  sq_prod.Init();
  cq_prod.Init();
  Sqe e;
  Cqe c;
  uint64_t id = 0;
  for (auto _ : state) {
    e.wr_id = ++id;
    sq_prod.Push(e);
    sq_cons.Pop(&e);
    c.wr_id = e.wr_id;
    cq_prod.Push(c);
    cq_cons.Pop(&c);
    benchmark::DoNotOptimize(c.wr_id);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RingRoundTrip);

struct Pair {
  std::unique_ptr<SessionServer> server;
  iwarp_session* a = nullptr;
  iwarp_session* b = nullptr;
  iwarp_cq* acq = nullptr;
  iwarp_cq* bcq = nullptr;
  iwarp_qp* aqp = nullptr;
  iwarp_qp* bqp = nullptr;
  iwarp_mr amr{}, bmr{};
  bool ok = false;

  explicit Pair(size_t bytes) {
    char tmpl[] = "/tmp/iwarp-bench-XXXXXX";
    dir_ = mkdtemp(tmpl);
    SessionServerOptions o;
    o.socket_path = dir_ + "/bench.sock";
    auto srv = SessionServer::Create(o);
    if (!srv.ok()) return;
    server = std::move(*srv);
    // Control requests need the server's socket side while we set up.
    std::atomic<bool> stop{false};
    std::thread control([&] {
      while (!stop.load()) server->PollControl(5);
    });
    Setup(o.socket_path, bytes);
    stop = true;
    control.join();
  }
  void Setup(const std::string& path, size_t bytes) {
    if (iwarp_open(path.c_str(), &a) != 0 || iwarp_open(path.c_str(), &b) != 0) return;
    uint32_t apd, bpd;
    void *am, *bm;
    const uint32_t all = IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE |
                         IWARP_ACCESS_REMOTE_READ;
    if (iwarp_alloc_pd(a, &apd) || iwarp_alloc_pd(b, &bpd) ||
        iwarp_mem_alloc(a, bytes, 0, &am) || iwarp_mem_alloc(b, bytes, 0, &bm) ||
        iwarp_reg_mr(a, apd, am, bytes, all, &amr) || iwarp_reg_mr(b, bpd, bm, bytes, all, &bmr) ||
        iwarp_create_cq(a, 1024, &acq) || iwarp_create_cq(b, 1024, &bcq)) {
      return;
    }
    iwarp_qp_attr qa{apd, acq, acq, 256, 256}, qb{bpd, bcq, bcq, 256, 256};
    if (iwarp_create_qp(a, &qa, &aqp) || iwarp_create_qp(b, &qb, &bqp)) return;
    iwarp_addr addr{0, 4791};
    uint32_t lid;
    iwarp_event ev;
    if (iwarp_listen(a, &addr, &lid) || iwarp_connect(bqp, &addr, nullptr, 0) ||
        iwarp_get_event(a, &ev, 5000) != 1 ||
        iwarp_accept(a, ev.request_id, aqp, nullptr, 0) || iwarp_get_event(b, &ev, 5000) != 1 ||
        ev.type != IWARP_EVENT_ESTABLISHED) {
      return;
    }
    ok = true;
  }
  ~Pair() {
    if (a) iwarp_close(a);
    if (b) iwarp_close(b);
    server.reset();
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

void RunWrites(benchmark::State& state, uint32_t batch) {
  const uint32_t len = static_cast<uint32_t>(state.range(0));
  Pair p(1 << 20);
  if (!p.ok) {
    state.SkipWithError("session setup failed");
    return;
  }
  iwarp_sge sge{p.bmr.addr, len, p.bmr.stag};
  iwarp_send_wr wr[32] = {};
  for (uint32_t i = 0; i < batch; ++i) {
    wr[i].opcode = IWARP_WR_RDMA_WRITE;
    wr[i].flags = IWARP_SEND_SIGNALED;
    wr[i].sg_list = &sge;
    wr[i].num_sge = 1;
    wr[i].remote_addr = p.amr.addr;
    wr[i].rkey = p.amr.stag;
  }
  iwarp_wc wc[32];
  uint64_t id = 0, bad = 0;
  for (auto _ : state) {
    for (uint32_t i = 0; i < batch; ++i) wr[i].wr_id = ++id;
    uint32_t posted = 0;
    while (posted < batch) {
      const int n = iwarp_post_send(p.bqp, wr + posted, batch - posted);
      if (n < 0) break;
      posted += static_cast<uint32_t>(n);
    }
    uint32_t done = 0;
    while (done < batch) {
      p.server->PollQueues();
      const int n = iwarp_poll_cq(p.bcq, wc, 32);
      for (int i = 0; i < n; ++i) bad += wc[i].status != IWARP_WC_SUCCESS;
      if (n > 0) done += static_cast<uint32_t>(n);
    }
  }
  if (bad != 0) state.SkipWithError("completions with error status");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * batch * len));
}

void BM_LoopbackWrite(benchmark::State& state) { RunWrites(state, 1); }
BENCHMARK(BM_LoopbackWrite)->Arg(64)->Arg(4096)->Arg(65536)->Unit(benchmark::kNanosecond);

void BM_LoopbackWriteBatch(benchmark::State& state) { RunWrites(state, 32); }
BENCHMARK(BM_LoopbackWriteBatch)->Arg(64)->Arg(4096)->Unit(benchmark::kNanosecond);

void BM_LoopbackSend(benchmark::State& state) {
  const uint32_t len = static_cast<uint32_t>(state.range(0));
  Pair p(1 << 20);
  if (!p.ok) {
    state.SkipWithError("session setup failed");
    return;
  }
  iwarp_sge ssge{p.bmr.addr, len, p.bmr.stag};
  iwarp_sge rsge{p.amr.addr, len, p.amr.stag};
  iwarp_send_wr s{};
  s.opcode = IWARP_WR_SEND;
  s.flags = IWARP_SEND_SIGNALED;
  s.sg_list = &ssge;
  s.num_sge = 1;
  iwarp_recv_wr r{0, &rsge, 1};
  iwarp_wc wc;
  uint64_t bad = 0;
  for (auto _ : state) {
    while (iwarp_post_recv(p.aqp, &r, 1) != 1) {
    }
    while (iwarp_post_send(p.bqp, &s, 1) != 1) {
    }
    p.server->PollQueues();
    while (iwarp_poll_cq(p.bcq, &wc, 1) != 1) {
      p.server->PollQueues();
    }
    bad += wc.status != IWARP_WC_SUCCESS;
    while (iwarp_poll_cq(p.acq, &wc, 1) != 1) {
    }
    bad += wc.status != IWARP_WC_SUCCESS;
  }
  if (bad != 0) state.SkipWithError("completions with error status");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LoopbackSend)->Arg(64)->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace iwarp::appif

BENCHMARK_MAIN();
