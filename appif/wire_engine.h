// The wire engine: application QPs of libiwarp sessions carried over iWARP
// (engine::Qp on a tcp::TcpStack) or over RDMA over SCTP (engine::Qp on a DDP
// stream of an SCTP association, RFC 5043, when WireEngineOptions::sctp is
// set) instead of the loopback engine. The DDP/RDMAP engine is the same for
// both; the application picks the transport at connect and at listen.
//
// SCTP connections (wire_sctp.cc), through the worker's sctp::SctpEndpoint:
//  - Active open: each connect opens its own association to the remote
//    IP/port and runs the QP on DDP stream 0 of it (no reuse between QPs:
//    one connect = one association, so a QP's failure or close never
//    disturbs another). The session Initiate goes out once the association
//    is up and the peer indicated DDP (RFC 5043 11.1); destroying the QP
//    shuts the association down.
//  - Passive side: an SCTP listener accepts associations on its port from
//    any remote address. An Initiate on a stream without a QP is held (with
//    its private data) and reported to the application as a connect request;
//    iwarp_accept creates the engine QP on that stream and hands it the held
//    Initiate, which answers with the application's private data (RFC 5043
//    6.2); iwarp_reject answers with a session Reject carrying the
//    application's private data (6.3). The stream-level SctpStreams "QP must
//    exist before the Initiate" rule is met by creating the QP at accept time
//    and replaying the Initiate into it. Unanswered Initiates are rejected
//    after pending_timeout_us; an association without QPs or requests for
//    that long is shut down.
//  - Engine QPs over SCTP are created and destroyed on the worker (they bind
//    to a stream of an association that only the worker knows); this is
//    connection setup, not the per-packet path, and usrsctp allocates for
//    the association there anyway.
//
// Threading (ARCHITECTURE.md "threading"):
//  - A WireEngine is created for one TcpStack and Poll() runs ONLY on the
//    thread that owns that stack (a worker lcore; a test thread in tests).
//  - The control thread (SessionServer) talks to it only through two
//    bounded SPSC rings: commands in (PushCommand, control thread only) and
//    events out (PopEvent, control thread only). No locks.
//  - Everything the worker touches is preallocated by the control thread:
//    a WireQpContext (engine::Qp, ring views) is allocated before it is
//    handed over in a command and freed only after the worker handed it
//    back (kAck of kDestroyQp). Memory regions are mirrored into a
//    worker-local STag view (WireStagView); the control thread unmaps a
//    region only after the kAck of its kDeregMr.
//  - After a QP is handed over (kConnect / kAccept), the worker is the sole
//    consumer of its SQ and RQ rings and the sole producer of its CQ rings
//    (SessionServer refuses to mix loopback and wire QPs on one CQ).
//
// Fast path (Poll): no allocation, locks or logging. System calls only to
// ring an application's CQ (its wake-up pipe) or the control thread's event eventfd,
// and only when that side announced it sleeps (spsc_ring.h doorbells).
// Shared memory is copied out before use; SQE/RQE fields are validated
// (opcode, SGE count, lkey/PD/bounds/rights by the engine's local checks).
#ifndef IWARPD_APPIF_WIRE_ENGINE_H_
#define IWARPD_APPIF_WIRE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "appif/app_ports.h"
#include "appif/proto.h"
#include "appif/shm.h"
#include "appif/shm_layout.h"
#include "appif/spsc_ring.h"
#include "ddp/placement.h"
#include "ddp/stag_table.h"
#include "iwarp/qp.h"
#include "tcp_lite/tcp_stack.h"

namespace iwarp::sctp {
class SctpAssociation;
class SctpEndpoint;
}  // namespace iwarp::sctp

namespace iwarp::appif {

class WireEngine;

// A CQ ring as the worker produces into it. Created by the control thread
// when the CQ is first bound to a wire QP; after that only the worker
// touches it. `ring` is a producer view of the application's CQ memfd.
struct WireCq {
  uint32_t id = 0;
  SpscRing<Cqe> ring;
  int eventfd = -1;  // the write end of the CQ's wake-up pipe (owned by the session server)
  bool touched = false;
};

// One application QP on the wire. Allocated by the control thread, owned by
// the worker between the kConnect/kAccept command and the kAck of
// kDestroyQp. The fields before `engine` are immutable once handed over.
struct WireQpContext final : engine::QpObserver {
  uint32_t qp_id = 0;
  bool reject_only = false;  // a stand-in QP that only answers a Request with a reject
  // RDMA over SCTP: `engine` is null until the worker creates it on a DDP
  // stream (with llp_options) at kConnect / kAccept, and the worker destroys
  // it at kDestroyQp.
  bool sctp = false;
  engine::QpOptions llp_options;
  SpscRing<Sqe> sq;          // consumer view (unused when reject_only)
  SpscRing<Rqe> rq;
  WireCq* scq = nullptr;
  WireCq* rcq = nullptr;
  // The QP's placement notification (in the QP's memfd; may be null in
  // tests): PollQp publishes the engine's writes_placed there.
  QpNotify* notify = nullptr;
  std::unique_ptr<engine::Qp> engine;
  // Worker-owned state.
  WireEngine* owner = nullptr;
  uint32_t pending_slot = UINT32_MAX;  // passive: the proxy that feeds it
  uint64_t writes_published = 0;       // the count last stored in notify
  bool in_active_list = false;
  bool established = false;
  bool failed_reported = false;
  bool accept = true;  // decision returned to the engine (passive side)
  uint32_t reply_pd_len = 0;
  uint8_t reply_pd[kMaxPrivateData] = {};  // SCTP active side: the Initiate's private data
  uint16_t held_port = 0;  // TCP active open: the local port held in the AppPortTable, 0 = none
  tcp::ConnId held_conn;   // and the connection that uses it (the engine QP forgets it on close)
  void* sctp_assoc = nullptr;  // SCTP: the worker's association record
  uint16_t sctp_stream = 0;
  // Send work requests in the engine: the engine carries a slot index as its
  // wr_id; the slot keeps the application's wr_id and whether it asked for a
  // completion on success (the engine completes every request).
  struct SqSlot {
    uint64_t wr_id = 0;
    bool signaled = false;
  };
  std::unique_ptr<SqSlot[]> sq_slots;       // sq depth entries
  std::unique_ptr<uint32_t[]> free_slots;  // stack of free slot indices
  uint32_t nfree = 0;
  // Control path: sizes the slot table for an SQ of `depth` entries.
  void InitSlots(uint32_t depth);

  // engine::QpObserver (called on the worker).
  engine::AcceptDecision OnConnectRequest(engine::Qp& qp, const mpa::StartupFrame& req) override;
  void OnEstablished(engine::Qp& qp, ByteSpan peer_private_data) override;
  void OnConnectFailed(engine::Qp& qp, engine::ConnectError e, ByteSpan peer_private_data) override;
  void OnTerminate(engine::Qp& qp, const rdmap::TerminateCode& code, bool sent) override;
  void OnDisconnected(engine::Qp& qp) override;
};

enum class WireCommandType : uint8_t {
  kRegMr,       // stag, region, mem -> kAck
  kDeregMr,     // stag -> kAck (after it the worker never touches the bytes)
  kInvalidate,  // stag, pd: local invalidation (RFC 5042 5.2) -> kAck
  kListen,      // listener_id, port -> kAck (status: errno)
  kUnlisten,    // listener_id -> kAck (pending requests of it are reset)
  kConnect,     // qp, remote_ip, remote_port, private data (active open)
  kAccept,      // qp, request_id, private data
  kReject,      // qp (reject_only), request_id, private data
  kDropRequest, // request_id: reset a pending passive connection
  kDisconnect,  // qp: graceful close (RFC 5040 5.5)
  kDestroyQp,   // qp -> kAck; the context is the control thread's again
};

struct WireCommand {
  WireCommandType type = WireCommandType::kRegMr;
  Transport transport = Transport::kTcp;  // kListen, kConnect, kAccept, kReject
  uint32_t seq = 0;  // echoed in kAck
  WireQpContext* qp = nullptr;
  uint32_t stag = 0;
  uint32_t pd = 0;
  bool remote_invalidate = true;
  ddp::TaggedRegion region;
  uint8_t* mem = nullptr;  // region bytes, region.length long (kRegMr)
  uint32_t listener_id = 0;
  uint32_t request_id = 0;
  uint32_t remote_ip = 0;
  uint16_t port = 0;
  uint32_t private_data_len = 0;
  uint8_t private_data[kMaxPrivateData] = {};
};

enum class WireEventType : uint8_t {
  kAck,             // seq, status (0 or errno)
  kConnectRequest,  // listener_id, request_id, private data
  kRequestGone,     // request_id: the peer went away before an answer
  kEstablished,     // qp, private data of the peer
  kConnectFailed,   // qp, status (errno), connect_error, private data
  kTerminate,       // qp, Terminate triple, sent
  kDisconnected,    // qp, status (0: graceful close, else errno)
  kRemoteInvalidate,  // stag, pd: the peer's Send with Invalidate succeeded
};

struct WireEvent {
  WireEventType type = WireEventType::kAck;
  uint8_t connect_error = 0;  // engine::ConnectError
  bool sent = false;
  uint8_t term_layer = 0, term_etype = 0, term_code = 0;
  uint32_t seq = 0;
  int32_t status = 0;
  WireQpContext* qp = nullptr;
  uint32_t qp_id = 0;
  uint32_t listener_id = 0;
  uint32_t request_id = 0;
  uint32_t stag = 0;
  uint32_t pd = 0;
  uint32_t mpa_flags = 0;  // kEstablished: kEvMpa* (shm_layout.h)
  uint32_t private_data_len = 0;
  uint8_t private_data[kMaxPrivateData] = {};
  uint32_t peer_ip = 0;     // kConnectRequest: the initiator's address (host order)
  uint16_t peer_port = 0;
};

struct WireEngineOptions {
  uint32_t local_ip = 0;          // host order; the stack's address used for active opens
  uint32_t max_qps = 256;         // wire QPs at once on this engine (and stand-in reject QPs)
  uint32_t max_listeners = 64;
  uint32_t max_pending = 64;      // valid MPA Requests waiting for accept/reject
  // A remote Request no application answered within this time is reset (a
  // peer cannot hold the pending slots forever).
  uint64_t pending_timeout_us = 10'000'000;
  // Connections waiting for their MPA Request, per listening port
  // (iwarp/mpa_gate.h): limits, the Request timeout, the private data limit.
  engine::MpaGateOptions gate;
  uint32_t stag_capacity = 65536; // STag indices mirrored (SessionServerOptions::stag_table_size)
  uint32_t command_depth = 256;
  uint32_t event_depth = 1024;
  uint32_t burst = 32;            // SQEs/RQEs/completions per QP per Poll
  // RDMA over SCTP (RFC 5043): the worker's SCTP endpoint (sctp/endpoint.h),
  // polled and drained by the worker; the engine opens, accepts and ends
  // associations through it. nullptr: TCP only (SCTP listen and connect fail
  // with EPROTONOSUPPORT). The engine must be destroyed before the endpoint.
  sctp::SctpEndpoint* sctp = nullptr;
  uint32_t max_sctp_associations = 64;  // active and passive, at once
  // An active SCTP open whose association is not up by then fails (ETIMEDOUT).
  uint64_t sctp_connect_timeout_us = 10'000'000;
  // Receive steering with several workers (appif/app_ports.h): the engine
  // holds the local TCP port of every application listener and connection
  // in it while the stack uses that port, and refuses to listen on a port
  // it marks reserved for a built-in service (EADDRINUSE). nullptr: nothing
  // is published (one worker). Must outlive the engine; the engine is its
  // only writer.
  AppPortTable* app_ports = nullptr;
};

// Counters; written by the worker, read anywhere (relaxed).
// One application listener as telemetry shows it.
struct WireListenerStats {
  uint32_t listener_id = 0;
  uint16_t port = 0;
  engine::MpaGateCounters gate;  // before its connections' MPA Requests
  uint64_t replies_sent = 0;     // iwarp_accept answered
  uint64_t rejects_sent = 0;     // iwarp_reject answered
};

struct WireEngineStats {
  uint64_t commands = 0;
  uint64_t events = 0;
  uint64_t events_dropped = 0;   // event ring full (sized so this stays 0)
  uint64_t wrs_posted = 0;       // SQEs handed to engines
  uint64_t recvs_posted = 0;
  uint64_t completions = 0;      // CQEs written
  uint64_t wrs_flushed = 0;      // SQ/RQ ring entries flushed by the worker
  uint64_t bad_sqes = 0;         // malformed SQE (opcode, SGE count, SG list)
  uint64_t bad_rqes = 0;         // malformed RQE (SGE count, SG list)
  uint64_t ring_corruptions = 0; // impossible ring index from an application
  uint64_t requests = 0;         // remote MPA Requests reported
  // Valid Requests refused because max_pending of them already wait for
  // the application (MPA Reject Reply), or reported ones nobody answered in
  // pending_timeout_us (RST).
  uint64_t requests_refused = 0;
  // Every listening port's gate: connections before their MPA Request
  // (refusals, timeouts, evictions, Reject Replies sent).
  engine::MpaGateCounters gate;
  uint64_t replies_sent = 0;     // TCP: MPA Replies accepting (iwarp_accept)
  uint64_t rejects_sent = 0;     // TCP: MPA Reject Replies of iwarp_reject
  std::vector<WireListenerStats> listeners;  // TCP listeners open now
  uint64_t connections = 0;      // reached Full Operation
  uint64_t sctp_associations = 0;         // SCTP associations opened or accepted
  uint64_t sctp_associations_active = 0;  // association records held now
  uint64_t sctp_associations_refused = 0; // no free association record
  uint64_t sctp_initiates_refused = 0;    // Initiates answered with Reject (no listener/slot, garbage, timeout)
  uint64_t tcp_port_holds = 0;    // AppPortTable holds now: TCP listeners + connections
  uint64_t listens_reserved = 0;  // TCP listens refused: the port of a built-in service
  // QPs aborted because their application deregistered a memory region that
  // unacknowledged zero-copy FPDUs still read from (QpOptions::zero_copy_tx).
  uint64_t dereg_aborts = 0;
  // FPDUs of destroyed TCP QPs whose payload TCP read from registered
  // memory (zero_copy_tx), summed when each QP is destroyed.
  uint64_t zero_copy_fpdus = 0;
};

// STag lookups for the engines of one worker: a copy of the control
// thread's table entries for every registered region, indexed by STag
// index. Worker-only after construction.
class WireStagView final : public ddp::StagTable {
 public:
  explicit WireStagView(uint32_t capacity);
  const ddp::TaggedRegion* Find(uint32_t stag) const override;
  bool Insert(const ddp::TaggedRegion& r, uint8_t* mem, bool remote_invalidate);
  void Remove(uint32_t stag);
  ddp::StagStatus Invalidate(uint32_t stag, uint32_t pd, bool remote);
  MutableByteSpan Bytes(uint64_t handle);

 private:
  struct Slot {
    ddp::TaggedRegion region;
    uint8_t* mem = nullptr;
    bool used = false;
    bool remote_invalidate = true;
  };
  std::vector<Slot> slots_;
};

class WireEngine final : private engine::MemoryDomain {
 public:
  // Control path (any thread, before the worker starts polling): allocates
  // rings, tables and the event eventfd. Teardown order: SessionServer (it
  // destroys every wire QP through the engine), then the TcpStack, then the
  // engine.
  static absl::StatusOr<std::unique_ptr<WireEngine>> Create(const WireEngineOptions& options,
                                                            tcp::TcpStack& stack);
  ~WireEngine() override;

  // ---- worker thread (the stack's owner) ----
  // Commands, SQ/RQ consumption, engine Poll, completions to CQ rings,
  // flushes. Returns the amount of work done (0: idle).
  uint32_t Poll(uint64_t now_us);
  // Moves receive work requests from the applications' RQ rings into the
  // engines. The host calls it after taking a receive burst from the port
  // and before handing that burst to the stack: a Send that left the peer
  // after our application posted its receive then always finds the buffer
  // (RFC 5041 7.1: otherwise "no buffer available" terminates the stream).
  uint32_t PostReceives();

  // Blocking when idle (dataplane/worker.h), worker thread: announces that
  // the worker sleeps (consumer_waiting on every QP's SQ, so an application
  // that posts rings its session doorbell) and checks, after the fence, what
  // only a poll would notice; false, with nothing left announced, if work
  // waits: a command, SQ entries, completions a full CQ holds back, a scan
  // of pending connections. EndSleep takes the announcement back.
  bool PrepareToSleep();
  void EndSleep();
  // Start-up, before the worker polls: what wakes a blocked worker (called
  // on the control thread after every command and application doorbell).
  void SetWakeHook(void (*fn)(void*), void* ctx) {
    wake_fn_ = fn;
    wake_ctx_ = ctx;
  }

  // ---- control thread ----
  // False when the command ring is full (retry later). Wakes the worker.
  bool PushCommand(const WireCommand& cmd);
  // An application rang its session doorbell (it posted to an SQ while the
  // worker slept): wakes the worker.
  void WakeWorker() {
    if (wake_fn_ != nullptr) wake_fn_(wake_ctx_);
  }
  bool PopEvent(WireEvent* ev);
  // Before the control thread sleeps: true if events are already waiting.
  bool PrepareToWaitForEvents() { return events_.PrepareToWait(); }
  void CancelWaitForEvents() { events_.CancelWait(); }
  // Readable when events were published while the control thread slept.
  int event_fd() const { return event_fd_.get(); }

  const WireEngineOptions& options() const { return options_; }
  uint32_t local_ip() const { return options_.local_ip; }
  bool has_sctp() const { return options_.sctp != nullptr; }
  WireEngineStats stats() const;
  tcp::TcpStack& stack() { return stack_; }

  // engine::MemoryDomain for the engines of this worker.
  engine::MemoryDomain& memory() { return *this; }
  // SGE gather staging shared by every engine QP this engine runs
  // (engine::QpOptions::gather_staging): one buffer instead of one per QP.
  MutableByteSpan gather_staging() {
    return MutableByteSpan(gather_staging_.get(), engine::kGatherStagingSize);
  }

  struct Listener;
  struct Pending;
  struct SctpAssoc;
  struct SctpState;
  struct SctpListener;

 private:
  friend struct WireQpContext;
  friend struct Listener;
  friend struct Pending;
  friend struct SctpAssoc;
  friend struct SctpListener;
  WireEngine(const WireEngineOptions& options, tcp::TcpStack& stack);

  // engine::MemoryDomain.
  const ddp::StagTable& stags() const override { return view_; }
  MutableByteSpan Resolve(uint64_t handle) override { return view_.Bytes(handle); }
  ddp::StagStatus InvalidateRemote(uint32_t stag, uint32_t pd) override;

  bool Emit(const WireEvent& ev);
  bool HandleCommand(const WireCommand& cmd);  // false: retry (event ring full)
  void Ack(uint32_t seq, int status);
  // False when max_qps contexts are active already (nothing changed).
  bool Activate(WireQpContext* qp);
  void FailCommand(WireQpContext* qp, int status);  // kConnectFailed
  void Deactivate(WireQpContext* qp);
  void Release(WireQpContext* qp);  // stop every stack callback into it
  uint32_t PollQp(WireQpContext* qp);
  uint32_t FeedSq(WireQpContext* qp);
  uint32_t FeedRq(WireQpContext* qp);
  uint32_t MoveCompletions(WireQpContext* qp);
  void PublishWrites(WireQpContext* qp);
  uint32_t FlushRings(WireQpContext* qp);
  bool PushCqe(WireCq* cq, const Cqe& cqe);
  // The completion of a malformed SQE/RQE (LOC_QP_OP_ERR); false if `cq`
  // has no room (the entry stays in its ring for the next poll).
  bool PushMalformedCqe(WireQpContext* qp, WireCq* cq, uint64_t wr_id, WcOpcode opcode);
  Pending* FindPending(uint32_t request_id);
  // One more / one less AppPortTable hold of a local TCP port (counted in
  // tcp_port_holds). Without a table HoldPort returns true and does nothing.
  bool HoldPort(uint16_t port);
  void UnholdPort(uint16_t port);
  // The hold of a connection's port once its user lets go of it: dropped
  // now, or, while the stack keeps the connection in TIME-WAIT (an active
  // close), when the TIME-WAIT ends (ReapLingeringPorts). Until then the
  // old connection's late segments (a retransmitted FIN) still reach the
  // stack on worker 0 that answers them (RFC 9293 3.10.7.4), not another
  // worker's stack that would reset the peer.
  void UnholdPortAfter(tcp::ConnId conn, uint16_t port);
  void ReapLingeringPorts();

  // RDMA over SCTP (wire_sctp.cc; wire_sctp_none.cc without usrsctp).
  absl::Status CreateSctp();
  void HandleSctpCommand(const WireCommand& cmd);  // kListen .. kDropRequest with kSctp
  void ReleaseSctp(WireQpContext* qp);              // kDestroyQp of an SCTP QP
  bool DropSctpRequest(uint32_t request_id);        // false: no such request
  bool UnlistenSctp(uint32_t listener_id);          // false: not an SCTP listener
  void SctpStats(WireEngineStats* out) const;       // adds the SCTP counters
  uint32_t PollSctp();
  void AdoptSctp(std::unique_ptr<sctp::SctpAssociation> association, uint32_t listener_id);
  struct SctpStateDeleter {
    void operator()(SctpState* s) const;
  };

  WireEngineOptions options_;
  tcp::TcpStack& stack_;
  WireStagView view_;
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, FreeDeleter> command_mem_;
  std::unique_ptr<void, FreeDeleter> event_mem_;
  void (*wake_fn_)(void*) = nullptr;
  void* wake_ctx_ = nullptr;
  SpscRing<WireCommand> commands_;  // control -> worker
  SpscRing<WireCommand> commands_producer_;
  SpscRing<WireEvent> events_;      // worker -> control (consumer view)
  SpscRing<WireEvent> events_producer_;
  UniqueFd event_fd_;
  std::vector<WireQpContext*> active_;  // capacity max_qps, reserved
  std::unique_ptr<Listener[]> listeners_;
  std::unique_ptr<Pending[]> pending_;
  std::unique_ptr<uint8_t[]> gather_staging_;  // engine::kGatherStagingSize bytes
  std::unique_ptr<SctpState, SctpStateDeleter> sctp_;
  std::vector<WireCq*> touched_;  // capacity reserved
  struct LingeringPort {
    tcp::ConnId conn;
    uint16_t port;
  };
  // Ports held for connections in TIME-WAIT (UnholdPortAfter); capacity
  // reserved for every connection the stack can keep in TIME-WAIT, every QP
  // and every passive connection.
  std::vector<LingeringPort> lingering_;
  uint64_t now_us_ = 0;
  uint32_t next_request_id_ = 1;
  bool events_touched_ = false;
  // Poll scans the passive connections (max_pending slots) only when one
  // was dropped or detached since the last scan, or kPendingScanUs passed
  // (their timeouts): not on every poll of a busy worker.
  bool pending_dirty_ = false;
  uint64_t pending_scan_us_ = 0;
  engine::MpaGateCounters gate_totals_;  // gates of closed listeners
  // Worker: publishes every listener's gate counters (and their sum) into
  // the atomics stats() reads; the gates themselves are the worker's alone.
  void PublishListenerStats();
  uint64_t linger_scan_us_ = 0;  // lingering_ is looked at as often

  struct Counters;
  std::unique_ptr<Counters> counters_;
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_WIRE_ENGINE_H_
