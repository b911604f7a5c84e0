// XDR (RFC 4506) over an RPC Message (rpc_transport.h): a decoder that walks
// the message's pieces, honouring the implied pads of DDP-eligible pieces,
// and an encoder that builds a Message out of a caller buffer plus external
// DDP-eligible bodies, copying neither.
//
// Built on rpcrdma/xdr.h's vocabulary (XdrPadding, XdrRoundUp) and
// common/bytes.h's big-endian loads/stores, not on libtirpc's XDR streams:
// xdrmem works on one contiguous buffer, and its xdr_bytes allocates or
// copies, where an NFS WRITE body must come back as a span of the receive
// buffer and a READ result must leave as its own piece.
//
// Errors are soft, as in xdr.h: the first failure is kept in error(), every
// later read yields zero / an empty span, and a caller checks ok() once after
// decoding an item sequence. No read goes past the message and every length
// word is compared with the caller's maximum before anything is done with it.
#ifndef IWARPD_RPCRDMA_RPC_XDR_H_
#define IWARPD_RPCRDMA_RPC_XDR_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "rpcrdma/rpc_transport.h"
#include "rpcrdma/xdr.h"

namespace iwarp::rpc {

using rpcrdma::XdrPadding;
using rpcrdma::XdrRoundUp;

// X(enumerator, "name")
#define IWARP_XDR_ERRORS(X)                                                                               \
  X(kOk, "ok")                                                                                            \
  X(kTruncated, "truncated")  /* an item ran past the end of the message */                               \
  X(kBadBool, "bad_bool")  /* RFC 4506 4.4: a boolean / "is present" word not 0 or 1 */                   \
  X(kTooLong, "too_long")  /* a variable-length item's length word exceeds the caller's maximum */        \
  X(kNoScratch, "no_scratch")  /* an opaque spans pieces and the caller gave no (large enough) scratch */ \
  X(kDdpMismatch, "ddp_mismatch")  /* a DDP result's inline length word differs from the placed length */ \
  X(kOverflow, "overflow")  /* encoder: the caller buffer or the piece list is full */                    \
  X(kMisaligned, "misaligned")  /* encoder: a DDP body requested where the stream is not 4-aligned */
enum class XdrError : uint8_t { IWARP_XDR_ERRORS(IWARP_ENUMERATOR) };

std::string_view XdrErrorName(XdrError e);

// Reads the XDR stream of a Message. The message's pieces must outlive the
// decoder and every span it returned.
class XdrDecoder {
 public:
  explicit XdrDecoder(const Message& m) : msg_(&m) {}
  // A reply as the client received it: DdpOpaque takes the DDP results the
  // transport placed, in order.
  explicit XdrDecoder(const ReplyView& r)
      : msg_(&r.stream), ddp_results_(r.ddp_results), ddp_result_count_(r.ddp_result_count) {}

  bool ok() const { return error_ == XdrError::kOk; }
  XdrError error() const { return error_; }
  // Stream bytes consumed so far (implied pads included).
  uint64_t position() const { return position_; }
  // Stream bytes left (0 once failed).
  uint64_t remaining() const { return ok() ? msg_->stream_length() - position_ : 0; }
  // Sets the error (first one kept): lets a caller reject a value it read.
  void Fail(XdrError e) {
    if (error_ == XdrError::kOk) error_ = e;
  }

  uint32_t U32();
  int32_t I32() { return static_cast<int32_t>(U32()); }
  uint64_t Hyper();
  int64_t IHyper() { return static_cast<int64_t>(Hyper()); }
  bool Bool();
  // RFC 4506 4.3: an enum is a signed int; the caller checks the value.
  int32_t Enum() { return I32(); }
  // RFC 4506 4.19: the "is present" word of optional-data.
  bool Present() { return Bool(); }

  // RFC 4506 4.9: n bytes and their pad. The result references the message
  // when the n bytes lie in one piece; otherwise they are copied into
  // `scratch` (kNoScratch if it is smaller than n).
  ByteSpan OpaqueFixed(size_t n, MutableByteSpan scratch = {});
  // RFC 4506 4.10: length word (at most `max`), bytes, pad. Same span rule.
  ByteSpan Opaque(uint32_t max, MutableByteSpan scratch = {});
  // RFC 4506 4.11: as Opaque, viewed as characters (not NUL-checked).
  std::string_view String(uint32_t max, MutableByteSpan scratch = {});
  // Copies a variable-length opaque into `out` (at most out.size() bytes);
  // returns its length.
  size_t OpaqueCopy(MutableByteSpan out);

  // A result the transport may have moved into ReplyView::ddp_results: if
  // one is pending, takes it (the inline length word must equal its length
  // and be <= max; no body in the stream); otherwise reads the body inline
  // as Opaque(max, scratch).
  ByteSpan DdpOpaque(uint32_t max, MutableByteSpan scratch = {});
  size_t ddp_results_left() const { return ddp_result_count_ - ddp_taken_; }
  // The registration (Piece::stag) of the memory the span the last
  // OpaqueFixed / Opaque / String returned lies in: non-zero when it is a
  // span of a registered piece (an RPC-over-RDMA Read chunk's sink, say),
  // so that a result echoing it can go out by RDMA without a copy; 0 when
  // it was assembled in scratch or its piece is not registered.
  uint32_t last_opaque_stag() const { return last_stag_; }

  // Skips n stream bytes (n a multiple of four for whole items).
  bool Skip(uint64_t n);

 private:
  // Copies n stream bytes to dst (nullptr: skip them) across pieces and pads.
  bool Take(uint8_t* dst, uint64_t n);
  // The next n bytes when they lie in the current piece's own bytes.
  bool Contiguous(size_t n) const;
  void SettlePiece();

  const Message* msg_;
  const ByteSpan* ddp_results_ = nullptr;
  size_t ddp_result_count_ = 0;
  size_t ddp_taken_ = 0;
  size_t piece_ = 0;      // current piece
  size_t offset_ = 0;     // in the current piece, its implied pad included
  uint64_t position_ = 0;
  uint32_t last_stag_ = 0;
  XdrError error_ = XdrError::kOk;
};

// Builds a Message: XDR items are written into a caller buffer, an external
// DDP-eligible body becomes its own piece (its length word stays inline).
// The buffer and every external body must outlive the Message.
class XdrEncoder {
 public:
  explicit XdrEncoder(MutableByteSpan buf) : buf_(buf) {}

  bool ok() const { return error_ == XdrError::kOk; }
  XdrError error() const { return error_; }
  // Bytes written to the caller buffer so far.
  size_t buffer_used() const { return used_; }
  // Stream length so far (external bodies and their pads included).
  uint64_t stream_length() const { return stream_length_; }

  void U32(uint32_t v);
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void Hyper(uint64_t v);
  void IHyper(int64_t v) { Hyper(static_cast<uint64_t>(v)); }
  void Bool(bool v) { U32(v ? 1 : 0); }
  void Enum(int32_t v) { I32(v); }
  void Present(bool v) { Bool(v); }
  // Copied into the buffer, zero-padded.
  void OpaqueFixed(ByteSpan b);
  void Opaque(ByteSpan b);
  void String(std::string_view s);
  // Length word inline, `body` as a DDP-eligible piece (not copied; pad
  // implied), `stag` its registration or 0.
  void DdpOpaque(ByteSpan body, uint32_t stag = 0);

  // Closes the last inline piece and appends every piece to `out` (which
  // may already hold pieces, e.g. a header). False if anything failed.
  bool Finish(Message* out);

 private:
  uint8_t* Reserve(size_t n);
  void Fail(XdrError e) {
    if (error_ == XdrError::kOk) error_ = e;
  }
  bool AddPiece(const Piece& p);

  MutableByteSpan buf_;
  size_t used_ = 0;
  size_t inline_start_ = 0;  // start of the inline piece being written
  Piece pieces_[kMaxPieces];
  size_t piece_count_ = 0;
  uint64_t stream_length_ = 0;
  XdrError error_ = XdrError::kOk;
};

}  // namespace iwarp::rpc

#endif  // IWARPD_RPCRDMA_RPC_XDR_H_
