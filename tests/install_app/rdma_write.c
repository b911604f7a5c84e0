/* An application built outside the iwarpd tree, against the installed
 * libiwarp only (pkg-config libiwarp; tests/install_check.py builds and runs
 * it). Two sessions of one daemon: B connects to A's listener, RDMA-Writes
 * 4 KiB into A's registered memory, and the bytes are compared.
 *
 *   rdma_write SOCKET PORT
 * Prints INSTALLED_APP_OK and exits 0, or prints FAIL: ... and exits 1. */
#include <libiwarp/iwarp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, what)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      printf("FAIL: %s (line %d)\n", what, __LINE__);      \
      return 1;                                            \
    }                                                      \
  } while (0)

struct side {
  struct iwarp_session* s;
  uint32_t pd;
  unsigned char* mem;
  struct iwarp_mr mr;
  struct iwarp_cq* cq;
  struct iwarp_qp* qp;
};

static int open_side(const char* sock, struct side* x) {
  void* mem = NULL;
  CHECK(iwarp_open(sock, &x->s) == 0, "iwarp_open");
  CHECK(iwarp_alloc_pd(x->s, &x->pd) == 0, "iwarp_alloc_pd");
  CHECK(iwarp_mem_alloc(x->s, 65536, 0, &mem) == 0, "iwarp_mem_alloc");
  x->mem = mem;
  CHECK(iwarp_reg_mr(x->s, x->pd, mem, 65536,
                     IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_WRITE, &x->mr) == 0,
        "iwarp_reg_mr");
  CHECK(iwarp_create_cq(x->s, 16, &x->cq) == 0, "iwarp_create_cq");
  struct iwarp_qp_attr attr = {x->pd, x->cq, x->cq, 16, 16};
  CHECK(iwarp_create_qp(x->s, &attr, &x->qp) == 0, "iwarp_create_qp");
  return 0;
}

static int event(struct iwarp_session* s, uint32_t type, struct iwarp_event* ev) {
  CHECK(iwarp_get_event(s, ev, 10000) == 1, "iwarp_get_event");
  CHECK(ev->type == type, "event type");
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    printf("usage: rdma_write SOCKET PORT\n");
    return 2;
  }
  struct side a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  if (open_side(argv[1], &a) != 0 || open_side(argv[1], &b) != 0) return 1;

  struct iwarp_addr addr = {0, (uint16_t)atoi(argv[2])};
  uint32_t listener = 0;
  struct iwarp_event ev;
  CHECK(iwarp_listen(a.s, &addr, &listener) == 0, "iwarp_listen");
  CHECK(iwarp_connect(b.qp, &addr, "installed", 9) == 0, "iwarp_connect");
  if (event(a.s, IWARP_EVENT_CONNECT_REQUEST, &ev) != 0) return 1;
  CHECK(ev.private_data_len == 9 && memcmp(ev.private_data, "installed", 9) == 0,
        "private data of the request");
  CHECK(iwarp_accept(a.s, ev.request_id, a.qp, NULL, 0) == 0, "iwarp_accept");
  if (event(a.s, IWARP_EVENT_ESTABLISHED, &ev) != 0) return 1;
  if (event(b.s, IWARP_EVENT_ESTABLISHED, &ev) != 0) return 1;

  for (int i = 0; i < 4096; ++i) b.mem[i] = (unsigned char)(i * 7 + 1);
  struct iwarp_sge sge = {b.mr.addr, 4096, b.mr.stag};
  struct iwarp_send_wr wr;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = 42;
  wr.opcode = IWARP_WR_RDMA_WRITE;
  wr.flags = IWARP_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = a.mr.addr + 8192;
  wr.rkey = a.mr.stag;
  CHECK(iwarp_post_send(b.qp, &wr, 1) == 1, "iwarp_post_send");
  struct iwarp_wc wc;
  int n = 0;
  for (int tries = 0; tries < 100 && n == 0; ++tries) {
    n = iwarp_poll_cq(b.cq, &wc, 1);
    if (n == 0) iwarp_cq_wait(b.cq, 100);
  }
  CHECK(n == 1 && wc.wr_id == 42 && wc.status == IWARP_WC_SUCCESS, "the Write completes");
  CHECK(memcmp(a.mem + 8192, b.mem, 4096) == 0, "the Write's bytes in A's memory");
  iwarp_close(b.s);
  iwarp_close(a.s);
  printf("INSTALLED_APP_OK\n");
  return 0;
}
