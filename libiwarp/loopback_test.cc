// libiwarp against a session server in this process: loopback connection
// management, the RFC 5040/5041 error cases (nothing placed, Terminate triple
// in the CQE), isolation between sessions, blocking waits, daemon loss,
// limits, and create/destroy loops without leaks.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "appif/test_host.h"
#include "gtest/gtest.h"
#include "libiwarp/iwarp.h"
#include "libiwarp/iwarp.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IWARP_TEST_UNDER_ASAN 1
#endif
#endif

namespace iwarp::appif {
namespace {

constexpr uint32_t kAllAccess =
    IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE;

struct App {
  iwarp_session* s = nullptr;
  uint32_t pd = 0;
  uint8_t* mem = nullptr;
  iwarp_mr mr{};
  iwarp_cq* cq = nullptr;
  iwarp_qp* qp = nullptr;

  void Open(const std::string& path) {
    ASSERT_EQ(iwarp_open(path.c_str(), &s), 0);
    ASSERT_EQ(iwarp_alloc_pd(s, &pd), 0);
    void* m = nullptr;
    ASSERT_EQ(iwarp_mem_alloc(s, 1 << 16, 0, &m), 0);
    mem = static_cast<uint8_t*>(m);
    ASSERT_EQ(iwarp_reg_mr(s, pd, mem, 1 << 16, kAllAccess, &mr), 0) << iwarp_last_error(s);
    ASSERT_EQ(iwarp_create_cq(s, 64, &cq), 0);
    iwarp_qp_attr a{pd, cq, cq, 16, 16};
    ASSERT_EQ(iwarp_create_qp(s, &a, &qp), 0);
  }
  void Close() {
    if (s != nullptr) iwarp_close(s);
    s = nullptr;
  }
  iwarp_mr Reg(size_t off, size_t len, uint32_t access) {
    iwarp_mr m{};
    EXPECT_EQ(iwarp_reg_mr(s, pd, mem + off, len, access, &m), 0) << iwarp_last_error(s);
    return m;
  }
  void PostRecv(uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey) {
    iwarp_sge sge{addr, len, lkey};
    iwarp_recv_wr wr{wr_id, &sge, 1};
    ASSERT_EQ(iwarp_post_recv(qp, &wr, 1), 1);
  }
  void Post(uint64_t wr_id, uint32_t opcode, uint64_t addr, uint32_t len, uint32_t lkey,
            uint64_t raddr = 0, uint32_t rkey = 0, uint32_t inv = 0) {
    iwarp_sge sge{addr, len, lkey};
    iwarp_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.flags = IWARP_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = raddr;
    wr.rkey = rkey;
    wr.invalidate_stag = inv;
    ASSERT_EQ(iwarp_post_send(qp, &wr, 1), 1);
  }
  iwarp_wc Wc() {
    iwarp_wc wc{};
    for (int i = 0; i < 50; ++i) {
      if (iwarp_poll_cq(cq, &wc, 1) == 1) return wc;
      iwarp_cq_wait(cq, 100);
    }
    ADD_FAILURE() << "no completion";
    wc.status = 0xFF;
    return wc;
  }
  iwarp_event Event(uint32_t type) {
    iwarp_event ev{};
    EXPECT_EQ(iwarp_get_event(s, &ev, 5000), 1);
    EXPECT_EQ(ev.type, type) << "reason " << ev.reason;
    return ev;
  }
};

class Loopback : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(host_.ok()) << host_.status();
    a_.Open(host_.socket_path());
    b_.Open(host_.socket_path());
  }
  void TearDown() override {
    a_.Close();
    b_.Close();
  }
  // B connects to A's listener; A accepts.
  void Connect(uint16_t port = 7000) {
    iwarp_addr addr{0, port};
    uint32_t lid = 0;
    ASSERT_EQ(iwarp_listen(a_.s, &addr, &lid), 0);
    ASSERT_EQ(iwarp_connect(b_.qp, &addr, "pd-b", 4), 0);
    iwarp_event req = a_.Event(IWARP_EVENT_CONNECT_REQUEST);
    ASSERT_EQ(iwarp_accept(a_.s, req.request_id, a_.qp, "pd-a", 4), 0);
    a_.Event(IWARP_EVENT_ESTABLISHED);
    b_.Event(IWARP_EVENT_ESTABLISHED);
  }
  // After a failed operation: both QPs report the Terminate triple.
  void ExpectQpErrors(uint8_t layer, uint8_t etype, uint8_t code) {
    for (App* app : {&a_, &b_}) {
      iwarp_event ev = app->Event(IWARP_EVENT_QP_ERROR);
      EXPECT_EQ(ev.term_layer, layer);
      EXPECT_EQ(ev.term_etype, etype);
      EXPECT_EQ(ev.term_code, code);
    }
  }
  static void ExpectTerm(const iwarp_wc& wc, uint8_t status, uint8_t layer, uint8_t etype,
                         uint8_t code) {
    EXPECT_EQ(wc.status, status);
    EXPECT_EQ(wc.term_layer, layer);
    EXPECT_EQ(wc.term_etype, etype);
    EXPECT_EQ(wc.term_code, code);
  }
  TestHost host_;
  App a_, b_;
};

TEST_F(Loopback, RejectCarriesPrivateDataAndQpCanRetry) {
  iwarp_addr addr{0, 7001};
  uint32_t lid = 0;
  ASSERT_EQ(iwarp_listen(a_.s, &addr, &lid), 0);
  EXPECT_EQ(iwarp_listen(b_.s, &addr, &lid), -EADDRINUSE);
  ASSERT_EQ(iwarp_connect(b_.qp, &addr, "first", 5), 0);
  iwarp_event req = a_.Event(IWARP_EVENT_CONNECT_REQUEST);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(req.private_data), req.private_data_len), "first");
  ASSERT_EQ(iwarp_reject(a_.s, req.request_id, "busy", 4), 0);
  iwarp_event rej = b_.Event(IWARP_EVENT_REJECTED);
  EXPECT_EQ(rej.qp_id, iwarp_qp_id(b_.qp));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(rej.private_data), rej.private_data_len), "busy");
  // The same QP connects again and is accepted.
  ASSERT_EQ(iwarp_connect(b_.qp, &addr, "second", 6), 0);
  req = a_.Event(IWARP_EVENT_CONNECT_REQUEST);
  // B cannot accept A's request.
  EXPECT_EQ(iwarp_accept(b_.s, req.request_id, b_.qp, nullptr, 0), -ENOENT);
  ASSERT_EQ(iwarp_accept(a_.s, req.request_id, a_.qp, nullptr, 0), 0);
  a_.Event(IWARP_EVENT_ESTABLISHED);
  b_.Event(IWARP_EVENT_ESTABLISHED);
  EXPECT_EQ(host_.stats().connections, 1u);
}

TEST_F(Loopback, ConnectWithoutListenerIsRefused) {
  iwarp_addr addr{0x7F000001u, 9};
  EXPECT_EQ(iwarp_connect(b_.qp, &addr, nullptr, 0), -ECONNREFUSED);
  EXPECT_NE(std::string(iwarp_last_error(b_.s)), "");
}

TEST_F(Loopback, DisconnectFlushesBothSides) {
  Connect();
  a_.PostRecv(1, a_.mr.addr, 64, a_.mr.stag);
  ASSERT_EQ(iwarp_disconnect(b_.qp), 0);
  a_.Event(IWARP_EVENT_DISCONNECTED);
  b_.Event(IWARP_EVENT_DISCONNECTED);
  iwarp_wc wc = a_.Wc();
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
  // Work posted after the disconnect is flushed, not run.
  b_.Post(2, IWARP_WR_SEND, b_.mr.addr, 8, b_.mr.stag);
  wc = b_.Wc();
  EXPECT_EQ(wc.wr_id, 2u);
  EXPECT_EQ(wc.status, IWARP_WC_WR_FLUSH_ERR);
}

TEST_F(Loopback, WriteBeyondRegionIsBaseBoundsAndPlacesNothing) {
  Connect();
  iwarp_mr small = a_.Reg(4096, 4096, IWARP_ACCESS_REMOTE_WRITE);
  std::memset(a_.mem, 0x11, 1 << 16);
  std::memset(b_.mem, 0x22, 1 << 16);
  // 100 bytes at offset 4000 of a 4096-byte region: 4 bytes too many.
  b_.Post(7, IWARP_WR_RDMA_WRITE, b_.mr.addr, 100, b_.mr.stag, small.addr + 4000, small.stag);
  iwarp_wc wc = b_.Wc();
  EXPECT_EQ(wc.wr_id, 7u);
  ExpectTerm(wc, IWARP_WC_REM_ACCESS_ERR, 1, 1, 0x01);  // DDP tagged base or bounds
  for (int i = 0; i < (1 << 16); ++i) ASSERT_EQ(a_.mem[i], 0x11) << i;
  ExpectQpErrors(1, 1, 0x01);
  b_.Post(8, IWARP_WR_SEND, b_.mr.addr, 1, b_.mr.stag);
  EXPECT_EQ(b_.Wc().status, IWARP_WC_WR_FLUSH_ERR);
  EXPECT_EQ(host_.stats().wrs_failed, 1u);
}

TEST_F(Loopback, WriteWithoutRemoteWriteRightIsAccessViolation) {
  Connect();
  iwarp_mr ro = a_.Reg(0, 4096, IWARP_ACCESS_REMOTE_READ);
  std::memset(a_.mem, 0x11, 4096);
  b_.Post(1, IWARP_WR_RDMA_WRITE, b_.mr.addr, 16, b_.mr.stag, ro.addr, ro.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_ACCESS_ERR, 0, 1, 0x02);  // RDMAP access rights
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(a_.mem[i], 0x11);
  ExpectQpErrors(0, 1, 0x02);
}

TEST_F(Loopback, ReadWithoutRemoteReadRightIsAccessViolation) {
  Connect();
  iwarp_mr wo = a_.Reg(0, 4096, IWARP_ACCESS_REMOTE_WRITE);
  std::memset(b_.mem, 0x33, 4096);
  b_.Post(1, IWARP_WR_RDMA_READ, b_.mr.addr, 16, b_.mr.stag, wo.addr, wo.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_ACCESS_ERR, 0, 1, 0x02);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(b_.mem[i], 0x33);
}

TEST_F(Loopback, ReadSourceOutOfBoundsIsRdmapBaseBounds) {
  Connect();
  b_.Post(1, IWARP_WR_RDMA_READ, b_.mr.addr, 16, b_.mr.stag, a_.mr.addr + (1 << 16) - 8,
          a_.mr.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_ACCESS_ERR, 0, 1, 0x01);
}

TEST_F(Loopback, StaleKeyIsInvalidStag) {
  Connect();
  const uint32_t wrong_key = (a_.mr.stag & ~0xFFu) | ((a_.mr.stag + 1) & 0xFFu);
  b_.Post(1, IWARP_WR_RDMA_WRITE, b_.mr.addr, 16, b_.mr.stag, a_.mr.addr, wrong_key);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_ACCESS_ERR, 1, 1, 0x00);  // DDP tagged invalid STag
}

TEST_F(Loopback, StagOfAThirdSessionIsNotAssociated) {
  App c;
  c.Open(host_.socket_path());
  Connect();
  std::memset(c.mem, 0x44, 1 << 16);
  // B is connected to A; C's region is valid, but in C's protection domain.
  b_.Post(1, IWARP_WR_RDMA_WRITE, b_.mr.addr, 16, b_.mr.stag, c.mr.addr, c.mr.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_ACCESS_ERR, 1, 1, 0x02);  // STag not associated
  b_.Close();
  b_ = App{};
  for (int i = 0; i < (1 << 16); ++i) ASSERT_EQ(c.mem[i], 0x44);
  // Nor can a session deregister, invalidate or free another's objects.
  EXPECT_EQ(iwarp_dereg_mr(a_.s, c.mr.stag), -ENOENT);
  EXPECT_EQ(iwarp_invalidate_stag(a_.s, c.mr.stag), -ENOENT);
  EXPECT_EQ(iwarp_dealloc_pd(a_.s, c.pd), -ENOENT);
  iwarp_mr m{};
  EXPECT_EQ(iwarp_reg_mr(a_.s, c.pd, a_.mem, 64, 0, &m), -ENOENT);
  c.Close();
}

TEST_F(Loopback, ForeignLkeyIsLocalProtectionError) {
  Connect();
  a_.PostRecv(1, a_.mr.addr, 64, a_.mr.stag);
  // B gathers from A's region: its STag is valid, but not in B's PD.
  b_.Post(1, IWARP_WR_SEND, a_.mr.addr, 16, a_.mr.stag);
  iwarp_wc wc = b_.Wc();
  EXPECT_EQ(wc.status, IWARP_WC_LOC_PROT_ERR);
  EXPECT_EQ(a_.Wc().status, IWARP_WC_WR_FLUSH_ERR);  // A's receive is flushed, not filled
}

TEST_F(Loopback, SendWithoutReceiveIsDdpNoBuffer) {
  Connect();
  b_.Post(1, IWARP_WR_SEND, b_.mr.addr, 16, b_.mr.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_INV_REQ_ERR, 1, 2, 0x02);  // untagged, no buffer
  ExpectQpErrors(1, 2, 0x02);
}

TEST_F(Loopback, SendLongerThanReceiveIsTooLong) {
  Connect();
  std::memset(a_.mem, 0x11, 256);
  a_.PostRecv(1, a_.mr.addr, 8, a_.mr.stag);
  b_.Post(1, IWARP_WR_SEND, b_.mr.addr, 16, b_.mr.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_INV_REQ_ERR, 1, 2, 0x05);  // message too long
  EXPECT_EQ(a_.Wc().status, IWARP_WC_LOC_LEN_ERR);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(a_.mem[i], 0x11);
}

TEST_F(Loopback, ReceiveIntoRegionWithoutLocalWriteFails) {
  Connect();
  iwarp_mr ro = a_.Reg(0, 4096, IWARP_ACCESS_REMOTE_READ);
  std::memset(a_.mem, 0x11, 4096);
  a_.PostRecv(5, ro.addr, 64, ro.stag);
  b_.Post(1, IWARP_WR_SEND, b_.mr.addr, 16, b_.mr.stag);
  EXPECT_EQ(b_.Wc().status, IWARP_WC_REM_OP_ERR);
  iwarp_wc wc = a_.Wc();
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_EQ(wc.status, IWARP_WC_LOC_PROT_ERR);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(a_.mem[i], 0x11);
}

TEST_F(Loopback, SendWithInvalidateRevokesTheStag) {
  Connect();
  iwarp_mr target = a_.Reg(8192, 4096, IWARP_ACCESS_REMOTE_WRITE);
  a_.PostRecv(1, a_.mr.addr, 64, a_.mr.stag);
  a_.PostRecv(2, a_.mr.addr + 64, 64, a_.mr.stag);
  std::memcpy(b_.mem, "invalidate", 10);
  b_.Post(1, IWARP_WR_SEND_WITH_INV, b_.mr.addr, 10, b_.mr.stag, 0, 0, target.stag);
  EXPECT_EQ(b_.Wc().status, IWARP_WC_SUCCESS);
  iwarp_wc wc = a_.Wc();
  EXPECT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_TRUE(wc.flags & IWARP_WC_WITH_INV);
  EXPECT_EQ(wc.invalidated_stag, target.stag);
  EXPECT_EQ(std::memcmp(a_.mem, "invalidate", 10), 0);
  // The invalidated STag no longer places anything.
  std::memset(a_.mem + 8192, 0x55, 4096);
  b_.Post(2, IWARP_WR_RDMA_WRITE, b_.mr.addr, 16, b_.mr.stag, target.addr, target.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_ACCESS_ERR, 1, 1, 0x00);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(a_.mem[8192 + i], 0x55);
  // Deregistering the invalidated region frees its slot.
  EXPECT_EQ(iwarp_dereg_mr(a_.s, target.stag), 0);
}

TEST_F(Loopback, ProtectedStagRefusesRemoteInvalidate) {
  Connect();
  iwarp_mr keep =
      a_.Reg(8192, 4096, IWARP_ACCESS_REMOTE_WRITE | IWARP_ACCESS_NO_REMOTE_INVALIDATE);
  a_.PostRecv(1, a_.mr.addr, 64, a_.mr.stag);
  b_.Post(1, IWARP_WR_SEND_WITH_INV, b_.mr.addr, 4, b_.mr.stag, 0, 0, keep.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_OP_ERR, 0, 1, 0x09);  // STag cannot be invalidated
  EXPECT_EQ(a_.Wc().status, IWARP_WC_REM_OP_ERR);
}

TEST_F(Loopback, LocalInvalidateStopsRemoteAccess) {
  Connect();
  iwarp_mr m = a_.Reg(0, 4096, IWARP_ACCESS_REMOTE_READ);
  ASSERT_EQ(iwarp_invalidate_stag(a_.s, m.stag), 0);
  EXPECT_EQ(iwarp_invalidate_stag(a_.s, m.stag), -EINVAL);  // already invalid
  b_.Post(1, IWARP_WR_RDMA_READ, b_.mr.addr, 16, b_.mr.stag, m.addr, m.stag);
  ExpectTerm(b_.Wc(), IWARP_WC_REM_ACCESS_ERR, 0, 1, 0x00);
}

TEST_F(Loopback, ZeroLengthWriteChecksNothingAndCompletes) {
  Connect();
  // RFC 5041 5.2: STag and TO of a zero-length tagged message are not checked.
  b_.Post(1, IWARP_WR_RDMA_WRITE, b_.mr.addr, 0, b_.mr.stag, 0, 0x12345678);
  iwarp_wc wc = b_.Wc();
  EXPECT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 0u);
}

TEST_F(Loopback, BlockingWaitWakesOnCompletion) {
  Connect();
  a_.PostRecv(1, a_.mr.addr, 64, a_.mr.stag);
  // Let the server fall asleep (idle rounds), so the doorbell path is used.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const uint64_t doorbells = host_.stats().doorbells;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    b_.Post(1, IWARP_WR_SEND, b_.mr.addr, 4, b_.mr.stag);
  });
  EXPECT_EQ(iwarp_cq_wait(a_.cq, 5000), 0);
  const auto waited = std::chrono::steady_clock::now() - t0;
  sender.join();
  EXPECT_GE(waited, std::chrono::milliseconds(140));
  EXPECT_LT(waited, std::chrono::milliseconds(2000));  // woken, not timed out
  iwarp_wc wc;
  ASSERT_EQ(iwarp_poll_cq(a_.cq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IWARP_WC_SUCCESS);
  EXPECT_EQ(iwarp_cq_wait(a_.cq, 50), -ETIMEDOUT);
  // The sleeping server was woken by the application's doorbell.
  EXPECT_GE(host_.stats().doorbells, doorbells + 1);
}

// An application's own event loop (poll on iwarp_cq_fd / iwarp_event_fd):
// an armed CQ's descriptor turns readable at the completion and not before;
// arming with a completion already waiting says so instead of arming; the
// session's events work the same way; and a lost daemon hangs both up.
TEST_F(Loopback, EventLoopDescriptorsWakeOnlyWhenArmed) {
  uint32_t lid = 0;
  iwarp_addr addr{0, 7000};
  ASSERT_EQ(iwarp_listen(a_.s, &addr, &lid), 0);
  ASSERT_EQ(iwarp_event_arm(a_.s), 0);
  pollfd ep{iwarp_event_fd(a_.s), POLLIN, 0};
  EXPECT_EQ(poll(&ep, 1, 50), 0);  // nothing yet
  ASSERT_EQ(iwarp_connect(b_.qp, &addr, "pd-b", 4), 0);
  ASSERT_EQ(poll(&ep, 1, 5000), 1);
  iwarp_event ev{};
  ASSERT_EQ(iwarp_get_event(a_.s, &ev, 0), 1);
  EXPECT_EQ(ev.type, IWARP_EVENT_CONNECT_REQUEST);
  ASSERT_EQ(iwarp_accept(a_.s, ev.request_id, a_.qp, "pd-a", 4), 0);
  b_.Event(IWARP_EVENT_ESTABLISHED);
  // ESTABLISHED may already be queued for A: then arming says so.
  int armed = iwarp_event_arm(a_.s);
  ASSERT_GE(armed, 0);
  if (armed == 0) {
    ASSERT_EQ(poll(&ep, 1, 5000), 1);
  }
  ASSERT_EQ(iwarp_get_event(a_.s, &ev, 0), 1);
  EXPECT_EQ(ev.type, IWARP_EVENT_ESTABLISHED);

  a_.PostRecv(1, a_.mr.addr, 64, a_.mr.stag);
  ASSERT_EQ(iwarp_cq_arm(a_.cq), 0);
  pollfd cp{iwarp_cq_fd(a_.cq), POLLIN, 0};
  EXPECT_EQ(poll(&cp, 1, 100), 0);  // armed, no completion: no wake-up
  b_.Post(1, IWARP_WR_SEND, b_.mr.addr, 4, b_.mr.stag);
  ASSERT_EQ(poll(&cp, 1, 5000), 1);
  EXPECT_TRUE(cp.revents & POLLIN);
  // Not drained yet: arming reports the waiting completion.
  EXPECT_EQ(iwarp_cq_arm(a_.cq), 1);
  iwarp_wc wc{};
  ASSERT_EQ(iwarp_poll_cq(a_.cq, &wc, 1), 1);
  EXPECT_EQ(wc.wr_id, 1u);
  // Drained and re-armed: the old ring's byte is gone, so no stale wake-up.
  ASSERT_EQ(iwarp_cq_arm(a_.cq), 0);
  EXPECT_EQ(poll(&cp, 1, 50), 0);
  // B's send completion is there for B's loop, armed or not.
  EXPECT_EQ(b_.Wc().status, IWARP_WC_SUCCESS);

  host_.Stop();
  ASSERT_EQ(poll(&cp, 1, 5000), 1);
  EXPECT_TRUE(cp.revents & POLLHUP);
  ASSERT_EQ(poll(&ep, 1, 5000), 1);
  while (iwarp_get_event(a_.s, &ev, 0) == 1 && ev.type != IWARP_EVENT_DEVICE_FATAL) {
  }
  EXPECT_EQ(ev.type, IWARP_EVENT_DEVICE_FATAL);
  EXPECT_EQ(iwarp_cq_arm(a_.cq), -EPIPE);
  EXPECT_EQ(iwarp_event_arm(a_.s), -EPIPE);
}

// RFC 5040 gives the target of an RDMA Write no completion; the QP's
// placed-Write count stands in. A sleeping waiter is woken by the Write
// (not by its timeout), sees every byte, and the count is 1; a zero-length
// Write counts, a Send does not, and a wait with nothing coming times out.
TEST_F(Loopback, WaitWritesSleepsUntilAPeerWriteIsPlaced) {
  Connect();
  ASSERT_EQ(iwarp_qp_writes_placed(a_.qp), 0u);
  for (int i = 0; i < 4096; ++i) b_.mem[i] = static_cast<uint8_t>(i * 3 + 1);
  const auto t0 = std::chrono::steady_clock::now();
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    b_.Post(1, IWARP_WR_RDMA_WRITE, b_.mr.addr, 4096, b_.mr.stag, a_.mr.addr + 8192, a_.mr.stag);
  });
  EXPECT_EQ(iwarp_qp_wait_writes(a_.qp, 0, 5000), 0);
  const auto waited = std::chrono::steady_clock::now() - t0;
  writer.join();
  EXPECT_GE(waited, std::chrono::milliseconds(140));
  EXPECT_LT(waited, std::chrono::milliseconds(2000));  // woken, not timed out
  EXPECT_EQ(iwarp_qp_writes_placed(a_.qp), 1u);
  EXPECT_EQ(std::memcmp(a_.mem + 8192, b_.mem, 4096), 0);
  EXPECT_EQ(b_.Wc().status, IWARP_WC_SUCCESS);
  // The writer's own QP placed nothing.
  EXPECT_EQ(iwarp_qp_writes_placed(b_.qp), 0u);

  // Nothing more comes: a timeout, and the count is unchanged.
  EXPECT_EQ(iwarp_qp_wait_writes(a_.qp, 1, 50), -ETIMEDOUT);
  // A Send completes a receive; it is not a Write.
  a_.PostRecv(7, a_.mr.addr, 64, a_.mr.stag);
  b_.Post(2, IWARP_WR_SEND, b_.mr.addr, 16, b_.mr.stag);
  EXPECT_EQ(b_.Wc().status, IWARP_WC_SUCCESS);
  EXPECT_EQ(a_.Wc().wr_id, 7u);
  EXPECT_EQ(iwarp_qp_writes_placed(a_.qp), 1u);
  // A zero-length Write counts; a wait for a count already passed returns at once.
  b_.Post(3, IWARP_WR_RDMA_WRITE, b_.mr.addr, 0, b_.mr.stag, a_.mr.addr, a_.mr.stag);
  EXPECT_EQ(b_.Wc().status, IWARP_WC_SUCCESS);
  EXPECT_EQ(iwarp_qp_wait_writes(a_.qp, 1, 5000), 0);
  EXPECT_EQ(iwarp_qp_writes_placed(a_.qp), 2u);
  // A zero timeout only looks.
  EXPECT_EQ(iwarp_qp_wait_writes(a_.qp, 2, 0), -ETIMEDOUT);
}

// A process with a periodic signal (a profiler's timer, an application's
// SIGALRM) still sees its waits time out on time: a signal interrupts the
// sleep, and the wait goes on for what is left of the timeout, not for the
// whole timeout again (before, iwarp_get_event restarted it: with a signal
// every 20 ms a 300 ms wait lasted as long as the signals came).
TEST_F(Loopback, SignalsDoNotStretchWaitTimeouts) {
  struct sigaction sa {};
  sa.sa_handler = [](int) {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: every signal interrupts poll/epoll_wait
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  const pthread_t waiter = pthread_self();
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::thread ticker([&] {
    // At most 2 s of signals: long enough that a restarted timeout shows.
    for (int i = 0; i < 100 && !stop.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!stop.load()) {
        pthread_kill(waiter, SIGUSR1);
        sent.fetch_add(1);
      }
    }
  });
  iwarp_event ev{};
  auto t0 = std::chrono::steady_clock::now();
  const int got = iwarp_get_event(a_.s, &ev, 300);
  const auto event_wait = std::chrono::steady_clock::now() - t0;
  t0 = std::chrono::steady_clock::now();
  const int cq = iwarp_cq_wait(a_.cq, 300);
  const auto cq_wait = std::chrono::steady_clock::now() - t0;
  stop.store(true);
  ticker.join();
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_GE(sent.load(), 10);  // the waits were interrupted, many times
  EXPECT_EQ(got, 0);
  EXPECT_GE(event_wait, std::chrono::milliseconds(295));
  EXPECT_LT(event_wait, std::chrono::milliseconds(1000));
  EXPECT_EQ(cq, -ETIMEDOUT);
  EXPECT_GE(cq_wait, std::chrono::milliseconds(295));
  EXPECT_LT(cq_wait, std::chrono::milliseconds(1000));
}

// A Write that fails its checks (beyond the region) places nothing and is
// not counted.
TEST_F(Loopback, RefusedWriteIsNotCounted) {
  Connect();
  b_.Post(1, IWARP_WR_RDMA_WRITE, b_.mr.addr, 64, b_.mr.stag, a_.mr.addr + (1 << 16) - 32,
          a_.mr.stag);
  EXPECT_EQ(b_.Wc().status, IWARP_WC_REM_ACCESS_ERR);
  EXPECT_EQ(iwarp_qp_writes_placed(a_.qp), 0u);
}

TEST_F(Loopback, DaemonLossIsAnEventNotAHang) {
  Connect();
  host_.Stop();
  iwarp_event ev{};
  ASSERT_EQ(iwarp_get_event(a_.s, &ev, 5000), 1);
  // Pending events (none here) come first; then the fatal one.
  while (ev.type != IWARP_EVENT_DEVICE_FATAL && iwarp_get_event(a_.s, &ev, 5000) == 1) {
  }
  EXPECT_EQ(ev.type, IWARP_EVENT_DEVICE_FATAL);
  EXPECT_EQ(iwarp_cq_wait(b_.cq, 5000), -EPIPE);
  EXPECT_EQ(iwarp_qp_wait_writes(b_.qp, 0, 5000), -EPIPE);
  uint32_t pd;
  EXPECT_EQ(iwarp_alloc_pd(b_.s, &pd), -EPIPE);
}

TEST(LoopbackLimits, PerSessionLimitsAndCredentials) {
  SessionServerOptions o;
  o.max_qps_per_session = 1;
  o.max_registered_bytes_per_session = 1 << 16;
  TestHost host(o);
  ASSERT_TRUE(host.ok());
  App a;
  a.Open(host.socket_path());  // one QP, 64 KiB registered
  iwarp_qp* qp2 = nullptr;
  iwarp_qp_attr attr{a.pd, a.cq, a.cq, 4, 4};
  EXPECT_EQ(iwarp_create_qp(a.s, &attr, &qp2), -EDQUOT);
  iwarp_mr m{};
  EXPECT_EQ(iwarp_reg_mr(a.s, a.pd, a.mem, 1, 0, &m), -EDQUOT);
  attr.sq_depth = 1u << 20;  // beyond max_queue_depth
  EXPECT_EQ(iwarp_create_qp(a.s, &attr, &qp2), -EINVAL);
  a.Close();

  SessionServerOptions strict;
  strict.allowed_uids = {getuid() + 1};
  TestHost locked(strict);
  ASSERT_TRUE(locked.ok());
  iwarp_session* s = nullptr;
  EXPECT_LT(iwarp_open(locked.socket_path().c_str(), &s), 0);
  EXPECT_EQ(locked.stats().sessions_refused, 1u);
}

// Object ids come from one 32-bit counter that applications drive (every
// PD, CQ, QP, listener and request takes one). After it wraps, an id is
// never 0 and never one a live object has: a second session's PD with the
// id of the first's would pass the checks of the first's memory regions.
TEST(LoopbackLimits, ObjectIdsStayUniqueAcrossTheWrap) {
  SessionServerOptions o;
  o.first_object_id = 0xFFFFFFF0u;
  TestHost host(o);
  ASSERT_TRUE(host.ok());
  App a;
  a.Open(host.socket_path());  // session, PD, CQ and QP ids just below the wrap
  ASSERT_GE(a.pd, 0xFFFFFFF0u);
  App b;
  b.Open(host.socket_path());
  std::set<uint32_t> seen = {a.pd, b.pd};
  // 64 more PDs of b, each freed again, walk the counter past 2^32.
  for (int i = 0; i < 64; ++i) {
    uint32_t pd = 0;
    ASSERT_EQ(iwarp_alloc_pd(b.s, &pd), 0) << iwarp_last_error(b.s);
    EXPECT_NE(pd, 0u);
    EXPECT_NE(pd, a.pd);
    EXPECT_NE(pd, b.pd);
    seen.insert(pd);
    ASSERT_EQ(iwarp_dealloc_pd(b.s, pd), 0);
  }
  EXPECT_GT(seen.size(), 16u);
  EXPECT_TRUE(seen.count(1) != 0) << "the counter wrapped";
  // a's memory stays a's: b, with a PD of its own from after the wrap,
  // cannot use a's STag as a local key.
  uint32_t pd = 0;
  ASSERT_EQ(iwarp_alloc_pd(b.s, &pd), 0);
  iwarp_qp* qp = nullptr;
  iwarp_qp_attr attr{pd, b.cq, b.cq, 4, 4};
  ASSERT_EQ(iwarp_create_qp(b.s, &attr, &qp), 0) << iwarp_last_error(b.s);
  iwarp_addr addr{0, 7200};
  uint32_t lid;
  ASSERT_EQ(iwarp_listen(a.s, &addr, &lid), 0);
  ASSERT_EQ(iwarp_connect(qp, &addr, nullptr, 0), 0);
  iwarp_event req = a.Event(IWARP_EVENT_CONNECT_REQUEST);
  ASSERT_EQ(iwarp_accept(a.s, req.request_id, a.qp, nullptr, 0), 0);
  b.Event(IWARP_EVENT_ESTABLISHED);
  std::memcpy(a.mem, "a-only", 6);
  iwarp_sge sge{a.mr.addr, 6, a.mr.stag};  // a's region, as b's local source
  iwarp_send_wr wr{};
  wr.wr_id = 1;
  wr.opcode = IWARP_WR_RDMA_WRITE;
  wr.flags = IWARP_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = a.mr.addr + 64;
  wr.rkey = a.mr.stag;
  ASSERT_EQ(iwarp_post_send(qp, &wr, 1), 1);
  iwarp_wc wc{};
  for (int i = 0; i < 50 && iwarp_poll_cq(b.cq, &wc, 1) != 1; ++i) iwarp_cq_wait(b.cq, 100);
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(wc.status, IWARP_WC_LOC_PROT_ERR);
  EXPECT_NE(std::memcmp(a.mem + 64, "a-only", 6), 0) << "b placed a's bytes through a's STag";
  a.Close();
  b.Close();
}

TEST(LoopbackLimits, PdsAndListenersPerSessionAreBounded) {
  SessionServerOptions o;
  o.max_pds_per_session = 3;
  o.max_listeners_per_session = 2;
  TestHost host(o);
  ASSERT_TRUE(host.ok());
  App a;
  a.Open(host.socket_path());  // one PD
  uint32_t pd[3];
  EXPECT_EQ(iwarp_alloc_pd(a.s, &pd[0]), 0);
  EXPECT_EQ(iwarp_alloc_pd(a.s, &pd[1]), 0);
  EXPECT_EQ(iwarp_alloc_pd(a.s, &pd[2]), -EDQUOT);
  EXPECT_NE(std::string(iwarp_last_error(a.s)).find("max_pds_per_session"), std::string::npos);
  ASSERT_EQ(iwarp_dealloc_pd(a.s, pd[1]), 0);
  EXPECT_EQ(iwarp_alloc_pd(a.s, &pd[2]), 0);  // room again
  uint32_t lid;
  iwarp_addr addr{0, 7301};
  EXPECT_EQ(iwarp_listen(a.s, &addr, &lid), 0);
  addr.port = 7302;
  EXPECT_EQ(iwarp_listen(a.s, &addr, &lid), 0);
  addr.port = 7303;
  EXPECT_EQ(iwarp_listen(a.s, &addr, &lid), -EDQUOT);
  EXPECT_NE(std::string(iwarp_last_error(a.s)).find("max_listeners_per_session"),
            std::string::npos);
  EXPECT_EQ(iwarp_unlisten(a.s, lid), 0);
  EXPECT_EQ(iwarp_listen(a.s, &addr, &lid), 0);
  a.Close();
}

// A raw-protocol client's session socket (no libiwarp); invalid on failure.
UniqueFd RawConnect(const std::string& path) {
  UniqueFd sock(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size());
  if (connect(sock.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) sock.Reset(-1);
  return sock;
}

// One request/response of a raw-protocol client (no libiwarp): the
// response and the descriptors that came with it.
Message RawCall(int sock, Op op, const void* body, size_t body_len, const int* fds, int nfds,
                std::vector<UniqueFd>* rfds) {
  static uint32_t seq = 0;
  Message m;
  m.hdr.op = static_cast<uint32_t>(op);
  m.hdr.seq = ++seq;
  m.hdr.body_len = static_cast<uint32_t>(body_len);
  std::memcpy(m.body, body, body_len);
  Message r;
  r.hdr.error = -1;
  if (SendMessage(sock, m, fds, nfds) != 0) return r;
  pollfd p{sock, POLLIN, 0};
  if (poll(&p, 1, 5000) != 1) return r;
  int got[kMaxFds];
  int n = 0;
  if (RecvMessage(sock, &r, got, &n) <= 0) return r;
  for (int i = 0; i < n; ++i) rfds->emplace_back(got[i]);
  return r;
}

// A hostile application on the raw protocol: its doorbell eventfd is
// blocking with a full counter, and it closes the read end of the event pipe
// the daemon hands it at once, then arms its event ring. The daemon wakes it
// anyway (a connection request for its listener): the write into the closed
// pipe costs an EPIPE, not the process (SIGPIPE would end this test), and no
// daemon call blocks on a descriptor the application controls (the daemon
// only watches the doorbell, never reads it; its pipe end is its own):
// other applications' traffic keeps flowing.
TEST(LoopbackHostile, ClosedWakePipeAndFullDoorbellStopNothing) {
  TestHost host;
  ASSERT_TRUE(host.ok());
  UniqueFd sock = RawConnect(host.socket_path());
  ASSERT_TRUE(sock.valid());
  UniqueFd doorbell(eventfd(0, EFD_CLOEXEC));  // blocking
  const uint64_t full = 0xFFFFFFFFFFFFFFFEull;
  ASSERT_EQ(write(doorbell.get(), &full, sizeof(full)), 8);
  std::vector<UniqueFd> fds;
  const int db = doorbell.get();
  OpenReq open;
  Message r = RawCall(sock.get(), Op::kOpen, &open, sizeof(open), &db, 1, &fds);
  ASSERT_EQ(r.hdr.error, 0);
  ASSERT_EQ(fds.size(), 2u);  // event ring memfd, event wake-up pipe
  OpenResp o;
  std::memcpy(&o, r.body, sizeof(o));
  auto eq_map = Mapping::MapForeign(fds[0].get(), 0, o.event_ring_bytes);
  ASSERT_TRUE(eq_map.ok());
  SpscRing<Event> eq(eq_map->data(), o.event_depth);
  eq.AttachAsConsumer();
  fds[1].Reset(-1);  // the event pipe's read end: closed
  ListenReq lr;
  lr.port = 7400;
  r = RawCall(sock.get(), Op::kListen, &lr, sizeof(lr), nullptr, 0, &fds);
  ASSERT_EQ(r.hdr.error, 0);
  ASSERT_FALSE(eq.PrepareToWait());  // armed: the daemon writes the pipe for the next event

  App b;
  b.Open(host.socket_path());
  iwarp_addr addr{0, 7400};
  ASSERT_EQ(iwarp_connect(b.qp, &addr, nullptr, 0), 0);
  for (int i = 0; i < 500 && eq.Available() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(eq.Available(), 1) << "the connection request reached the hostile session's ring";
  Event ev;
  eq.Peek(0, &ev);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(EventType::kConnectRequest));

  // The daemon still serves everyone else.
  App c, d;
  c.Open(host.socket_path());
  d.Open(host.socket_path());
  iwarp_addr addr2{0, 7401};
  uint32_t lid;
  ASSERT_EQ(iwarp_listen(c.s, &addr2, &lid), 0);
  ASSERT_EQ(iwarp_connect(d.qp, &addr2, nullptr, 0), 0);
  iwarp_event req = c.Event(IWARP_EVENT_CONNECT_REQUEST);
  ASSERT_EQ(iwarp_accept(c.s, req.request_id, c.qp, nullptr, 0), 0);
  d.Event(IWARP_EVENT_ESTABLISHED);
  std::memcpy(d.mem, "still-serving", 13);
  d.Post(1, IWARP_WR_RDMA_WRITE, d.mr.addr, 13, d.mr.stag, c.mr.addr + 32, c.mr.stag);
  EXPECT_EQ(d.Wc().status, IWARP_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(c.mem + 32, "still-serving", 13), 0);
  c.Close();
  d.Close();
  b.Close();
}

double ProcessCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Work requests nothing can move (posted on a QP that never connects, or
// behind an impossible SQ index) must not keep the daemon's control thread
// spinning: it sleeps between looks. The test process is the daemon here;
// over one idle second it may use a small part of a CPU, not all of it.
TEST(LoopbackHostile, UnmovableWorkDoesNotSpinTheControlThread) {
  TestHost host;
  ASSERT_TRUE(host.ok());
  App a;
  a.Open(host.socket_path());  // its QP is never connected
  a.Post(1, IWARP_WR_SEND, a.mr.addr, 8, a.mr.stag);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past the idle polls
  double t0 = ProcessCpuSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double unconnected = ProcessCpuSeconds() - t0;
  EXPECT_LT(unconnected, 0.3) << "CPU seconds in one idle second with an unconnected QP's send";
  a.Close();
}

// A libiwarp of an earlier release (ABI 3 passed two eventfds at open) is
// told what is wrong, not just EINVAL.
TEST(LoopbackHostile, EarlierAbiIsToldWhy) {
  TestHost host;
  ASSERT_TRUE(host.ok());
  UniqueFd sock = RawConnect(host.socket_path());
  ASSERT_TRUE(sock.valid());
  UniqueFd e1(eventfd(0, EFD_CLOEXEC)), e2(eventfd(0, EFD_CLOEXEC));
  const int two[2] = {e1.get(), e2.get()};
  OpenReq open;
  open.abi_version = 3;
  std::vector<UniqueFd> fds;
  Message r = RawCall(sock.get(), Op::kOpen, &open, sizeof(open), two, 2, &fds);
  EXPECT_EQ(r.hdr.error, EPROTONOSUPPORT);
  const std::string text(reinterpret_cast<const char*>(r.body));
  EXPECT_NE(text.find("libiwarp ABI version 3, daemon speaks " + std::to_string(kAbiVersion)),
            std::string::npos)
      << text;
  EXPECT_TRUE(fds.empty());
}

TEST(LoopbackMemory, OwnMemfdMustBeSealed) {
  TestHost host;
  ASSERT_TRUE(host.ok());
  App a;
  a.Open(host.socket_path());
  const int fd = memfd_create("app-own", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 16), 0);
  void* p = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  iwarp_mr m{};
  EXPECT_EQ(iwarp_reg_mr_fd(a.s, a.pd, fd, 4096, 8192, static_cast<uint8_t*>(p) + 4096,
                            kAllAccess, &m), -EINVAL);
  EXPECT_NE(std::string(iwarp_last_error(a.s)).find("F_SEAL_SHRINK"), std::string::npos);
  ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  ASSERT_EQ(iwarp_reg_mr_fd(a.s, a.pd, fd, 4096, 8192, static_cast<uint8_t*>(p) + 4096,
                            kAllAccess, &m), 0)
      << iwarp_last_error(a.s);
  // Read our own memfd range back through the daemon (a QP to ourselves).
  App b;
  b.Open(host.socket_path());
  iwarp_addr addr{0, 7100};
  uint32_t lid;
  ASSERT_EQ(iwarp_listen(a.s, &addr, &lid), 0);
  ASSERT_EQ(iwarp_connect(b.qp, &addr, nullptr, 0), 0);
  iwarp_event req = a.Event(IWARP_EVENT_CONNECT_REQUEST);
  ASSERT_EQ(iwarp_accept(a.s, req.request_id, a.qp, nullptr, 0), 0);
  b.Event(IWARP_EVENT_ESTABLISHED);
  std::memcpy(static_cast<uint8_t*>(p) + 4096 + 100, "own-memfd", 9);
  b.Post(1, IWARP_WR_RDMA_READ, b.mr.addr, 9, b.mr.stag, m.addr + 100, m.stag);
  EXPECT_EQ(b.Wc().status, IWARP_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(b.mem, "own-memfd", 9), 0);
  // Hugetlb allocation (falls back to normal pages when none are reserved).
  void* h = nullptr;
  ASSERT_EQ(iwarp_mem_alloc(a.s, 1 << 21, IWARP_MEM_HUGETLB, &h), 0);
  EXPECT_EQ(iwarp_reg_mr(a.s, a.pd, h, 1 << 21, kAllAccess, &m), 0) << iwarp_last_error(a.s);
  a.Close();
  b.Close();
  munmap(p, 1 << 16);
  close(fd);
}

size_t CountFds() {
  size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

size_t CountMaps() {
  std::ifstream in("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// Sessions, QPs, CQs and MRs created and destroyed in a loop: the server
// process (this one) ends with the fds, mappings and STag slots it started
// with.
TEST(LoopbackStress, CreateDestroyLoopLeaksNothing) {
  SessionServerOptions o;
  o.stag_table_size = 64;  // slot reuse must work, not just a big table
  TestHost host(o);
  ASSERT_TRUE(host.ok());
  auto round = [&](int i) {
    App a, b;
    a.Open(host.socket_path());
    b.Open(host.socket_path());
    iwarp_mr extra[4];
    for (auto& m : extra) m = a.Reg(0, 4096, IWARP_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(iwarp_dereg_mr(a.s, extra[1].stag), 0);
    if (i % 2 == 0) {
      iwarp_addr addr{0, static_cast<uint16_t>(8000 + i)};
      uint32_t lid;
      ASSERT_EQ(iwarp_listen(a.s, &addr, &lid), 0);
      ASSERT_EQ(iwarp_connect(b.qp, &addr, nullptr, 0), 0);
      iwarp_event req = a.Event(IWARP_EVENT_CONNECT_REQUEST);
      ASSERT_EQ(iwarp_accept(a.s, req.request_id, a.qp, nullptr, 0), 0);
      b.Event(IWARP_EVENT_ESTABLISHED);
      b.Post(1, IWARP_WR_RDMA_WRITE, b.mr.addr, 64, b.mr.stag, extra[0].addr, extra[0].stag);
      EXPECT_EQ(b.Wc().status, IWARP_WC_SUCCESS);
    }
    if (i % 3 == 0) {
      // Orderly teardown through the API.
      EXPECT_EQ(iwarp_destroy_qp(a.qp), 0);
      EXPECT_EQ(iwarp_destroy_cq(a.cq), 0);
      EXPECT_EQ(iwarp_dereg_mr(a.s, a.mr.stag), 0);
    }
    a.Close();  // everything else by closing the session
    b.Close();
  };
  round(0);  // warm-up: lazily created allocator and libc state
  ASSERT_TRUE(testing::Test::HasFailure() == false);
  auto settle = [&] {
    for (int i = 0; i < 500 && host.stats().sessions_active != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  settle();
  const size_t fds = CountFds(), maps = CountMaps();
  for (int i = 1; i <= 150; ++i) {
    round(i);
    if (testing::Test::HasFailure()) break;
  }
  settle();
  const SessionServerStats s = host.stats();
  EXPECT_EQ(s.sessions_active, 0u);
  EXPECT_EQ(s.sessions_opened, 302u);
  EXPECT_EQ(s.qps_active, 0u);
  EXPECT_EQ(s.cqs_active, 0u);
  EXPECT_EQ(s.mrs_active, 0u);
  EXPECT_EQ(s.stags_in_use, 0u);
  EXPECT_EQ(s.mapped_bytes, 0u);
  EXPECT_EQ(s.registered_bytes, 0u);
  EXPECT_EQ(CountFds(), fds);
#if defined(__SANITIZE_ADDRESS__) || defined(IWARP_TEST_UNDER_ASAN)
  // ASan's allocator maps its size-class regions in steps as the heap
  // churns (measured: +4 lines after 450 rounds with the server of before
  // the wire engine, +4 after 150 with today's larger objects); the memfd
  // mappings this test is about are one line each per round, so a real leak
  // still exceeds the slack, and LeakSanitizer checks the heap.
  EXPECT_LE(CountMaps(), maps + 16);
#else
  EXPECT_EQ(CountMaps(), maps);
#endif
}

}  // namespace
}  // namespace iwarp::appif

namespace iwarp::appif {
namespace {

// The C++ wrapper: RAII handles over the same C calls.
TEST(CppWrapper, SendThroughOwningHandles) {
  TestHost host;
  ASSERT_TRUE(host.ok());
  {
    Session a, b;
    ASSERT_EQ(a.Open(host.socket_path()), 0);
    ASSERT_EQ(b.Open(host.socket_path()), 0);
    uint32_t pa, pb;
    ASSERT_EQ(a.AllocPd(&pa), 0);
    ASSERT_EQ(b.AllocPd(&pb), 0);
    void *ma, *mb;
    ASSERT_EQ(a.MemAlloc(4096, 0, &ma), 0);
    ASSERT_EQ(b.MemAlloc(4096, 0, &mb), 0);
    iwarp_mr ra, rb;
    ASSERT_EQ(a.RegMr(pa, ma, 4096, IWARP_ACCESS_LOCAL_WRITE, &ra), 0);
    ASSERT_EQ(b.RegMr(pb, mb, 4096, 0, &rb), 0);
    Cq ca, cb;
    ASSERT_EQ(a.CreateCq(16, &ca), 0);
    ASSERT_EQ(b.CreateCq(16, &cb), 0);
    Qp qa, qb;
    ASSERT_EQ(a.CreateQp(pa, ca, ca, 8, 8, &qa), 0);
    ASSERT_EQ(b.CreateQp(pb, cb, cb, 8, 8, &qb), 0);
    iwarp_sge rs{ra.addr, 64, ra.stag};
    iwarp_recv_wr rw{5, &rs, 1};
    ASSERT_EQ(qa.PostRecv({&rw, 1}), 1);
    uint32_t lid;
    ASSERT_EQ(a.Listen({0, 6000}, &lid), 0);
    ASSERT_EQ(qb.Connect({0, 6000}), 0);
    iwarp_event ev;
    ASSERT_EQ(a.GetEvent(&ev, 5000), 1);
    ASSERT_EQ(a.Accept(ev.request_id, qa), 0);
    ASSERT_EQ(b.GetEvent(&ev, 5000), 1);
    ASSERT_EQ(ev.type, IWARP_EVENT_ESTABLISHED);
    std::memcpy(mb, "wrapped", 7);
    iwarp_sge ss{rb.addr, 7, rb.stag};
    iwarp_send_wr sw{};
    sw.wr_id = 9;
    sw.opcode = IWARP_WR_SEND;
    sw.flags = IWARP_SEND_SIGNALED;
    sw.sg_list = &ss;
    sw.num_sge = 1;
    ASSERT_EQ(qb.PostSend({&sw, 1}), 1);
    iwarp_wc wc[2];
    ASSERT_EQ(ca.Wait(5000), 0);
    ASSERT_EQ(ca.Poll(wc), 1);
    EXPECT_EQ(wc[0].wr_id, 5u);
    EXPECT_EQ(wc[0].byte_len, 7u);
    EXPECT_EQ(std::memcmp(ma, "wrapped", 7), 0);
    // Handles released in reverse order of declaration: QPs, CQs, sessions.
  }
  for (int i = 0; i < 200 && host.stats().sessions_active != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(host.stats().sessions_active, 0u);
  EXPECT_EQ(host.stats().qps_active, 0u);
}

}  // namespace
}  // namespace iwarp::appif

#include <sys/socket.h>
#include <sys/un.h>

#include "appif/proto.h"

namespace iwarp::appif {
namespace {

// A hostile client speaking the protocol directly: descriptors that are not
// eventfds (here a pipe, which could block the daemon) are refused.
TEST(RawProtocol, OpenRefusesDescriptorsThatAreNotEventfds) {
  TestHost host;
  ASSERT_TRUE(host.ok());
  const int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, host.socket_path().c_str(), host.socket_path().size());
  ASSERT_EQ(connect(sock, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  Message m;
  m.hdr.op = static_cast<uint32_t>(Op::kOpen);
  m.hdr.seq = 1;
  SetBody(&m, OpenReq{});
  const int fds[2] = {p[0], p[1]};
  ASSERT_EQ(SendMessage(sock, m, fds, 2), 0);
  Message r;
  int rfds[kMaxFds];
  int n = 0;
  long len = -EAGAIN;
  for (int i = 0; i < 500 && len == -EAGAIN; ++i) {
    len = RecvMessage(sock, &r, rfds, &n);
    if (len == -EAGAIN) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(len, 0);
  EXPECT_EQ(r.hdr.error, EINVAL);
  EXPECT_EQ(n, 0);
  EXPECT_NE(std::string(reinterpret_cast<char*>(r.body)).find("eventfd"), std::string::npos);
  // Not opened: other requests are refused too.
  m.hdr.op = static_cast<uint32_t>(Op::kAllocPd);
  m.hdr.seq = 2;
  ASSERT_EQ(SendMessage(sock, m, nullptr, 0), 0);
  len = -EAGAIN;
  for (int i = 0; i < 500 && len == -EAGAIN; ++i) {
    len = RecvMessage(sock, &r, rfds, &n);
    if (len == -EAGAIN) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(len, 0);
  EXPECT_EQ(r.hdr.error, EPROTO);
  close(p[0]);
  close(p[1]);
  close(sock);
}

}  // namespace
}  // namespace iwarp::appif
