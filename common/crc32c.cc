#include "common/crc32c.h"

#include <isa-l.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace iwarp {
namespace {

// ISA-L takes an int length and a non-const pointer (it only reads the
// buffer); this wrapper feeds lengths above INT_MAX in slices.
uint32_t Fold(uint32_t state, const uint8_t* p, size_t n) {
  constexpr size_t kMaxSlice = size_t{1} << 30;
  while (n > 0) {
    const size_t slice = std::min(n, kMaxSlice);
    state = crc32_iscsi(const_cast<uint8_t*>(p), static_cast<int>(slice), state);
    p += slice;
    n -= slice;
  }
  return state;
}

}  // namespace

uint32_t Crc32c(ByteSpan data) {
  return ~Fold(0xFFFFFFFFu, data.data(), data.size());
}

void Crc32cAccumulator::Update(const uint8_t* p, size_t n) {
  state_ = Fold(state_, p, n);
}

void CopyAndCrc32c(uint8_t* dst, const uint8_t* src, size_t n,
                   Crc32cAccumulator& crc) {
  internal::CopyAndCrc32cBlocked(dst, src, n, crc, kCopyCrc32cBlock);
}

namespace internal {

void CopyAndCrc32cBlocked(uint8_t* dst, const uint8_t* src, size_t n,
                          Crc32cAccumulator& crc, size_t block) {
  if (block == 0) block = n;
  while (n > 0) {
    const size_t len = std::min(n, block);
    std::memcpy(dst, src, len);
    // The source block was just read by memcpy and is hot in L1.
    crc.Update(src, len);
    dst += len;
    src += len;
    n -= len;
  }
}

}  // namespace internal
}  // namespace iwarp
