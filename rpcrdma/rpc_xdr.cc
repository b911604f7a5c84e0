#include "rpcrdma/rpc_xdr.h"

#include <algorithm>
#include <cstring>

namespace iwarp::rpc {

std::string_view XdrErrorName(XdrError e) {
  using Enum = XdrError;
  switch (e) { IWARP_XDR_ERRORS(IWARP_ENUM_NAME_CASE) }
  return "unknown";
}

namespace {

// A piece's extent in the stream: its bytes plus, for a DDP piece, the pad
// the transport writes for it (rpc_transport.h).
size_t StreamExtent(const Piece& p) {
  return p.bytes.size() + (p.ddp ? XdrPadding(p.bytes.size()) : 0);
}

}  // namespace

// ------------------------------------------------------------------ decoder

void XdrDecoder::SettlePiece() {
  while (piece_ < msg_->count() && offset_ == StreamExtent((*msg_)[piece_])) {
    ++piece_;
    offset_ = 0;
  }
}

bool XdrDecoder::Take(uint8_t* dst, uint64_t n) {
  if (!ok()) return false;
  if (n > remaining()) {
    Fail(XdrError::kTruncated);
    return false;
  }
  uint64_t left = n;
  while (left > 0) {
    SettlePiece();
    // remaining() >= left guarantees a piece here.
    const Piece& p = (*msg_)[piece_];
    const size_t extent = StreamExtent(p);
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(left, extent - offset_));
    if (dst != nullptr) {
      // Own bytes first, then the implied pad's zeros.
      const size_t own = offset_ < p.bytes.size() ? std::min(chunk, p.bytes.size() - offset_) : 0;
      if (own > 0) std::memcpy(dst, p.bytes.data() + offset_, own);
      if (chunk > own) std::memset(dst + own, 0, chunk - own);
      dst += chunk;
    }
    offset_ += chunk;
    left -= chunk;
  }
  position_ += n;
  return true;
}

bool XdrDecoder::Contiguous(size_t n) const {
  // The caller has settled the cursor.
  if (piece_ >= msg_->count()) return n == 0;
  const Piece& p = (*msg_)[piece_];
  return offset_ <= p.bytes.size() && p.bytes.size() - offset_ >= n;
}

uint32_t XdrDecoder::U32() {
  uint8_t b[4];
  return Take(b, 4) ? LoadBe32(b) : 0;
}

uint64_t XdrDecoder::Hyper() {
  uint8_t b[8];
  return Take(b, 8) ? LoadBe64(b) : 0;
}

bool XdrDecoder::Bool() {
  const uint32_t v = U32();
  if (v > 1) {
    Fail(XdrError::kBadBool);
    return false;
  }
  return v == 1;
}

bool XdrDecoder::Skip(uint64_t n) { return Take(nullptr, n); }

ByteSpan XdrDecoder::OpaqueFixed(size_t n, MutableByteSpan scratch) {
  if (!ok()) return {};
  if (XdrRoundUp(n) > remaining()) {
    Fail(XdrError::kTruncated);
    return {};
  }
  SettlePiece();
  ByteSpan out;
  last_stag_ = 0;
  if (Contiguous(n)) {
    if (n > 0) {
      out = (*msg_)[piece_].bytes.subspan(offset_, n);
      last_stag_ = (*msg_)[piece_].stag;
    }
    Take(nullptr, n);
  } else if (scratch.size() >= n) {
    Take(scratch.data(), n);
    out = scratch.first(n);
  } else {
    Fail(XdrError::kNoScratch);
    return {};
  }
  Take(nullptr, XdrPadding(n));
  return ok() ? out : ByteSpan{};
}

ByteSpan XdrDecoder::Opaque(uint32_t max, MutableByteSpan scratch) {
  const uint32_t len = U32();
  if (!ok()) return {};
  if (len > max) {
    Fail(XdrError::kTooLong);
    return {};
  }
  return OpaqueFixed(len, scratch);
}

std::string_view XdrDecoder::String(uint32_t max, MutableByteSpan scratch) {
  ByteSpan b = Opaque(max, scratch);
  return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}

size_t XdrDecoder::OpaqueCopy(MutableByteSpan out) {
  const uint32_t len = U32();
  if (!ok()) return 0;
  if (len > out.size()) {
    Fail(XdrError::kTooLong);
    return 0;
  }
  if (XdrRoundUp(len) > remaining()) {
    Fail(XdrError::kTruncated);
    return 0;
  }
  Take(out.data(), len);
  Take(nullptr, XdrPadding(len));
  return ok() ? len : 0;
}

ByteSpan XdrDecoder::DdpOpaque(uint32_t max, MutableByteSpan scratch) {
  if (ddp_taken_ >= ddp_result_count_) return Opaque(max, scratch);
  const uint32_t len = U32();
  if (!ok()) return {};
  if (len > max) {
    Fail(XdrError::kTooLong);
    return {};
  }
  const ByteSpan placed = ddp_results_[ddp_taken_];
  if (len != placed.size()) {
    Fail(XdrError::kDdpMismatch);
    return {};
  }
  ++ddp_taken_;
  return placed;
}

// ------------------------------------------------------------------ encoder

uint8_t* XdrEncoder::Reserve(size_t n) {
  if (!ok()) return nullptr;
  if (buf_.size() - used_ < n) {
    Fail(XdrError::kOverflow);
    return nullptr;
  }
  uint8_t* p = buf_.data() + used_;
  used_ += n;
  stream_length_ += n;
  return p;
}

void XdrEncoder::U32(uint32_t v) {
  if (uint8_t* p = Reserve(4)) StoreBe32(p, v);
}

void XdrEncoder::Hyper(uint64_t v) {
  if (uint8_t* p = Reserve(8)) StoreBe64(p, v);
}

void XdrEncoder::OpaqueFixed(ByteSpan b) {
  const size_t pad = XdrPadding(b.size());
  if (b.size() > buf_.size()) {  // keeps b.size() + pad from wrapping
    Fail(XdrError::kOverflow);
    return;
  }
  uint8_t* p = Reserve(b.size() + pad);
  if (p == nullptr) return;
  if (!b.empty()) std::memcpy(p, b.data(), b.size());
  std::memset(p + b.size(), 0, pad);
}

void XdrEncoder::Opaque(ByteSpan b) {
  if (b.size() > UINT32_MAX) {
    Fail(XdrError::kOverflow);
    return;
  }
  U32(static_cast<uint32_t>(b.size()));
  OpaqueFixed(b);
}

void XdrEncoder::String(std::string_view s) {
  Opaque(ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

bool XdrEncoder::AddPiece(const Piece& p) {
  if (piece_count_ == kMaxPieces) {
    Fail(XdrError::kOverflow);
    return false;
  }
  pieces_[piece_count_++] = p;
  return true;
}

void XdrEncoder::DdpOpaque(ByteSpan body, uint32_t stag) {
  if (body.size() > UINT32_MAX) {
    Fail(XdrError::kOverflow);
    return;
  }
  U32(static_cast<uint32_t>(body.size()));
  if (!ok()) return;
  if (stream_length_ % 4 != 0) {  // RFC 8166 3.4.5; cannot happen with whole items
    Fail(XdrError::kMisaligned);
    return;
  }
  // Close the inline piece ending with the length word, then the body.
  if (!AddPiece(Piece{ByteSpan(buf_.data() + inline_start_, used_ - inline_start_)})) return;
  inline_start_ = used_;
  if (!AddPiece(Piece{body, true, stag})) return;
  stream_length_ += body.size() + XdrPadding(body.size());
}

bool XdrEncoder::Finish(Message* out) {
  if (ok() && used_ > inline_start_) {
    AddPiece(Piece{ByteSpan(buf_.data() + inline_start_, used_ - inline_start_)});
    inline_start_ = used_;
  }
  if (!ok()) return false;
  if (out->count() + piece_count_ > kMaxPieces) {
    Fail(XdrError::kOverflow);
    return false;
  }
  for (size_t i = 0; i < piece_count_; ++i) {
    if (!out->Add(pieces_[i])) {
      Fail(XdrError::kMisaligned);
      return false;
    }
  }
  piece_count_ = 0;
  return true;
}

}  // namespace iwarp::rpc
