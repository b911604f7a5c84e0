// iWARP services on a worker's TcpStack (config `services:` types
// iwarp_responder and iwarp_client, parameters in `iwarp:`): engine::Qp
// objects hosted on the worker lcore, so two daemons move RDMA Send / Write /
// Read traffic without an application.
//
// iwarp_responder (rping-style): listens on `port`; each accepted connection
// takes an idle QP from a pool of iwarp.qps_per_service QPs created at
// start-up. The QP negotiates MPA (RFC 5044 / RFC 6581; C and M as the
// service's crc / markers and the peer's request), advertises its scratch
// region in the MPA Reply private data (layout below), keeps
// iwarp.recv_buffers receives of iwarp.recv_buffer_bytes posted and answers
// every Send it receives with a Send of the same bytes. The peer may RDMA
// Write into and RDMA Read from the scratch region (RFC 5040 4.3); the engine
// serves Read Requests itself within IRD.
//
// Responder private data (MPA Reply, RFC 5044 7.1.1), 40 bytes, big-endian:
//
//   offset size field
//        0    4 magic               0x49575250 ("IWRP")
//        4    1 version             1
//        5    1 flags               0 (reserved)
//        6    2 reserved            0
//        8    4 scratch STag        remote read + remote write
//       12    4 reserved            0
//       16    8 scratch TO          tagged offset of the region's first byte
//       24    8 scratch length      bytes (iwarp.scratch_bytes)
//       32    4 recv buffer bytes   largest Send the responder echoes
//       36    4 recv buffers        Sends it holds posted at once
//
// A QP holds 2 x recv_buffers receive buffers: recv_buffers posted, the
// others spare, taking a completed buffer's place while its echo is in flight.
// A client keeps at most recv_buffers Sends unanswered.
//
// Each pool QP has its own scratch region and receive buffers, registered once
// at start-up in the service's FixedStagTable (so an STag stays the same for
// every connection that QP serves; the peer may not invalidate it). Each pool
// QP is its own protection domain: a connection's STag is refused on every
// other connection (RFC 5041 7.1, RFC 5042 5.1). The region keeps its bytes
// across connections of the same QP: do not put anything private there.
//
// iwarp_fpdu_test (test configurations only: the config must say
// test_mode: true): on worker 0, one QP whose TCP connection to
// remote:remote_port from `port` exists from start-up, ESTABLISHED with the
// ISNs local_isn / remote_isn and no handshake, in Full Operation with the
// service's crc and markers in both directions and no MPA exchange
// (TcpStack::AdoptEstablished, Qp::AttachEstablished). Its one region of
// region_bytes (remote read and write, TO 0x50000000, STag shown by
// iwarpctl services as test_stag) has kFpduTestGuardBytes on each side,
// outside it, filled with a known byte; guard_violations counts the ones that
// changed. The receive sequence returns to remote_isn + 1 after loop_bytes,
// so a packet generator replaying one pass of FPDUs in a loop drives
// placement for as long as it runs. A QP that sent or received a Terminate
// (or whose connection ended) is reset and replaced with the same numbers at
// once (test_qps_started counts them all).
//
// iwarp_client: on worker 0 only, like the TCP source. After start_delay_ms
// it connects to remote:remote_port, reads the private data above and runs
// `count` messages of `message_bytes` with `queue_depth` outstanding:
//   write: RDMA Write of the pattern into the scratch region, then (verify)
//          an RDMA Read of the same bytes back, compared with the pattern.
//   read:  the scratch slots are first written with a known pattern
//          (not counted), then each message is an RDMA Read compared with it.
//   send:  a Send; the responder's echo lands in a posted receive and is
//          compared with what was sent.
//   mixed: message i is write, read, send for i mod 3.
// Message i of slot s (s = i mod queue_depth) uses scratch bytes
// [s * message_bytes, (s + 1) * message_bytes). Its data is the pattern of
// dataplane/services/tcp_services.h (byte = offset mod 251) starting at
// offset i * message_bytes (read: at the offset last written into the slot).
// The SHA-256 of a run covers the bytes that came back (read data and
// echoes, in message order); without verify, a write run hashes what it sent.
//
// transport: sctp (RDMA over SCTP, RFC 5043; both services on worker 0,
// which hosts the process's SctpEndpoint):
//   - iwarp_responder listens on SCTP `port`. Each accepted association gets
//     an engine::SctpStreams and, from the pool of iwarp.qps_per_service QPs,
//     one passive QP on each of its DDP streams 0, 1, ... while pool slots
//     are free, created before the peer can initiate (RFC 5043 6.2: an
//     Initiate on a stream without a QP is rejected and counted as
//     initiates_refused). The QPs are the TCP responder's (same private
//     data, scratch region, echo); a QP whose session ended is replaced on
//     the same stream while the association lives; when the association
//     ends its slots return to the pool.
//   - iwarp_client: every client naming the same remote and remote_port
//     shares one association (SctpServiceHost); each runs its workload on
//     its own DDP stream (`stream`, or the next one no earlier client took).
//     The session Initiate / Accept replace MPA; the run ends with the
//     session Terminate (RFC 5043 6.2); when every client of an association
//     finished and every stream of it is idle, the association is shut down
//     gracefully. A session whose Terminate exchange is not over 2 s after
//     its run is counted (session_end_timeouts) but not cut off: the
//     SHUTDOWN waits up to 10 s more for it (then shutdowns_forced).
//
// Threading and allocation: everything belongs to the worker lcore that owns
// the stack. All QPs, regions and tables are allocated by Create/Start. The
// one exception is QP reuse: engine::Qp has no reset, so a responder QP whose
// connection ended is replaced by a new one (control-path allocation at
// connection teardown, counted as qps_recycled), outside stack callbacks.
#ifndef IWARPD_DATAPLANE_SERVICES_IWARP_SERVICES_H_
#define IWARPD_DATAPLANE_SERVICES_IWARP_SERVICES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "config/config.h"
#include "dataplane/services/tcp_services.h"
#include "ddp/rdmap.h"
#include "ddp/stag_table.h"
#include "iwarp/qp.h"
#include "iwarp/sctp_llp.h"
#include "sctp/endpoint.h"

namespace iwarp::dataplane {

// iwarp_fpdu_test: guard bytes on each side of its region.
inline constexpr uint64_t kFpduTestGuardBytes = 4096;

// The responder's MPA private data (layout in the header comment).
inline constexpr uint32_t kResponderPdMagic = 0x49575250;  // "IWRP"
inline constexpr uint8_t kResponderPdVersion = 1;
inline constexpr size_t kResponderPdSize = 40;

struct ResponderPrivateData {
  uint32_t stag = 0;
  uint64_t to = 0;
  uint64_t length = 0;
  uint32_t recv_buffer_bytes = 0;
  uint32_t recv_buffers = 0;
};
// Writes the 40-byte layout; false if `out` is too short.
bool EncodeResponderPd(const ResponderPrivateData& pd, MutableByteSpan out);
// Parses it; false for a short buffer, a wrong magic or version.
bool DecodeResponderPd(ByteSpan in, ResponderPrivateData* out);

// X(field) counters of an iWARP service (summed over its QPs; finished QPs
// included).
#define IWARP_SERVICE_COUNTERS(X)                                              \
  X(connect_requests)    /* valid MPA Requests (SCTP: Initiates) received (responder) */ \
  X(replies_sent)        /* responder: Requests accepted (MPA Reply, SCTP Accept) */ \
  X(refused_no_qp)       /* responder: valid Request, no QP free (Reject Reply) */ \
  X(refused_private_data) /* responder: private data over the limit (Reject Reply) */ \
  X(refused_per_source)  /* responder: the source's waiting connections at the limit (RST) */ \
  X(pending_evicted)     /* responder: waited longest for its Request, reset for a newer one */ \
  X(request_timeouts)    /* responder: no complete MPA Request in time (RST) */ \
  X(bad_requests)        /* responder: not a valid MPA Request (RST) */        \
  X(rejects_sent)        /* responder: MPA Replies with the Reject bit */      \
  X(established)         /* QPs that reached Full Operation */                 \
  X(setup_failed)        /* a bound QP's setup failed (RTR timeout, reject, bad frame) */ \
  X(qps_recycled)        /* finished responder QPs replaced by a fresh one */  \
  X(qp_recycle_failed)   /* replacement could not be created */                \
  X(sends_echoed)        /* responder: Sends answered with their bytes */      \
  X(echo_post_failed)    /* responder: echo Send or re-posted receive refused */ \
  X(recv_starved)        /* responder: no spare receive buffer to post */      \
  X(completion_errors)   /* work completions with a status other than success */ \
  X(messages_done)       /* client: messages completed (and verified) */      \
  X(verify_failures)     /* client: data that came back differed */            \
  X(bad_private_data)    /* client: the Reply's private data was unusable */   \
  X(fpdus_in)                                                                  \
  X(fpdus_out)                                                                 \
  X(bytes_placed)                                                              \
  X(bytes_sent)                                                                \
  X(read_responses_sent)                                                       \
  X(crc_errors)                                                                \
  X(marker_errors)                                                             \
  X(terminates_sent)                                                           \
  X(terminates_received)                                                       \
  X(initiates_refused)   /* sctp responder: Initiates on a stream without a QP */ \
  X(associations)        /* sctp: associations accepted (responder) or opened */ \
  X(session_end_timeouts) /* sctp client: session Terminate exchange not over 2 s after the run */ \
  X(shutdowns_forced)    /* sctp client: association shut down with a stream still busy 10 s on */ \
  X(test_qps_started)    /* iwarp_fpdu_test: connections established from configuration */ \
  X(guard_violations)    /* iwarp_fpdu_test: bytes next to the region found changed */

struct IwarpServiceCounters {
#define IWARP_SVC_FIELD(f) uint64_t f = 0;
  IWARP_SERVICE_COUNTERS(IWARP_SVC_FIELD)
#undef IWARP_SVC_FIELD
};

// A client run's result (valid once `finished`).
struct IwarpRunResult {
  bool started = false;
  bool finished = false;
  bool ok = false;                 // every message completed and verified
  uint64_t messages = 0;
  uint64_t bytes = 0;              // payload bytes of the completed messages
  uint64_t elapsed_us = 0;         // Full Operation to the last message
  Sha256::Digest sha256{};
  bool has_sha256 = false;         // the service hashed its run (sha256: true)
  engine::ConnectError connect_error = engine::ConnectError::kNone;
};

// One live QP as telemetry shows it.
struct IwarpQpInfo {
  int16_t service = -1;  // index into config services (set by the worker)
  engine::QpState state = engine::QpState::kIdle;
  engine::QpEnd end = engine::QpEnd::kNone;  // why it ended (CLOSED or ERROR)
  tcp::FourTuple tuple;
  engine::Negotiated negotiated;
  engine::QpStats stats;
  bool has_term_sent = false;
  bool has_term_received = false;
  rdmap::TerminateCode term_sent;
  rdmap::TerminateCode term_received;
};

// Daemon-owned memory behind a MemoryDomain: regions allocated at start-up
// and a FixedStagTable. Region handles are indices into the region list.
class DaemonMemory final : public engine::MemoryDomain {
 public:
  explicit DaemonMemory(uint32_t stag_capacity) : table_(stag_capacity) {}

  const ddp::StagTable& stags() const override { return table_; }
  MutableByteSpan Resolve(uint64_t handle) override;
  ddp::StagStatus InvalidateRemote(uint32_t stag, uint32_t pd) override {
    return table_.Invalidate(stag, pd, true);
  }

  // Control path: allocates `length` bytes (not zeroed: callers fill what a
  // peer may read) at TO `base_to` and registers them with `access` in
  // protection domain `pd` (remote invalidation refused). An STag is valid
  // only on QPs of the same pd (RFC 5042 5.1).
  // `guard_bytes` > 0: that many bytes are allocated on each side of the
  // region, outside it (Guards), so a test can see a write past its ends.
  absl::StatusOr<uint32_t> Register(uint64_t length, uint8_t access, uint64_t base_to,
                                    uint32_t pd = 0, uint64_t guard_bytes = 0);
  // The bytes registered under `stag` (empty if unknown).
  MutableByteSpan Bytes(uint32_t stag);
  // The guard bytes before and after the region of `stag` (empty if none).
  std::pair<MutableByteSpan, MutableByteSpan> Guards(uint32_t stag);

 private:
  ddp::FixedStagTable table_;
  std::vector<std::unique_ptr<uint8_t[]>> regions_;
  std::vector<uint64_t> lengths_;
  std::vector<uint64_t> guards_;
};

class SharedSctpAssociation;

// Worker 0's SCTP side of the services: the endpoint and the associations
// iwarp_clients share (one per remote address and SCTP port). Owning lcore
// only; destroyed after the services and before the endpoint.
class SctpServiceHost {
 public:
  SctpServiceHost(sctp::SctpEndpoint* endpoint, uint16_t streams);
  ~SctpServiceHost();
  sctp::SctpEndpoint& endpoint() { return *endpoint_; }
  uint16_t streams() const { return streams_; }
  // Control path: the shared association to remote:port (made on first use;
  // it connects when its first client starts).
  SharedSctpAssociation* Shared(uint32_t remote, uint16_t port);

  // Failures of the clients' session teardown, summed over every shared
  // association (the worker mirrors them into its LcoreStats so the control
  // thread can log them; see IWARP_SERVICE_COUNTERS for their meaning).
  void CountSessionEndTimeout() { ++session_end_timeouts_; }
  void CountForcedShutdown() { ++shutdowns_forced_; }
  uint64_t session_end_timeouts() const { return session_end_timeouts_; }
  uint64_t shutdowns_forced() const { return shutdowns_forced_; }

 private:
  sctp::SctpEndpoint* endpoint_;
  uint16_t streams_;
  std::vector<std::unique_ptr<SharedSctpAssociation>> shared_;
  uint64_t session_end_timeouts_ = 0;
  uint64_t shutdowns_forced_ = 0;
};

// Engine options from the config (the service's crc / markers).
engine::QpOptions IwarpQpOptions(const config::IwarpConfig& iw, const config::ServiceConfig& svc);

// Base of both services: a TcpService (so /iwarpd/services and the
// connection table show it) whose TCP user is the engine.
class IwarpService : public TcpService {
 public:
  // Control path: an iwarp_responder or iwarp_client service.
  static absl::StatusOr<std::unique_ptr<IwarpService>> Create(
      const config::ServiceConfig& cfg, const config::IwarpConfig& iw, tcp::TcpStack* stack,
      const ServiceClock* clock, uint32_t max_connections, uint32_t local_ip,
      SctpServiceHost* sctp = nullptr);

  // The service's counters plus the engine counters of every QP, finished
  // or live. Owning lcore only (reads the QPs); telemetry takes it through
  // the worker's snapshot.
  IwarpServiceCounters iwarp_counters() const;
  // The last Terminate any of the service's QPs sent / received.
  const std::optional<rdmap::TerminateCode>& last_terminate_sent() const { return term_sent_; }
  const std::optional<rdmap::TerminateCode>& last_terminate_received() const {
    return term_received_;
  }
  // Client only (responder: default).
  virtual IwarpRunResult run_result() const { return {}; }
  // iwarp_fpdu_test only: the region its FPDUs write into.
  struct TestRegion {
    bool present = false;
    uint32_t stag = 0;
    uint64_t to = 0;
    uint64_t length = 0;
  };
  virtual TestRegion test_region() const { return {}; }
  // Whether Poll has work that must not wait for the end of the receive
  // burst (iwarp_fpdu_test: a QP to replace before the generator's next
  // pass arrives); the worker then polls the service right after the
  // segment that caused it.
  virtual bool WantsPromptPoll() const { return false; }
  // Fills `out` with the service's QPs that have a connection (or had one
  // and still hold its state); returns how many.
  virtual size_t ListQps(std::span<IwarpQpInfo> out) const = 0;
  // QPs the service owns at most (for telemetry buffers).
  virtual size_t max_qps() const = 0;

  // TcpUser: the engine is the user of every connection; nothing arrives here.
  size_t OnData(tcp::ConnId, uint64_t, ByteSpan data) override { return data.size(); }

 protected:
  using TcpService::TcpService;
  bool Complete(const Conn&, tcp::CloseReason) const override { return false; }
  // Adds a finished QP's engine counters to `finished_`.
  void AccountFinished(const engine::Qp& qp);
  // Marks the connection-table entry Open() made for `id` closed (the engine
  // owned the connection, so TcpService::OnClosed never saw it end); false
  // if it was not open.
  bool CloseEntry(tcp::ConnId id);
  // Adds the engine counters of the QPs the service still holds.
  virtual void AddLiveQpStats(IwarpServiceCounters* out) const = 0;
  // `tuple`: the connection's addresses (kept after the connection is gone).
  static void FillInfo(const engine::Qp& qp, const tcp::FourTuple& tuple, IwarpQpInfo* out);

  void NoteTerminate(const rdmap::TerminateCode& code, bool sent) {
    (sent ? term_sent_ : term_received_) = code;
  }

  std::optional<rdmap::TerminateCode> term_sent_;
  std::optional<rdmap::TerminateCode> term_received_;
  IwarpServiceCounters finished_;  // service counters and finished QPs' engine counters
};

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_SERVICES_IWARP_SERVICES_H_
