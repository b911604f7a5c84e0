// iwarp: the per-connection iWARP engine. One Qp joins a tcp::TcpStack
// connection, the MPA layer (RFC 5044, RFC 6581) and DDP/RDMAP (RFC 5041,
// RFC 5040): MPA connection setup, FPDU framing with CRC and Markers, DDP
// placement and RDMAP Send / Write / Read / Terminate.
//
// Layering: no DPDK, no sessions, no shared memory. The engine reaches
// application memory only through MemoryDomain (STag table lookup, region
// handle -> bytes in this process, remote invalidation), which the session
// server implements for shared-memory regions and the tests implement over
// plain vectors and a FixedStagTable. Work requests go in through PostSend /
// PostRecv; completions come out through PollCompletions; connection events
// go to a QpObserver.
//
// Threading: a Qp belongs to the core that owns its TcpStack. No method may be
// called from another thread. The owner calls Poll(now) every loop iteration
// (MPA timeouts, acknowledgement-driven completions, transmit resumption).
//
// Interoperability decisions (INTEROP.md; tests in qp_test.cc pin them):
//  - MPA: Rev 1 and 2 accepted, the Reply uses the initiator's revision; C is
//    honoured from either side; Markers are sent when the peer's M asks and
//    requested only when MpaParams::want_markers is set (siw rejects M=1).
//  - RFC 6581: the responder echoes A, picks one offered RTR type (Write,
//    then Read, then Send) and answers "none supported" with a Reject Reply
//    (ConnectError::kNoMatchingRtr); the initiator answers a Reply without a
//    usable RTR type, or an ORD above our IRD, with an LLP Terminate (0x07,
//    0x06). Our ORD is clamped to the peer's IRD (siw behaviour). RTR frames
//    use STag 1, TO 0, length 0.
//  - Private data: 256 bytes accepted by default (max_private_data).
//  - Inbound Read Requests beyond our IRD find no Read Request "buffer" on
//    QN 1 and are answered with DDP untagged "no buffer" (RFC 5041 7.2). A
//    Request holds its IRD slot until the peer acknowledged the last byte of
//    its Response (over TCP; over an LLP until the LLP took it), so a peer
//    that keeps more than our IRD outstanding is caught even when we answer
//    faster than it asks.
//  - An FPDU whose ULPDU_Length exceeds what we accept is answered with a
//    DDP Local Catastrophic Terminate (1/0/0): RFC 5044 has no code for it
//    and its CRC was never checked (not a CRC error).
//  - Private data limits (MpaParams::max_private_data) count the ULP's
//    bytes, not the RFC 6581 IRD/ORD block; a Request over the limit gets a
//    Reject Reply.
//  - The iwpmd port mapper (UDP 3935) is not the engine's business: it only
//    ever sees TCP; the data plane decides whether to answer mapper queries.
//  - Transmit copies each FPDU once (CRC computed during the copy) into the
//    TCP send buffer (ReserveRecord/SendRecord), or, with
//    QpOptions::zero_copy_tx and no Markers, leaves a payload from registered
//    memory in place: only its header and PAD + CRC enter the send buffer
//    (TcpStack::SendRecordZeroCopy) and TCP reads the payload until acked.
//  - Work requests with several SGEs produce the same DDP segments as one
//    SGE of the summed length (segments keep the full MULPDU). A segment
//    whose payload straddles SGEs is gathered into a per-QP staging buffer
//    first (one extra copy of that segment only); other segments are encoded
//    straight from the SGE. Over an LLP whose MULPDU exceeds
//    mpa::kMaxUlpduLength, multi-SGE messages use segments of at most that.
//
// LLPs: DDP/RDMAP (segmentation to the MULPDU, placement, queues, RDMAP
// operations, Terminate, completions) runs on an internal transmit LLP
// interface with two implementations: MPA over TcpStack (Create: FPDUs with
// CRC and Markers, MPA setup with RTR and IRD/ORD, completion on TCP
// acknowledgement) and a message-oriented SegmentLlp (CreateOnLlp; RFC 5043
// DDP streams over SCTP through iwarp/sctp_llp.h: one DDP segment per
// message, session setup with the IRD/ORD block, completion when the LLP took
// the last segment). Both deliver whole DDP segments to the same receive
// path.
//
// Allocation: Create() allocates every queue, the transmit scratch and,
// unless QpOptions gives shared staging or max_send_sge is 1, the SGE gather
// buffer (kGatherStagingSize bytes); the FPDU receive decoder's
// reassembly buffer is allocated when Full Operation starts (connection
// setup, control path). After that nothing allocates.
#ifndef IWARPD_IWARP_QP_H_
#define IWARPD_IWARP_QP_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/bytes.h"
#include "common/enum_names.h"
#include "common/seq.h"
#include "common/verbs.h"
#include "ddp/placement.h"
#include "ddp/rdmap.h"
#include "ddp/segmenter.h"
#include "ddp/stag_table.h"
#include "iwarp/mpa_gate.h"
#include "mpa/mpa_decoder.h"
#include "mpa/mpa_error.h"
#include "mpa/mpa_fpdu.h"
#include "mpa/mpa_frame.h"
#include "tcp_lite/tcp_stack.h"

namespace iwarp::engine {

// ---------------------------------------------------------------- memory

// Application memory as the engine sees it. Implemented by the session server
// (shared-memory regions) and by tests (vectors + FixedStagTable). Called on
// the Qp's core; must not allocate or block.
class MemoryDomain {
 public:
  virtual ~MemoryDomain() = default;
  // The STag table the RFC 5041 7.1 checks and local SGE checks consult.
  virtual const ddp::StagTable& stags() const = 0;
  // The bytes of the region whose TaggedRegion::handle is `handle`: exactly
  // region.length bytes, byte i holding TO base_to + i. Empty if unknown.
  virtual MutableByteSpan Resolve(uint64_t handle) = 0;
  // RFC 5040 6.3.1: Send with Invalidate from the peer asks to invalidate
  // `stag` of protection domain `pd`.
  virtual ddp::StagStatus InvalidateRemote(uint32_t stag, uint32_t pd) = 0;
};

// ---------------------------------------------------------------- work requests

// Values equal appif/shm_layout.h WrOpcode / WcOpcode / WcStatus so the
// session server maps them one to one.
// Work request opcodes, completion opcodes and statuses: common/verbs.h
// (one declaration shared with the application rings and libiwarp).
using verbs::WcOpcode;
using verbs::WcStatus;
using verbs::WcStatusName;
using verbs::WrOpcode;

// One local buffer: `length` bytes at TO `to` of the region registered under
// `stag` (the verbs lkey/addr/length triple).
struct LocalSge {
  uint32_t stag = 0;
  uint64_t to = 0;
  uint32_t length = 0;
};

// Most SGEs one work request carries (equals appif/shm_layout.h kMaxSge and
// IWARP_MAX_SGE).
inline constexpr uint32_t kMaxSge = 4;

// A work request's local buffers: the data is the concatenation of
// sge[0 .. num_sge-1] in order. Fixed size, no allocation. SGEs of length 0
// name no memory and are never looked up. Each non-empty SGE is checked
// (STag, protection domain, access, bounds) before it is used; a bad one
// completes the work request with kLocalProtection.
struct SgeList {
  LocalSge sge[kMaxSge] = {};
  uint32_t num_sge = 0;  // <= kMaxSge, else the work request is refused (kInvalidWr)

  constexpr SgeList() = default;
  // One buffer, the common case (keeps `SendWr{id, op, LocalSge{...}}`):
  // implicit on purpose.
  constexpr SgeList(const LocalSge& one) : sge{one}, num_sge(1) {}  // NOLINT

  // Appends `s`; false (list unchanged) when full.
  constexpr bool Add(const LocalSge& s) {
    if (num_sge >= kMaxSge) return false;
    sge[num_sge++] = s;
    return true;
  }
  // Sum of the lengths (64 bits: kMaxSge lengths of up to 2^32-1 each).
  constexpr uint64_t TotalLength() const {
    uint64_t n = 0;
    for (uint32_t i = 0; i < num_sge && i < kMaxSge; ++i) n += sge[i].length;
    return n;
  }
  constexpr uint32_t NonEmpty() const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < num_sge && i < kMaxSge; ++i) n += sge[i].length != 0 ? 1u : 0u;
    return n;
  }
};

struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  // Send/Write: the source, gathered in SGE order (the message length is the
  // sum; more than 2^32-1 bytes completes with kLocalLength). Read: the sink,
  // which needs remote write (RFC 5040 4.3) and is ONE buffer: RFC 5040 4.4
  // carries a single sink STag/TO per Read Request. Non-empty sink SGEs that
  // form one contiguous range of one STag are merged; any other Read with
  // more than one non-empty SGE is refused by PostSend (kInvalidWr).
  SgeList local;
  uint32_t remote_stag = 0;  // Write: sink STag. Read: source STag.
  uint64_t remote_to = 0;
  uint32_t invalidate_stag = 0;  // Send with Invalidate
};

struct RecvWr {
  uint64_t wr_id = 0;
  // Needs local write. The posted buffer is the concatenation of the SGEs:
  // untagged placement at message offset MO lands in the SGE(s) holding that
  // offset, and a Send longer than the sum is answered with the DDP untagged
  // "message too long" error (RFC 5041 7.2).
  SgeList local;
};

inline constexpr uint8_t kWcWithInvalidate = 1u << 0;
inline constexpr uint8_t kWcSolicited = 1u << 1;

struct Completion {
  uint64_t wr_id = 0;
  uint32_t byte_len = 0;
  uint32_t invalidated_stag = 0;
  WcOpcode opcode = WcOpcode::kSend;
  WcStatus status = WcStatus::kSuccess;
  uint8_t flags = 0;  // kWc*
  rdmap::TerminateCode term;  // the Terminate that failed the operation, if any
};

enum class PostStatus : uint8_t {
  kOk,
  kQueueFull,
  kNotConnected,  // QP is not in (or past) RTS; nothing queued
  kInvalidWr,     // more than kMaxSge SGEs, or an RDMA Read whose non-empty sink
                  // SGEs are not one contiguous range (RFC 5040 4.4); nothing queued
};

// ---------------------------------------------------------------- connection

// RFC 6581 RTR types, as a bit set (offered by the initiator, supported by
// the responder).
inline constexpr uint8_t kRtrSend = 1u << 0;
inline constexpr uint8_t kRtrWrite = 1u << 1;
inline constexpr uint8_t kRtrRead = 1u << 2;

struct MpaParams {
  uint8_t revision = mpa::kRevision2;  // initiator: revision sent
  bool enhanced = true;      // RFC 6581 IRD/ORD block (Rev 2 only)
  bool crc = true;           // ask for CRC (C); a peer's C=1 is always honoured
  bool want_markers = false; // M: ask the peer to send Markers to us
  uint16_t ird = 32;         // inbound Read Requests we serve at once
  uint16_t ord = 32;         // outbound Read Requests we issue at once
  bool peer_to_peer = true;  // A
  uint8_t rtr_types = kRtrWrite | kRtrRead;
  // Private data accepted from the peer at most (<= 512, RFC 5044 7.1.1).
  uint32_t max_private_data = 256;
  uint64_t reply_timeout_us = 10'000'000;    // initiator waits for the Reply
  uint64_t request_timeout_us = 5'000'000;   // responder waits for the Request
  uint64_t rtr_timeout_us = 10'000'000;      // responder waits for the RTR
};

// Staging for one DDP segment payload that straddles SGEs of a multi-SGE
// Send or Write (the largest payload MPA carries; multi-SGE messages over an
// LLP with a larger MULPDU are segmented to this).
inline constexpr size_t kGatherStagingSize = mpa::kMaxUlpduLength;

struct QpOptions {
  MpaParams mpa;
  uint32_t pd = 0;
  uint32_t stream_id = 1;   // RFC 5041 8.2 stream association
  uint32_t sq_depth = 128;  // send work requests outstanding at most
  uint32_t rq_depth = 128;  // posted receives at most
  uint32_t cq_depth = 512;  // completions not yet polled at most
  // Most SGEs a Send/Write/Read may carry, 1..kMaxSge (verbs' max_send_sge);
  // a work request with more is refused (kInvalidWr). Above 1, a segment
  // that straddles SGEs is gathered into staging of kGatherStagingSize
  // bytes: `gather_staging` when given, else a buffer Create() allocates.
  uint32_t max_send_sge = kMaxSge;
  // Staging the QPs of one thread may share: it holds a gathered segment
  // only while that segment is encoded (copied into the LLP), never across
  // calls. At least kGatherStagingSize bytes; must outlive the QPs.
  MutableByteSpan gather_staging;
  // MPA over TCP without Markers: a DDP segment whose payload lies in
  // registered memory (a Send's or Write's SGE, a Read Response's source)
  // leaves without being copied into the TCP send buffer: the send buffer
  // holds the FPDU's header and its PAD and CRC, and the payload is read
  // from the region when TCP sends or retransmits it, until acknowledged
  // (TcpStack::SendRecordZeroCopy). The memory owner must not take such a
  // region away while SendsFrom() reports it (abort the QP first). Segments
  // gathered from several SGEs, Terminates, Read Requests and every FPDU with
  // Markers are copied as without this option. Needs max_zero_copy_sends of
  // the TcpStack; when those are outstanding, segments are copied.
  bool zero_copy_tx = false;
};

// X(enumerator, "name")
#define IWARP_QP_STATES(X)                                                                 \
  X(kIdle, "IDLE")                                                                         \
  X(kTcpConnecting, "TCP_CONNECTING")  /* initiator: SYN sent */                           \
  X(kAwaitRequest, "AWAIT_REQUEST")  /* responder: TCP up, waiting for the MPA Request */  \
  X(kAwaitReply, "AWAIT_REPLY")  /* initiator: Request sent */                             \
  X(kAwaitRtr, "AWAIT_RTR")  /* responder: Reply sent, waiting for the first FPDU / RTR */ \
  X(kRts, "RTS")  /* Full Operation */                                                     \
  X(kClosing, "CLOSING")  /* graceful close asked, sending what is queued */               \
  X(kTerminating, "TERMINATING")  /* a Terminate was sent or received */                   \
  X(kError, "ERROR")  /* connection gone or failed; everything flushed */                  \
  /* Graceful close completed (RFC 5040 / RFC 5041 6.2: the stream ended in */             \
  /* order, both ways, after our send queue drained; no Terminate, no LLP */               \
  /* error). Work still outstanding at the close was flushed, as in kError. */             \
  /* Terminal like kError, not kIdle: the engine keeps its stream state */                 \
  /* (MSNs, sequence numbers, the decoder) and cannot connect again; owners */             \
  /* replace the QP as they do after an error. */                                          \
  X(kClosed, "CLOSED")
enum class QpState : uint8_t { IWARP_QP_STATES(IWARP_ENUMERATOR) };
std::string_view QpStateName(QpState s);
// Whether `s` is a terminal state (kClosed or kError): nothing more is sent
// or received, every work request was completed or flushed.
constexpr bool QpEnded(QpState s) { return s == QpState::kClosed || s == QpState::kError; }

// Why a QP ended (Qp::end()): the first cause seen.
// X(enumerator, "name")
#define IWARP_QP_ENDS(X)                                                                       \
  X(kNone, "-")  /* still open (or never connected) */                                         \
  X(kClosed, "closed")  /* graceful close, no error (state kClosed) */                         \
  X(kSetupFailed, "setup_failed")  /* connection setup failed: Qp::connect_error() says why */ \
  X(kTerminate, "terminate")  /* a Terminate was sent or received (Qp::terminate_*()) */       \
  X(kReset, "reset")  /* TCP RST from the peer */                                              \
  X(kTimeout, "timeout")  /* TCP retransmission or keepalive limit */                          \
  X(kAborted, "aborted")  /* Abort() (TCP RST sent; over an LLP, a session end without draining the send queue) */ \
  X(kLlpFailed, "llp_failed")  /* the LLP session or association ended in error */
enum class QpEnd : uint8_t { IWARP_QP_ENDS(IWARP_ENUMERATOR) };
std::string_view QpEndName(QpEnd e);

// How an LLP session ended (Qp::OnLlpEnded).
enum class LlpEnd : uint8_t {
  kOrderly,  // in order (RFC 5043 6.2): our session Terminate answered, or the peer's received
  kFailed,   // protocol error, refused, or the association went down
};

// X(enumerator, "name")
#define IWARP_CONNECT_ERRORS(X)                                                      \
  X(kNone, "none")                                                                   \
  X(kTcpFailed, "tcp_failed")  /* TCP refused, reset or timed out */                 \
  X(kTimeout, "timeout")  /* MPA Request/Reply/RTR did not come in time */           \
  X(kRejected, "rejected")  /* peer answered with R=1 */                             \
  X(kRejectedLocally, "rejected_locally")  /* our application refused the Request */ \
  X(kInvalidStartupFrame, "invalid_startup_frame")  /* RFC 5044 8 code 4 (bad key, revision, PD too long, extra bytes) */ \
  X(kNoMatchingRtr, "no_matching_rtr")  /* RFC 6581 */                               \
  X(kInsufficientIrd, "insufficient_ird")  /* RFC 6581 */
enum class ConnectError : uint8_t { IWARP_CONNECT_ERRORS(IWARP_ENUMERATOR) };
std::string_view ConnectErrorName(ConnectError e);

struct AcceptDecision {
  bool accept = true;
  ByteSpan private_data;  // copied before the call returns
};

// The negotiated result of MPA setup.
struct Negotiated {
  uint8_t revision = 0;
  bool crc = false;
  bool tx_markers = false;  // we insert Markers (the peer asked)
  bool rx_markers = false;  // the peer inserts Markers (we asked)
  bool enhanced = false;
  bool peer_to_peer = false;
  uint8_t rtr = 0;          // the one RTR type in use (kRtr*), 0 for none
  uint16_t ird = 0;         // inbound Reads we accept at once
  uint16_t ord = 0;         // outbound Reads we issue at once
};

class Qp;

// ---------------------------------------------------------------- LLP

// A message-oriented Lower Layer Protocol carrying one DDP stream, each DDP
// segment as one message (RFC 5043 over SCTP: no MPA framing, no CRC, no
// Markers; the LLP's own checksum covers the segment). The engine uses it in
// place of TcpStack + MPA when created with Qp::CreateOnLlp. The owner of the
// LLP (iwarp/sctp_llp.h for SCTP) implements these calls and feeds the
// inbound events into Qp::OnLlp*.
//
// Connection setup over such an LLP (INTEROP.md, SCTP section): the session
// Initiate and Accept carry the RFC 6581 4-byte IRD/ORD block (IRD, ORD in the
// low 14 bits of two big-endian 16-bit words, the A/B/C/D bits zero: no RTR is
// needed because the session Accept orders the stream) in front of the
// application's private data. A Reject carries the application's private
// data only.
enum class LlpSendStatus : uint8_t {
  kOk,
  kWouldBlock,  // no send space now: offer the same thing again later (Poll)
  kError,       // refused for good (stream or association gone)
};

class SegmentLlp {
 public:
  virtual ~SegmentLlp() = default;
  // Largest DDP segment (header + payload) one message carries.
  virtual uint32_t Mulpdu() const = 0;
  // Sends one whole DDP segment: `header` followed by `payload`. kOk means the
  // LLP took the whole segment (Sends and Writes complete when their last
  // segment was taken: the LLP delivers reliably from there on).
  virtual LlpSendStatus SendSegment(ByteSpan header, ByteSpan payload) = 0;
  virtual LlpSendStatus Initiate(ByteSpan private_data) = 0;
  virtual LlpSendStatus Accept(ByteSpan private_data) = 0;
  virtual LlpSendStatus Reject(ByteSpan private_data) = 0;
  // Ends the DDP stream session (after a Terminate, on Close and Abort).
  virtual LlpSendStatus EndStream() = 0;
  // The Qp is being destroyed: deliver no more events to it.
  virtual void Detach() = 0;
};

// Connection events, control path. Called on the Qp's core from inside
// TcpStack / Qp calls; an observer must not destroy the Qp from a callback.
class QpObserver {
 public:
  virtual ~QpObserver() = default;
  // Responder: the peer's MPA Request arrived. Return whether to accept.
  virtual AcceptDecision OnConnectRequest(Qp& qp, const mpa::StartupFrame& request) {
    (void)qp, (void)request;
    return {};
  }
  // Full Operation reached (responder: after the RTR / first FPDU).
  virtual void OnEstablished(Qp& qp, ByteSpan peer_private_data) { (void)qp, (void)peer_private_data; }
  virtual void OnConnectFailed(Qp& qp, ConnectError e, ByteSpan peer_private_data) {
    (void)qp, (void)e, (void)peer_private_data;
  }
  // A Terminate was sent (sent == true) or received.
  virtual void OnTerminate(Qp& qp, const rdmap::TerminateCode& code, bool sent) {
    (void)qp, (void)code, (void)sent;
  }
  // The connection is gone; outstanding work was flushed. The QP is in a
  // terminal state: kClosed after a graceful close, kError otherwise
  // (Qp::end() says why).
  virtual void OnDisconnected(Qp& qp) { (void)qp; }
};

// X(field) counters of one Qp.
#define IWARP_QP_COUNTERS(X) \
  X(fpdus_in)                \
  X(fpdus_out)               \
  X(bytes_placed)            \
  X(bytes_sent)              \
  X(messages_in)             \
  /* RDMA Write messages placed whole (last segment in) as Data Sink */ \
  X(writes_placed)           \
  X(tx_blocked)              \
  X(terminates_sent)         \
  X(terminates_received)     \
  X(crc_errors)              \
  X(marker_errors)           \
  /* FPDUs whose ULPDU_Length exceeds what we accept (DDP Terminate 1/0/0) */ \
  X(ulpdu_too_long)          \
  X(cq_overflow)             \
  X(local_errors)            \
  X(read_responses_sent)     \
  /* FPDUs whose payload TCP reads from registered memory (zero_copy_tx) */ \
  X(fpdus_zero_copy)         \
  /* stream bytes received after a Terminate or failure: not processed */ \
  X(rx_bytes_discarded)

struct QpStats {
#define IWARP_QP_FIELD(f) uint64_t f = 0;
  IWARP_QP_COUNTERS(IWARP_QP_FIELD)
#undef IWARP_QP_FIELD
};

class Qp final : public tcp::TcpUser, private ddp::UntaggedQueues {
 public:
  // Control path: validates `options` and allocates every queue.
  static absl::StatusOr<std::unique_ptr<Qp>> Create(const QpOptions& options, tcp::TcpStack& stack,
                                                    MemoryDomain& memory, QpObserver& observer);
  // The same engine over a message-oriented LLP (RFC 5043 / SCTP): `llp`
  // must outlive the Qp. The QP starts idle and passive: an inbound
  // OnLlpInitiate is offered to QpObserver::OnConnectRequest as a
  // StartupFrame with revision 0 (no MPA), the peer's IRD/ORD in ird_ord and
  // its private data after the IRD/ORD block. MpaParams::ird / ord /
  // max_private_data and the timeouts apply; the MPA-only fields do not.
  static absl::StatusOr<std::unique_ptr<Qp>> CreateOnLlp(const QpOptions& options, SegmentLlp& llp,
                                                         MemoryDomain& memory,
                                                         QpObserver& observer);
  ~Qp() override;
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;

  // Active open: TCP connect, then the MPA Request carrying `private_data`
  // (<= 512 bytes with the IRD/ORD block). Idle QPs only.
  absl::Status Connect(uint32_t local_ip, uint32_t remote_ip, uint16_t remote_port,
                       ByteSpan private_data, uint64_t now_us);
  // Passive open: called by Listener::OnAccept with an established TCP
  // connection. Idle QPs only; false otherwise.
  bool AttachPassive(tcp::ConnId conn);
  // Test mode only (config test_mode, service iwarp_fpdu_test): `conn` was
  // established from configuration (TcpStack::AdoptEstablished) and the MPA
  // settings were agreed out of band: the QP enters Full Operation at once,
  // FPDUs starting at stream offset 0 in both directions (Markers counted
  // from there). Idle QPs over TCP only; false otherwise.
  bool AttachEstablished(tcp::ConnId conn, const Negotiated& negotiated);
  // Active open over the LLP (CreateOnLlp QPs only): session Initiate with
  // the IRD/ORD block and `private_data` (<= 508 bytes).
  absl::Status ConnectLlp(ByteSpan private_data, uint64_t now_us);

  // Inbound LLP events (CreateOnLlp QPs; called by the LLP's owner).
  void OnLlpInitiate(ByteSpan private_data);
  void OnLlpAccepted(ByteSpan private_data);
  void OnLlpRejected(ByteSpan private_data);
  // One whole DDP segment, in DDP stream order.
  void OnLlpSegment(ByteSpan ddp_segment);
  // The session ended (peer Terminate, our Terminate answered, association
  // gone): outstanding work is flushed, OnDisconnected follows. An orderly
  // end after a graceful close (or the peer's, from Full Operation) with no
  // Terminate leaves the QP kClosed; anything else kError.
  void OnLlpEnded(LlpEnd how);
  bool on_llp() const { return llp_ != nullptr; }

  // Fast path. Work requests are accepted from kAwaitReply on (they are held
  // until Full Operation) and refused once the QP is closing, closed or
  // failed.
  PostStatus PostSend(const SendWr& wr);
  PostStatus PostRecv(const RecvWr& wr);
  // Moves up to out.size() completions out; returns how many.
  size_t PollCompletions(std::span<Completion> out);
  // Completions PollCompletions would return now.
  size_t completions_pending() const;

  // Every loop iteration: timeouts, completions of acknowledged Sends and
  // Writes, transmission resumed.
  void Poll(uint64_t now_us);

  // Graceful close: queued work is sent, then TCP FIN; receives still
  // posted are flushed when the connection is gone. The QP ends kClosed
  // when both FINs were exchanged without a Terminate (kError otherwise).
  void Close(uint64_t now_us);
  // Abortive close: TCP RST, outstanding work flushed; the QP ends kError.
  void Abort(uint64_t now_us);

  QpState state() const { return state_; }
  QpEnd end() const { return end_; }
  const Negotiated& negotiated() const { return neg_; }
  const QpStats& stats() const { return stats_; }
  // Whether a zero-copy FPDU of this QP that the peer has not acknowledged
  // yet reads from `range` (QpOptions::zero_copy_tx).
  bool SendsFrom(ByteSpan range) const;
  tcp::ConnId conn() const { return conn_; }
  ConnectError connect_error() const { return connect_error_; }
  // The last Terminate sent or received.
  const std::optional<rdmap::TerminateCode>& terminate_sent() const { return term_sent_; }
  const std::optional<rdmap::TerminateCode>& terminate_received() const { return term_received_; }
  ByteSpan peer_private_data() const { return ByteSpan(peer_pd_, peer_pd_len_); }
  const QpOptions& options() const { return options_; }

  // TcpUser.
  void OnConnected(tcp::ConnId conn) override;
  size_t OnData(tcp::ConnId conn, uint64_t stream_offset, ByteSpan data) override;
  void OnPeerFin(tcp::ConnId conn) override;
  void OnSendSpace(tcp::ConnId conn, size_t space) override;
  void OnClosed(tcp::ConnId conn, tcp::CloseReason reason) override;

 private:
  struct Impl;
  Qp(const QpOptions& options, tcp::TcpStack* stack, SegmentLlp* llp, MemoryDomain& memory,
     QpObserver& observer);
  static absl::StatusOr<std::unique_ptr<Qp>> Make(const QpOptions& options, tcp::TcpStack* stack,
                                                  SegmentLlp* llp, MemoryDomain& memory,
                                                  QpObserver& observer);

  // ddp::UntaggedQueues (the RFC 5041 7.1 untagged checks).
  bool Window(uint32_t qn, ddp::QueueWindow* out) const override;
  const ddp::UntaggedBuffer* Buffer(uint32_t qn, uint32_t index) const override;

  friend struct Impl;
  QpOptions options_;
  tcp::TcpStack* stack_;  // null over an LLP
  SegmentLlp* llp_;       // null over TCP
  MemoryDomain& memory_;
  QpObserver& observer_;
  QpState state_ = QpState::kIdle;
  tcp::ConnId conn_;
  Negotiated neg_;
  QpStats stats_;
  ConnectError connect_error_ = ConnectError::kNone;
  QpEnd end_ = QpEnd::kNone;
  std::optional<rdmap::TerminateCode> term_sent_;
  std::optional<rdmap::TerminateCode> term_received_;
  uint8_t peer_pd_[mpa::kMaxPrivateDataLength] = {};
  size_t peer_pd_len_ = 0;
  std::unique_ptr<Impl> impl_;
};

// Passive side: listens on a port through an MpaGate and binds the next idle
// Qp of a fixed pool the owner supplies to each connection whose MPA Request
// arrived valid (mpa_gate.h: until then a connection holds no QP). With the
// pool empty the Request is refused with an MPA Reject Reply whose private
// data is `no_qp_reason`.
class Listener final : private MpaGateOwner {
 public:
  // `gate.max_pending` bounds the connections waiting for their Request.
  static absl::StatusOr<std::unique_ptr<Listener>> Create(tcp::TcpStack& stack,
                                                          uint32_t pool_capacity,
                                                          const MpaGateOptions& gate);
  absl::Status Listen(uint16_t port, uint64_t now_us) { return gate_->Listen(port, now_us); }
  // Adds an idle Qp to the pool (FIFO). False when the pool is full.
  bool AddQp(Qp* qp);
  size_t pool_size() const { return count_; }
  // Timeouts of waiting connections (every loop iteration).
  void Poll(uint64_t now_us) { gate_->Poll(now_us); }
  const MpaGate& gate() const { return *gate_; }

 private:
  Listener(tcp::TcpStack& stack, uint32_t pool_capacity);
  GateDecision OnMpaRequest(tcp::ConnId conn, const tcp::FourTuple& tuple,
                            const mpa::StartupFrame& request, ByteSpan frame) override;

  tcp::TcpStack& stack_;
  std::unique_ptr<MpaGate> gate_;
  std::unique_ptr<Qp*[]> pool_;
  uint32_t cap_;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
};

}  // namespace iwarp::engine

#endif  // IWARPD_IWARP_QP_H_
