// Explicit big-endian field access on byte spans (house style rule 6).
//
// Packet fields are read and written through these helpers at named offsets;
// no struct overlays, no bitfields on wire data. The raw Load/Store functions
// take a pointer the caller has already bounds-checked; ByteReader and
// ByteWriter carry the bound with them and fail softly (ok() turns false and
// reads return 0) so that parsers never read past their input.
#ifndef IWARPD_COMMON_BYTES_H_
#define IWARPD_COMMON_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace iwarp {

using ByteSpan = std::span<const uint8_t>;
using MutableByteSpan = std::span<uint8_t>;

inline uint16_t LoadBe16(const uint8_t* p) {
  return static_cast<uint16_t>((uint16_t{p[0]} << 8) | p[1]);
}
inline uint32_t LoadBe32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
inline uint64_t LoadBe64(const uint8_t* p) {
  return (uint64_t{LoadBe32(p)} << 32) | LoadBe32(p + 4);
}
inline void StoreBe16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void StoreBe32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
inline void StoreBe64(uint8_t* p, uint64_t v) {
  StoreBe32(p, static_cast<uint32_t>(v >> 32));
  StoreBe32(p + 4, static_cast<uint32_t>(v));
}

// Sequential big-endian reader over a bounded span. Once a read would run past
// the end, ok() is false for good and every further read yields zeros: a parser
// checks ok() once after reading a header instead of after every field.
class ByteReader {
 public:
  explicit ByteReader(ByteSpan data) : data_(data) {}

  bool ok() const { return ok_; }
  size_t offset() const { return off_; }
  size_t remaining() const { return ok_ ? data_.size() - off_ : 0; }
  ByteSpan rest() const { return ok_ ? data_.subspan(off_) : ByteSpan{}; }

  bool Has(size_t n) const { return ok_ && data_.size() - off_ >= n; }

  uint8_t U8() { return Has(1) ? data_[off_++] : Fail<uint8_t>(); }
  uint16_t U16() { return Take<uint16_t, 2>(LoadBe16); }
  uint32_t U32() { return Take<uint32_t, 4>(LoadBe32); }
  uint64_t U64() { return Take<uint64_t, 8>(LoadBe64); }

  // Returns the next n bytes and advances, or an empty span (and !ok()).
  ByteSpan Bytes(size_t n) {
    if (!Has(n)) return Fail<ByteSpan>();
    ByteSpan s = data_.subspan(off_, n);
    off_ += n;
    return s;
  }
  bool Skip(size_t n) {
    if (!Has(n)) return Fail<bool>();
    off_ += n;
    return true;
  }

 private:
  template <typename T>
  T Fail() {
    ok_ = false;
    return T{};
  }
  template <typename T, size_t N, typename F>
  T Take(F load) {
    if (!Has(N)) return Fail<T>();
    T v = load(data_.data() + off_);
    off_ += N;
    return v;
  }

  ByteSpan data_;
  size_t off_ = 0;
  bool ok_ = true;
};

// Sequential big-endian writer into a bounded buffer. A write that does not
// fit sets !ok() and writes nothing; the caller checks ok() at the end.
class ByteWriter {
 public:
  explicit ByteWriter(MutableByteSpan out) : out_(out) {}

  bool ok() const { return ok_; }
  size_t offset() const { return off_; }
  size_t remaining() const { return ok_ ? out_.size() - off_ : 0; }
  MutableByteSpan written() const { return out_.first(off_); }

  void U8(uint8_t v) {
    if (Reserve(1)) out_[off_++] = v;
  }
  void U16(uint16_t v) { Put<2>(v, StoreBe16); }
  void U32(uint32_t v) { Put<4>(v, StoreBe32); }
  void U64(uint64_t v) { Put<8>(v, StoreBe64); }
  void Bytes(ByteSpan b) {
    if (!Reserve(b.size())) return;
    if (!b.empty()) std::memcpy(out_.data() + off_, b.data(), b.size());
    off_ += b.size();
  }
  void Zeros(size_t n) {
    if (!Reserve(n)) return;
    std::memset(out_.data() + off_, 0, n);
    off_ += n;
  }

 private:
  bool Reserve(size_t n) {
    if (!ok_ || out_.size() - off_ < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  template <size_t N, typename V, typename F>
  void Put(V v, F store) {
    if (Reserve(N)) {
      store(out_.data() + off_, v);
      off_ += N;
    }
  }

  MutableByteSpan out_;
  size_t off_ = 0;
  bool ok_ = true;
};

}  // namespace iwarp

#endif  // IWARPD_COMMON_BYTES_H_
