// The daemon side of the application interface: accepts libiwarp sessions on
// a UNIX socket, keeps their protection domains, memory regions (STag table),
// completion queues and queue pairs, and runs the loopback QP engine that
// moves data between two QPs of this daemon. QPs connected to other hosts
// are handed to a WireEngine (options.wire_engine, wire_engine.h), which
// runs them as iWARP on a worker's TcpStack.
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

class WireEngine;
struct WireEvent;
struct WireCommand;
struct WireQpContext;

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

  struct Session;
  struct Mr;
  struct Cq;
  struct Qp;
  struct Listener;
  struct ConnRequest;

 private:
  explicit SessionServer(SessionServerOptions options);
  absl::Status Listen();
  void AcceptSessions();
  void HandleSession(Session* s);
  void Dispatch(Session* s, const Message& req, size_t len, int* fds, int nfds);
  void CloseSession(Session* s, const char* why);
  void Log(std::string_view line) const;

  // Requests; each fills `resp` (body, fds) or returns an errno with text.
  int DoOpen(Session* s, const Message& req, size_t len, int* fds, int nfds, Message* resp,
             UniqueFd* out_fd);
  int DoRegMr(Session* s, const Message& req, size_t len, int* fds, int nfds, Message* resp);
  int DoCreateCq(Session* s, const Message& req, size_t len, int* fds, int nfds, Message* resp,
                 UniqueFd* out_fd);
  int DoCreateQp(Session* s, const Message& req, size_t len, Message* resp, UniqueFd* out_fds);
  int DoConnect(Session* s, const Message& req, size_t len, Message* resp);
  int DoAccept(Session* s, const Message& req, size_t len, Message* resp);
  int DoReject(Session* s, const Message& req, size_t len, Message* resp);
  void DestroyQp(Session* s, Qp* qp);
  // Takes a region out of the STag table and the counters, and out of the
  // worker's view before it is unmapped (held if the worker does not answer).
  void ReleaseMr(std::unique_ptr<Mr> mr);
  void DestroyListener(Listener* l);

  // Wire engine (control side). WireCall pushes a command and waits for its
  // acknowledgement, handling other events meanwhile; returns the worker's
  // status or ETIMEDOUT. WirePush only queues (retrying while the ring is
  // full). PollWire handles the events waiting in the ring.
  // `queued` (optional): whether the command reached the worker's ring.
  int WireCall(WireCommand* cmd, bool* queued = nullptr);
  bool WirePush(const WireCommand& cmd);
  uint32_t NextWireSeq();
  // What a timed-out kDestroyQp/kDeregMr/kRegMr leaves (Zombie) waits for
  // the worker's late kAck (ReapZombie frees it); a command that never
  // reached the ring is sent before any newer one (FlushZombies: false
  // while the ring stays full).
  struct Zombie;
  void Bury(std::unique_ptr<Zombie> z, const WireCommand& cmd, bool queued);
  bool FlushZombies();
  void ReapZombie(const WireEvent& ack);
  uint32_t PollWire();
  void HandleWireEvent(const WireEvent& ev);
  bool IsLocalAddress(uint32_t ipv4) const;
  int PrepareWire(Session* s, Qp* qp, const engine::MpaParams& mpa, Transport transport);
  int ConnectWire(Session* s, Qp* qp, const ConnectReq& r);

  // Data path.
  uint32_t PollQp(Qp* qp);
  bool ExecuteSqe(Qp* qp, const Sqe& sqe);  // false: retry later (CQ full)
  void FailQps(Qp* qp, ddp::DdpError, const rdmap::TerminateCode& code, int reason);
  void Disconnect(Qp* qp, int reason);
  bool PostCqe(Cq* cq, const Cqe& cqe);
  void PostEvent(Session* s, const Event& ev);
  void WakeCq(Cq* cq);
  void PublishWrite(Qp* qp);  // a loopback RDMA Write landed in qp
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
  std::map<uint32_t, std::unique_ptr<ConnRequest>> requests_;
  std::vector<Qp*> poll_list_;  // every QP; rebuilt on create/destroy
  std::vector<Cq*> touched_cqs_;  // CQs with new entries in this poll (preallocated)
  std::map<uint32_t, Qp*> wire_qps_;  // QPs handed to the wire engine, by id
  uint32_t wire_seq_ = 1;
  // Stand-in QPs answering a remote Request with a reject, until the worker
  // hands them back; and contexts whose destroy was never acknowledged
  // (kept, with their memory mapped, rather than freed under the worker).
  std::map<WireQpContext*, std::unique_ptr<WireQpContext>> reject_ctxs_;
  std::map<uint32_t, std::unique_ptr<WireQpContext>> async_destroys_;  // by seq
  std::vector<std::unique_ptr<Zombie>> zombies_;

  struct Counters;
  std::unique_ptr<Counters> counters_;
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_SESSION_SERVER_H_
