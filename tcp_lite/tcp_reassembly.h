// Internal to tcp_lite/: a building block of TcpStack's implementation; not API.
//
// TCP receive-side reassembly of out-of-order segments, with SACK and D-SACK
// block generation (RFC 9293 3.10.7.4, RFC 2018 section 4, RFC 2883).
//
// The reassembler holds references to segments, never copies: a segment is a
// payload span plus an opaque 64-bit handle owned by the caller (an mbuf
// pointer in the data plane). Bytes become deliverable once they are
// contiguous with rcv_nxt; they are handed to the sink as pieces (handle,
// offset, length) in stream order.
//
// Contracts:
//  - One reassembler per receive half connection, owned by the connection's
//    worker core; not thread safe.
//  - All memory is allocated by the constructor (max_segments entries plus a
//    scratch array of the same size). Insert() never allocates, throws or logs.
//  - Every handle passed to Insert() is handed to ReasmSink::OnRelease()
//    exactly once: during that Insert() when nothing of it is kept, after its
//    last piece is delivered, or by Clear() / the destructor. Its payload must
//    stay valid and unchanged until then. A handle is never released while
//    a piece of it is still held, and no piece of it is delivered afterwards.
//  - Overlaps: the first copy wins (RFC 9293 3.10.7.4 allows either). Bytes
//    already delivered or held are trimmed from a new segment, which may then
//    be kept as several pieces; held pieces are never modified.
//  - Sequence numbers and lengths come from the peer: they are checked, never
//    asserted. Arithmetic is done relative to rcv_nxt in Seq32 space, so the
//    2^32 wrap is transparent.
//  - Capacity (segments and bytes held out of order) is fixed; when a segment
//    does not fit it is dropped with a reason. Data at rcv_nxt is always taken,
//    whatever the occupancy, so a full structure cannot deadlock the stream.
#ifndef IWARPD_TCP_LITE_TCP_REASSEMBLY_H_
#define IWARPD_TCP_LITE_TCP_REASSEMBLY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "common/seq.h"
#include "tcp_lite/tcp_segment.h"

namespace iwarp::tcp {

// Opaque reference to the buffer a segment's payload lives in.
using SegmentHandle = uint64_t;

// RFC 7323 2.3: the largest window a scaled TCP window can announce.
inline constexpr uint32_t kMaxReceiveWindow = uint32_t{1} << 30;
// Longest payload accepted in one Insert(); longer ones are kTooLong.
inline constexpr size_t kMaxSegmentPayload = kMaxReceiveWindow;

// Why (part of) a segment was not taken. One counter each in ReasmStats.
// X(enumerator, "name")
#define IWARP_TCP_REASM_DROPS(X)                                                                                  \
  X(kNone, "none")  /* every new in-window byte was delivered or held */                                          \
  X(kDuplicate, "tcp_reasm_duplicate")  /* no byte that was not already received (D-SACK sent) */                 \
  X(kOutOfWindow, "tcp_reasm_out_of_window")  /* RFC 9293 3.10.7.4: no byte inside [rcv_nxt, rcv_nxt + window) */ \
  X(kBeyondFin, "tcp_reasm_beyond_fin")  /* all data lies at or after the FIN already received */                 \
  /* FIN at a position other than the one already received, or before data already received */                    \
  X(kFinConflict, "tcp_reasm_fin_conflict")                                                                       \
  X(kTooLong, "tcp_reasm_too_long")  /* payload longer than kMaxSegmentPayload */                                 \
  X(kSegmentCapacity, "tcp_reasm_segment_capacity")  /* out-of-order part needs more entries than are free */     \
  X(kByteCapacity, "tcp_reasm_byte_capacity")  /* out-of-order part needs more bytes than are free */
enum class ReasmDrop : uint8_t {
  IWARP_TCP_REASM_DROPS(IWARP_ENUMERATOR)
  kCount
};
inline constexpr size_t kNumReasmDrops = static_cast<size_t>(ReasmDrop::kCount);

std::string_view ReasmDropName(ReasmDrop d);

struct ReasmSegment {
  Seq32 seq;              // SEG.SEQ of the first payload byte
  ByteSpan payload;       // SEG.LEN octets, referenced until released
  bool fin = false;       // FIN flag: it occupies seq + payload.size()
  SegmentHandle handle = 0;
};

// In-order bytes [seq, seq + data.size()); data is payload bytes
// [offset, offset + data.size()) of the segment `handle` was inserted with.
struct ReasmPiece {
  Seq32 seq;
  ByteSpan data;
  SegmentHandle handle = 0;
  uint32_t offset = 0;
};

// SackBlock and kMaxSackBlocks (RFC 2018 3) are the option codec's, so that
// blocks go from SackBlocks() into EncodeAckOptions() as they are.

// Receives in-order pieces and released handles. Calls are made from inside
// Insert(), Clear() and the destructor, on the owning core.
class ReasmSink {
 public:
  virtual ~ReasmSink() = default;
  // Called in stream order; the span is valid until the handle is released.
  virtual void OnDeliver(const ReasmPiece& piece) = 0;
  // The reassembler keeps no reference to `handle` any more.
  virtual void OnRelease(SegmentHandle handle) = 0;
};

struct ReasmConfig {
  size_t max_segments = 64;          // out-of-order pieces held at most
  size_t max_bytes = 256 * 1024;     // out-of-order bytes held at most
  uint32_t window = 64 * 1024;       // RCV.WND; capped at kMaxReceiveWindow
  size_t sack_blocks = kMaxSackBlocks;  // blocks per ACK, 1..kMaxSackBlocks
};

struct InsertResult {
  ReasmDrop drop = ReasmDrop::kNone;  // see ReasmDrop; kNone if all new bytes were taken
  uint32_t delivered = 0;             // bytes delivered by this call (any segment)
  uint32_t queued = 0;                // bytes of this segment held out of order
  bool fin_reached = false;           // all data before the FIN is delivered and
                                      // rcv_nxt moved past the FIN (reported once)
};

struct ReasmStats {
  uint64_t segments = 0;            // Insert() calls
  uint64_t delivered_bytes = 0;
  uint64_t delivered_pieces = 0;
  uint64_t queued_segments = 0;     // segments of which some bytes were held out of order
  uint64_t queued_bytes = 0;
  uint64_t duplicate_segments = 0;  // segments with no new byte (== drops[kDuplicate])
  uint64_t duplicate_bytes = 0;     // their payload bytes
  uint64_t trimmed_bytes = 0;       // bytes cut from taken segments: already
                                    // received, beyond the window or the FIN
  uint64_t dsack_blocks = 0;        // D-SACK ranges recorded (RFC 2883)
  uint64_t drops[kNumReasmDrops] = {};
};

class Reassembler {
 public:
  // rcv_nxt: the next sequence number expected (IRS + 1 after the handshake).
  // The sink must outlive the reassembler.
  Reassembler(const ReasmConfig& config, Seq32 rcv_nxt, ReasmSink& sink);
  // Releases every handle still held (as Clear()).
  ~Reassembler();

  Reassembler(const Reassembler&) = delete;
  Reassembler& operator=(const Reassembler&) = delete;

  // Takes one received segment: trims it to the window and to what was not
  // received before, delivers what became contiguous and holds the rest.
  InsertResult Insert(const ReasmSegment& segment);

  // Sets RCV.WND (capped at kMaxReceiveWindow) for the following Insert()
  // calls. Data already held beyond a shrunk window is kept; only new
  // segments are checked against the new right edge.
  void SetWindow(uint32_t window);

  // Writes the SACK blocks for the ACK answering the latest Insert() and
  // returns how many (at most min(out.size(), config sack_blocks)).
  //  - RFC 2883 4: if the latest segment carried bytes already received, the
  //    first block is that duplicate range (the D-SACK), which may lie below
  //    rcv_nxt; it is reported for that one ACK only.
  //  - RFC 2018 4: the next block is the one holding the most recently
  //    received out-of-order segment, then the blocks of earlier arrivals,
  //    most recent first; remaining room gets other held blocks, lowest first.
  //  - Other blocks are maximal runs of held bytes: they never cover rcv_nxt
  //    or anything below it, and adjacent pieces are merged.
  size_t SackBlocks(std::span<SackBlock> out) const;

  // Drops everything held and releases its handles (connection abort).
  // rcv_nxt and the FIN state are unchanged.
  void Clear();

  // Reuses the reassembler for a new connection: Clear(), then rcv_nxt, the
  // window and the FIN state start afresh and the statistics are zeroed.
  // Allocates nothing (connection tables construct one per slot up front).
  void Reset(Seq32 rcv_nxt, uint32_t window);

  Seq32 rcv_nxt() const { return rcv_nxt_; }
  uint32_t window() const { return window_; }
  bool fin_received() const { return fin_known_; }
  bool fin_delivered() const { return fin_delivered_; }
  Seq32 fin_seq() const { return fin_seq_; }  // meaningful if fin_received()
  size_t held_segments() const { return held_count_; }
  size_t held_bytes() const { return held_bytes_; }
  const ReasmStats& stats() const { return stats_; }

 private:
  // A held out-of-order piece of one segment. `release` is set on the
  // highest piece of its handle: removing that piece releases the handle.
  struct Entry {
    Seq32 seq;
    uint32_t length;
    uint32_t offset;
    const uint8_t* payload;  // start of the segment's payload
    SegmentHandle handle;
    bool release;
  };
  // A piece of the new segment, as a range relative to rcv_nxt.
  struct Gap {
    uint32_t rel;
    uint32_t length;
  };
  static constexpr size_t kSackHistory = 8;

  uint32_t Rel(Seq32 s) const { return static_cast<uint32_t>(s - rcv_nxt_); }
  bool CheckFin(Seq32 fin_pos, InsertResult* result);
  size_t FirstEntryEndingAfter(uint32_t rel) const;
  uint32_t DeliverContiguous(const ReasmSegment& seg, uint32_t seg_base_rel, size_t gaps,
                             size_t* next_gap);
  void StoreGaps(const ReasmSegment& seg, uint32_t seg_base_rel, size_t first, size_t last);
  void FinishInsert(InsertResult* result);
  void Drop(ReasmDrop reason, InsertResult* result);
  void RecordDsack(Seq32 left, Seq32 right);
  void NoteArrival(Seq32 point);
  // Index range [first, last) of the held block containing `point`, or false.
  bool BlockOf(Seq32 point, size_t* first, size_t* last) const;

  const size_t max_segments_;
  const size_t max_bytes_;
  const size_t sack_blocks_;
  ReasmSink& sink_;
  std::unique_ptr<Entry[]> entries_;  // sorted by seq, disjoint, all > rcv_nxt
  std::unique_ptr<Gap[]> gaps_;       // scratch for Insert(): max_segments + 1
  size_t held_count_ = 0;
  size_t held_bytes_ = 0;

  Seq32 rcv_nxt_;
  uint32_t window_;
  Seq32 fin_seq_;
  bool fin_known_ = false;
  bool fin_delivered_ = false;

  bool dsack_valid_ = false;
  SackBlock dsack_;
  // Points inside blocks of recent out-of-order arrivals, most recent first.
  Seq32 history_[kSackHistory];
  size_t history_count_ = 0;

  ReasmStats stats_;
};

}  // namespace iwarp::tcp

#endif  // IWARPD_TCP_LITE_TCP_REASSEMBLY_H_
