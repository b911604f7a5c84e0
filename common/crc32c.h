// CRC32c (Castagnoli polynomial 0x1EDC6F41, reflected), as used for iSCSI
// digests (RFC 3720 12.1, B.4), MPA FPDUs (RFC 5044 4.4) and SCTP.
//
// Backed by ISA-L's crc32_iscsi, which picks a SSE4.2/PCLMUL/AVX-512 kernel at
// run time. ISA-L's convention: crc32_iscsi(buf, len, state) folds buf into a
// raw, non-inverted register and returns the new register. The CRC32c value is
// ~crc32_iscsi(buf, len, 0xFFFFFFFF) (initial value all ones, final XOR all
// ones); the unit tests pin this against the RFC 3720 B.4 vectors. Every
// call returns with the vector registers' upper halves clean (ISA-L's
// AVX-512 kernel leaves them dirty; see crc32c.cc).
//
// Nothing here allocates or fails; every function may run on the fast path.
#ifndef IWARPD_COMMON_CRC32C_H_
#define IWARPD_COMMON_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"

namespace iwarp {

// One-shot CRC32c value of `data` (initial value and final XOR applied).
uint32_t Crc32c(ByteSpan data);

// Incremental CRC32c over pieces presented in stream order (an FPDU header,
// payload pieces from several mbufs, pad). Value() equals Crc32c() of the
// concatenation of every piece given since construction or Reset(). A plain
// value type: copy it to checkpoint a partial CRC.
class Crc32cAccumulator {
 public:
  void Update(ByteSpan piece) { Update(piece.data(), piece.size()); }
  void Update(const uint8_t* p, size_t n);
  // The CRC32c value of everything so far; does not end the accumulation.
  uint32_t Value() const { return ~state_; }
  void Reset() { state_ = kInitialState; }

 private:
  static constexpr uint32_t kInitialState = 0xFFFFFFFFu;
  uint32_t state_ = kInitialState;
};

// Copies n bytes from src to dst (which must not overlap) and folds the same
// bytes into `crc`, touching each source byte while it is still in L1: the
// copy and the CRC run block by block (kCopyCrc32cBlock bytes at a time),
// which crc32c_bench measured against separate whole-buffer passes.
void CopyAndCrc32c(uint8_t* dst, const uint8_t* src, size_t n,
                   Crc32cAccumulator& crc);

// Block size CopyAndCrc32c uses (see crc32c_bench for the measurement).
inline constexpr size_t kCopyCrc32cBlock = 4096;

// The CRC field's byte order on the wire. RFC 5044 4.4 Figure 5: the value
// 0x83992352 is sent as 52 23 99 83, i.e. least significant byte first (the
// iSCSI digest order; what siw sends and Wireshark checks).
inline void StoreCrc32cWire(uint8_t* p, uint32_t crc) {
  p[0] = static_cast<uint8_t>(crc);
  p[1] = static_cast<uint8_t>(crc >> 8);
  p[2] = static_cast<uint8_t>(crc >> 16);
  p[3] = static_cast<uint8_t>(crc >> 24);
}
inline uint32_t LoadCrc32cWire(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) |
         (uint32_t{p[3]} << 24);
}

namespace internal {
// CopyAndCrc32c with an explicit block size (block > 0); for the benchmark
// that chooses kCopyCrc32cBlock.
void CopyAndCrc32cBlocked(uint8_t* dst, const uint8_t* src, size_t n,
                          Crc32cAccumulator& crc, size_t block);
}  // namespace internal

}  // namespace iwarp

#endif  // IWARPD_COMMON_CRC32C_H_
