// Many iWARP connections of one libiwarp application at once, for the
// multi-worker tests (tests/appif_steer_dataplane.py).
//
//   app_fanout server SOCKET PORT N
//       listens once on PORT, accepts N connection requests (one QP and CQ
//       each, a receive preposted), echoes every message it receives back on
//       the same QP, and prints SERVER_OK after N echoes completed and N
//       peers disconnected.
//   app_fanout client SOCKET IPV4 PORT N [BYTES]
//       opens N QPs, connects them all to IPV4:PORT at once (each connection
//       gets its own local port), sends BYTES (default 8192) of a pattern
//       unique to each connection on each, checks that the echo comes back
//       byte for byte on the same QP, disconnects, and prints CLIENT_OK.
// Every failure prints "FAIL: ..." and exits 1; nothing waits forever.
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#include "common/testing/check_exit.h"
#include "libiwarp/iwarp.h"

namespace {

constexpr int kTimeoutS = 60;
constexpr uint32_t kMaxConns = 128;

uint8_t Pattern(uint32_t conn, size_t i) {
  return static_cast<uint8_t>((i * 31 + conn * 7 + 1) ^ (i >> 9) ^ (conn << 4));
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

struct Conn {
  iwarp_cq* cq = nullptr;
  iwarp_qp* qp = nullptr;
  bool established = false;
  bool disconnected = false;
  bool received = false;
  bool done = false;  // server: echo sent; client: echo received and checked
};

struct App {
  iwarp_session* s = nullptr;
  uint32_t pd = 0;
  uint8_t* mem = nullptr;
  iwarp_mr mr{};
  size_t bytes = 0;
  std::vector<Conn> conns;

  // Buffers of one message each: slot i sends for connection i, slot n + i
  // receives for it.
  uint8_t* Buf(uint32_t slot) { return mem + size_t{slot} * bytes; }
  uint64_t Addr(uint32_t slot) { return mr.addr + uint64_t{slot} * bytes; }
  uint32_t RxSlot(uint32_t i) const { return static_cast<uint32_t>(conns.size()) + i; }

  void Open(const char* sock, uint32_t n, size_t msg) {
    bytes = msg;
    int r = iwarp_open(sock, &s);
    CHECK(r == 0, "open %s: %d", sock, r);
    CHECK(iwarp_alloc_pd(s, &pd) == 0, "alloc_pd");
    void* m = nullptr;
    CHECK(iwarp_mem_alloc(s, 2 * size_t{n} * bytes, 0, &m) == 0, "mem_alloc");
    mem = static_cast<uint8_t*>(m);
    memset(mem, 0, 2 * size_t{n} * bytes);
    r = iwarp_reg_mr(s, pd, mem, 2 * size_t{n} * bytes, IWARP_ACCESS_LOCAL_WRITE, &mr);
    CHECK(r == 0, "reg_mr %d %s", r, iwarp_last_error(s));
    conns.resize(n);
  }

  // A QP with its own CQ and one receive of `bytes` preposted (iWARP has no
  // receiver-not-ready retry, RFC 5040 5.3).
  void CreateQp(uint32_t i) {
    Conn& c = conns[i];
    CHECK(iwarp_create_cq(s, 8, &c.cq) == 0, "create_cq %u: %s", i, iwarp_last_error(s));
    iwarp_qp_attr a{pd, c.cq, c.cq, 4, 4};
    CHECK(iwarp_create_qp(s, &a, &c.qp) == 0, "create_qp %u: %s", i, iwarp_last_error(s));
    iwarp_sge sge{Addr(RxSlot(i)), static_cast<uint32_t>(bytes), mr.stag};
    iwarp_recv_wr wr{i, &sge, 1};
    CHECK(iwarp_post_recv(c.qp, &wr, 1) == 1, "post_recv %u", i);
  }

  // Sends `len` bytes of slot `slot` on connection i.
  void Send(uint32_t i, uint32_t slot, uint32_t len) {
    iwarp_sge sge{Addr(slot), len, mr.stag};
    iwarp_send_wr w{};
    w.wr_id = 1000 + i;
    w.opcode = IWARP_WR_SEND;
    w.flags = IWARP_SEND_SIGNALED;
    w.sg_list = &sge;
    w.num_sge = 1;
    CHECK(iwarp_post_send(conns[i].qp, &w, 1) == 1, "post_send %u", i);
  }

  int Index(uint32_t qp_id) const {
    for (size_t i = 0; i < conns.size(); ++i) {
      if (conns[i].qp != nullptr && iwarp_qp_id(conns[i].qp) == qp_id) return static_cast<int>(i);
    }
    return -1;
  }
};

int Server(const char* sock, uint16_t port, uint32_t n) {
  App app;
  app.Open(sock, n, 65536);
  iwarp_addr addr{0, port};
  uint32_t lid = 0;
  CHECK(iwarp_listen(app.s, &addr, &lid) == 0, "listen %s", iwarp_last_error(app.s));
  printf("READY\n");
  fflush(stdout);
  uint32_t accepted = 0, echoed = 0, disconnected = 0;
  const double deadline = Now() + kTimeoutS;
  // Done when every peer disconnected; each must have sent its message first.
  while (disconnected < n) {
    CHECK(Now() < deadline, "after %d s: %u accepted, %u echoed, %u disconnected", kTimeoutS,
          accepted, echoed, disconnected);
    iwarp_event ev;
    const int r = iwarp_get_event(app.s, &ev, 1);
    CHECK(r >= 0, "get_event %d", r);
    if (r == 1) {
      switch (ev.type) {
        case IWARP_EVENT_CONNECT_REQUEST: {
          CHECK(accepted < n, "more than %u connection requests", n);
          CHECK(ev.listener_id == lid, "listener id %u", ev.listener_id);
          const uint32_t i = accepted++;
          app.CreateQp(i);
          const int a = iwarp_accept(app.s, ev.request_id, app.conns[i].qp, ev.private_data,
                                     ev.private_data_len);
          CHECK(a == 0, "accept %u: %d %s", i, a, iwarp_last_error(app.s));
          break;
        }
        case IWARP_EVENT_ESTABLISHED: {
          const int i = app.Index(ev.qp_id);
          CHECK(i >= 0, "established: unknown qp %u", ev.qp_id);
          app.conns[i].established = true;
          break;
        }
        case IWARP_EVENT_DISCONNECTED: {
          const int i = app.Index(ev.qp_id);
          CHECK(i >= 0 && app.conns[i].received, "disconnect of qp %u before its message",
                ev.qp_id);
          app.conns[i].disconnected = true;
          ++disconnected;
          break;
        }
        default:
          CHECK(false, "event %u (qp %u, reason %d)", ev.type, ev.qp_id, ev.reason);
      }
    }
    for (uint32_t i = 0; i < accepted; ++i) {
      Conn& c = app.conns[i];
      iwarp_wc wc;
      while (iwarp_poll_cq(c.cq, &wc, 1) == 1) {
        if (wc.opcode == IWARP_WC_RECV) {
          CHECK(wc.status == IWARP_WC_SUCCESS && !c.received,
                "qp %u: receive status %u (received before: %d)", i, wc.status, c.received);
          c.received = true;
          app.Send(i, app.RxSlot(i), wc.byte_len);  // the same bytes back
        } else {
          // The echo's completion may follow the peer's disconnect (flushed).
          CHECK(wc.status == IWARP_WC_SUCCESS ||
                    (c.disconnected && wc.status == IWARP_WC_WR_FLUSH_ERR),
                "qp %u: send status %u", i, wc.status);
          CHECK(wc.opcode == IWARP_WC_SEND && c.received && !c.done, "qp %u: opcode %u", i,
                wc.opcode);
          c.done = true;
          ++echoed;
        }
      }
    }
  }
  printf("SERVER_OK %u connections served\n", disconnected);
  fflush(stdout);
  iwarp_close(app.s);
  return 0;
}

int Client(const char* sock, const char* ip, uint16_t port, uint32_t n, size_t bytes) {
  in_addr a;
  CHECK(inet_pton(AF_INET, ip, &a) == 1, "bad IPv4 address %s", ip);
  App app;
  app.Open(sock, n, bytes);
  iwarp_addr addr{ntohl(a.s_addr), port};
  for (uint32_t i = 0; i < n; ++i) {
    app.CreateQp(i);
    char pd[16];
    const int len = snprintf(pd, sizeof(pd), "conn-%u", i);
    const int r = iwarp_connect(app.conns[i].qp, &addr, pd, static_cast<uint32_t>(len));
    CHECK(r == 0, "connect %u: %d %s", i, r, iwarp_last_error(app.s));
  }
  uint32_t established = 0, checked = 0;
  const double deadline = Now() + kTimeoutS;
  while (checked < n) {
    CHECK(Now() < deadline, "after %d s: %u established, %u echoes checked", kTimeoutS,
          established, checked);
    iwarp_event ev;
    const int r = iwarp_get_event(app.s, &ev, 1);
    CHECK(r >= 0, "get_event %d", r);
    if (r == 1) {
      const int i = app.Index(ev.qp_id);
      CHECK(ev.type == IWARP_EVENT_ESTABLISHED && i >= 0,
            "event %u on qp %u (connection %d), reason %d", ev.type, ev.qp_id, i, ev.reason);
      char pd[16];
      const int len = snprintf(pd, sizeof(pd), "conn-%d", i);
      CHECK(ev.private_data_len == static_cast<uint32_t>(len) &&
                memcmp(ev.private_data, pd, static_cast<size_t>(len)) == 0,
            "connection %d: the accept's private data is not its own", i);
      CHECK(!app.conns[i].established, "connection %d established twice", i);
      app.conns[i].established = true;
      ++established;
      // The receive for the echo is posted (CreateQp); send the message.
      const uint32_t u = static_cast<uint32_t>(i);
      for (size_t k = 0; k < bytes; ++k) app.Buf(u)[k] = Pattern(u, k);
      app.Send(u, u, static_cast<uint32_t>(bytes));
    }
    for (uint32_t i = 0; i < n; ++i) {
      Conn& c = app.conns[i];
      if (!c.established) continue;
      iwarp_wc wc;
      while (iwarp_poll_cq(c.cq, &wc, 1) == 1) {
        CHECK(wc.status == IWARP_WC_SUCCESS, "connection %u: completion status %u", i,
              wc.status);
        if (wc.opcode == IWARP_WC_SEND) continue;
        CHECK(wc.opcode == IWARP_WC_RECV && wc.byte_len == bytes && !c.done,
              "connection %u: opcode %u, %u bytes", i, wc.opcode, wc.byte_len);
        const uint8_t* got = app.Buf(app.RxSlot(i));
        for (size_t k = 0; k < bytes; ++k) {
          CHECK(got[k] == Pattern(i, k), "connection %u: echoed byte %zu is %u, not %u", i, k,
                got[k], Pattern(i, k));
        }
        c.done = true;
        ++checked;
      }
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    CHECK(iwarp_disconnect(app.conns[i].qp) == 0, "disconnect %u", i);
  }
  printf("CLIENT_OK %u connections, %zu bytes each way on each, verified\n", checked, bytes);
  fflush(stdout);
  iwarp_close(app.s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "server") == 0) {
    const uint32_t n = static_cast<uint32_t>(atoi(argv[4]));
    CHECK(n >= 1 && n <= kMaxConns, "N must be 1..%u", kMaxConns);
    return Server(argv[2], static_cast<uint16_t>(atoi(argv[3])), n);
  }
  if ((argc == 6 || argc == 7) && strcmp(argv[1], "client") == 0) {
    const uint32_t n = static_cast<uint32_t>(atoi(argv[5]));
    CHECK(n >= 1 && n <= kMaxConns, "N must be 1..%u", kMaxConns);
    const size_t bytes = argc == 7 ? static_cast<size_t>(atol(argv[6])) : 8192;
    CHECK(bytes >= 1 && bytes <= 65536, "BYTES must be 1..65536");
    return Client(argv[2], argv[3], static_cast<uint16_t>(atoi(argv[4])), n, bytes);
  }
  fprintf(stderr,
          "usage: %s server SOCKET PORT N | client SOCKET IPV4 PORT N [BYTES]\n", argv[0]);
  return 2;
}
