// tcp_lite: a per-worker TCP engine (RFC 9293) for the iWARP data plane.
//
// One TcpStack per worker core. It owns a fixed connection table, the
// listeners, one timer wheel and every buffer, all allocated by the
// constructor; after that nothing on the fast path allocates, locks, makes a
// system call, logs or throws. The stack never reads a clock: the caller
// passes microseconds of a monotonic clock to Input() and RunTimers() (a
// virtual clock in tests).
//
// Layering: the stack takes TCP segments as byte spans (Input) and hands
// complete TCP segments to a TcpOutput (the data plane adds Ethernet + IPv4
// and copies into an mbuf). It includes no DPDK header.
//
// Protocol coverage (the .cc names the RFC section at each rule):
//  - RFC 9293 state machine: active, passive and simultaneous open, orderly
//    close (FIN, half-close), abortive close (RST), bounded TIME_WAIT.
//  - Options: MSS, window scale and timestamps with PAWS (RFC 7323),
//    SACK-permitted and SACK blocks with D-SACK (RFC 2018, 2883).
//  - ISN per RFC 6528; SYN cookies (RFC 4987 3.6) when the SYN backlog or
//    the connection table is full.
//  - RFC 5961: challenge ACKs for in-window RSTs and SYNs in synchronized
//    states, ACK acceptability check, per-stack challenge ACK rate limit.
//  - RTO per RFC 6298 with backoff and Karn's rule; fast retransmit and
//    recovery (RFC 5681, RFC 6582) with limited transmit (RFC 3042);
//    SACK-based loss recovery (RFC 6675, without the rescue retransmission);
//    NewReno or CUBIC; zero-window probes; delayed ACKs; Nagle (off by
//    default); keepalive (RFC 9293 3.8.4).
//
// Buffering: each connection has a send ring and a receive ring of the
// configured sizes. Send() and SendRecord() copy into the send ring;
// SendZeroCopy() references the caller's memory until acknowledged. An
// in-order segment arriving while nothing is buffered is offered to the user
// straight from the input span; whatever the user does not consume, and every
// out-of-order byte (bounded by max_ooo_segments), is copied once into the
// receive ring at its stream position and offered from there. The advertised
// window is the free space of that ring.
//
// Threading: a TcpStack and all its connections belong to one core. No method
// may be called from another thread. From inside a TcpUser callback only the
// calls listed at TcpUser may be made.
#ifndef IWARPD_TCP_LITE_TCP_STACK_H_
#define IWARPD_TCP_LITE_TCP_STACK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/bytes.h"
#include "common/drop_reasons.h"
#include "common/enum_names.h"
#include "tcp_lite/tcp_cc.h"
#include "tcp_lite/tcp_isn.h"
#include "tcp_lite/tcp_segment.h"
#include "tcp_lite/tcp_tunables.h"

namespace iwarp::tcp {

// ---------------------------------------------------------------- options

// Every tunable of the engine (tcp_tunables.h) plus the interface MTU. Invalid
// combinations are rejected by TcpStack::Create() with InvalidArgument naming
// the field; max_send_records 0 (auto) is resolved there.
struct TcpOptions : TcpTunables {
  // Interface MTU; the MSS we announce is mtu - 40 unless `mss` is set.
  uint16_t mtu = 1500;
};

// ---------------------------------------------------------------- output

// Implemented by the data plane; called from Input(), RunTimers() and the
// send calls, on the stack's core.
class TcpOutput {
 public:
  virtual ~TcpOutput() = default;
  // Emits one TCP segment from `src_ip` to `dst_ip` (host order):
  // `tcp_header` is the complete header with options and the checksum
  // already computed over pseudo-header, header and payload; `payload` is the
  // segment's data as pieces, in order (may be empty). All spans are valid
  // only during the call, except pieces inside the memory the output
  // provided (SendMemory): the data plane copies the rest into a packet. Returns
  // false when it has no buffer; the stack then treats the segment as lost
  // (the retransmission machinery recovers it) and counts tx_no_buffer.
  virtual bool EmitSegment(uint32_t src_ip, uint32_t dst_ip, ByteSpan tcp_header,
                           std::span<const ByteSpan> payload) = 0;
  // When true, the checksum in EmitSegment's `tcp_header` covers only the
  // pseudo-header (with the full TCP length) and the header: the output adds
  // the payload's sum while it copies the payload into the packet
  // (CopyAndSumPayload, then AddPayloadSum on its copy of the header), so the
  // payload is read once instead of twice. Constant for the output's life.
  virtual bool SumsPayload() const { return false; }
  // Memory for the send buffers, asked for once by Create(): `buffers`
  // (max_connections) buffers of `buffer_bytes`, buffer i at offset
  // i * buffer_bytes. An output whose device takes payload by reference,
  // reading EmitSegment's pieces after the call returns, provides memory it
  // keeps readable as long as the device may read it (beyond the stack's
  // life), and answers SendBufferReusable. Empty: the stack allocates its
  // own, and pieces are read only during EmitSegment.
  //
  // Within one connection, bytes the device has not read yet may be
  // rewritten only once the peer acknowledged them. Every frame that still
  // carries them is then a retransmission of data the peer holds, which it
  // discards (RFC 9293 3.10.7.4), provided the device computes the frame's
  // TCP checksum over the bytes it reads (TSO frames).
  virtual MutableByteSpan SendMemory(size_t buffers, size_t buffer_bytes) {
    (void)buffers, (void)buffer_bytes;
    return {};
  }
  // Whether buffer `index` of the provided memory may go to a new
  // connection: false while the device may still read bytes a previous
  // connection sent from it (they would carry the new connection's data to
  // the old one's peer). Asked only when SendMemory provided the memory.
  virtual bool SendBufferReusable(uint32_t index) const {
    (void)index;
    return true;
  }
};

// ---------------------------------------------------------------- connections

// A connection handle: table slot plus a generation, so a stale handle (of a
// closed connection whose slot was reused) is refused, never misapplied.
struct ConnId {
  uint32_t slot = UINT32_MAX;
  uint32_t generation = 0;
  bool valid() const { return slot != UINT32_MAX; }
  bool operator==(const ConnId&) const = default;
};

// RFC 9293 3.3.2 states.
// X(enumerator, "name")
#define IWARP_TCP_STATES(X)       \
  X(kClosed, "CLOSED")            \
  X(kListen, "LISTEN")            \
  X(kSynSent, "SYN-SENT")         \
  X(kSynReceived, "SYN-RECEIVED") \
  X(kEstablished, "ESTABLISHED")  \
  X(kFinWait1, "FIN-WAIT-1")      \
  X(kFinWait2, "FIN-WAIT-2")      \
  X(kCloseWait, "CLOSE-WAIT")     \
  X(kClosing, "CLOSING")          \
  X(kLastAck, "LAST-ACK")         \
  X(kTimeWait, "TIME-WAIT")
enum class TcpState : uint8_t { IWARP_TCP_STATES(IWARP_ENUMERATOR) };
std::string_view TcpStateName(TcpState s);  // "ESTABLISHED", ...

// X(enumerator, "name")
#define IWARP_TCP_CLOSE_REASONS(X)                                                                   \
  X(kNormal, "normal")  /* both FINs exchanged and acknowledged (or TIME_WAIT entered) */            \
  X(kResetByPeer, "reset_by_peer")  /* acceptable RST received (RFC 9293 3.10.7.4 / RFC 5961 3.2) */ \
  X(kRefused, "refused")  /* RST answering our SYN (connection refused) */                           \
  X(kTimeout, "timeout")  /* retransmission or SYN retry limit, or keepalive gave up */              \
  X(kAborted, "aborted")  /* Abort() by the user (RST sent) */
enum class CloseReason : uint8_t { IWARP_TCP_CLOSE_REASONS(IWARP_ENUMERATOR) };
std::string_view CloseReasonName(CloseReason r);

// What the stack reports about a connection (iwarpctl, tests).
struct TcpConnInfo {
  ConnId id;
  FourTuple tuple;
  TcpState state = TcpState::kClosed;
  uint64_t bytes_in = 0;    // payload bytes delivered in order
  uint64_t bytes_out = 0;   // payload bytes acknowledged by the peer
  uint64_t segments_in = 0;
  uint64_t segments_out = 0;
  uint64_t retransmitted_segments = 0;
  uint64_t retransmitted_bytes = 0;
  uint64_t timeouts = 0;     // RTO expirations
  uint64_t fast_retransmits = 0;
  uint64_t srtt_us = 0;
  uint64_t rttvar_us = 0;
  uint64_t rto_us = 0;
  uint32_t cwnd = 0;
  uint32_t ssthresh = 0;
  uint32_t snd_wnd = 0;       // peer's window, scaled
  uint32_t rcv_wnd = 0;       // our window, scaled
  uint32_t emss = 0;          // payload bytes per full segment
  uint32_t unacked_bytes = 0; // SND.NXT - SND.UNA
  uint32_t send_queued = 0;   // accepted from the user, not yet acknowledged
  uint32_t recv_queued = 0;   // delivered in order, not yet consumed
  uint8_t snd_wscale = 0;
  uint8_t rcv_wscale = 0;
  bool sack = false;
  bool timestamps = false;
};

// Callbacks to the layer above (MPA). All run on the stack's core, from
// inside Input(), RunTimers() or a send call. Unless marked, a callback may
// call Send*, Shutdown, Abort, ConsumeReceived and the getters on any
// connection; it must not call Input() or RunTimers().
class TcpUser {
 public:
  virtual ~TcpUser() = default;

  // Listener only: a passive connection completed its handshake. Return the
  // user that will own it (may be `this`), or nullptr to refuse it (RST
  // sent, counted as listen_refused).
  virtual TcpUser* OnAccept(ConnId conn, const FourTuple& tuple) {
    (void)conn, (void)tuple;
    return nullptr;
  }
  // An active open reached ESTABLISHED.
  virtual void OnConnected(ConnId conn) { (void)conn; }
  // In-order bytes: `data` holds stream bytes starting at `stream_offset`
  // (0 = the first byte after the SYN). Return how many were consumed (a
  // prefix, 0..data.size()). Unconsumed bytes stay in the receive buffer,
  // shrink the advertised window, and are offered again (with the same
  // offset) on the next delivery or after ConsumeReceived/DeliverPending.
  // `data` may be one of two pieces when the buffer wraps.
  virtual size_t OnData(ConnId conn, uint64_t stream_offset, ByteSpan data) = 0;
  // A segment arrived out of order: its in-window bytes at `stream_offset`
  // (beyond the in-order point). For marker-based direct placement; the
  // bytes are also kept and later delivered through OnData.
  virtual void OnOutOfOrder(ConnId conn, uint64_t stream_offset, ByteSpan data) {
    (void)conn, (void)stream_offset, (void)data;
  }
  // The peer sent FIN and every byte before it was delivered (CLOSE-WAIT or
  // closing states). No more OnData follows.
  virtual void OnPeerFin(ConnId conn) { (void)conn; }
  // Send buffer space grew after having been insufficient for a Send call
  // (or after a zero-copy slot freed). `space` is SendSpace() now.
  virtual void OnSendSpace(ConnId conn, size_t space) { (void)conn, (void)space; }
  // A zero-copy send was fully acknowledged; its memory is the caller's again.
  // Also called (acked = false) for every outstanding one when the
  // connection closes.
  virtual void OnSendComplete(ConnId conn, uint64_t cookie, bool acked) {
    (void)conn, (void)cookie, (void)acked;
  }
  // The connection is over for the user: no callback follows and send calls
  // fail. After an active close it is called on entering TIME-WAIT; the slot
  // lingers there (State() and ListConnections() still show it) until 2*MSL
  // or until it is recycled. Otherwise the ConnId is dead once this returns.
  virtual void OnClosed(ConnId conn, CloseReason reason) { (void)conn, (void)reason; }
};

// Optional hook for ephemeral port choice: return true if `tuple` (with a
// candidate local_port) is acceptable, e.g. because its RSS hash steers
// replies to this worker.
using PortFilter = bool (*)(void* context, const FourTuple& tuple);

// ---------------------------------------------------------------- counters

// X(field, "name") for TcpStackStats, so every counter has a stable name.
#define IWARP_TCP_STACK_COUNTERS(X)                                   \
  X(segments_in, "segments_in")                                       \
  X(segments_out, "segments_out")                                     \
  X(bytes_in, "bytes_in")                                             \
  X(bytes_out, "bytes_out")                                           \
  X(active_opens, "active_opens")                                     \
  X(passive_opens, "passive_opens")                                   \
  X(established, "established")                                       \
  X(closed_normal, "closed_normal")                                   \
  X(closed_reset, "closed_reset")                                     \
  X(closed_timeout, "closed_timeout")                                 \
  X(closed_aborted, "closed_aborted")                                 \
  X(rsts_out, "rsts_out")                                             \
  X(rsts_in, "rsts_in")                                               \
  X(retransmitted_segments, "retransmitted_segments")                 \
  X(retransmitted_bytes, "retransmitted_bytes")                       \
  X(timeouts, "timeouts")                                             \
  X(fast_retransmits, "fast_retransmits")                             \
  X(sack_recoveries, "sack_recoveries")                               \
  X(dup_acks_in, "dup_acks_in")                                       \
  X(delayed_acks, "delayed_acks")                                     \
  X(quick_ack_entries, "quick_ack_entries")                           \
  X(acks_out, "acks_out")                                             \
  X(window_probes, "window_probes")                                   \
  X(keepalive_probes, "keepalive_probes")                             \
  X(challenge_acks, "challenge_acks")                                 \
  X(challenge_acks_suppressed, "challenge_acks_suppressed")           \
  X(syn_cookies_sent, "syn_cookies_sent")                             \
  X(syn_cookies_accepted, "syn_cookies_accepted")                     \
  X(ooo_segments, "ooo_segments")                                     \
  X(dsacks_out, "dsacks_out")                                         \
  X(time_wait_recycled, "time_wait_recycled")                         \
  X(time_wait_reopened, "time_wait_reopened")                         \
  X(send_buffers_held, "send_buffers_held")                           \
  X(listen_refused, "listen_refused")                                 \
  /* test mode: connections established from configuration, passes looped */ \
  X(test_adopted, "test_adopted")                                     \
  X(test_loops, "test_loops")

struct TcpStackStats {
#define IWARP_TCP_COUNTER_FIELD(field, name) uint64_t field = 0;
  IWARP_TCP_STACK_COUNTERS(IWARP_TCP_COUNTER_FIELD)
#undef IWARP_TCP_COUNTER_FIELD
  // Discarded segments by reason (the TCP block of common/drop_reasons.h;
  // other entries stay zero).
  uint64_t drops[kNumDropReasons] = {};

  // Calls fn(std::string_view name, uint64_t value) for every counter above
  // (not the drops; use DropReasonName for those).
  template <typename Fn>
  void ForEachCounter(Fn&& fn) const {
#define IWARP_TCP_COUNTER_VISIT(field, name) fn(std::string_view(name), field);
    IWARP_TCP_STACK_COUNTERS(IWARP_TCP_COUNTER_VISIT)
#undef IWARP_TCP_COUNTER_VISIT
  }
};

// ---------------------------------------------------------------- the stack

// X(enumerator, "name")
#define IWARP_TCP_SEND_STATUSES(X)                                                                   \
  X(kOk, "ok")                                                                                       \
  X(kBadConn, "bad_conn")  /* stale or invalid ConnId */                                             \
  X(kNotConnected, "not_connected")  /* not yet established / already shut down for sending */       \
  X(kNoSpace, "no_space")  /* all-or-nothing send did not fit (OnSendSpace follows) */               \
  X(kTooManyRecords, "too_many_records")  /* record or zero-copy table full (OnSendSpace follows) */
enum class SendStatus : uint8_t { IWARP_TCP_SEND_STATUSES(IWARP_ENUMERATOR) };
std::string_view SendStatusName(SendStatus s);

class TcpStack {
 public:
  // Control path, at worker start-up: validates `options` and allocates every
  // table and buffer. `local_ips` (host order) are the addresses this stack
  // answers for; segments to others are dropped. `output` and `isn` must
  // outlive the stack. `isn` supplies ISNs and SYN cookies (one per daemon is
  // fine: it is immutable). `now_us` starts the clock.
  static absl::StatusOr<std::unique_ptr<TcpStack>> Create(const TcpOptions& options,
                                                          std::span<const uint32_t> local_ips,
                                                          TcpOutput& output,
                                                          const IsnGenerator& isn,
                                                          uint64_t now_us);
  ~TcpStack();
  TcpStack(const TcpStack&) = delete;
  TcpStack& operator=(const TcpStack&) = delete;

  // ------------------------------------------------ control path
  // Passive open on `port` (any of our addresses). `user` must outlive the
  // listener. AlreadyExists / ResourceExhausted on failure.
  absl::Status Listen(uint16_t port, TcpUser& user);
  // Closes the listener; half-open connections of it are reset, established
  // ones are not affected.
  absl::Status Unlisten(uint16_t port);
  // Ephemeral port acceptance hook for Connect(local_port = 0); nullptr
  // clears it.
  void SetPortFilter(PortFilter filter, void* context);

  // Active open: sends a SYN. local_port 0 picks an ephemeral port (RFC 6056
  // style, passing the PortFilter). `user` gets OnConnected or OnClosed.
  // Fast-path safe (no allocation). Errors: InvalidArgument (address not
  // ours), ResourceExhausted (no slot / no port), AlreadyExists (4-tuple).
  absl::StatusOr<ConnId> Connect(uint32_t local_ip, uint32_t remote_ip, uint16_t remote_port,
                                 TcpUser& user, uint16_t local_port, uint64_t now_us);

  // Test mode only (config test_mode, service iwarp_fpdu_test): a
  // connection that is ESTABLISHED from now on with the agreed initial
  // sequence numbers, no handshake and no options (no window scale, SACK or
  // timestamps; the peer's MSS is taken to be ours, its window is
  // `peer_window`). `loop_bytes` > 0: after that many in-order bytes the
  // expected receive sequence returns to irs + 1 (the stream offsets OnData
  // reports go on), so a generator replaying a capture of one pass of
  // loop_bytes bytes over and over is one endless in-order stream. No
  // keepalive. Errors: InvalidArgument, AlreadyExists (4-tuple),
  // ResourceExhausted.
  absl::StatusOr<ConnId> AdoptEstablished(const FourTuple& tuple, Seq32 iss, Seq32 irs,
                                          uint16_t peer_window, uint32_t loop_bytes,
                                          TcpUser& user, uint64_t now_us);

  // ------------------------------------------------ fast path
  // One received TCP segment (header + payload, exactly the IPv4 payload);
  // addresses in host order, IPv4 already validated. `check` kSkip when the
  // NIC verified the checksum. Drops are counted by reason; nothing a peer
  // sends can make this assert.
  void Input(uint32_t src_ip, uint32_t dst_ip, ByteSpan tcp_segment, uint64_t now_us,
             ChecksumCheck check = ChecksumCheck::kVerify);

  // A receive burst: the data plane brackets the Input calls of one poll with
  // these. Inside, the ACK RFC 5681 4.2 asks for after every second
  // full-sized in-order segment is held and EndBurst sends one cumulative ACK
  // per connection; duplicate, out-of-order, FIN and window-update ACKs and
  // ACKs piggybacked on data still leave at once. Without BeginBurst every
  // second segment is ACKed as it arrives.
  void BeginBurst();
  void EndBurst(uint64_t now_us);

  // Runs due timers (retransmission, delayed ACK, persist, keepalive,
  // TIME_WAIT). Call every loop iteration.
  void RunTimers(uint64_t now_us);
  // A time (us) at or before the earliest pending timer, nullopt if none:
  // RunTimers before then does nothing, so an idle worker may sleep.
  std::optional<uint64_t> NextTimerUs() const;

  // Copies up to data.size() bytes into the send buffer and transmits what
  // the windows allow. Returns bytes accepted (0 when full, invalid or not
  // sendable; see LastSendStatus for why).
  size_t Send(ConnId conn, ByteSpan data, uint64_t now_us);
  // All or nothing: the record is queued whole and no segment will start
  // inside it unless the record is longer than the EMSS (then it is cut into
  // EMSS pieces, the first starting a segment). For MPA FPDUs (RFC 5044 6).
  SendStatus SendRecord(ConnId conn, ByteSpan record, uint64_t now_us);
  // SendRecord without the copy: ReserveRecord returns `len` contiguous
  // bytes at the end of the send buffer for the caller to write the record
  // into, or an empty span when SendRecord would not take it now or the
  // ring would wrap inside it (then call SendRecord, which also arranges
  // OnSendSpace). The bytes join the stream only at CommitRecord(conn,
  // len), which must follow with no other call on this stack in between;
  // it returns what SendRecord would have.
  MutableByteSpan ReserveRecord(ConnId conn, size_t len);
  SendStatus CommitRecord(ConnId conn, size_t len, uint64_t now_us);
  // Zero-copy send of caller-owned bytes: `data` must stay valid and
  // unchanged until OnSendComplete(cookie). Also record-aligned as
  // SendRecord. All or nothing.
  SendStatus SendZeroCopy(ConnId conn, ByteSpan data, uint64_t cookie, uint64_t now_us);
  // One record of three parts, all or nothing: `head` and `tail` are copied
  // into the send buffer, `data` is referenced as by SendZeroCopy (valid and
  // unchanged until OnSendComplete(cookie)); the record is `head`, `data`,
  // `tail` in that order, aligned as SendRecord. For an MPA FPDU whose
  // payload stays in application memory: header before, pad and CRC after.
  // kNoSpace when the buffer cannot take head and tail, kTooManyRecords when
  // max_zero_copy_sends are outstanding (both arrange OnSendSpace).
  SendStatus SendRecordZeroCopy(ConnId conn, ByteSpan head, ByteSpan data, ByteSpan tail,
                                uint64_t cookie, uint64_t now_us);
  // Whether a zero-copy send of `conn` not yet acknowledged references a
  // byte of `range` (the owner is about to take that memory away).
  bool ZeroCopyReferences(ConnId conn, ByteSpan range) const;
  // Bytes Send/SendRecord would accept now.
  size_t SendSpace(ConnId conn) const;
  // Why the last Send on this stack returned less than asked.
  SendStatus LastSendStatus() const { return last_send_status_; }

  // The user consumed `bytes` of data it left unconsumed in OnData; opens the
  // window (a window update is sent when it grew by at least an MSS or half
  // the buffer, RFC 9293 3.8.6.2.2).
  void ConsumeReceived(ConnId conn, size_t bytes, uint64_t now_us);
  // Offers unconsumed received bytes through OnData again.
  void DeliverPending(ConnId conn, uint64_t now_us);

  // Half-close: FIN after the queued data (RFC 9293 3.10.4). Receiving
  // continues until the peer's FIN.
  void Shutdown(ConnId conn, uint64_t now_us);
  // Abortive close: RST now, buffers dropped, OnClosed(kAborted).
  void Abort(ConnId conn, uint64_t now_us);
  // Hands a connection to another user: every later callback for `conn`
  // goes to `user` (a passive connection's first user, chosen at OnAccept,
  // may pass it on once it knows who serves it, e.g. after the MPA Request).
  // May be called from a callback of the current user; the call that is
  // running finishes as it was. False for an invalid handle or a connection
  // the user was already told is closed.
  bool SetUser(ConnId conn, TcpUser& user);

  // Effective send MSS: payload bytes per full segment, after the peer's MSS,
  // our MTU and the per-segment option bytes (RFC 9293 3.7.1, RFC 6691).
  // 0 for an invalid handle.
  uint32_t Emss(ConnId conn) const;
  TcpState State(ConnId conn) const;

  // ------------------------------------------------ diagnostics
  // Writes up to out.size() connection snapshots (table order); returns how
  // many were written. Total count: connection_count().
  size_t ListConnections(std::span<TcpConnInfo> out) const;
  bool GetConnection(ConnId conn, TcpConnInfo* out) const;
  // Data bytes the peer acknowledged on `conn` (TcpConnInfo::bytes_out)
  // without the rest of the snapshot, for a poll loop; nullopt for an
  // invalid handle.
  std::optional<uint64_t> BytesAcked(ConnId conn) const;
  size_t connection_count() const;
  const TcpStackStats& stats() const { return stats_; }
  const TcpOptions& options() const { return options_; }

 private:
  struct Impl;
  explicit TcpStack(const TcpOptions& options);

  TcpOptions options_;
  TcpStackStats stats_;
  SendStatus last_send_status_ = SendStatus::kOk;
  std::unique_ptr<Impl> impl_;
};

}  // namespace iwarp::tcp

#endif  // IWARPD_TCP_LITE_TCP_STACK_H_
