/* A C (not C++) application using libiwarp: proves the header and library
 * work from C. Opens a session on argv[1], registers memory, creates a CQ and
 * a QP, posts a receive, and prints C_API_OK. */
#include <stdio.h>
#include <string.h>

#include "libiwarp/iwarp.h"

int main(int argc, char** argv) {
  struct iwarp_session* s = NULL;
  struct iwarp_cq* cq = NULL;
  struct iwarp_qp* qp = NULL;
  struct iwarp_mr mr;
  uint32_t pd = 0;
  void* mem = NULL;
  int rc;
  if (argc < 2) return 2;
  rc = iwarp_open(argv[1], &s);
  if (rc != 0) {
    printf("FAIL: open %d\n", rc);
    return 1;
  }
  if (iwarp_alloc_pd(s, &pd) != 0 || iwarp_mem_alloc(s, 4096, 0, &mem) != 0 ||
      iwarp_reg_mr(s, pd, mem, 4096, IWARP_ACCESS_LOCAL_WRITE, &mr) != 0 ||
      iwarp_create_cq(s, 16, &cq) != 0) {
    printf("FAIL: setup: %s\n", iwarp_last_error(s));
    return 1;
  }
  {
    struct iwarp_qp_attr attr;
    struct iwarp_sge sge;
    struct iwarp_recv_wr wr;
    memset(&attr, 0, sizeof(attr));
    attr.pd = pd;
    attr.send_cq = cq;
    attr.recv_cq = cq;
    attr.sq_depth = 8;
    attr.rq_depth = 8;
    if (iwarp_create_qp(s, &attr, &qp) != 0) {
      printf("FAIL: create_qp: %s\n", iwarp_last_error(s));
      return 1;
    }
    sge.addr = mr.addr;
    sge.length = 64;
    sge.lkey = mr.stag;
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (iwarp_post_recv(qp, &wr, 1) != 1) {
      printf("FAIL: post_recv\n");
      return 1;
    }
  }
  {
    /* Transport options from C: an SCTP listener (loopback-only daemons
     * serve it for their own QPs), then gone again. */
    struct iwarp_conn_opts opts;
    struct iwarp_addr addr;
    uint32_t lid = 0;
    memset(&opts, 0, sizeof(opts));
    opts.transport = IWARP_TRANSPORT_SCTP;
    addr.ipv4 = 0;
    addr.port = 7471;
    if (iwarp_listen_opts(s, &addr, &opts, &lid) != 0 || iwarp_unlisten(s, lid) != 0) {
      printf("FAIL: listen_opts: %s\n", iwarp_last_error(s));
      return 1;
    }
  }
  if (iwarp_destroy_qp(qp) != 0 || iwarp_destroy_cq(cq) != 0 || iwarp_dereg_mr(s, mr.stag) != 0) {
    printf("FAIL: teardown: %s\n", iwarp_last_error(s));
    return 1;
  }
  iwarp_close(s);
  printf("C_API_OK\n");
  return 0;
}
