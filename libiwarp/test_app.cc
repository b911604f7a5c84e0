// A small application used by the two-process tests: it links libiwarp only
// (C API) and talks to whatever daemon serves the socket it is given.
//
//   iwarp_test_app target SOCKET PORT
//       registers memory, listens, accepts one connection, checks the Sends
//       and the RDMA Write it receives, prints TARGET_OK.
//   iwarp_test_app sink SOCKET PORT
//       like target, but expects its peer to die: prints PEER_GONE after the
//       Disconnected event and the flushed receives, then waits to be killed.
//   iwarp_test_app initiator SOCKET PORT STAG_RW ADDR_RW STAG_INV
//       connects, RDMA Writes with an SG list, reads back, Sends (plain, SE,
//       with Invalidate), prints INITIATOR_OK.
//   iwarp_test_app waitfatal SOCKET
//       opens a session and waits for the daemon to go away (DEVICE_FATAL).
//   iwarp_test_app hog SOCKET PORT STAG_RW ADDR_RW
//       connects and RDMA-Writes in a loop until killed (crash test).
// Exit code 0 only if every check passed; failures print "FAIL: ...".
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <initializer_list>

#include "common/testing/check_exit.h"
#include "libiwarp/iwarp.h"

namespace {

constexpr size_t kRegion = 1 << 20;
constexpr size_t kWriteLen = 64 * 1024;
constexpr size_t kPatternOffset = 512 * 1024;  // target's own pattern lives here

uint8_t PatternA(size_t i) { return static_cast<uint8_t>(i * 7 + 3); }
uint8_t PatternB(size_t i) { return static_cast<uint8_t>((i * 13) ^ (i >> 8)); }

void WaitWc(iwarp_cq* cq, iwarp_wc* wc) {
  for (int tries = 0; tries < 100; ++tries) {
    const int n = iwarp_poll_cq(cq, wc, 1);
    CHECK(n >= 0, "poll_cq %d", n);
    if (n == 1) return;
    const int w = iwarp_cq_wait(cq, 100);
    CHECK(w == 0 || w == -ETIMEDOUT, "cq_wait %d", w);
  }
  CHECK(false, "no completion within 10 s");
}

void WaitEvent(iwarp_session* s, iwarp_event* ev, uint32_t type) {
  const int r = iwarp_get_event(s, ev, 10000);
  CHECK(r == 1, "get_event %d", r);
  CHECK(ev->type == type, "event %u, expected %u (reason %d)", ev->type, type, ev->reason);
}

struct Common {
  iwarp_session* s = nullptr;
  uint32_t pd = 0;
  uint8_t* mem = nullptr;
  iwarp_mr mr{};
  iwarp_cq* cq = nullptr;
  iwarp_qp* qp = nullptr;
};

void Setup(const char* sock, Common* c) {
  int r = iwarp_open(sock, &c->s);
  CHECK(r == 0, "open %s: %d", sock, r);
  CHECK(iwarp_alloc_pd(c->s, &c->pd) == 0, "alloc_pd");
  void* m = nullptr;
  CHECK(iwarp_mem_alloc(c->s, kRegion, 0, &m) == 0, "mem_alloc");
  c->mem = static_cast<uint8_t*>(m);
  r = iwarp_reg_mr(c->s, c->pd, c->mem, kRegion,
                   IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE,
                   &c->mr);
  CHECK(r == 0, "reg_mr %d %s", r, iwarp_last_error(c->s));
  CHECK(iwarp_create_cq(c->s, 64, &c->cq) == 0, "create_cq");
  iwarp_qp_attr a{c->pd, c->cq, c->cq, 32, 32};
  CHECK(iwarp_create_qp(c->s, &a, &c->qp) == 0, "create_qp");
}

int Target(const char* sock, uint16_t port, bool sink) {
  Common c;
  Setup(sock, &c);
  for (size_t i = 0; i < kRegion; ++i) c.mem[i] = 0;
  for (size_t i = kPatternOffset; i < kRegion; ++i) c.mem[i] = PatternA(i);
  // A second region that the initiator will invalidate with its Send.
  void* m = nullptr;
  CHECK(iwarp_mem_alloc(c.s, 4096, 0, &m) == 0, "mem_alloc inv");
  iwarp_mr inv{};
  CHECK(iwarp_reg_mr(c.s, c.pd, m, 4096, IWARP_ACCESS_REMOTE_WRITE, &inv) == 0, "reg inv");
  // Receives, preposted (iWARP has no receiver-not-ready retry), each an SG
  // list of two pieces of the receive area at 256 KiB.
  uint8_t* rx = c.mem + 256 * 1024;
  for (uint64_t i = 0; i < 4; ++i) {
    iwarp_sge sge[2] = {{reinterpret_cast<uintptr_t>(rx + i * 1024), 4, c.mr.stag},
                        {reinterpret_cast<uintptr_t>(rx + i * 1024 + 512), 60, c.mr.stag}};
    iwarp_recv_wr wr{100 + i, sge, 2};
    CHECK(iwarp_post_recv(c.qp, &wr, 1) == 1, "post_recv");
  }
  iwarp_addr addr{0, port};
  uint32_t lid = 0;
  CHECK(iwarp_listen(c.s, &addr, &lid) == 0, "listen %s", iwarp_last_error(c.s));
  printf("READY %" PRIu32 " %" PRIu64 " %" PRIu32 "\n", c.mr.stag, c.mr.addr, inv.stag);
  fflush(stdout);

  iwarp_event ev;
  WaitEvent(c.s, &ev, IWARP_EVENT_CONNECT_REQUEST);
  CHECK(ev.listener_id == lid, "listener id");
  CHECK(ev.private_data_len == 12 && memcmp(ev.private_data, "hello-target", 12) == 0,
        "connect private data");
  CHECK(iwarp_accept(c.s, ev.request_id, c.qp, "welcome", 7) == 0, "accept %s",
        iwarp_last_error(c.s));
  WaitEvent(c.s, &ev, IWARP_EVENT_ESTABLISHED);
  CHECK(ev.qp_id == iwarp_qp_id(c.qp), "established qp");

  if (sink) {
    // Crash test: the peer is killed; we must see an orderly end, not a hang:
    // a Disconnected event and our preposted receives flushed.
    WaitEvent(c.s, &ev, IWARP_EVENT_DISCONNECTED);
    CHECK(ev.reason == ECONNRESET, "disconnect reason %d", ev.reason);
    for (uint64_t i = 0; i < 4; ++i) {
      iwarp_wc wc;
      WaitWc(c.cq, &wc);
      CHECK(wc.status == IWARP_WC_WR_FLUSH_ERR && wc.wr_id == 100 + i, "flush of recv %" PRIu64,
            wc.wr_id);
    }
    printf("PEER_GONE\n");
    fflush(stdout);
    pause();
    return 0;
  }
  const char* expect[4] = {"msg-1", "msg-2-solicited", "msg-3-invalidate", "verify"};
  for (uint64_t i = 0; i < 4; ++i) {
    iwarp_wc wc;
    WaitWc(c.cq, &wc);
    CHECK(wc.status == IWARP_WC_SUCCESS, "recv %" PRIu64 " status %u", i, wc.status);
    CHECK(wc.opcode == IWARP_WC_RECV && wc.wr_id == 100 + i, "recv order: wr_id %" PRIu64,
          wc.wr_id);
    const size_t len = strlen(expect[i]);
    CHECK(wc.byte_len == len, "recv %" PRIu64 " byte_len %u", i, wc.byte_len);
    // Scattered: first 4 bytes at +0, the rest at +512.
    uint8_t got[64];
    memcpy(got, rx + i * 1024, 4);
    memcpy(got + 4, rx + i * 1024 + 512, 60);
    CHECK(memcmp(got, expect[i], len) == 0, "recv %" PRIu64 " bytes", i);
    CHECK(((wc.flags & IWARP_WC_SOLICITED) != 0) == (i == 1), "solicited flag");
    CHECK(((wc.flags & IWARP_WC_WITH_INV) != 0) == (i == 2), "with_inv flag");
    if (i == 2) CHECK(wc.invalidated_stag == inv.stag, "invalidated stag");
  }
  // The RDMA Write landed byte for byte; nothing else changed.
  for (size_t i = 0; i < kWriteLen; ++i) CHECK(c.mem[i] == PatternB(i), "written byte %zu", i);
  for (size_t i = kWriteLen; i < 256 * 1024; ++i) CHECK(c.mem[i] == 0, "untouched byte %zu", i);
  for (size_t i = kPatternOffset; i < kRegion; ++i) CHECK(c.mem[i] == PatternA(i), "pattern %zu", i);
  printf("TARGET_OK\n");
  fflush(stdout);
  WaitEvent(c.s, &ev, IWARP_EVENT_DISCONNECTED);
  iwarp_close(c.s);
  return 0;
}

void Connect(Common* c, uint16_t port) {
  iwarp_addr addr{0x7F000001u, port};
  const int r = iwarp_connect(c->qp, &addr, "hello-target", 12);
  CHECK(r == 0, "connect %d %s", r, iwarp_last_error(c->s));
  iwarp_event ev;
  WaitEvent(c->s, &ev, IWARP_EVENT_ESTABLISHED);
  CHECK(ev.private_data_len == 7 && memcmp(ev.private_data, "welcome", 7) == 0,
        "accept private data");
}

int Initiator(const char* sock, uint16_t port, uint32_t rstag, uint64_t raddr, uint32_t inv_stag) {
  Common c;
  Setup(sock, &c);
  Connect(&c, port);
  // Source of the Write: 64 KiB of pattern B gathered from three pieces.
  uint8_t* src = c.mem;
  for (size_t i = 0; i < kWriteLen; ++i) src[i] = PatternB(i);
  // Out of order in memory: piece 2 lives at +200K.
  memcpy(c.mem + 200 * 1024, src + 40000, kWriteLen - 40000);
  iwarp_sge wsge[3] = {{c.mr.addr, 1000, c.mr.stag},
                       {c.mr.addr + 1000, 39000, c.mr.stag},
                       {c.mr.addr + 200 * 1024, static_cast<uint32_t>(kWriteLen - 40000), c.mr.stag}};
  iwarp_send_wr w{};
  w.wr_id = 1;
  w.opcode = IWARP_WR_RDMA_WRITE;
  w.flags = IWARP_SEND_SIGNALED;
  w.sg_list = wsge;
  w.num_sge = 3;
  w.remote_addr = raddr;
  w.rkey = rstag;
  CHECK(iwarp_post_send(c.qp, &w, 1) == 1, "post write");
  iwarp_wc wc;
  WaitWc(c.cq, &wc);
  CHECK(wc.wr_id == 1 && wc.status == IWARP_WC_SUCCESS && wc.opcode == IWARP_WC_RDMA_WRITE &&
            wc.byte_len == kWriteLen,
        "write completion wr_id %" PRIu64 " status %u len %u", wc.wr_id, wc.status, wc.byte_len);

  // Read back what was written, and the target's own pattern, into two
  // scattered sinks.
  uint8_t* sink = c.mem + 400 * 1024;
  memset(sink, 0xEE, 2 * kWriteLen);
  iwarp_sge rsge[2] = {{c.mr.addr + 400 * 1024, 3000, c.mr.stag},
                       {c.mr.addr + 400 * 1024 + 3000, static_cast<uint32_t>(kWriteLen - 3000), c.mr.stag}};
  iwarp_sge rsge2 = {c.mr.addr + 400 * 1024 + kWriteLen, static_cast<uint32_t>(kWriteLen), c.mr.stag};
  iwarp_send_wr r[2] = {};
  r[0].wr_id = 2;
  r[0].opcode = IWARP_WR_RDMA_READ;
  r[0].flags = IWARP_SEND_SIGNALED;
  r[0].sg_list = rsge;
  r[0].num_sge = 2;
  r[0].remote_addr = raddr;
  r[0].rkey = rstag;
  r[1] = r[0];
  r[1].wr_id = 3;
  r[1].sg_list = &rsge2;
  r[1].num_sge = 1;
  r[1].remote_addr = raddr + kPatternOffset;
  CHECK(iwarp_post_send(c.qp, r, 2) == 2, "post reads");
  for (uint64_t id = 2; id <= 3; ++id) {
    WaitWc(c.cq, &wc);
    CHECK(wc.wr_id == id && wc.status == IWARP_WC_SUCCESS && wc.opcode == IWARP_WC_RDMA_READ &&
              wc.byte_len == kWriteLen,
          "read completion %" PRIu64 " status %u", wc.wr_id, wc.status);
  }
  for (size_t i = 0; i < kWriteLen; ++i) CHECK(sink[i] == PatternB(i), "read back byte %zu", i);
  for (size_t i = 0; i < kWriteLen; ++i) {
    CHECK(sink[kWriteLen + i] == PatternA(kPatternOffset + i), "read pattern byte %zu", i);
  }

  // Sends: plain, with SE, with Invalidate; one unsignaled; then "verify".
  const char* msgs[4] = {"msg-1", "msg-2-solicited", "msg-3-invalidate", "verify"};
  const uint32_t ops[4] = {IWARP_WR_SEND, IWARP_WR_SEND_WITH_SE, IWARP_WR_SEND_WITH_INV,
                           IWARP_WR_SEND};
  uint8_t* txt = c.mem + 600 * 1024;
  iwarp_sge ssge[4];
  iwarp_send_wr s[4] = {};
  for (int i = 0; i < 4; ++i) {
    memcpy(txt + i * 64, msgs[i], strlen(msgs[i]));
    ssge[i] = {c.mr.addr + 600 * 1024 + i * 64, static_cast<uint32_t>(strlen(msgs[i])), c.mr.stag};
    s[i].wr_id = 10 + i;
    s[i].opcode = ops[i];
    s[i].flags = i == 1 ? 0 : IWARP_SEND_SIGNALED;
    s[i].sg_list = &ssge[i];
    s[i].num_sge = 1;
    s[i].invalidate_stag = inv_stag;
  }
  CHECK(iwarp_post_send(c.qp, s, 4) == 4, "post sends");
  for (uint64_t id : {uint64_t{10}, uint64_t{12}, uint64_t{13}}) {
    WaitWc(c.cq, &wc);
    CHECK(wc.wr_id == id && wc.status == IWARP_WC_SUCCESS && wc.opcode == IWARP_WC_SEND,
          "send completion %" PRIu64 " (expected %" PRIu64 ") status %u", wc.wr_id, id, wc.status);
  }
  CHECK(iwarp_poll_cq(c.cq, &wc, 1) == 0, "unsignaled send completed");
  printf("INITIATOR_OK\n");
  fflush(stdout);
  // Wait for the target's verdict (it prints TARGET_OK before we close).
  sleep(0);
  CHECK(iwarp_disconnect(c.qp) == 0, "disconnect");
  iwarp_event ev;
  WaitEvent(c.s, &ev, IWARP_EVENT_DISCONNECTED);
  iwarp_close(c.s);
  return 0;
}

// Holds a session (with a registered region and a QP) until the daemon goes
// away, which must arrive as IWARP_EVENT_DEVICE_FATAL, not as a hang.
int WaitFatal(const char* sock) {
  Common c;
  Setup(sock, &c);
  printf("SESSION_OPEN\n");
  fflush(stdout);
  iwarp_event ev;
  WaitEvent(c.s, &ev, IWARP_EVENT_DEVICE_FATAL);
  CHECK(iwarp_cq_wait(c.cq, 1000) == -EPIPE, "cq_wait after daemon loss");
  uint32_t pd = 0;
  CHECK(iwarp_alloc_pd(c.s, &pd) == -EPIPE, "control call after daemon loss");
  printf("DEVICE_FATAL\n");
  fflush(stdout);
  iwarp_close(c.s);
  return 0;
}

int Hog(const char* sock, uint16_t port, uint32_t rstag, uint64_t raddr) {
  Common c;
  Setup(sock, &c);
  Connect(&c, port);
  printf("HOG_RUNNING\n");
  fflush(stdout);
  iwarp_sge sge{c.mr.addr, static_cast<uint32_t>(kWriteLen), c.mr.stag};
  iwarp_send_wr w{};
  w.opcode = IWARP_WR_RDMA_WRITE;
  w.flags = IWARP_SEND_SIGNALED;
  w.sg_list = &sge;
  w.num_sge = 1;
  w.remote_addr = raddr;
  w.rkey = rstag;
  for (uint64_t id = 0;; ++id) {
    w.wr_id = id;
    if (iwarp_post_send(c.qp, &w, 1) != 1) {
      iwarp_wc wc[16];
      iwarp_poll_cq(c.cq, wc, 16);
    }
    iwarp_wc wc[16];
    iwarp_poll_cq(c.cq, wc, 16);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && (strcmp(argv[1], "target") == 0 || strcmp(argv[1], "sink") == 0)) {
    return Target(argv[2], static_cast<uint16_t>(atoi(argv[3])), argv[1][0] == 's');
  }
  if (argc >= 7 && strcmp(argv[1], "initiator") == 0) {
    return Initiator(argv[2], static_cast<uint16_t>(atoi(argv[3])),
                     static_cast<uint32_t>(strtoul(argv[4], nullptr, 0)),
                     strtoull(argv[5], nullptr, 0),
                     static_cast<uint32_t>(strtoul(argv[6], nullptr, 0)));
  }
  if (argc >= 3 && strcmp(argv[1], "waitfatal") == 0) return WaitFatal(argv[2]);
  if (argc >= 6 && strcmp(argv[1], "hog") == 0) {
    return Hog(argv[2], static_cast<uint16_t>(atoi(argv[3])),
               static_cast<uint32_t>(strtoul(argv[4], nullptr, 0)), strtoull(argv[5], nullptr, 0));
  }
  fprintf(stderr, "usage: %s target|sink|initiator|waitfatal|hog SOCKET PORT [STAG ADDR [INV_STAG]]\n", argv[0]);
  return 2;
}
