// Streaming, resumable MPA FPDU receiver (RFC 5044 sections 4 and 6; house
// style rule 8).
//
// Fed the in-order TCP payload of one direction in pieces of any size (an
// FPDU split over many segments, many FPDUs in one segment), it strips and
// checks Markers, verifies each CRC and hands every validated ULPDU to a sink.
//
// Contracts:
//  - One decoder per receive half connection, owned by the connection's
//    worker core; not thread safe.
//  - The only allocation is the reassembly buffer made by the constructor
//    (max_ulpdu_length + 3 octets). Feed() never allocates, throws or logs.
//  - ULPDU_Length is never trusted beyond max_ulpdu_length.
//  - Every Marker's FPDUPTR is checked against the FPDU it lies in (0 for a
//    Marker between FPDUs). A mismatch is reported once that FPDU's CRC has
//    been checked and found good (RFC 5044 8 code 3 "in the event that the
//    CRC is valid"); a bad CRC is reported as such.
//  - After any error the decoder is in a terminal state: it delivers nothing
//    more and every later Feed() returns the same error (RFC 5044 8: no FPDU
//    is passed after an error). Closing the connection is the caller's job.
//  - An FPDU that lies wholly inside one Feed() piece with no Marker inside
//    it is delivered in place (the ULPDU span points into the piece); others
//    are reassembled in the internal buffer with Markers removed.
#ifndef IWARPD_MPA_MPA_DECODER_H_
#define IWARPD_MPA_MPA_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "common/bytes.h"
#include "common/crc32c.h"
#include "common/enum_names.h"
#include "common/seq.h"
#include "mpa/mpa_error.h"
#include "mpa/mpa_fpdu.h"

namespace iwarp::mpa {

// Receives validated ULPDUs in stream order.
class UlpduSink {
 public:
  virtual ~UlpduSink() = default;
  // `ulpdu` (ULPDU_Length octets, no Markers, pad or CRC) is valid only during
  // the call. fpdu_seq is the sequence number of its ULPDU_Length field.
  virtual void OnUlpdu(ByteSpan ulpdu, Seq32 fpdu_seq) = 0;
};

// X(enumerator, "name")
#define IWARP_MPA_DECODE_STATUSES(X)                                                  \
  X(kOk, "ok")                                                                        \
  X(kCrcError, "crc_error")  /* RFC 5044 8 code 2 */                                  \
  X(kMarkerMismatch, "marker_ulpdu_length_mismatch")  /* RFC 5044 8 code 3 */         \
  X(kUlpduTooLong, "ulpdu_too_long")  /* ULPDU_Length above the configured maximum */
enum class DecodeStatus : uint8_t { IWARP_MPA_DECODE_STATUSES(IWARP_ENUMERATOR) };

std::string_view DecodeStatusName(DecodeStatus s);

// The MPA error code to report (RFC 5044 8). kUlpduTooLong has none (kNone):
// RFC 5044 names no error for an FPDU longer than the receiver accepts, and
// it is not a CRC error, since the CRC was never checked. The engine answers
// it with a DDP Terminate of its own (iwarp/qp.h).
MpaError ToMpaError(DecodeStatus s);

struct FeedResult {
  DecodeStatus status = DecodeStatus::kOk;
  size_t consumed = 0;  // octets used; all of the piece unless an error stopped it
  size_t ulpdus = 0;    // ULPDUs handed to the sink by this call
};

struct FpduDecoderStats {
  uint64_t fpdus = 0;          // ULPDUs delivered
  uint64_t fpdus_in_place = 0; // of which delivered without a copy
  uint64_t markers = 0;        // Markers stripped and checked
  uint64_t octets = 0;         // stream octets consumed
};

class FpduDecoder {
 public:
  // start_seq is the sequence number of the first octet to be fed: the start
  // of an FPDU (or of the Marker in front of it), normally the marker origin.
  // With Markers on, start_seq - config.marker_origin must be a multiple of 4
  // (every FPDU boundary is). max_ulpdu_length is capped at kMaxUlpduLength.
  FpduDecoder(const FpduConfig& config, Seq32 start_seq, size_t max_ulpdu_length);

  FpduDecoder(const FpduDecoder&) = delete;
  FpduDecoder& operator=(const FpduDecoder&) = delete;

  // Consumes the next in-order octets and delivers each FPDU they complete.
  FeedResult Feed(ByteSpan data, UlpduSink& sink);

  DecodeStatus status() const { return status_; }
  // Sequence number of the next octet expected.
  Seq32 next_seq() const { return seq_; }
  // Sequence number of the ULPDU_Length field of the FPDU an error was found
  // in (for the TERMINATE); meaningful when status() != kOk.
  Seq32 error_fpdu_seq() const { return error_fpdu_seq_; }
  // True between FPDUs (nothing of the next FPDU or its Marker seen yet).
  bool at_fpdu_boundary() const { return !fpdu_started_; }
  const FpduDecoderStats& stats() const { return stats_; }
  size_t max_ulpdu_length() const { return max_ulpdu_; }

 private:
  enum class Phase : uint8_t { kHeader, kBody, kCrc };

  size_t TryInPlace(ByteSpan in, UlpduSink& sink);
  size_t ConsumeFpduOctets(ByteSpan in, UlpduSink& sink, size_t* delivered);
  void OnMarkerComplete();
  bool CompleteFpdu(ByteSpan ulpdu, uint32_t received_crc, UlpduSink& sink);
  void StartNextFpdu();
  void Fail(DecodeStatus s);

  const FpduConfig config_;
  const size_t max_ulpdu_;
  std::unique_ptr<uint8_t[]> buf_;  // ULPDU + PAD of the FPDU being reassembled

  DecodeStatus status_ = DecodeStatus::kOk;
  Seq32 seq_;              // next octet
  Seq32 fpdu_seq_;         // ULPDU_Length field of the current FPDU
  Seq32 error_fpdu_seq_;
  uint32_t to_marker_ = 0; // octets until the next Marker slot (Markers on)
  Phase phase_ = Phase::kHeader;
  uint8_t hdr_[kUlpduLengthSize] = {};
  uint8_t crc_field_[kCrcSize] = {};
  uint8_t marker_[kMarkerSize] = {};
  size_t hdr_have_ = 0;
  size_t crc_have_ = 0;
  size_t marker_have_ = 0;
  size_t ulpdu_len_ = 0;
  size_t body_len_ = 0;   // ULPDU + PAD
  size_t body_have_ = 0;
  bool marker_mismatch_ = false;  // a Marker of the current FPDU disagreed
  bool fpdu_started_ = false;     // an octet of the current FPDU was consumed
  Crc32cAccumulator crc_;
  FpduDecoderStats stats_;
};

}  // namespace iwarp::mpa

#endif  // IWARPD_MPA_MPA_DECODER_H_
