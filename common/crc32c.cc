#include "common/crc32c.h"

#include <isa-l.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace iwarp {
namespace {

// On a CPU with AVX-512 and VPCLMULQDQ, crc32_iscsi runs ISA-L's 512-bit
// kernel (crc32_iscsi_by16_10), which returns without VZEROUPPER (ISA-L
// 2.30, Debian 12's): the upper halves of the vector registers stay dirty,
// and every legacy-SSE instruction after it (this project is compiled for
// baseline x86-64, so all of its SSE code is legacy-encoded) pays the
// AVX-to-SSE transition. On the worker's path, four CRC calls per FPDU
// between TCP and framing code, that cost more than the CRC itself:
// crc32c_bench's FpduCrcBetweenSse case measures it, and 64 KiB Writes over
// vhost-user went 1.6x faster with the registers cleaned after each call.
// VZEROUPPER is an AVX instruction, so it runs only where AVX exists.
#if defined(__x86_64__)
const bool kCleanUpperState = [] {
  __builtin_cpu_init();  // may run before libgcc's own constructor
  return __builtin_cpu_supports("avx") != 0;
}();

// Inline (no call on the per-FPDU path); it leaves the registers' low 128
// bits, all that legacy-SSE code uses, as they are.
inline void ZeroUpper() { asm volatile("vzeroupper"); }
#else
constexpr bool kCleanUpperState = false;
inline void ZeroUpper() {}
#endif

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
  if (kCleanUpperState) ZeroUpper();
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
