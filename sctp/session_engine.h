// The RFC 5043 DDP stream session engine: everything of the adaptation layer
// that happens above SCTP, on byte spans, with no usrsctp in it (so it runs
// in unit tests and fuzzers as is; DdpAssociation wires it to usrsctp).
//
// Per DDP stream (= SCTP stream pair with one identifier, RFC 5043 8):
//   - send side: numbers every chunk with the 2-byte DDP-SSN from 0 per
//     session (5.2.1, 6.1) and hands it to a ChunkOutput, which must send it
//     unordered (10) with the given PPID (16 DDP segment, 17 session control);
//   - receive side: puts chunks back into DDP-SSN order in a bounded,
//     preallocated reorder store, then checks them against the legal
//     sequences of 6.2-6.4 (active/passive, Initiate -> Accept | Reject |
//     Terminate, DDP segments, final Terminate) and raises events;
//   - a DDP-SSN that chunks not yet received cannot explain (behind the next
//     expected one, a duplicate, or more than reorder_window ahead: RFC 5043
//     10), an illegal sequence (6.1), a malformed control message (5.2.3) or
//     an oversize segment (9) ends that DDP stream only: a Terminate is sent
//     and the stream ignores the peer until the peer's Terminate arrives.
//     Other streams keep working (11.3);
//   - at most max_pending_initiates Initiates wait for the ULP; more are
//     answered with Terminate (5.2.3, 6.4).
//
// Single-threaded; after construction nothing allocates.
#ifndef IWARPD_SCTP_SESSION_ENGINE_H_
#define IWARPD_SCTP_SESSION_ENGINE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "common/seq.h"
#include "sctp/adaptation.h"

namespace iwarp::sctp {

// Why a DDP stream session ended (event argument).
// X(enumerator, "name")
#define IWARP_SCTP_STREAM_ENDS(X)                                                                    \
  X(kPeerTerminate, "peer_terminate")  /* peer's Terminate in a session (6.2); ours answers it */    \
  X(kPeerRefused, "peer_refused")  /* Terminate answering our Initiate (6.4: peer over its limit) */ \
  X(kClosed, "closed")  /* our Terminate answered by the peer's: stream idle again */                \
  X(kIllegalSequence, "illegal_sequence")  /* 6.1: chunk outside the legal patterns */               \
  X(kBadSsn, "bad_ssn")  /* 10: DDP-SSN behind, duplicate, or beyond the window */                   \
  X(kReorderFull, "reorder_full")  /* no room left to hold an out-of-order chunk */                  \
  X(kMalformed, "malformed")  /* 5.2.3 / 9: bad control message, empty or oversize segment */        \
  X(kAssociationDown, "association_down")  /* 11.3: the SCTP association ended */
enum class StreamEnd : uint8_t {
  IWARP_SCTP_STREAM_ENDS(IWARP_ENUMERATOR)
  kCount
};
std::string_view StreamEndName(StreamEnd e);

// Events the ULP (the DDP engine) receives. Spans are valid during the call.
// Handlers may call the engine's send functions.
class DdpLlpEvents {
 public:
  virtual ~DdpLlpEvents() = default;
  // The association is up and the peer indicated DDP (RFC 5043 11.1).
  virtual void OnAssociationUp() {}
  // The association ended (peer gone, or refused for DDP); every stream with
  // a session has seen OnStreamEnded(kAssociationDown) first.
  virtual void OnAssociationDown() {}
  // Passive side: the peer asks for a session; answer with Accept, Reject or
  // Terminate (now or later). RFC 5043 6.2 - 6.4.
  virtual void OnInitiate(uint16_t /*stream*/, ByteSpan /*private_data*/) {}
  // Active side: the session is up; DDP segments may flow both ways.
  virtual void OnAccepted(uint16_t /*stream*/, ByteSpan /*private_data*/) {}
  // Active side: the ULP at the peer rejected the session (6.3); idle again.
  virtual void OnRejected(uint16_t /*stream*/, ByteSpan /*private_data*/) {}
  // The session on `stream` is over. After kPeerTerminate, kPeerRefused,
  // kClosed and kAssociationDown the stream is idle (reusable); after a local
  // error it becomes idle when the peer's Terminate arrives.
  virtual void OnStreamEnded(uint16_t /*stream*/, StreamEnd /*why*/) {}
  // One received DDP segment, in DDP-SSN order within its stream.
  virtual void OnSegment(uint16_t /*stream*/, ByteSpan /*ddp_segment*/) {}
};

// X(enumerator, "name")
#define IWARP_SCTP_SEND_RESULTS(X)                                                         \
  X(kOk, "ok")                                                                             \
  X(kWouldBlock, "would_block")  /* SCTP send buffer full: retry later */                  \
  X(kNotUp, "not_up")  /* association not up for DDP */                                    \
  X(kBadStream, "bad_stream")  /* stream number >= streams */                              \
  X(kWrongState, "wrong_state")  /* the session on that stream does not allow this now */  \
  X(kTooLarge, "too_large")  /* segment larger than mulpdu, or private data > 512 bytes */ \
  X(kEmpty, "empty")  /* a DDP segment of zero bytes */                                    \
  X(kError, "error")  /* the SCTP stack refused the send for another reason */
enum class SendResult : uint8_t { IWARP_SCTP_SEND_RESULTS(IWARP_ENUMERATOR) };
std::string_view SendResultName(SendResult r);

// Where the engine sends chunks: `user_data` starts with the DDP-SSN. The
// implementation sends one unordered DATA chunk on SCTP stream `stream` with
// `ppid`, or refuses it whole (kWouldBlock / kError).
class ChunkOutput {
 public:
  virtual ~ChunkOutput() = default;
  virtual SendResult SendChunk(uint16_t stream, uint32_t ppid, ByteSpan user_data) = 0;
};

// X(enum_name, "wire_name", "description")
#define IWARP_SCTP_DDP_COUNTERS(X)                                                             \
  X(kTxSegments, "sctp_ddp_tx_segments", "DDP segment chunks sent (PPID 16)")                   \
  X(kTxControl, "sctp_ddp_tx_control", "session control messages sent (PPID 17)")               \
  X(kTxWouldBlock, "sctp_ddp_tx_would_block", "sends refused: SCTP send buffer full")          \
  X(kRxSegments, "sctp_ddp_rx_segments", "DDP segments delivered in DDP-SSN order")             \
  X(kRxControl, "sctp_ddp_rx_control", "session control messages accepted")                   \
  X(kRxReordered, "sctp_ddp_rx_reordered", "chunks held until earlier DDP-SSNs arrived")      \
  X(kAssocRefusedNoDdp, "sctp_assoc_refused_no_ddp",                                           \
    "associations aborted: peer sent no adaptation indication (RFC 5043 11.1)")                \
  X(kAssocRefusedOther, "sctp_assoc_refused_other",                                            \
    "associations aborted: peer indicated another adaptation (RFC 5043 11.1)")                 \
  X(kDropBadPpid, "sctp_ddp_drop_bad_ppid", "drop: PPID neither 16 nor 17")                   \
  X(kDropBadStream, "sctp_ddp_drop_bad_stream", "drop: SCTP stream id beyond the DDP streams")  \
  X(kOrderedChunk, "sctp_ddp_ordered_chunk", "chunk without the U flag (RFC 5043 10), processed") \
  X(kDropNotUp, "sctp_ddp_drop_not_up", "drop: user data before the association was up for DDP") \
  X(kDropAfterFailure, "sctp_ddp_drop_after_failure",                                          \
    "drop: chunk on a failed stream before the peer's Terminate")                               \
  X(kDropIdle, "sctp_ddp_drop_idle", "drop: chunk other than Initiate on an idle stream")     \
  X(kInitiateLimit, "sctp_ddp_initiate_limit",                                                 \
    "Initiates answered with Terminate: pending limit (RFC 5043 6.4)")                          \
  X(kEndIllegalSequence, "sctp_ddp_end_illegal_sequence", "streams ended: illegal sequence (RFC 5043 6.1)") \
  X(kEndBadSsn, "sctp_ddp_end_bad_ssn", "streams ended: DDP-SSN not explainable (RFC 5043 10)") \
  X(kEndReorderFull, "sctp_ddp_end_reorder_full", "streams ended: reorder store full")        \
  X(kEndMalformed, "sctp_ddp_end_malformed", "streams ended: malformed chunk (RFC 5043 5.2, 9)") \
  X(kTerminateDeferred, "sctp_ddp_terminate_deferred", "Terminates sent later: send buffer was full") \
  X(kTerminateLost, "sctp_ddp_terminate_lost", "Terminates answering an Initiate over the limit not sent: send buffer full") \
  X(kTxFlushes, "sctp_ddp_tx_flushes", "send batches handed to usrsctp by DdpAssociation::Flush (bundle_sends)") \
  X(kTxDropAtFlush, "sctp_ddp_tx_drop_at_flush", "drop: a chunk accepted for a batch that usrsctp then refused (association failing)")

enum class DdpCounter : uint8_t {
#define IWARP_SCTP_X(e, n, d) e,
  IWARP_SCTP_DDP_COUNTERS(IWARP_SCTP_X)
#undef IWARP_SCTP_X
      kCount
};
std::string_view DdpCounterName(DdpCounter c);

struct SessionEngineConfig {
  uint16_t streams = 8;
  uint32_t mulpdu = kMinMaxDdpSegmentSize;  // largest DDP segment sent or accepted (RFC 5043 9)
  uint32_t max_pending_initiates = 4;       // RFC 5043 6.4
  uint32_t reorder_window = 1024;           // power of two, <= 32768
  uint32_t reorder_chunks = 512;            // out-of-order chunks held, all streams
};

class SessionEngine {
 public:
  // `config` must be valid (see ValidateSessionEngineConfig); `out` and
  // `events` must outlive the engine.
  SessionEngine(const SessionEngineConfig& config, ChunkOutput* out, DdpLlpEvents* events);

  // ---- receive path: one DATA chunk's user data, any order ----
  void OnChunk(uint16_t stream, uint32_t ppid, bool unordered, ByteSpan user_data);
  // A message longer than any legal chunk arrived on `stream` (RFC 5043 9).
  void OnOversizeChunk(uint16_t stream);
  // The association is gone: every session ends (11.3) and streams reset.
  void OnAssociationDown();
  // Sends Terminates that found the send buffer full earlier.
  void FlushDeferred();

  // ---- send path (RFC 5043 6) ----
  SendResult Initiate(uint16_t stream, ByteSpan private_data);
  SendResult Accept(uint16_t stream, ByteSpan private_data);
  SendResult Reject(uint16_t stream, ByteSpan private_data);
  // Ends the session on `stream` (6.2, or 6.4 answering an Initiate). Never
  // kWouldBlock: with the send buffer full the Terminate is owed and sent
  // by FlushDeferred() (sctp_ddp_terminate_deferred).
  SendResult Terminate(uint16_t stream);
  SendResult SendSegment(uint16_t stream, ByteSpan ddp_segment);

  uint32_t mulpdu() const { return config_.mulpdu; }
  uint16_t streams() const { return config_.streams; }
  bool StreamOpen(uint16_t stream) const;
  bool StreamIdle(uint16_t stream) const;
  uint32_t pending_initiates() const { return pending_initiates_; }
  size_t held_chunks() const { return config_.reorder_chunks - free_slots_.size(); }

  void Count(DdpCounter c) { ++counters_[static_cast<size_t>(c)]; }
  uint64_t counter(DdpCounter c) const { return counters_[static_cast<size_t>(c)]; }
  uint64_t ends(StreamEnd e) const { return ends_[static_cast<size_t>(e)]; }

 private:
  enum class StreamState : uint8_t {
    kIdle,
    kInitiateSent,
    kInitiateReceived,
    kOpen,
    kTerminateSent,  // our Terminate sent; the peer's still to come
    kFailed,         // local error: our Terminate sent (or owed); waiting for the peer's
  };
  struct Stream {
    StreamState state = StreamState::kIdle;
    Seq16 tx_ssn;                 // next DDP-SSN we send
    Seq16 rx_next;                // next DDP-SSN to process
    bool terminate_owed = false;  // a Terminate still to send (buffer was full)
    Seq16 owed_ssn;               // the DDP-SSN that Terminate carries
    uint32_t held = 0;            // chunks in the reorder store
  };
  struct Held {
    uint32_t ppid = 0;
    uint32_t length = 0;  // chunk user data bytes (DDP-SSN included)
  };

  void ProcessInOrder(uint16_t sid, uint32_t ppid, ByteSpan data);
  void DrainHeld(uint16_t sid);
  void Fail(uint16_t sid, StreamEnd why);
  void ResetStream(uint16_t sid);
  void ReleaseHeld(uint16_t sid);
  // Sends our Terminate (or owes it) and leaves the state to the caller.
  void SendTerminateOrOwe(uint16_t sid);
  SendResult SendControl(uint16_t sid, FunctionCode f, ByteSpan pd);
  SendResult SendWithSsn(uint16_t sid, uint32_t ppid, Seq16 ssn, ByteSpan head, ByteSpan body);
  SendResult CheckStream(uint16_t stream) const;
  void End(uint16_t sid, StreamEnd why);
  int32_t& RingSlot(uint16_t sid, Seq16 ssn) {
    return ring_[size_t{sid} * config_.reorder_window + (ssn.value() & (config_.reorder_window - 1))];
  }

  SessionEngineConfig config_;
  ChunkOutput* out_;
  DdpLlpEvents* events_;
  uint32_t chunk_max_;  // DDP-SSN + largest DDP segment
  uint32_t pending_initiates_ = 0;
  std::vector<Stream> streams_;
  // Reorder store: reorder_chunks slots of chunk_max_ bytes; per stream a
  // ring of reorder_window slot indices (-1 = empty) indexed by DDP-SSN.
  std::vector<uint8_t> held_bytes_;
  std::vector<Held> held_meta_;
  std::vector<int32_t> free_slots_;
  std::vector<int32_t> ring_;
  std::vector<uint8_t> tx_buf_;
  std::array<uint64_t, static_cast<size_t>(DdpCounter::kCount)> counters_{};
  std::array<uint64_t, static_cast<size_t>(StreamEnd::kCount)> ends_{};
};

// Empty string if `c` is usable, else what is wrong with it.
std::string_view ValidateSessionEngineConfig(const SessionEngineConfig& c);

}  // namespace iwarp::sctp

#endif  // IWARPD_SCTP_SESSION_ENGINE_H_
