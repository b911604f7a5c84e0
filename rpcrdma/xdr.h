// XDR primitives (RFC 4506) on bounded byte spans, built on common/bytes.h.
//
// Only what RPC-over-RDMA headers need: 32-bit words, hypers, booleans (which
// are also the "is present" discriminators of optional-data linked lists) and
// 4-byte round-up. The reader never reads past its span: once a read fails,
// status() keeps the first failure and every further read yields zero.
#ifndef IWARPD_RPCRDMA_XDR_H_
#define IWARPD_RPCRDMA_XDR_H_

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"

namespace iwarp::rpcrdma {

// RFC 4506 3: every XDR item occupies a multiple of four bytes.
inline constexpr size_t kXdrUnit = 4;

// RFC 4506 4.10: bytes of padding that follow n bytes of opaque data.
constexpr size_t XdrPadding(size_t n) { return (kXdrUnit - (n % kXdrUnit)) % kXdrUnit; }
// n rounded up to the next multiple of four, computed without overflow for
// every n a uint32 length field can carry.
constexpr uint64_t XdrRoundUp(uint64_t n) { return (n + 3) & ~uint64_t{3}; }
constexpr bool XdrAligned(uint64_t n) { return (n % kXdrUnit) == 0; }

enum class XdrStatus : uint8_t {
  kOk,
  kTruncated,  // an item ran past the end of the span
  kBadBool,    // RFC 4506 4.4: a boolean (or "is present" word) was not 0 or 1
};

class XdrReader {
 public:
  explicit XdrReader(ByteSpan data) : r_(data) {}

  bool ok() const { return status_ == XdrStatus::kOk; }
  XdrStatus status() const { return status_; }
  // Bytes consumed so far; meaningful while ok().
  size_t offset() const { return r_.offset(); }
  size_t remaining() const { return ok() ? r_.remaining() : 0; }
  bool Has(size_t n) const { return ok() && r_.Has(n); }

  // RFC 4506 4.1 / 4.2 (unsigned) integer.
  uint32_t U32() {
    if (!Has(4)) return Fail(XdrStatus::kTruncated);
    return r_.U32();
  }
  // RFC 4506 4.5 unsigned hyper integer.
  uint64_t Hyper() {
    if (!Has(8)) return Fail(XdrStatus::kTruncated);
    return r_.U64();
  }
  // RFC 4506 4.4: FALSE = 0, TRUE = 1; anything else is a decoding error.
  bool Bool() {
    uint32_t v = U32();
    if (v > 1) {
      Fail(XdrStatus::kBadBool);
      return false;
    }
    return v == 1;
  }
  // RFC 4506 4.19: the "is present" word in front of optional data.
  bool Present() { return Bool(); }
  // Skips n bytes of items the caller has already sized (a multiple of four).
  bool Skip(size_t n) {
    if (!Has(n)) {
      Fail(XdrStatus::kTruncated);
      return false;
    }
    return r_.Skip(n);
  }

 private:
  uint32_t Fail(XdrStatus s) {
    if (status_ == XdrStatus::kOk) status_ = s;
    return 0;
  }

  ByteReader r_;
  XdrStatus status_ = XdrStatus::kOk;
};

// Writes XDR items into a caller buffer. A write that does not fit sets
// !ok() and writes nothing; the caller checks ok() once at the end.
class XdrWriter {
 public:
  explicit XdrWriter(MutableByteSpan out) : w_(out) {}

  bool ok() const { return w_.ok(); }
  size_t offset() const { return w_.offset(); }

  void U32(uint32_t v) { w_.U32(v); }
  void Hyper(uint64_t v) { w_.U64(v); }
  void Bool(bool v) { w_.U32(v ? 1 : 0); }
  void Present(bool v) { Bool(v); }
  // RFC 4506 4.9 / 4.10: opaque bytes followed by zero padding to a multiple of four.
  void OpaqueFixed(ByteSpan b) {
    w_.Bytes(b);
    w_.Zeros(XdrPadding(b.size()));
  }

 private:
  ByteWriter w_;
};

}  // namespace iwarp::rpcrdma

#endif  // IWARPD_RPCRDMA_XDR_H_
