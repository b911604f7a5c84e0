// The daemon side of the application interface: accepts libiwarp sessions on
// a UNIX socket, answers their control requests (proto.h), owns what each
// session creates (protection domains, memory regions and the STag table,
// completion queues, queue pairs, listeners) within per-session limits, and
// routes QPs to one of two engines: QPs connected to another QP of this
// daemon run on the loopback engine (loopback_engine.h, on this thread);
// QPs connected to other hosts are handed through the wire client
// (wire_client.h) to a WireEngine (options.wire_engine, wire_engine.h),
// which runs them as iWARP on a worker's TcpStack or over SCTP.
//
// Thread ownership with a wire engine:
//  - this (control) thread owns the socket, sessions, PDs, the STag table
//    and MR mappings; every MR is mirrored into the worker's STag view and
//    unmapped only after the worker acknowledged kDeregMr;
//  - from the kConnect/kAccept command on, the worker is the only consumer
//    of the QP's SQ/RQ and the only producer of its CQs; a CQ serves either
//    loopback QPs or wire QPs for its whole life (EINVAL otherwise);
//  - QP destroy, MR register/deregister, listen/unlisten wait (bounded by
//    wire_ack_timeout_ms, handling other events meanwhile) for the worker's
//    acknowledgement; what is not acknowledged in time stays mapped
//    (stats().wire_ack_timeouts, wire_unacked_held) instead of being freed
//    under the worker, and is freed when the worker acknowledges it late; a
//    command that never reached the worker's ring is sent once there is
//    room, before any newer one.
//  - A wire QP whose connection failed or ended stays in the error state:
//    the application destroys it and creates a new one (no reconnect).
//  - Wire QPs take SG lists of up to kMaxSge entries like loopback QPs,
//    except that an RDMA Read has one sink buffer (RFC 5040 4.4): a Read
//    whose non-empty SGEs are not one contiguous range of one MR completes
//    with IWARP_WC_LOC_QP_OP_ERR.
//
// Hosting: no DPDK, no threads of its own. The host calls PollControl() (the
// socket side: accept, requests, hang-ups; system calls) and PollQueues() (the
// data path: SQ work, copies, CQEs; no allocation, locks or system calls
// except an eventfd write when a blocked application asked for a wake-up), or
// Run(), which loops over both and sleeps on epoll when every ring is idle.
// All methods except stats() must be called from one thread; stats() may be
// read from any thread.
//
// Isolation: every id an application names (PD, CQ, QP, listener, request) is
// looked up in that session's own tables only; STags are checked against the
// PD of the QP (RFC 5042 5.1). Shared memory written by an application is
// copied out before it is validated and never trusted for a size or pointer.
#ifndef IWARPD_APPIF_SESSION_SERVER_H_
#define IWARPD_APPIF_SESSION_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "appif/proto.h"
#include "appif/shm.h"
#include "appif/shm_layout.h"
#include "ddp/rdmap.h"
#include "ddp/stag_table.h"
#include "iwarp/qp.h"

namespace iwarp::appif {

class LoopbackEngine;
class WireClient;
class WireEngine;
struct WireEvent;

struct SessionServerOptions {
  std::string socket_path;           // created (an old socket file is replaced)
  uint32_t socket_mode = 0660;       // permissions of the socket file
  std::vector<uint32_t> allowed_uids;  // SO_PEERCRED uid allow-list; empty = any
  uint32_t max_sessions = 64;
  uint32_t max_qps_per_session = 256;
  uint32_t max_cqs_per_session = 256;
  uint32_t max_mrs_per_session = 4096;
  uint32_t max_pds_per_session = 1024;
  uint32_t max_listeners_per_session = 64;
  uint64_t max_registered_bytes_per_session = uint64_t{1} << 30;
  uint32_t max_queue_depth = 4096;   // SQ, RQ, CQ entries (power of two)
  uint32_t event_queue_depth = 64;
  uint32_t stag_table_size = 65536;  // STag slots for the whole daemon
  uint32_t idle_polls_before_sleep = 2048;
  // iWARP on the wire. nullptr: loopback QPs only. Owned by the host, which
  // runs its Poll on the thread owning its TcpStack (a worker lcore) and
  // keeps it alive until the server is destroyed. A connect to an address
  // that is neither 0, 127.0.0.0/8 nor the engine's local_ip goes to the
  // engine; iwarp_listen listens on the engine's stack as well.
  WireEngine* wire_engine = nullptr;
  // MPA parameters of wire QPs (CRC, Markers, IRD/ORD, revision, timeouts).
  // A connect may override CRC and Markers (ConnectReq::mpa_flags).
  engine::MpaParams wire_mpa;
  // engine::QpOptions::zero_copy_tx for wire QPs over TCP.
  bool wire_zero_copy_tx = false;
  // How long the control thread waits for the worker to acknowledge a
  // command that releases or publishes memory (MR, QP destroy, listen).
  uint32_t wire_ack_timeout_ms = 2000;
  // The first id handed out for sessions, PDs, CQs, QPs, listeners and
  // connection requests (one 32-bit space; an id is never 0 and never one a
  // live object has, also after the counter wraps). Tests start it just
  // below the wrap.
  uint32_t first_object_id = 1;
  // Control-path log sink ("session 3 opened by uid 1000 pid 42", ...).
  std::function<void(std::string_view)> log;
};

// Counters; a snapshot read with relaxed loads.
struct SessionServerStats {
  uint64_t sessions_opened = 0;
  uint64_t sessions_closed = 0;
  uint64_t sessions_refused = 0;   // limit or credentials
  uint64_t sessions_active = 0;
  uint64_t pds_active = 0;
  uint64_t mrs_active = 0;
  uint64_t cqs_active = 0;
  uint64_t qps_active = 0;
  uint64_t stags_in_use = 0;
  uint64_t registered_bytes = 0;   // sum of registered lengths
  uint64_t mapped_bytes = 0;       // bytes the server has mapped (rings + regions)
  uint64_t connections = 0;        // loopback QP pairs established
  uint64_t wrs_completed = 0;      // SQ work requests executed successfully
  uint64_t wrs_failed = 0;         // completed with an error status (not flush)
  uint64_t wrs_flushed = 0;
  uint64_t bytes_moved = 0;        // payload copied between regions
  uint64_t events_posted = 0;
  uint64_t events_dropped = 0;     // event ring of a session full
  uint64_t ring_corruptions = 0;   // impossible ring index seen
  uint64_t doorbells = 0;          // wake-ups by an application's doorbell
  uint64_t requests_failed = 0;    // control requests answered with an error
  uint64_t wire_qps_active = 0;    // QPs handed to the wire engine, not yet destroyed
  uint64_t wire_connections = 0;   // wire QPs that reached Full Operation
  uint64_t wire_ack_timeouts = 0;  // worker did not acknowledge in time (memory kept mapped)
  uint64_t wire_requests = 0;      // remote MPA Requests reported to applications
  // QP contexts and regions kept (allocated, mapped) for a command the
  // worker has not acknowledged yet; each is freed when it does.
  uint64_t wire_unacked_held = 0;
};

class SessionServer {
 public:
  ~SessionServer();
  static absl::StatusOr<std::unique_ptr<SessionServer>> Create(SessionServerOptions options);

  // Handles pending socket work; waits up to `timeout_ms` for some (0: none).
  // Returns the number of events handled.
  int PollControl(int timeout_ms);
  // Runs queued work requests of every connected QP and flushes QPs in error.
  // Returns the number of work requests handled.
  uint32_t PollQueues();
  // PollQueues/PollControl until `stop`; sleeps on epoll when idle (rings
  // armed for a doorbell first). Wakes at least every 100 ms.
  void Run(const std::atomic<bool>& stop);

  SessionServerStats stats() const;
  const std::string& socket_path() const { return options_.socket_path; }

  // The objects a session owns; defined in session_objects.h (internal).
  struct Session;
  struct Mr;
  struct Cq;
  struct Qp;
  struct Listener;
  struct ConnRequest;
  struct Counters;

 private:
  // A request as received: the datagram, its size and the descriptors that
  // came with it (a handler that takes descriptors owns all of them).
  struct Request {
    const Message& msg;
    size_t len;
    int* fds;
    int nfds;
  };
  // One handler per command (proto.h Op), looked up by the op code. Each
  // fills `resp` (body) and `out_fds` (sent in this order) or returns an
  // errno, with the session's last_error where there is more to say.
  using Handler = int (SessionServer::*)(Session* s, const Request& req, Message* resp,
                                         UniqueFd* out_fds);
  struct Command {
    Op op;
    Handler handler;
    bool takes_fds;  // false: the descriptors are closed after the handler
  };
  static const Command* FindCommand(uint32_t op);  // nullptr: no such command
  class WireHost;

  explicit SessionServer(SessionServerOptions options);
  absl::Status Listen();
  void AcceptSessions();
  void HandleSession(Session* s);
  void Dispatch(Session* s, const Message& req, size_t len, int* fds, int nfds);
  void CloseSession(Session* s, const char* why);
  void Log(std::string_view line) const;

  int DoOpen(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoAllocPd(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoDeallocPd(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoRegMr(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoDeregMr(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoCreateCq(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoDestroyCq(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoCreateQp(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoDestroyQp(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoListen(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoUnlisten(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoConnect(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoAccept(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoReject(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoDisconnect(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);
  int DoInvalidate(Session* s, const Request& req, Message* resp, UniqueFd* out_fds);

  void DestroyQp(Session* s, Qp* qp);
  // Takes a region out of the STag table and the counters, and out of the
  // worker's view before it is unmapped (held if the worker does not answer).
  void ReleaseMr(std::unique_ptr<Mr> mr);
  void DestroyListener(Listener* l);
  // A connect to one of these goes to a listener of this daemon.
  bool IsLocalAddress(uint32_t ipv4) const;
  // Remote connection requests (WireClient::Host).
  bool AdmitWireRequest(const WireEvent& ev);
  void ForgetWireRequest(uint32_t engine_request_id);
  void RebuildPollList();
  // The next object id: not 0 and not the id of any live session, PD, CQ,
  // QP, listener or connection request (the counter wraps after 2^32
  // allocations, which an application can drive: a PD id seen twice would
  // let one session's PD pass the checks of another's memory regions).
  uint32_t NewId();
  bool IdInUse(uint32_t id) const;

  SessionServerOptions options_;
  UniqueFd listen_fd_;
  UniqueFd epoll_fd_;
  ddp::FixedStagTable stags_;
  uint32_t next_id_ = 1;
  std::map<int, std::unique_ptr<Session>> sessions_;  // by socket fd
  std::map<uint32_t, Listener*> listeners_;           // by id
  // Connection requests waiting for accept/reject, loopback and remote.
  std::map<uint32_t, std::unique_ptr<ConnRequest>> requests_;

  std::unique_ptr<Counters> counters_;
  // The engines running the QPs: loopback pairs on this thread, and (with
  // options.wire_engine) the control side of the worker's wire QPs.
  std::unique_ptr<LoopbackEngine> loopback_;
  std::unique_ptr<WireHost> wire_host_;
  std::unique_ptr<WireClient> wire_;
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_SESSION_SERVER_H_
