// libiwarp applications on two daemons joined on the wire: each daemon is a
// SessionServer plus a WireEngine polled on its own worker thread over a
// TcpStack; the two stacks exchange TCP segments through a thread-safe
// in-memory link (test double for the DPDK ports). Everything between the
// applications' rings is the real code: MPA setup, FPDUs with CRC/Markers,
// DDP placement into the registered memfds, completions into the CQ rings.
#include <errno.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "appif/wire_test_util.h"
#include "gtest/gtest.h"
#include "libiwarp/iwarp.h"
#include "libiwarp/wire_app_test_util.h"

namespace iwarp::appif {
namespace {

using testing::kIpA;
using testing::kIpB;
using testing::TestDaemon;
using testing::ThreadedTestLink;

using testing::kAllAccess;
using testing::Pattern;
using App = testing::WireApp;

// Polls `done` until it holds or 5 s have passed; whether it held.
template <typename F>
bool WaitFor(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

constexpr size_t kMaxMsg = size_t{16} << 20;
constexpr uint16_t kPort = 4791;

struct WireParams {
  bool crc;
  bool markers;
};

class WireTest : public ::testing::TestWithParam<WireParams> {
 protected:
  void SetUp() override {
    engine::MpaParams mpa;
    mpa.crc = GetParam().crc;
    mpa.want_markers = GetParam().markers;
    a_ = std::make_unique<TestDaemon>(link_, 0, kIpA, mpa);
    b_ = std::make_unique<TestDaemon>(link_, 1, kIpB, mpa);
    ASSERT_TRUE(a_->worker.ok() && b_->worker.ok());
    ASSERT_TRUE(a_->host.ok()) << a_->host.status();
    ASSERT_TRUE(b_->host.ok()) << b_->host.status();
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    a_.reset();
    b_.reset();
  }
  void OpenApps(size_t bytes) {
    client_ = std::make_unique<App>();
    server_ = std::make_unique<App>();
    client_->Open(a_->host.socket_path(), bytes);
    server_->Open(b_->host.socket_path(), bytes);
  }
  // The client (daemon A) connects to the server's listener on daemon B.
  void Establish() {
    iwarp_addr any{0, kPort};
    uint32_t lid = 0;
    ASSERT_EQ(iwarp_listen(server_->s, &any, &lid), 0) << iwarp_last_error(server_->s);
    iwarp_addr to{kIpB, kPort};
    ASSERT_EQ(iwarp_connect(client_->qp, &to, "hello-from-a", 12), 0)
        << iwarp_last_error(client_->s);
    iwarp_event req = server_->Event(IWARP_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(req.listener_id, lid);
    ASSERT_EQ(std::string(reinterpret_cast<char*>(req.private_data), req.private_data_len),
              "hello-from-a");
    ASSERT_EQ(iwarp_accept(server_->s, req.request_id, server_->qp, "welcome-b", 9), 0)
        << iwarp_last_error(server_->s);
    iwarp_event est = client_->Event(IWARP_EVENT_ESTABLISHED);
    EXPECT_EQ(std::string(reinterpret_cast<char*>(est.private_data), est.private_data_len),
              "welcome-b");
    iwarp_event sest = server_->Event(IWARP_EVENT_ESTABLISHED);
    // Both daemons ask for the same framing: CRC, and Markers both ways.
    const uint32_t want = IWARP_MPA_STATE_WIRE | (GetParam().crc ? IWARP_MPA_STATE_CRC : 0) |
                          (GetParam().markers
                               ? IWARP_MPA_STATE_TX_MARKERS | IWARP_MPA_STATE_RX_MARKERS
                               : 0);
    EXPECT_EQ(est.mpa_flags, want);
    EXPECT_EQ(sest.mpa_flags, want);
  }

  ThreadedTestLink link_;
  std::unique_ptr<TestDaemon> a_, b_;
  std::unique_ptr<App> client_, server_;
};

// Write, Read and Send of 0 B .. 16 MiB, each verified byte for byte in the
// peer's registered memory, plus the bytes around the sink untouched.
TEST_P(WireTest, WriteReadSendAreVerifiedFromZeroTo16MiB) {
  const size_t half = kMaxMsg + 4096;
  OpenApps(2 * half);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  App& s = *server_;
  const uint64_t csrc = c.mr.addr, csink = c.mr.addr + half;
  const uint64_t ssrc = s.mr.addr, ssink = s.mr.addr + half;
  std::vector<size_t> sizes = {0, 1, 4093, 65536, 1 << 20, kMaxMsg};
  if (GetParam().markers || !GetParam().crc) sizes = {0, 1, 4093, 65536, 1 << 20};
  uint64_t id = 1;
  for (size_t n : sizes) {
    SCOPED_TRACE("size " + std::to_string(n));
    // RDMA Write: client source -> server sink (offset 7: unaligned TO).
    auto data = Pattern(n, static_cast<uint32_t>(n) + 1);
    std::memcpy(c.mem, data.data(), n);
    std::memset(s.mem + half, 0xAB, n + 16);
    c.Post(id, IWARP_WR_RDMA_WRITE, csrc, static_cast<uint32_t>(n), c.mr.stag, ssink + 7,
           s.mr.stag);
    iwarp_wc wc = c.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IWARP_WC_RDMA_WRITE);
    EXPECT_EQ(wc.wr_id, id);
    EXPECT_EQ(wc.byte_len, n);
    ++id;
    EXPECT_EQ(std::memcmp(s.mem + half + 7, data.data(), n), 0);
    for (size_t i = 0; i < 7; ++i) ASSERT_EQ(s.mem[half + i], 0xAB);
    for (size_t i = 0; i < 9; ++i) ASSERT_EQ(s.mem[half + 7 + n + i], 0xAB);

    // RDMA Read: client sink <- server source.
    auto rdata = Pattern(n, static_cast<uint32_t>(n) + 2);
    std::memcpy(s.mem, rdata.data(), n);
    std::memset(c.mem + half, 0xCD, n + 1);
    c.Post(id, IWARP_WR_RDMA_READ, csink, static_cast<uint32_t>(n), c.mr.stag, ssrc, s.mr.stag);
    wc = c.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IWARP_WC_RDMA_READ);
    EXPECT_EQ(wc.byte_len, n);
    ++id;
    EXPECT_EQ(std::memcmp(c.mem + half, rdata.data(), n), 0);
    EXPECT_EQ(c.mem[half + n], 0xCD);

    // Send: server source -> client receive buffer.
    auto sdata = Pattern(n, static_cast<uint32_t>(n) + 3);
    std::memcpy(s.mem, sdata.data(), n);
    std::memset(c.mem + half, 0xEF, n + 1);
    c.PostRecv(id, csink, static_cast<uint32_t>(half), c.mr.stag);
    s.Post(id + 1, IWARP_WR_SEND, ssrc, static_cast<uint32_t>(n), s.mr.stag);
    wc = s.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IWARP_WC_SEND);
    wc = c.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IWARP_WC_RECV);
    EXPECT_EQ(wc.wr_id, id);
    EXPECT_EQ(wc.byte_len, n);
    EXPECT_EQ(std::memcmp(c.mem + half, sdata.data(), n), 0);
    EXPECT_EQ(c.mem[half + n], 0xEF);
    id += 2;
  }
  // Unsignaled work requests complete silently; the next signaled one shows.
  c.Post(100, IWARP_WR_RDMA_WRITE, csrc, 64, c.mr.stag, ssink, s.mr.stag, /*signaled=*/false);
  c.Post(101, IWARP_WR_RDMA_WRITE, csrc, 64, c.mr.stag, ssink, s.mr.stag, /*signaled=*/true);
  iwarp_wc wc = c.Wc();
  EXPECT_EQ(wc.wr_id, 101u);
  EXPECT_EQ(wc.status, IWARP_WC_SUCCESS);

  const SessionServerStats sa = a_->host.stats();
  EXPECT_EQ(sa.wire_connections, 1u);
  EXPECT_EQ(sa.wire_qps_active, 1u);
  const WireEngineStats wa = a_->worker.engine()->stats();
  EXPECT_GE(wa.wrs_posted, 2 * sizes.size() + 2);
  EXPECT_EQ(wa.events_dropped, 0u);
}

INSTANTIATE_TEST_SUITE_P(Mpa, WireTest,
                         ::testing::Values(WireParams{true, false}, WireParams{false, false},
                                           WireParams{true, true}, WireParams{false, true}),
                         [](const ::testing::TestParamInfo<WireParams>& i) {
                           return std::string(i.param.crc ? "Crc" : "NoCrc") +
                                  (i.param.markers ? "Markers" : "NoMarkers");
                         });

class Wire : public WireTest {};
INSTANTIATE_TEST_SUITE_P(Default, Wire, ::testing::Values(WireParams{true, false}));

// A destroy the worker does not acknowledge in time (a stalled worker)
// leaves the QP's context and memory to the worker (a zombie), with its
// CQs, although the application destroys them and closes its session. The
// worker, once it runs again, takes the queued destroy (it resets the
// connection, which the server's QP sees) and the daemon serves a new
// application. (The worker handles the queued destroy before it touches the
// QP's CQs again, so this passes also without the CQs kept; they matter when
// the destroy never reached the worker's command ring.)
TEST_P(Wire, CqsOfAnUnacknowledgedDestroyOutliveTheSession) {
  OpenApps(1 << 16);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  c.PostRecv(5, c.mr.addr, 64, c.mr.stag);
  a_->worker.Pause();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(iwarp_destroy_qp(c.qp), 0);  // the control side gives up waiting
  c.qp = nullptr;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500));
  EXPECT_EQ(iwarp_destroy_cq(c.cq), 0);
  c.cq = nullptr;
  iwarp_close(c.s);
  c.s = nullptr;
  // The QP (context, rings, CQs) and the session's region (its kDeregMr
  // times out too, once the control thread has closed the session) are
  // held for the worker.
  EXPECT_TRUE(WaitFor([&] { return a_->host.stats().wire_unacked_held == 2; }))
      << a_->host.stats().wire_unacked_held;
  a_->worker.Resume();
  // The worker runs the destroy now, flushing the receive into the kept CQ
  // and resetting the connection (the server's QP sees it end); the daemon
  // keeps serving: a new application connects and moves data.
  EXPECT_EQ(server_->Event(IWARP_EVENT_DISCONNECTED).reason, ECONNRESET);
  // The late acknowledgements free what was held.
  EXPECT_TRUE(WaitFor([&] { return a_->host.stats().wire_unacked_held == 0; }));
  App again;
  again.Open(a_->host.socket_path(), 1 << 16);
  iwarp_addr to{kIpB, kPort};
  ASSERT_EQ(iwarp_connect(again.qp, &to, nullptr, 0), 0) << iwarp_last_error(again.s);
  iwarp_event req = server_->Event(IWARP_EVENT_CONNECT_REQUEST);
  iwarp_qp* sqp = nullptr;
  iwarp_qp_attr attr{server_->pd, server_->cq, server_->cq, 16, 16};
  ASSERT_EQ(iwarp_create_qp(server_->s, &attr, &sqp), 0);
  ASSERT_EQ(iwarp_accept(server_->s, req.request_id, sqp, nullptr, 0), 0);
  again.Event(IWARP_EVENT_ESTABLISHED);
  std::memcpy(again.mem, "after-zombie", 12);
  again.Post(1, IWARP_WR_RDMA_WRITE, again.mr.addr, 12, again.mr.stag, server_->mr.addr + 128,
             server_->mr.stag);
  EXPECT_EQ(again.Wc().status, IWARP_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(server_->mem + 128, "after-zombie", 12), 0);
}

// Commands a stalled worker never took (its command ring full) are sent,
// in order, once it runs again, and whatever they held is freed when they
// are acknowledged: two registrations time out queued (the ring of 2 is
// full), the QP destroy after them times out unqueued. Resumed, the worker
// mirrors the two registrations late (the control side takes them out again
// with kDeregMr: the application was told they failed), and the destroy
// reaches it: the peer's QP sees the reset. Before, the unqueued destroy was
// never sent (the QP ran on, the connection stayed up) and the held memory
// stayed until the server's end.
TEST_P(Wire, CommandsAStalledWorkerNeverTookAreSentWhenItRuns) {
  engine::MpaParams mpa;
  mpa.crc = true;
  a_.reset();  // daemon A again, with a command ring of 2 and 200 ms waits
  a_ = std::make_unique<TestDaemon>(link_, 0, kIpA, mpa,
                                    testing::TestDaemonLimits{2, 200});
  ASSERT_TRUE(a_->worker.ok() && a_->host.ok());
  OpenApps(1 << 16);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  const uint64_t commands = a_->worker.engine()->stats().commands;
  a_->worker.Pause();
  iwarp_mr late[2];
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(iwarp_reg_mr(c.s, c.pd, c.mem + 4096 * (i + 1), 4096, kAllAccess, &late[i]),
              -ETIMEDOUT);
  }
  EXPECT_EQ(iwarp_destroy_qp(c.qp), 0);
  c.qp = nullptr;
  const SessionServerStats held = a_->host.stats();
  EXPECT_EQ(held.wire_unacked_held, 3u);
  EXPECT_EQ(held.wire_ack_timeouts, 3u);
  a_->worker.Resume();
  EXPECT_EQ(server_->Event(IWARP_EVENT_DISCONNECTED).reason, ECONNRESET);
  EXPECT_TRUE(WaitFor([&] { return a_->host.stats().wire_unacked_held == 0; }));
  // The worker took the two registrations, the destroy and the two
  // deregistrations that undo the late registrations: five commands.
  EXPECT_EQ(a_->worker.engine()->stats().commands, commands + 5);
  // The daemon goes on: a registration is acknowledged at once again.
  iwarp_mr again{};
  EXPECT_EQ(iwarp_reg_mr(c.s, c.pd, c.mem + 4096 * 3, 4096, kAllAccess, &again), 0)
      << iwarp_last_error(c.s);
}

// The target of an RDMA Write gets no completion (RFC 5040); the worker
// counts placed Writes in the QP's shared memory and rings a sleeping
// application's receive CQ's wake-up pipe. A 1 MiB Write wakes a sleeper once it is
// whole (every byte checked at the wake-up), then 300 round trips of
// write_lat-style ping-pong, both sides sleeping in iwarp_qp_wait_writes:
// no wake-up is lost (each wait has 10 s) and every count matches.
TEST_P(Wire, WaitWritesWakesWhenAWriteIsPlacedWhole) {
  constexpr uint32_t kLen = 1 << 20;
  OpenApps(2 * kLen);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  App& s = *server_;
  auto data = Pattern(kLen, 77);
  std::memcpy(c.mem, data.data(), kLen);
  ASSERT_EQ(iwarp_qp_writes_placed(s.qp), 0u);
  bool whole_at_wake = false;
  int wait_status = 1;
  std::thread waiter([&] {
    wait_status = iwarp_qp_wait_writes(s.qp, 0, 10000);
    whole_at_wake = std::memcmp(s.mem + kLen, data.data(), kLen) == 0;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // asleep by now
  c.Post(1, IWARP_WR_RDMA_WRITE, c.mr.addr, kLen, c.mr.stag, s.mr.addr + kLen, s.mr.stag);
  EXPECT_EQ(c.Wc().status, IWARP_WC_SUCCESS);
  waiter.join();
  EXPECT_EQ(wait_status, 0);
  EXPECT_TRUE(whole_at_wake);
  EXPECT_EQ(iwarp_qp_writes_placed(s.qp), 1u);

  constexpr int kRounds = 300;
  std::atomic<int> server_fail{0};
  std::thread pong([&] {
    for (int i = 0; i < kRounds; ++i) {
      if (iwarp_qp_wait_writes(s.qp, 1 + i, 10000) != 0 ||
          s.mem[kLen + 63] != static_cast<uint8_t>(i + 1)) {
        server_fail = i + 1;
        return;
      }
      s.mem[63] = static_cast<uint8_t>(i + 1);
      s.Post(100 + i, IWARP_WR_RDMA_WRITE, s.mr.addr, 64, s.mr.stag, c.mr.addr + kLen, c.mr.stag);
      if (s.Wc().status != IWARP_WC_SUCCESS) {
        server_fail = i + 1;
        return;
      }
    }
  });
  for (int i = 0; i < kRounds && server_fail == 0; ++i) {
    c.mem[63] = static_cast<uint8_t>(i + 1);
    c.Post(1000 + i, IWARP_WR_RDMA_WRITE, c.mr.addr, 64, c.mr.stag, s.mr.addr + kLen, s.mr.stag);
    ASSERT_EQ(c.Wc().status, IWARP_WC_SUCCESS);
    ASSERT_EQ(iwarp_qp_wait_writes(c.qp, i, 10000), 0) << "round " << i;
    ASSERT_EQ(c.mem[kLen + 63], static_cast<uint8_t>(i + 1));
  }
  pong.join();
  EXPECT_EQ(server_fail, 0);
  EXPECT_EQ(iwarp_qp_writes_placed(s.qp), 1u + kRounds);
  EXPECT_EQ(iwarp_qp_writes_placed(c.qp), uint64_t{kRounds});
}

TEST_P(Wire, RejectCarriesPrivateDataToTheInitiator) {
  OpenApps(1 << 16);
  iwarp_addr any{0, kPort};
  uint32_t lid = 0;
  ASSERT_EQ(iwarp_listen(server_->s, &any, &lid), 0);
  iwarp_addr to{kIpB, kPort};
  ASSERT_EQ(iwarp_connect(client_->qp, &to, "let me in", 9), 0);
  iwarp_event req = server_->Event(IWARP_EVENT_CONNECT_REQUEST);
  ASSERT_EQ(iwarp_reject(server_->s, req.request_id, "go away", 7), 0)
      << iwarp_last_error(server_->s);
  iwarp_event ev = client_->Event(IWARP_EVENT_REJECTED);
  EXPECT_EQ(ev.reason, ECONNREFUSED);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(ev.private_data), ev.private_data_len), "go away");
  // The request id is used up.
  EXPECT_EQ(iwarp_accept(server_->s, req.request_id, server_->qp, nullptr, 0), -ENOENT);
  // The operator sees the refusal on the listener (published by the worker
  // at least every millisecond).
  ASSERT_TRUE(WaitFor([&] {
    const appif::WireEngineStats st = b_->worker.engine()->stats();
    return st.listeners.size() == 1 && st.listeners[0].rejects_sent == 1;
  }));
  const appif::WireEngineStats st = b_->worker.engine()->stats();
  EXPECT_EQ(st.listeners[0].port, kPort);
  EXPECT_EQ(st.listeners[0].listener_id, lid);
  EXPECT_EQ(st.listeners[0].gate.passive_opens, 1u);
  EXPECT_EQ(st.listeners[0].gate.requests, 1u);
  EXPECT_EQ(st.listeners[0].replies_sent, 0u);
  EXPECT_EQ(st.rejects_sent, 1u);
  EXPECT_EQ(st.gate.requests, 1u);
  ASSERT_EQ(iwarp_unlisten(server_->s, lid), 0);
  ASSERT_TRUE(WaitFor([&] { return b_->worker.engine()->stats().listeners.empty(); }));
  EXPECT_EQ(b_->worker.engine()->stats().gate.requests, 1u);  // kept after the listener closed
}

TEST_P(Wire, ConnectToAPortNobodyListensOnFails) {
  OpenApps(1 << 16);
  iwarp_addr to{kIpB, 9999};
  ASSERT_EQ(iwarp_connect(client_->qp, &to, nullptr, 0), 0);
  iwarp_event ev = client_->Event(IWARP_EVENT_CONNECT_ERROR);
  EXPECT_EQ(ev.reason, ECONNREFUSED);
}

// The peer application disappears: its daemon destroys the QP (TCP reset);
// our QP reports the disconnect and every queued receive and send flushes.
TEST_P(Wire, PeerThatDisappearsFlushesOutstandingWork) {
  OpenApps(1 << 16);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  for (uint64_t i = 0; i < 4; ++i) c.PostRecv(10 + i, c.mr.addr, 4096, c.mr.stag);
  server_.reset();  // iwarp_close: the session and its QP go away
  iwarp_event ev = c.Event(IWARP_EVENT_DISCONNECTED);
  EXPECT_EQ(ev.qp_id, iwarp_qp_id(c.qp));
  EXPECT_EQ(ev.reason, ECONNRESET);  // not a graceful close
  c.Post(20, IWARP_WR_SEND, c.mr.addr, 16, c.mr.stag);
  int flushed_recv = 0, flushed_send = 0;
  for (int i = 0; i < 5; ++i) {
    iwarp_wc wc = c.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR) << "wr " << wc.wr_id;
    if (wc.opcode == IWARP_WC_RECV) ++flushed_recv;
    if (wc.opcode == IWARP_WC_SEND && wc.wr_id == 20) ++flushed_send;
  }
  EXPECT_EQ(flushed_recv, 4);
  EXPECT_EQ(flushed_send, 1);
}

// A network that goes silent, then an orderly local disconnect: flushes too.
TEST_P(Wire, DisconnectFlushesPostedReceives) {
  OpenApps(1 << 16);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  c.PostRecv(1, c.mr.addr, 4096, c.mr.stag);
  ASSERT_EQ(iwarp_disconnect(c.qp), 0);
  // A graceful close (both FINs, no Terminate): reason 0 on both sides.
  EXPECT_EQ(c.Event(IWARP_EVENT_DISCONNECTED).reason, 0);
  EXPECT_EQ(server_->Event(IWARP_EVENT_DISCONNECTED).reason, 0);
  iwarp_wc wc = c.Wc();
  EXPECT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc.wr_id, 1u);
}

// A misbehaving application: an lkey of another session, an rkey of another
// session on the remote daemon, an SG list the wire cannot carry. Each fails
// with its verbs status; nobody else's memory changes.
TEST_P(Wire, MisbehavingApplicationCannotTouchOtherSessionsMemory) {
  OpenApps(1 << 16);
  App victim_a, victim_b;  // one more session on each daemon
  victim_a.Open(a_->host.socket_path(), 1 << 16);
  victim_b.Open(b_->host.socket_path(), 1 << 16);
  std::memset(victim_a.mem, 0x11, 1 << 16);
  std::memset(victim_b.mem, 0x22, 1 << 16);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  // Remote Write with an rkey of another session (another PD) of daemon B:
  // RFC 5041 7.1 / RFC 5040 7.4.1 - the peer answers with a Terminate.
  // An RDMA Write completes locally once sent (RFC 5040 5.1); the peer's
  // Terminate then fails the stream.
  c.Post(1, IWARP_WR_RDMA_WRITE, c.mr.addr, 128, c.mr.stag, victim_b.mr.addr, victim_b.mr.stag);
  iwarp_event ev = c.Event(IWARP_EVENT_QP_ERROR);
  EXPECT_EQ(ev.reason, EREMOTEIO);
  // RFC 5040 7.4.1: layer DDP (1), tagged buffer error (1), STag not
  // associated with this stream's PD (0x02).
  EXPECT_EQ(ev.term_layer, 1);
  EXPECT_EQ(ev.term_etype, 1);
  EXPECT_EQ(ev.term_code, 0x02);
  server_->Event(IWARP_EVENT_QP_ERROR);
  for (size_t i = 0; i < (1 << 16); ++i) ASSERT_EQ(victim_b.mem[i], 0x22) << i;
  EXPECT_GE(b_->worker.engine()->stats().connections, 1u);
}

TEST_P(Wire, ForeignLkeyAndReadWithTwoSinkSgesFailLocally) {
  OpenApps(1 << 16);
  App victim;
  victim.Open(a_->host.socket_path(), 1 << 16);
  std::memset(victim.mem, 0x33, 1 << 16);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  App& s = *server_;
  // Read into memory of another session of the same daemon (its lkey).
  c.Post(1, IWARP_WR_RDMA_READ, victim.mr.addr, 256, victim.mr.stag, s.mr.addr, s.mr.stag);
  iwarp_wc wc = c.Wc();
  EXPECT_EQ(wc.status, IWARP_WC_LOC_PROT_ERR);
  EXPECT_EQ(wc.wr_id, 1u);
  for (size_t i = 0; i < (1 << 16); ++i) ASSERT_EQ(victim.mem[i], 0x33) << i;

  // A Read with two separate sink SGEs: RFC 5040 4.4 names one sink STag
  // and TO per Read Request, so the daemon refuses it at post.
  App c2, s2;
  c2.Open(a_->host.socket_path(), 1 << 16);
  s2.Open(b_->host.socket_path(), 1 << 16);
  iwarp_addr any{0, kPort + 1};
  uint32_t lid = 0;
  ASSERT_EQ(iwarp_listen(s2.s, &any, &lid), 0);
  iwarp_addr to{kIpB, kPort + 1};
  ASSERT_EQ(iwarp_connect(c2.qp, &to, nullptr, 0), 0);
  iwarp_event req = s2.Event(IWARP_EVENT_CONNECT_REQUEST);
  ASSERT_EQ(iwarp_accept(s2.s, req.request_id, s2.qp, nullptr, 0), 0);
  c2.Event(IWARP_EVENT_ESTABLISHED);
  std::memset(c2.mem, 0x44, 1 << 16);
  const uint64_t bad_before = a_->worker.engine()->stats().bad_sqes;
  c2.PostSgl(7, IWARP_WR_RDMA_READ,
             {{c2.mr.addr, 16, c2.mr.stag}, {0, 0, 0}, {c2.mr.addr + 64, 16, c2.mr.stag}},
             s2.mr.addr, s2.mr.stag);
  wc = c2.Wc();
  EXPECT_EQ(wc.status, IWARP_WC_LOC_QP_OP_ERR);
  EXPECT_EQ(wc.wr_id, 7u);
  EXPECT_EQ(a_->worker.engine()->stats().bad_sqes, bad_before + 1);
  for (size_t i = 0; i < 128; ++i) ASSERT_EQ(c2.mem[i], 0x44) << i;
}

// Work requests with several SGEs on the wire, as on loopback QPs: a Send
// gathered from 4 SGEs (one empty, none a multiple of the MULPDU) lands in a
// receive of 3 SGEs (segments straddle them), a Write gathers 3 SGEs into a
// contiguous sink, a Read into two contiguous SGEs among empty ones fills them.
// Every byte is checked, and the bytes around the SGEs stay untouched.
TEST_P(WireTest, MultiSgeSendWriteRecvAreVerified) {
  constexpr size_t kMem = 1 << 20;
  OpenApps(kMem);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  App& s = *server_;
  std::memset(c.mem, 0x5A, kMem);
  std::memset(s.mem, 0xA5, kMem);
  struct Piece {
    size_t off;
    uint32_t len;
  };
  const std::vector<Piece> src = {{3, 5000}, {20000, 0}, {30001, 7777}, {50000, 123}};
  const std::vector<Piece> dst = {{100, 1000}, {400000, 6000}, {200000, 10000}};
  size_t total = 0;
  for (const Piece& p : src) total += p.len;  // 12900: ends inside dst[2]
  const auto data = Pattern(total, 42);
  auto sgl = [](App& a, const std::vector<Piece>& ps) {
    std::vector<iwarp_sge> v;
    for (const Piece& p : ps) v.push_back({a.mr.addr + p.off, p.len, a.mr.stag});
    return v;
  };
  size_t at = 0;
  for (const Piece& p : src) {
    std::memcpy(c.mem + p.off, data.data() + at, p.len);
    at += p.len;
  }

  // Send (4 SGEs) -> receive (3 SGEs).
  s.PostRecvSgl(50, sgl(s, dst));
  c.PostSgl(1, IWARP_WR_SEND, sgl(c, src));
  iwarp_wc wc = c.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, total);
  wc = s.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IWARP_WC_RECV);
  EXPECT_EQ(wc.wr_id, 50u);
  EXPECT_EQ(wc.byte_len, total);
  at = 0;
  for (const Piece& p : dst) {
    const size_t n = std::min<size_t>(p.len, total - at);
    EXPECT_EQ(std::memcmp(s.mem + p.off, data.data() + at, n), 0) << "dst at " << p.off;
    for (size_t i = n; i < p.len; ++i) ASSERT_EQ(s.mem[p.off + i], 0xA5) << p.off + i;
    ASSERT_EQ(s.mem[p.off - 1], 0xA5);
    ASSERT_EQ(s.mem[p.off + p.len], 0xA5);
    at += n;
  }

  // RDMA Write (3 SGEs, one empty) -> one contiguous sink.
  const std::vector<Piece> wsrc = {{3, 5000}, {20000, 0}, {30001, 7777}};
  const uint64_t wsink = 700000;
  c.PostSgl(2, IWARP_WR_RDMA_WRITE, sgl(c, wsrc), s.mr.addr + wsink, s.mr.stag);
  wc = c.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 12777u);
  EXPECT_EQ(std::memcmp(s.mem + wsink, data.data(), 12777), 0);
  EXPECT_EQ(s.mem[wsink - 1], 0xA5);
  EXPECT_EQ(s.mem[wsink + 12777], 0xA5);

  // RDMA Read into two contiguous SGEs among empty ones (one sink buffer,
  // RFC 5040 4.4): the Write's bytes back.
  c.PostSgl(3, IWARP_WR_RDMA_READ,
            {{0, 0, 0}, {c.mr.addr + 800000, 777, c.mr.stag}, {c.mr.addr, 0, c.mr.stag},
             {c.mr.addr + 800777, 12000, c.mr.stag}},
            s.mr.addr + wsink, s.mr.stag);
  wc = c.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IWARP_WC_RDMA_READ);
  EXPECT_EQ(std::memcmp(c.mem + 800000, data.data(), 12777), 0);
  EXPECT_EQ(c.mem[800000 + 12777], 0x5A);
  const WireEngineStats wa = a_->worker.engine()->stats();
  EXPECT_EQ(wa.bad_sqes, 0u);
  EXPECT_EQ(b_->worker.engine()->stats().bad_rqes, 0u);
}

// Loopback and wire QPs must not share a CQ (one producer per ring).
TEST_P(Wire, LoopbackQpRefusesACqServingTheWire) {
  OpenApps(1 << 16);
  ASSERT_NO_FATAL_FAILURE(Establish());
  App& c = *client_;
  iwarp_qp* qp2 = nullptr;
  iwarp_qp_attr attr{c.pd, c.cq, c.cq, 16, 16};
  ASSERT_EQ(iwarp_create_qp(c.s, &attr, &qp2), 0);
  App local;
  local.Open(a_->host.socket_path(), 1 << 16);
  iwarp_addr any{0, 6000};
  uint32_t lid = 0;
  ASSERT_EQ(iwarp_listen(local.s, &any, &lid), 0);
  EXPECT_EQ(iwarp_connect(qp2, &any, nullptr, 0), -EINVAL);
  EXPECT_NE(std::string(iwarp_last_error(c.s)).find("wire"), std::string::npos);
  // Loopback between two QPs with CQs of their own still works.
  App other;
  other.Open(a_->host.socket_path(), 1 << 16);
  ASSERT_EQ(iwarp_connect(other.qp, &any, nullptr, 0), 0);
  iwarp_event req = local.Event(IWARP_EVENT_CONNECT_REQUEST);
  ASSERT_EQ(iwarp_accept(local.s, req.request_id, local.qp, nullptr, 0), 0);
  other.Event(IWARP_EVENT_ESTABLISHED);
  std::memset(other.mem, 0x5A, 100);
  other.Post(1, IWARP_WR_RDMA_WRITE, other.mr.addr, 100, other.mr.stag, local.mr.addr,
             local.mr.stag);
  EXPECT_EQ(other.Wc().status, IWARP_WC_SUCCESS);
  EXPECT_EQ(local.mem[99], 0x5A);
}

// iwarp_connect_mpa: one connection asks for CRC and Markers although the
// daemons' defaults ask for neither (RFC 5044 7.1.2: CRC if either side
// asks; Markers only toward the side that asked).
class WirePerConnect : public WireTest {};
INSTANTIATE_TEST_SUITE_P(NoCrcDefault, WirePerConnect, ::testing::Values(WireParams{false, false}));

TEST_P(WirePerConnect, ConnectMpaOverridesTheDaemonDefaults) {
  OpenApps(4 << 20);
  iwarp_addr any{0, kPort};
  uint32_t lid = 0;
  ASSERT_EQ(iwarp_listen(server_->s, &any, &lid), 0);
  iwarp_addr to{kIpB, kPort};
  ASSERT_EQ(iwarp_connect_mpa(client_->qp, &to, nullptr, 0, IWARP_MPA_CRC | IWARP_MPA_MARKERS), 0);
  EXPECT_EQ(iwarp_connect_mpa(client_->qp, &to, nullptr, 0, 1u << 7), -EINVAL);
  iwarp_event req = server_->Event(IWARP_EVENT_CONNECT_REQUEST);
  ASSERT_EQ(iwarp_accept(server_->s, req.request_id, server_->qp, nullptr, 0), 0);
  iwarp_event est = client_->Event(IWARP_EVENT_ESTABLISHED);
  iwarp_event sest = server_->Event(IWARP_EVENT_ESTABLISHED);
  EXPECT_EQ(est.mpa_flags, IWARP_MPA_STATE_WIRE | IWARP_MPA_STATE_CRC | IWARP_MPA_STATE_RX_MARKERS);
  EXPECT_EQ(sest.mpa_flags, IWARP_MPA_STATE_WIRE | IWARP_MPA_STATE_CRC | IWARP_MPA_STATE_TX_MARKERS);
  // Data still arrives intact: 2 MiB from the server (Markers inserted) to the client.
  App& c = *client_;
  App& s = *server_;
  const size_t n = 2 << 20;
  auto data = Pattern(n, 99);
  std::memcpy(s.mem, data.data(), n);
  c.PostRecv(1, c.mr.addr + n, static_cast<uint32_t>(n), c.mr.stag);
  s.Post(2, IWARP_WR_SEND, s.mr.addr, static_cast<uint32_t>(n), s.mr.stag);
  EXPECT_EQ(s.Wc().status, IWARP_WC_SUCCESS);
  iwarp_wc wc = c.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, n);
  EXPECT_EQ(std::memcmp(c.mem + n, data.data(), n), 0);
}

}  // namespace
}  // namespace iwarp::appif
