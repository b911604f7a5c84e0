// The RFC 5043 DDP stream session layer on one usrsctp association.
//
// A DdpAssociation owns one one-to-one usrsctp socket (AF_CONN) and maps DDP
// streams 0..streams-1 onto SCTP stream pairs with the same identifier
// (RFC 5043 8). It is shaped as the Lower Layer Protocol the DDP engine
// needs: a maximum DDP segment size (MULPDU, RFC 5043 9), "send this DDP
// segment on stream s", in-order delivery of received DDP segments per
// stream, and stream up / rejected / ended events with private data.
//
// Threading and ownership: everything runs on the thread that owns the
// UsrsctpHost. Sockets are non-blocking and upcall-free; the owner calls
// Service() after it has fed packets to UsrsctpHost::Input() or called
// UsrsctpHost::Poll(), and events are raised from inside Service() (and, for
// local errors, from the call that found them). Event handlers may call the
// send functions of the same association, but must not destroy it.
//
// Wire behaviour:
//   - every DATA chunk is unordered (RFC 5043 10) and starts with the 2-byte
//     DDP-SSN, numbered from 0 per direction per session (6.1);
//   - PPID 17 carries Initiate / Accept / Reject / Terminate (5.2.3), PPID 16
//     DDP segments (5.2.2);
//   - received chunks are put back into DDP-SSN order per stream in a bounded,
//     preallocated reorder store before the legal sequences of 6.2-6.4 are
//     checked; a DDP-SSN that cannot be explained by chunks not yet received
//     (behind the next expected one, a duplicate, or beyond the reorder
//     window) ends that DDP stream only (RFC 5043 10), as does any illegal
//     sequence (6.1); other streams keep working (11.3);
//   - an association whose peer did not indicate the DDP adaptation in INIT /
//     INIT-ACK is aborted and never carries DDP (RFC 5043 11.1).
#ifndef IWARPD_SCTP_DDP_SESSION_H_
#define IWARPD_SCTP_DDP_SESSION_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/bytes.h"
#include "common/seq.h"
#include "sctp/adaptation.h"
#include "sctp/session_engine.h"
#include "sctp/usrsctp_host.h"

struct socket;  // usrsctp

namespace iwarp::sctp {

// Socket options of every association, applied explicitly (never usrsctp's
// defaults, which differ from what DDP needs: INTEROP.md, SCTP section).
struct AssociationConfig {
  uint16_t streams = 8;            // DDP streams; SCTP_INITMSG in == out (RFC 5043 8)
  uint32_t path_mtu = 1500;        // IP path MTU; PMTUD off
  bool ipv6 = false;               // IP header the data plane adds: 40, else 20 bytes
  uint32_t bundling_reserve = 0;   // bytes kept free for bundled control chunks (RFC 5043 9)
  uint32_t send_buffer = 256 * 1024;     // SO_SNDBUF
  uint32_t receive_buffer = 256 * 1024;  // SO_RCVBUF
  uint32_t delayed_sack_ms = 10;   // SCTP_DELAYED_SACK sack_delay (>= 1)
  uint32_t sack_frequency = 2;     // SCTP_DELAYED_SACK sack_freq (1 = SACK every packet)
  bool nodelay = true;             // SCTP_NODELAY (RFC 5043 11.2: untagged not delayed)
  // Bundle the DATA chunks of one send batch into as few packets as the
  // path MTU allows (RFC 9260 6.10). While a batch runs, usrsctp holds small
  // chunks back (SCTP_NODELAY off while data is in flight) and the newest
  // chunk waits here; DdpAssociation::Flush() sends it with SCTP_NODELAY
  // back on, which makes usrsctp send everything queued at once. The owner
  // must call Flush() before it drains the host's packet queue
  // (SctpEndpoint::Drain does this). false: every chunk leaves in its own
  // packet as soon as it is sent.
  bool bundle_sends = false;
  // SCTP_RTOINFO (RFC 9260 15 defaults). usrsctp decides which chunks a T3
  // timeout retransmits by the wall clock, so the clock given to
  // UsrsctpHost::Poll must be real time.
  uint32_t rto_initial_ms = 3000;
  uint32_t rto_min_ms = 1000;
  uint32_t rto_max_ms = 60000;
  // Adaptation Layer Indication sent in INIT / INIT-ACK (SCTP_ADAPTATION_LAYER);
  // nullopt sends none (a plain SCTP endpoint).
  std::optional<uint32_t> adaptation_indication = kDdpAdaptationIndication;
  // RFC 5043 6.4: Initiates waiting for the ULP's decision; more are answered
  // with Terminate.
  uint32_t max_pending_initiates = 4;
  // Largest DDP-SSN distance ahead of the next expected one that is buffered
  // (power of two, <= 32768). Keep >= HostConfig::max_chunks_on_queue so
  // that a legal sender never exceeds it.
  uint32_t reorder_window = 1024;
  // Chunks held out of DDP-SSN order at once, over all streams.
  uint32_t reorder_chunks = 512;
};

// The maximum DDP segment size handed to DDP for `config` (RFC 5043 9): the
// largest segment whose chunk usrsctp sends unfragmented at the configured
// path MTU (its fragmentation point is a multiple of 4 bytes), >= 516.
uint32_t AssociationMulpdu(const AssociationConfig& config);

// Sizes the DDP reorder store of `config` from its socket buffers (RFC 5043
// 10: a DDP-SSN gap is explained by chunks not yet received). Chunks held out
// of DDP-SSN order all lie beyond one chunk the peer has not had
// acknowledged, and a sender keeps every unacknowledged chunk in its send
// buffer; with the peer's buffers as large as ours (the larger of send_buffer
// and receive_buffer), a peer sending full-size segments (AssociationMulpdu)
// never has more than that buffer's worth of chunks beyond a gap. Sets
// reorder_chunks to that many full-size chunks plus one per stream (at least
// 512) and reorder_window to the next power of two (at least 1024, at most
// 32768). A peer that fills a whole window with shorter segments can still
// exceed it: that stream ends as kReorderFull (counted), never memory.
void SizeReorderStore(AssociationConfig* config);

class DdpListener;

class DdpAssociation {
 public:
  enum class State : uint8_t {
    kConnecting,       // INIT sent or received, not up yet
    kAwaitAdaptation,  // COMM_UP seen; the adaptation indication must follow
    kUp,               // up, DDP allowed
    kRefused,          // aborted: the peer is not a DDP/SCTP endpoint (11.1)
    kDown,             // ended
  };

  // Active open from the AF_CONN address `conn` (registered with the host):
  // binds local_port and connects to remote_port over that link. `events`
  // must outlive the association.
  static absl::StatusOr<std::unique_ptr<DdpAssociation>> Connect(UsrsctpHost& host, void* conn,
                                                                 uint16_t local_port,
                                                                 uint16_t remote_port,
                                                                 const AssociationConfig& config,
                                                                 DdpLlpEvents* events);
  // Aborts the association if it is still alive (SO_LINGER 0).
  ~DdpAssociation();
  DdpAssociation(const DdpAssociation&) = delete;
  DdpAssociation& operator=(const DdpAssociation&) = delete;

  // Reads everything usrsctp has for this association and raises events.
  void Service();

  // Graceful SCTP shutdown (open sessions see kAssociationDown when it ends).
  // Sends a chunk still waiting for Flush() first.
  void Shutdown();
  // Ends the association at once with SCTP ABORT (RFC 9260 9.1), so the peer
  // frees what it holds for it without waiting for failure detection; open
  // sessions see kAssociationDown now. The handle stays valid.
  void Abort();

  // bundle_sends: ends the current send batch. The chunk waiting in the
  // association goes to usrsctp with SCTP_NODELAY restored, so every chunk
  // of the batch leaves now, bundled. If usrsctp's send buffer is full the
  // chunk keeps waiting (and the next SendSegment answers kWouldBlock until
  // it is taken); call Flush() again later. No-op without bundle_sends.
  void Flush();
  // True while a chunk waits for Flush().
  bool flush_pending() const { return staged_; }

  // ---- session control (RFC 5043 6) ----
  SendResult Initiate(uint16_t stream, ByteSpan private_data);
  SendResult Accept(uint16_t stream, ByteSpan private_data);
  SendResult Reject(uint16_t stream, ByteSpan private_data);
  SendResult Terminate(uint16_t stream);

  // One DDP segment (at most mulpdu() bytes) on an open session.
  // kWouldBlock: usrsctp's send buffer is full. Only a SACK frees room, and
  // SACKs are read by usrsctp in the input the owner feeds before it calls
  // Service(); so until the next Service() every send answers kWouldBlock
  // again at once, without calling into usrsctp.
  SendResult SendSegment(uint16_t stream, ByteSpan ddp_segment);

  uint32_t mulpdu() const { return engine_.mulpdu(); }
  uint16_t streams() const { return engine_.streams(); }
  State state() const { return state_; }
  // True if `stream` has a session in which SendSegment() is allowed.
  bool StreamOpen(uint16_t stream) const { return engine_.StreamOpen(stream); }
  // True if `stream` has no session (Initiate allowed).
  bool StreamIdle(uint16_t stream) const { return engine_.StreamIdle(stream); }
  uint64_t counter(DdpCounter c) const { return engine_.counter(c); }
  // Stream-end counts by reason (for tests and telemetry).
  uint64_t ends(StreamEnd e) const { return engine_.ends(e); }
  const SessionEngine& engine() const { return engine_; }

  // usrsctp's view of the association (SCTP_STATUS), for telemetry.
  struct SctpStatus {
    int32_t state = 0;          // usrsctp SCTP_* user state (0x8 = ESTABLISHED)
    uint32_t peer_rwnd = 0;
    uint16_t unacked_chunks = 0;
    uint16_t pending_chunks = 0;
    uint32_t fragmentation_point = 0;
    uint32_t path_mtu = 0;      // SCTP packet size (no IP header)
    uint32_t cwnd = 0;
    uint32_t srtt_ms = 0;
    uint32_t rto_ms = 0;
  };
  absl::StatusOr<SctpStatus> Status() const;

 private:
  friend class DdpListener;
  // usrsctp side of the engine's output.
  class Output : public ChunkOutput {
   public:
    explicit Output(DdpAssociation* a) : a_(a) {}
    SendResult SendChunk(uint16_t stream, uint32_t ppid, ByteSpan user_data) override;

   private:
    DdpAssociation* a_;
  };

  DdpAssociation(struct socket* so, const AssociationConfig& config, DdpLlpEvents* events);
  static absl::Status ApplySocketOptions(struct socket* so, const AssociationConfig& config);
  void OnNotification(ByteSpan n);
  void AdaptationDecided(bool present, uint32_t indication);
  void GoDown();
  void AbortSocket();
  // One DATA chunk straight to usrsctp_sendv.
  SendResult SendNow(uint16_t stream, uint32_t ppid, ByteSpan user_data);
  // bundle_sends: the send path of Output::SendChunk.
  SendResult Stage(uint16_t stream, uint32_t ppid, ByteSpan user_data);
  SendResult PushStaged();
  void SetNodelay(bool on);

  struct socket* so_;
  AssociationConfig config_;
  DdpLlpEvents* events_;
  State state_ = State::kConnecting;
  Output output_;
  SessionEngine engine_;
  std::vector<uint8_t> rx_buf_;
  // bundle_sends: the newest chunk of the batch (accepted with kOk, not yet
  // given to usrsctp), and whether SCTP_NODELAY is off for the batch.
  std::vector<uint8_t> staged_buf_;
  size_t staged_len_ = 0;
  uint16_t staged_sid_ = 0;
  uint32_t staged_ppid_ = 0;
  bool staged_ = false;
  bool nagle_on_ = false;
  // usrsctp refused a send as the buffer was full; cleared by Service().
  bool tx_blocked_ = false;
};

// Passive opens on one AF_CONN address and SCTP port.
class DdpListener {
 public:
  static absl::StatusOr<std::unique_ptr<DdpListener>> Listen(UsrsctpHost& host, void* conn,
                                                             uint16_t port,
                                                             const AssociationConfig& config);
  ~DdpListener();
  DdpListener(const DdpListener&) = delete;
  DdpListener& operator=(const DdpListener&) = delete;

  // The next association the stack completed, or nullptr (non-blocking).
  // Call its Service() right away: its COMM_UP is already queued.
  std::unique_ptr<DdpAssociation> Accept(DdpLlpEvents* events);
  // The same, and stores the AF_CONN cookie the peer's INIT arrived on in
  // *peer_conn (used by SctpEndpoint to tell remote addresses apart when the
  // listener is bound to the wildcard, conn == nullptr).
  std::unique_ptr<DdpAssociation> Accept(DdpLlpEvents* events, void** peer_conn);

 private:
  DdpListener(struct socket* so, const AssociationConfig& config) : so_(so), config_(config) {}
  struct socket* so_;
  AssociationConfig config_;
};

}  // namespace iwarp::sctp

#endif  // IWARPD_SCTP_DDP_SESSION_H_
