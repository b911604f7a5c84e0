/*
 * libiwarp: the application interface of iwarpd (C API, usable from C and C++).
 *
 * An application opens a session on the daemon's UNIX socket, registers
 * memory, creates completion queues and queue pairs, connects them, and then
 * posts work requests and reaps completions through shared-memory rings: no
 * system call on the data path (a doorbell write happens only when the daemon
 * sleeps). Names follow the verbs: PD, MR, CQ, QP, post_send, post_recv,
 * poll_cq.
 *
 * Transports: a connection to another host runs over TCP (iWARP: MPA,
 * RFC 5044) unless the application asks for SCTP (RDMA over SCTP, RFC 5043)
 * with iwarp_connect_opts / iwarp_listen_opts. The DDP/RDMAP semantics, work
 * requests and completions are the same on both. TCP and SCTP ports are
 * separate: a listener serves one transport, and a connect reaches only a
 * listener of its own transport (also for loopback QPs of one daemon).
 * Over SCTP a Send or RDMA Write completes once SCTP took its last segment
 * (from there on SCTP delivers it or the association ends and the QP fails);
 * as on every iWARP transport, the completion frees the local buffer and says
 * nothing about placement at the peer (a later Read Response or a Send from
 * the peer does).
 *
 * Conventions: functions return 0 (or a count) on success and a negative
 * errno value on failure; iwarp_last_error() gives the daemon's explanation
 * of the last failed control call. Control calls of one session may come from
 * several threads (they are serialized inside); iwarp_post_send and
 * iwarp_post_recv on one QP, and iwarp_poll_cq / iwarp_cq_wait on one CQ,
 * must each be used by one thread at a time.
 *
 * Connections: iwarp_connect to a listener of the same daemon (address 0,
 * 127.x or the daemon's own) makes a loopback QP pair; to any other address
 * an iWARP connection (MPA over TCP, RFC 5044/5041/5040) from the daemon's
 * data plane, answered by iwarp_listen/iwarp_accept of an application on
 * the remote daemon (or any iWARP peer). A CQ serves loopback QPs or iWARP
 * QPs, not both. A Send needs a receive posted at the peer before it leaves
 * (RFC 5041 7.1: otherwise the stream terminates).
 *
 * SG lists (up to IWARP_MAX_SGE entries, on loopback and iWARP QPs alike):
 * the data of a Send or RDMA Write is the concatenation of its SGEs, and a
 * receive buffer is the concatenation of its SGEs (a Send longer than their
 * sum ends the stream with the DDP "message too long" error, RFC 5041 7.2).
 * SGEs of length 0 are ignored; every other SGE must lie inside an MR of the
 * QP's PD with the access the operation needs, else the work request
 * completes with IWARP_WC_LOC_PROT_ERR (a receive SGE is checked when a Send
 * reaches it; on iWARP QPs the stream then ends). On iWARP QPs (TCP and SCTP) an
 * RDMA_READ has one sink buffer, because a Read Request carries a single sink
 * STag and offset (RFC 5040 4.4): its non-empty SGEs must form one contiguous
 * range of one MR; any other RDMA_READ with more than one non-empty SGE
 * completes with IWARP_WC_LOC_QP_OP_ERR and the connection ends (as for any
 * malformed request). Loopback QPs also scatter a Read.
 *
 * Memory: the daemon maps registered memory, so it must live in a memfd
 * sealed against shrinking. iwarp_mem_alloc() provides such memory (huge pages
 * when asked and available); iwarp_reg_mr_fd() registers a range of the
 * application's own sealed memfd.
 */
#ifndef IWARPD_LIBIWARP_IWARP_H_
#define IWARPD_LIBIWARP_IWARP_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IWARP_MAX_SGE 4
#define IWARP_MAX_PRIVATE_DATA 256

struct iwarp_session;
struct iwarp_cq;
struct iwarp_qp;

/* Memory registration access (RFC 5042: remote rights are per region). */
enum iwarp_access {
  IWARP_ACCESS_REMOTE_READ = 1u << 0,
  IWARP_ACCESS_REMOTE_WRITE = 1u << 1,
  IWARP_ACCESS_LOCAL_WRITE = 1u << 2,
  /* The peer may not revoke this STag with Send with Invalidate. */
  IWARP_ACCESS_NO_REMOTE_INVALIDATE = 1u << 8,
};

enum iwarp_mem_flags {
  IWARP_MEM_HUGETLB = 1u << 0, /* 2 MiB pages if reserved; else normal pages */
};

struct iwarp_mr {
  uint32_t stag; /* lkey and rkey (one STag, RFC 5040 2.1) */
  uint64_t addr; /* first byte; the TO the peer uses */
  uint64_t length;
};

struct iwarp_sge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

enum iwarp_wr_opcode {
  IWARP_WR_SEND = 0,
  IWARP_WR_SEND_WITH_INV = 1,
  IWARP_WR_SEND_WITH_SE = 2,
  IWARP_WR_SEND_WITH_SE_INV = 3,
  IWARP_WR_RDMA_WRITE = 4,
  IWARP_WR_RDMA_READ = 5,
};

enum iwarp_send_flags {
  IWARP_SEND_SIGNALED = 1u << 0, /* completion on success too */
};

struct iwarp_send_wr {
  uint64_t wr_id;
  uint32_t opcode; /* enum iwarp_wr_opcode */
  uint32_t flags;  /* enum iwarp_send_flags */
  const struct iwarp_sge* sg_list;
  uint32_t num_sge;
  uint32_t invalidate_stag; /* SEND_WITH_INV / SEND_WITH_SE_INV */
  uint64_t remote_addr;     /* RDMA_WRITE sink / RDMA_READ source */
  uint32_t rkey;
};

struct iwarp_recv_wr {
  uint64_t wr_id;
  const struct iwarp_sge* sg_list;
  uint32_t num_sge;
};

enum iwarp_wc_status {
  IWARP_WC_SUCCESS = 0,
  IWARP_WC_LOC_LEN_ERR = 1,
  IWARP_WC_LOC_PROT_ERR = 2,
  IWARP_WC_LOC_QP_OP_ERR = 3,
  IWARP_WC_WR_FLUSH_ERR = 4,
  IWARP_WC_REM_ACCESS_ERR = 5,
  IWARP_WC_REM_INV_REQ_ERR = 6,
  IWARP_WC_REM_OP_ERR = 7,
  IWARP_WC_FATAL_ERR = 8,
};

enum iwarp_wc_opcode {
  IWARP_WC_SEND = 0,
  IWARP_WC_RDMA_WRITE = 1,
  IWARP_WC_RDMA_READ = 2,
  IWARP_WC_RECV = 3,
};

enum iwarp_wc_flags {
  IWARP_WC_WITH_INV = 1u << 0,
  IWARP_WC_SOLICITED = 1u << 1,
};

/* One completion. term_* carry the RFC 5040 7.4 Terminate layer, error type
 * and error code of a failed operation (e.g. 1/1/0x01 = DDP tagged base or
 * bounds violation, 0/1/0x02 = RDMAP access rights violation). */
struct iwarp_wc {
  uint64_t wr_id;
  uint32_t qp_id;
  uint32_t byte_len;
  uint32_t invalidated_stag;
  uint8_t opcode; /* enum iwarp_wc_opcode */
  uint8_t status; /* enum iwarp_wc_status */
  uint8_t flags;  /* enum iwarp_wc_flags */
  uint8_t term_layer;
  uint8_t term_etype;
  uint8_t term_code;
  uint8_t reserved[6];
};

enum iwarp_event_type {
  IWARP_EVENT_CONNECT_REQUEST = 1,
  IWARP_EVENT_ESTABLISHED = 2,
  IWARP_EVENT_REJECTED = 3,
  IWARP_EVENT_DISCONNECTED = 4, /* reason 0: graceful close; errno: the connection was lost */
  IWARP_EVENT_CONNECT_ERROR = 5,
  IWARP_EVENT_QP_ERROR = 6,
  IWARP_EVENT_DEVICE_FATAL = 7, /* the daemon went away: every object is dead */
};

struct iwarp_event {
  uint32_t type; /* enum iwarp_event_type */
  uint32_t qp_id;
  uint32_t listener_id;
  uint32_t request_id; /* CONNECT_REQUEST: pass to iwarp_accept / iwarp_reject */
  int32_t reason;      /* errno value (ECONNRESET, ECONNREFUSED, ...), 0 if none */
  uint8_t term_layer;
  uint8_t term_etype;
  uint8_t term_code;
  uint8_t reserved0;
  uint32_t private_data_len;
  uint32_t mpa_flags; /* ESTABLISHED: enum iwarp_mpa_state bits */
  uint8_t private_data[IWARP_MAX_PRIVATE_DATA];
  /* CONNECT_REQUEST: who asks, for the application's access checks. On the
   * wire the initiator's IPv4 address (host byte order) and TCP or SCTP
   * port; a loopback request (a process of this host, through the same
   * daemon) gives 127.0.0.1. 0 in other events. */
  uint32_t peer_ipv4;
  uint16_t peer_port;
  uint16_t reserved1;
};

/* iwarp_event.mpa_flags of IWARP_EVENT_ESTABLISHED: the negotiated MPA
 * framing (RFC 5044 7.1.2). 0 for a loopback connection (no framing). */
enum iwarp_mpa_state {
  IWARP_MPA_STATE_WIRE = 1u << 0,       /* on the wire to another host (not loopback) */
  IWARP_MPA_STATE_CRC = 1u << 1,        /* FPDUs carry CRC32c */
  IWARP_MPA_STATE_TX_MARKERS = 1u << 2, /* we insert Markers (the peer asked) */
  IWARP_MPA_STATE_RX_MARKERS = 1u << 3, /* the peer inserts Markers (we asked) */
  IWARP_MPA_STATE_SCTP = 1u << 4,       /* with WIRE: RDMA over SCTP (RFC 5043), no MPA */
};
/* iwarp_connect_mpa flags: the MPA Request of this connection asks for CRC
 * (C) and/or Markers (M) instead of the daemon's configured defaults. CRC is
 * used if either side asks (RFC 5044 7.1.2). Loopback connections ignore them. */
enum iwarp_mpa_flags {
  IWARP_MPA_CRC = 1u << 0,
  IWARP_MPA_MARKERS = 1u << 1,
};
/* The lower layer of a connection (struct iwarp_conn_opts.transport). */
enum iwarp_transport {
  IWARP_TRANSPORT_TCP = 0,  /* iWARP: MPA over TCP (RFC 5044/5041/5040); the default */
  IWARP_TRANSPORT_SCTP = 1, /* RDMA over SCTP: a DDP stream of an SCTP association (RFC 5043) */
};
enum iwarp_conn_flags {
  /* TCP connect: mpa_flags (IWARP_MPA_*) replace the daemon's MPA defaults,
   * as iwarp_connect_mpa does. Not valid with SCTP (RFC 5043 has no MPA). */
  IWARP_CONN_MPA = 1u << 0,
};
/* Options of iwarp_connect_opts / iwarp_listen_opts. Zero-initialize it:
 * every field not named here must be 0, so that later versions can give
 * meaning to them. */
struct iwarp_conn_opts {
  uint32_t transport; /* enum iwarp_transport */
  uint32_t flags;     /* enum iwarp_conn_flags (connect only) */
  uint32_t mpa_flags; /* enum iwarp_mpa_flags, with IWARP_CONN_MPA */
  uint32_t reserved[5];
};

struct iwarp_addr {
  uint32_t ipv4; /* host byte order; 0 = any address of the daemon */
  uint16_t port;
};

struct iwarp_qp_attr {
  uint32_t pd;
  struct iwarp_cq* send_cq;
  struct iwarp_cq* recv_cq;
  uint32_t sq_depth;
  uint32_t rq_depth;
};

/* Sessions. A NULL path means "/run/iwarpd/iwarpd.sock" or $IWARPD_SOCKET. */
int iwarp_open(const char* socket_path, struct iwarp_session** out);
void iwarp_close(struct iwarp_session* s); /* also releases every object */
const char* iwarp_last_error(const struct iwarp_session* s);

int iwarp_alloc_pd(struct iwarp_session* s, uint32_t* pd);
int iwarp_dealloc_pd(struct iwarp_session* s, uint32_t pd);

/* Shared memory usable for registration. */
int iwarp_mem_alloc(struct iwarp_session* s, size_t length, uint32_t flags, void** addr);
int iwarp_mem_free(struct iwarp_session* s, void* addr);

/* [addr, addr + length) must lie inside one iwarp_mem_alloc block. */
int iwarp_reg_mr(struct iwarp_session* s, uint32_t pd, void* addr, size_t length,
                 uint32_t access, struct iwarp_mr* out);
/* A range of the caller's own memfd (sealed with F_SEAL_SHRINK), mapped in
 * the caller at `addr`. The fd stays the caller's. */
int iwarp_reg_mr_fd(struct iwarp_session* s, uint32_t pd, int fd, uint64_t offset, size_t length,
                    void* addr, uint32_t access, struct iwarp_mr* out);
int iwarp_dereg_mr(struct iwarp_session* s, uint32_t stag);
/* Local invalidation (RFC 5042 5.2): the STag stops matching at once. */
int iwarp_invalidate_stag(struct iwarp_session* s, uint32_t stag);

/* A CQ holds two file descriptors of the process until destroyed: the read
 * end of the pipe the daemon writes to wake a sleeping waiter and the epoll
 * set the waits sleep in (one system call per wake-up). */
int iwarp_create_cq(struct iwarp_session* s, uint32_t depth, struct iwarp_cq** out);
int iwarp_destroy_cq(struct iwarp_cq* cq);
/* Up to `max` completions, oldest first; returns the count. */
int iwarp_poll_cq(struct iwarp_cq* cq, struct iwarp_wc* wc, int max);
/* Blocks until the CQ holds a completion (0), `timeout_ms` passes
 * (-ETIMEDOUT; -1 waits forever) or the daemon is gone (-EPIPE). */
int iwarp_cq_wait(struct iwarp_cq* cq, int timeout_ms);

/* Event-loop integration (an application that waits for CQs, events and
 * its own descriptors in one poll / epoll set instead of iwarp_cq_wait):
 *
 *   iwarp_cq_fd(cq) is the read end of the CQ's wake-up pipe; it polls
 *   readable (POLLIN) after the daemon rang an armed CQ, and POLLHUP once
 *   the daemon is gone. iwarp_cq_arm(cq) asks for one wake-up at the next
 *   completion: it returns 1 when completions are already waiting (nothing
 *   armed: poll the CQ instead of sleeping) and 0 once armed. The loop:
 *   drain with iwarp_poll_cq, arm, and sleep only on 0.
 *
 *   iwarp_event_fd(s) / iwarp_event_arm(s) are the same for the session's
 *   connection events (read with iwarp_get_event(s, ev, 0)).
 *
 * An arm is one-shot (the daemon clears it when it rings). Arming empties
 * the wake-up pipe, so a descriptor left readable by an earlier ring stops
 * being reported. One thread at a time waits on a CQ, this way or with
 * iwarp_cq_wait. Both return -EPIPE when the daemon is gone. */
int iwarp_cq_fd(const struct iwarp_cq* cq);
int iwarp_cq_arm(struct iwarp_cq* cq);
int iwarp_event_fd(const struct iwarp_session* s);
int iwarp_event_arm(struct iwarp_session* s);

int iwarp_create_qp(struct iwarp_session* s, const struct iwarp_qp_attr* attr,
                    struct iwarp_qp** out);
int iwarp_destroy_qp(struct iwarp_qp* qp);
uint32_t iwarp_qp_id(const struct iwarp_qp* qp);
/* Burst posting: returns how many of `n` were queued (fewer when the ring is
 * full), or a negative errno for a malformed request (none after it queued). */
int iwarp_post_send(struct iwarp_qp* qp, const struct iwarp_send_wr* wrs, uint32_t n);
int iwarp_post_recv(struct iwarp_qp* qp, const struct iwarp_recv_wr* wrs, uint32_t n);

/* RDMA Writes the peer placed into this QP's memory. RFC 5040 gives the
 * Data Sink of an RDMA Write no completion; the daemon counts each Write
 * message once its last DDP segment is placed (every earlier byte of it is
 * then in memory, loads after this call see it). A zero-length Write counts.
 * A plain load from shared memory: no system call. */
uint64_t iwarp_qp_writes_placed(const struct iwarp_qp* qp);
/* Blocks until iwarp_qp_writes_placed(qp) differs from `seen`, so that an
 * application waiting for a peer's Write (a flag at the end of a buffer,
 * say) can sleep instead of spinning on the byte beside the daemon's busy
 * worker: 0 once it moved, -ETIMEDOUT after `timeout_ms` (-1 waits forever),
 * -EPIPE when the daemon is gone. It sleeps on the wake-up pipe of the QP's
 * receive CQ, so it counts as a wait on that CQ: one thread at a time waits
 * on a CQ, with iwarp_cq_wait or this. */
int iwarp_qp_wait_writes(struct iwarp_qp* qp, uint64_t seen, int timeout_ms);

/* Connection management (events arrive through iwarp_get_event). */
int iwarp_listen(struct iwarp_session* s, const struct iwarp_addr* addr, uint32_t* listener_id);
int iwarp_unlisten(struct iwarp_session* s, uint32_t listener_id);
int iwarp_connect(struct iwarp_qp* qp, const struct iwarp_addr* addr, const void* private_data,
                  uint32_t private_data_len);
/* As iwarp_connect, with the MPA options of this connection (IWARP_MPA_*)
 * replacing the daemon's defaults. */
int iwarp_connect_mpa(struct iwarp_qp* qp, const struct iwarp_addr* addr, const void* private_data,
                      uint32_t private_data_len, uint32_t mpa_flags);
/* iwarp_connect / iwarp_listen with options (NULL: TCP and the daemon's
 * defaults). Errors beyond those of iwarp_connect / iwarp_listen:
 * -EINVAL for an unknown transport, unknown flags or non-zero reserved
 * fields, or IWARP_CONN_MPA with SCTP; -EPROTONOSUPPORT when the daemon's
 * data plane has no SCTP configured (iwarp_last_error says so). Over SCTP the
 * private data travels in the RFC 5043 session Initiate / Accept / Reject,
 * after the RFC 6581 IRD/ORD block, and the connect request, accept and
 * reject events are the same as over TCP. */
int iwarp_connect_opts(struct iwarp_qp* qp, const struct iwarp_addr* addr,
                       const void* private_data, uint32_t private_data_len,
                       const struct iwarp_conn_opts* opts);
int iwarp_listen_opts(struct iwarp_session* s, const struct iwarp_addr* addr,
                      const struct iwarp_conn_opts* opts, uint32_t* listener_id);
int iwarp_accept(struct iwarp_session* s, uint32_t request_id, struct iwarp_qp* qp,
                 const void* private_data, uint32_t private_data_len);
int iwarp_reject(struct iwarp_session* s, uint32_t request_id, const void* private_data,
                 uint32_t private_data_len);
int iwarp_disconnect(struct iwarp_qp* qp);
/* 1 with an event, 0 on timeout (-1 waits forever), negative errno on error.
 * A lost daemon is reported once as IWARP_EVENT_DEVICE_FATAL. */
int iwarp_get_event(struct iwarp_session* s, struct iwarp_event* ev, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* IWARPD_LIBIWARP_IWARP_H_ */
