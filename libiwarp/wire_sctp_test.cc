// libiwarp applications on two daemons over RDMA over SCTP (RFC 5043) and
// over TCP at the same time, in one process. usrsctp is one stack per
// process, so both daemons' wire engines share the process's one
// sctp::SctpEndpoint and are polled on ONE worker thread (in iwarpd each
// daemon has its own endpoint on its worker 0; tests/appif_wire_dataplane.py
// runs two real daemons). Every SCTP packet really goes through usrsctp: the
// endpoint's outbound packets for address X are fed back to it as coming
// from X, so daemon A's association to "daemon B's address" is accepted by
// daemon B's listener on the same stack. TCP segments cross between the two
// daemons' TcpStacks through the in-memory test link. Between the
// applications' rings everything is the real code.
#include <errno.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "appif/wire_sctp_test_util.h"
#include "gtest/gtest.h"
#include "libiwarp/iwarp.h"
#include "libiwarp/wire_app_test_util.h"

namespace iwarp::appif {
namespace {

using testing::kIpA;
using testing::kIpB;
using testing::NowUs;
using testing::SharedWorker;
using testing::ThreadedTestLink;
using testing::g_ep;

using testing::kAllAccess;
using testing::Pattern;

// SCTP waits allow for usrsctp's timers on a loaded machine.
struct App : testing::WireApp {
  App() : WireApp(15000) {}
};

::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new testing::EndpointEnvironment);

SessionServerOptions DaemonOptions(WireEngine* e) { return testing::SctpDaemonOptions(e); }

iwarp_conn_opts Opts(uint32_t transport) {
  iwarp_conn_opts o{};
  o.transport = transport;
  return o;
}

std::string Pd(const iwarp_event& ev) { return testing::PrivateData(ev); }

class WireSctpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(g_ep, nullptr);
    worker_ = std::make_unique<SharedWorker>(link_);
    ASSERT_TRUE(worker_->ok());
    a_ = std::make_unique<TestHost>(DaemonOptions(worker_->engine(0)));
    b_ = std::make_unique<TestHost>(DaemonOptions(worker_->engine(1)));
    ASSERT_TRUE(a_->ok()) << a_->status();
    ASSERT_TRUE(b_->ok()) << b_->status();
  }
  void TearDown() override {
    apps_.clear();
    a_.reset();  // servers first: they destroy wire QPs through the running worker
    b_.reset();
    worker_.reset();
  }
  App* NewApp(TestHost& h, size_t bytes) {
    apps_.push_back(std::make_unique<App>());
    apps_.back()->Open(h.socket_path(), bytes);
    return apps_.back().get();
  }
  // The client on daemon A connects over `transport` to the server's
  // listener `lid` on daemon B; both see ESTABLISHED with the other's
  // private data.
  void Establish(App& c, App& s, uint32_t transport, uint16_t port, uint32_t lid) {
    iwarp_addr to{kIpB, port};
    const iwarp_conn_opts o = Opts(transport);
    ASSERT_EQ(iwarp_connect_opts(c.qp, &to, "hello-from-a", 12, &o), 0) << iwarp_last_error(c.s);
    iwarp_event req = s.Event(IWARP_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(req.listener_id, lid);
    ASSERT_EQ(Pd(req), "hello-from-a");
    ASSERT_EQ(iwarp_accept(s.s, req.request_id, s.qp, "welcome-b", 9), 0) << iwarp_last_error(s.s);
    iwarp_event est = c.Event(IWARP_EVENT_ESTABLISHED);
    EXPECT_EQ(Pd(est), "welcome-b");
    iwarp_event sest = s.Event(IWARP_EVENT_ESTABLISHED);
    EXPECT_EQ(Pd(sest), "hello-from-a");
    const uint32_t want = transport == IWARP_TRANSPORT_SCTP
                              ? IWARP_MPA_STATE_WIRE | IWARP_MPA_STATE_SCTP
                              : IWARP_MPA_STATE_WIRE | IWARP_MPA_STATE_CRC;
    EXPECT_EQ(est.mpa_flags, want);
    EXPECT_EQ(sest.mpa_flags, want);
  }
  uint32_t Listen(App& s, uint32_t transport, uint16_t port) {
    iwarp_addr any{0, port};
    const iwarp_conn_opts o = Opts(transport);
    uint32_t lid = 0;
    EXPECT_EQ(iwarp_listen_opts(s.s, &any, &o, &lid), 0) << iwarp_last_error(s.s);
    return lid;
  }
  // RDMA Write, RDMA Read and Send of `n` bytes, each verified byte for
  // byte, plus the bytes around the sinks untouched.
  void Transfers(App& c, App& s, size_t half, size_t n, uint64_t* id) {
    SCOPED_TRACE("size " + std::to_string(n));
    const uint64_t csrc = c.mr.addr, csink = c.mr.addr + half;
    const uint64_t ssrc = s.mr.addr, ssink = s.mr.addr + half;
    // RDMA Write, then an RDMA Read on the same stream. Over SCTP a Write
    // completes when SCTP took its last segment, not when the peer placed it
    // (iwarp/sctp_llp.h); the Read Response comes back only after the
    // responder processed the Write (RFC 5040 5.5 ordering), so once the
    // Read completed the Write's bytes must be in place.
    auto data = Pattern(n, static_cast<uint32_t>(n) + 1);
    std::memcpy(c.mem, data.data(), n);
    std::memset(s.mem + half, 0xAB, n + 16);
    auto rdata = Pattern(n, static_cast<uint32_t>(n) + 2);
    std::memcpy(s.mem, rdata.data(), n);
    std::memset(c.mem + half, 0xCD, n + 1);
    const uint64_t placed_before = iwarp_qp_writes_placed(s.qp);
    c.Post(*id, IWARP_WR_RDMA_WRITE, csrc, static_cast<uint32_t>(n), c.mr.stag, ssink + 7,
           s.mr.stag);
    c.Post(*id + 1, IWARP_WR_RDMA_READ, csink, static_cast<uint32_t>(n), c.mr.stag, ssrc,
           s.mr.stag);
    iwarp_wc wc = c.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IWARP_WC_RDMA_WRITE);
    EXPECT_EQ(wc.wr_id, *id);
    wc = c.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IWARP_WC_RDMA_READ);
    EXPECT_EQ(wc.wr_id, *id + 1);
    EXPECT_EQ(wc.byte_len, n);
    *id += 2;
    // The server's QP counted the Write placed (also a zero-length one).
    EXPECT_EQ(iwarp_qp_wait_writes(s.qp, placed_before, 5000), 0);
    EXPECT_EQ(iwarp_qp_writes_placed(s.qp), placed_before + 1);
    EXPECT_EQ(std::memcmp(s.mem + half + 7, data.data(), n), 0);
    for (size_t i = 0; i < 7; ++i) ASSERT_EQ(s.mem[half + i], 0xAB);
    for (size_t i = 0; i < 9; ++i) ASSERT_EQ(s.mem[half + 7 + n + i], 0xAB);
    EXPECT_EQ(std::memcmp(c.mem + half, rdata.data(), n), 0);
    EXPECT_EQ(c.mem[half + n], 0xCD);

    auto sdata = Pattern(n, static_cast<uint32_t>(n) + 3);
    std::memcpy(s.mem, sdata.data(), n);
    std::memset(c.mem + half, 0xEF, n + 1);
    c.PostRecv(*id, csink, static_cast<uint32_t>(half), c.mr.stag);
    s.Post(*id + 1, IWARP_WR_SEND, ssrc, static_cast<uint32_t>(n), s.mr.stag);
    wc = s.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IWARP_WC_SEND);
    wc = c.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IWARP_WC_RECV);
    EXPECT_EQ(wc.wr_id, *id);
    EXPECT_EQ(wc.byte_len, n);
    EXPECT_EQ(std::memcmp(c.mem + half, sdata.data(), n), 0);
    EXPECT_EQ(c.mem[half + n], 0xEF);
    *id += 2;
  }

  ThreadedTestLink link_;
  std::unique_ptr<SharedWorker> worker_;
  std::unique_ptr<TestHost> a_, b_;
  std::vector<std::unique_ptr<App>> apps_;
};

TEST_F(WireSctpTest, WriteReadSendOverSctpAreVerifiedFromZeroTo1MiB) {
  const size_t half = (size_t{1} << 20) + 4096;
  App& c = *NewApp(*a_, 2 * half);
  App& s = *NewApp(*b_, 2 * half);
  const uint32_t lid = Listen(s, IWARP_TRANSPORT_SCTP, 5001);
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, IWARP_TRANSPORT_SCTP, 5001, lid));
  uint64_t id = 1;
  for (size_t n : {size_t{0}, size_t{1}, size_t{4093}, size_t{65536}, size_t{1} << 20}) {
    ASSERT_NO_FATAL_FAILURE(Transfers(c, s, half, n, &id));
  }
  const WireEngineStats wa = worker_->engine(0)->stats();
  const WireEngineStats wb = worker_->engine(1)->stats();
  EXPECT_EQ(wa.sctp_associations, 1u);  // the client's own association
  EXPECT_EQ(wa.sctp_associations_active, 1u);
  EXPECT_EQ(wb.sctp_associations, 1u);  // accepted by the listener
  EXPECT_EQ(wb.requests, 1u);
  EXPECT_EQ(wa.connections, 1u);
  EXPECT_EQ(wb.connections, 1u);
  EXPECT_EQ(a_->stats().wire_connections, 1u);
  EXPECT_EQ(wa.events_dropped + wb.events_dropped, 0u);
}

// SG lists over SCTP: a Send gathered from 3 SGEs (one empty) into a
// receive of 2 SGEs, and a gathered Write followed by a Read (which, RFC
// 5040 5.5, returns after the Write was placed) into two contiguous SGEs.
TEST_F(WireSctpTest, MultiSgeSendWriteReadOverSctpAreVerified) {
  constexpr size_t kMem = 1 << 20;
  App& c = *NewApp(*a_, kMem);
  App& s = *NewApp(*b_, kMem);
  const uint32_t lid = Listen(s, IWARP_TRANSPORT_SCTP, 5006);
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, IWARP_TRANSPORT_SCTP, 5006, lid));
  std::memset(c.mem, 0x5A, kMem);
  std::memset(s.mem, 0xA5, kMem);
  const auto data = Pattern(30000, 17);
  std::memcpy(c.mem + 11, data.data(), 9000);
  std::memcpy(c.mem + 100000, data.data() + 9000, 21000);
  const std::vector<iwarp_sge> src = {{c.mr.addr + 11, 9000, c.mr.stag},
                                      {c.mr.addr + 50000, 0, c.mr.stag},
                                      {c.mr.addr + 100000, 21000, c.mr.stag}};
  s.PostRecvSgl(9,
                {{s.mr.addr + 300000, 2500, s.mr.stag}, {s.mr.addr + 200000, 40000, s.mr.stag}});
  c.PostSgl(1, IWARP_WR_SEND, src);
  iwarp_wc wc = c.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  wc = s.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 9u);
  EXPECT_EQ(wc.byte_len, 30000u);
  EXPECT_EQ(std::memcmp(s.mem + 300000, data.data(), 2500), 0);
  EXPECT_EQ(std::memcmp(s.mem + 200000, data.data() + 2500, 27500), 0);
  EXPECT_EQ(s.mem[300000 + 2500], 0xA5);
  EXPECT_EQ(s.mem[200000 + 27500], 0xA5);

  c.PostSgl(2, IWARP_WR_RDMA_WRITE, src, s.mr.addr + 500000, s.mr.stag);
  c.PostSgl(3, IWARP_WR_RDMA_READ,
            {{c.mr.addr + 600000, 1000, c.mr.stag}, {c.mr.addr + 601000, 29000, c.mr.stag}},
            s.mr.addr + 500000, s.mr.stag);
  wc = c.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 2u);
  wc = c.Wc();
  ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 3u);
  EXPECT_EQ(wc.byte_len, 30000u);
  EXPECT_EQ(std::memcmp(s.mem + 500000, data.data(), 30000), 0);
  EXPECT_EQ(std::memcmp(c.mem + 600000, data.data(), 30000), 0);
  EXPECT_EQ(c.mem[630000], 0x5A);
  EXPECT_EQ(worker_->engine(0)->stats().bad_sqes, 0u);
}

TEST_F(WireSctpTest, RejectCarriesPrivateDataToTheInitiator) {
  App& c = *NewApp(*a_, 1 << 16);
  App& s = *NewApp(*b_, 1 << 16);
  const uint32_t lid = Listen(s, IWARP_TRANSPORT_SCTP, 5002);
  iwarp_addr to{kIpB, 5002};
  const iwarp_conn_opts o = Opts(IWARP_TRANSPORT_SCTP);
  ASSERT_EQ(iwarp_connect_opts(c.qp, &to, "let me in", 9, &o), 0) << iwarp_last_error(c.s);
  iwarp_event req = s.Event(IWARP_EVENT_CONNECT_REQUEST);
  EXPECT_EQ(req.listener_id, lid);
  EXPECT_EQ(Pd(req), "let me in");
  ASSERT_EQ(iwarp_reject(s.s, req.request_id, "go away", 7), 0);
  iwarp_event ev = c.Event(IWARP_EVENT_REJECTED);
  EXPECT_EQ(ev.reason, ECONNREFUSED);
  EXPECT_EQ(Pd(ev), "go away");
  // The rejected QP is in error: it flushes what is posted to it.
  c.PostRecv(9, c.mr.addr, 64, c.mr.stag);
  iwarp_wc wc = c.Wc();
  EXPECT_EQ(wc.wr_id, 9u);
  EXPECT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
  EXPECT_EQ(worker_->engine(1)->stats().connections, 0u);
}

TEST_F(WireSctpTest, TcpAndSctpOnTheSamePortNumberAtTheSameTime) {
  const size_t half = (size_t{1} << 16) + 4096;
  App& ct = *NewApp(*a_, 2 * half);
  App& st = *NewApp(*b_, 2 * half);
  App& cs = *NewApp(*a_, 2 * half);
  App& ss = *NewApp(*b_, 2 * half);
  // TCP and SCTP ports are separate spaces: both listeners get port 5003.
  const uint32_t ltcp = Listen(st, IWARP_TRANSPORT_TCP, 5003);
  const uint32_t lsctp = Listen(ss, IWARP_TRANSPORT_SCTP, 5003);
  ASSERT_NE(ltcp, lsctp);
  // A second SCTP listener on the port is refused, naming the SCTP endpoint.
  iwarp_addr any{0, 5003};
  const iwarp_conn_opts so = Opts(IWARP_TRANSPORT_SCTP);
  uint32_t dup = 0;
  EXPECT_EQ(iwarp_listen_opts(ss.s, &any, &so, &dup), -EADDRINUSE);
  ASSERT_NO_FATAL_FAILURE(Establish(ct, st, IWARP_TRANSPORT_TCP, 5003, ltcp));
  ASSERT_NO_FATAL_FAILURE(Establish(cs, ss, IWARP_TRANSPORT_SCTP, 5003, lsctp));
  uint64_t id = 1;
  for (size_t n : {size_t{4096}, size_t{65536}}) {
    ASSERT_NO_FATAL_FAILURE(Transfers(ct, st, half, n, &id));
    ASSERT_NO_FATAL_FAILURE(Transfers(cs, ss, half, n, &id));
  }
  EXPECT_EQ(worker_->engine(0)->stats().connections, 2u);
  EXPECT_EQ(worker_->engine(0)->stats().sctp_associations, 1u);
  EXPECT_EQ(b_->stats().wire_connections, 2u);
}

TEST_F(WireSctpTest, DisconnectEndsBothSidesAndFlushes) {
  App& c = *NewApp(*a_, 1 << 16);
  App& s = *NewApp(*b_, 1 << 16);
  const uint32_t lid = Listen(s, IWARP_TRANSPORT_SCTP, 5004);
  ASSERT_NO_FATAL_FAILURE(Establish(c, s, IWARP_TRANSPORT_SCTP, 5004, lid));
  s.PostRecv(77, s.mr.addr, 64, s.mr.stag);
  ASSERT_EQ(iwarp_disconnect(c.qp), 0);
  // RFC 5043 6.2 session Terminates both ways: a graceful close, reason 0.
  EXPECT_EQ(c.Event(IWARP_EVENT_DISCONNECTED).reason, 0);
  EXPECT_EQ(s.Event(IWARP_EVENT_DISCONNECTED).reason, 0);
  iwarp_wc wc = s.Wc();
  EXPECT_EQ(wc.wr_id, 77u);
  EXPECT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
  // Destroying the client's QP shuts its association down; the server's
  // side of it is reclaimed when it ends.
  ASSERT_EQ(iwarp_destroy_qp(c.qp), 0);
  c.qp = nullptr;
  ASSERT_EQ(iwarp_destroy_qp(s.qp), 0);
  s.qp = nullptr;
  // Both ends let go of the association once it is down.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline &&
         (worker_->engine(0)->stats().sctp_associations_active != 0 ||
          worker_->engine(1)->stats().sctp_associations_active != 0)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(worker_->engine(0)->stats().sctp_associations_active, 0u);
  EXPECT_EQ(worker_->engine(1)->stats().sctp_associations_active, 0u);
  EXPECT_EQ(worker_->engine(0)->stats().sctp_associations, 1u);
}

TEST_F(WireSctpTest, ConnectToAnSctpPortNobodyListensOnFails) {
  App& c = *NewApp(*a_, 1 << 16);
  iwarp_addr to{kIpB, 5099};
  const iwarp_conn_opts o = Opts(IWARP_TRANSPORT_SCTP);
  ASSERT_EQ(iwarp_connect_opts(c.qp, &to, nullptr, 0, &o), 0) << iwarp_last_error(c.s);
  iwarp_event ev = c.Event(IWARP_EVENT_CONNECT_ERROR);
  EXPECT_EQ(ev.reason, ECONNREFUSED);
}

TEST_F(WireSctpTest, MalformedOptionsAreRefused) {
  App& c = *NewApp(*a_, 1 << 16);
  iwarp_addr to{kIpB, 5005};
  iwarp_conn_opts o = Opts(IWARP_TRANSPORT_SCTP);
  o.reserved[2] = 1;
  EXPECT_EQ(iwarp_connect_opts(c.qp, &to, nullptr, 0, &o), -EINVAL);
  o = Opts(7);
  EXPECT_EQ(iwarp_connect_opts(c.qp, &to, nullptr, 0, &o), -EINVAL);
  // MPA options do not exist over SCTP (RFC 5043).
  o = Opts(IWARP_TRANSPORT_SCTP);
  o.flags = IWARP_CONN_MPA;
  o.mpa_flags = IWARP_MPA_CRC;
  EXPECT_EQ(iwarp_connect_opts(c.qp, &to, nullptr, 0, &o), -EINVAL);
  // Listen options take no connect flags.
  o = Opts(IWARP_TRANSPORT_TCP);
  o.flags = IWARP_CONN_MPA;
  uint32_t lid = 0;
  iwarp_addr any{0, 5005};
  EXPECT_EQ(iwarp_listen_opts(c.s, &any, &o, &lid), -EINVAL);
}

// An Initiate no application answers is rejected after pending_timeout_us
// (a peer cannot hold the request slots); the stale request id is refused.
TEST(WireSctpTimeout, UnansweredInitiateIsRejectedAfterTheTimeout) {
  ThreadedTestLink link;
  auto worker = std::make_unique<SharedWorker>(link, true, /*pending_timeout_us=*/300'000);
  ASSERT_TRUE(worker->ok());
  auto a = std::make_unique<TestHost>(DaemonOptions(worker->engine(0)));
  auto b = std::make_unique<TestHost>(DaemonOptions(worker->engine(1)));
  {
    App c, s;
    ASSERT_NO_FATAL_FAILURE(c.Open(a->socket_path(), 1 << 16));
    ASSERT_NO_FATAL_FAILURE(s.Open(b->socket_path(), 1 << 16));
    iwarp_addr any{0, 5007};
    const iwarp_conn_opts o = Opts(IWARP_TRANSPORT_SCTP);
    uint32_t lid = 0;
    ASSERT_EQ(iwarp_listen_opts(s.s, &any, &o, &lid), 0) << iwarp_last_error(s.s);
    iwarp_addr to{kIpB, 5007};
    ASSERT_EQ(iwarp_connect_opts(c.qp, &to, "anyone?", 7, &o), 0) << iwarp_last_error(c.s);
    iwarp_event req = s.Event(IWARP_EVENT_CONNECT_REQUEST);
    EXPECT_EQ(Pd(req), "anyone?");
    // Nobody answers: the daemon rejects the session on its own.
    iwarp_event ev = c.Event(IWARP_EVENT_REJECTED, 5000);
    EXPECT_EQ(ev.reason, ECONNREFUSED);
    EXPECT_EQ(ev.private_data_len, 0u);
    // The daemon forgot the request when it rejected it (its control thread
    // hears of that through the wire engine's event ring; give it a moment).
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(iwarp_accept(s.s, req.request_id, s.qp, nullptr, 0), -ENOENT);
    EXPECT_EQ(worker->engine(1)->stats().sctp_initiates_refused, 1u);
    EXPECT_EQ(worker->engine(1)->stats().connections, 0u);
  }
  a.reset();
  b.reset();
  worker.reset();
}

// A daemon whose data plane has no SCTP answers SCTP listen and connect with
// EPROTONOSUPPORT and says why; TCP keeps working on it.
TEST(WireSctpUnconfigured, SctpIsRefusedWithEprotonosupport) {
  ThreadedTestLink link;
  auto worker = std::make_unique<SharedWorker>(link, /*sctp_on_b=*/false);
  ASSERT_TRUE(worker->ok());
  auto a = std::make_unique<TestHost>(DaemonOptions(worker->engine(0)));
  auto b = std::make_unique<TestHost>(DaemonOptions(worker->engine(1)));
  {
    App s;
    ASSERT_NO_FATAL_FAILURE(s.Open(b->socket_path(), 1 << 16));
    iwarp_addr any{0, 5006};
    const iwarp_conn_opts so = Opts(IWARP_TRANSPORT_SCTP);
    uint32_t lid = 0;
    EXPECT_EQ(iwarp_listen_opts(s.s, &any, &so, &lid), -EPROTONOSUPPORT);
    EXPECT_NE(std::string(iwarp_last_error(s.s)).find("no SCTP"), std::string::npos)
        << iwarp_last_error(s.s);
    iwarp_addr to{kIpA, 5006};
    EXPECT_EQ(iwarp_connect_opts(s.qp, &to, nullptr, 0, &so), -EPROTONOSUPPORT);
    const iwarp_conn_opts to_opts = Opts(IWARP_TRANSPORT_TCP);
    EXPECT_EQ(iwarp_listen_opts(s.s, &any, &to_opts, &lid), 0) << iwarp_last_error(s.s);
  }
  a.reset();
  b.reset();
  worker.reset();
}

}  // namespace
}  // namespace iwarp::appif
