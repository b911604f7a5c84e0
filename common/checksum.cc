#include "common/checksum.h"

#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define IWARP_CHECKSUM_X86 1
#endif

namespace iwarp {

namespace {

// RFC 1071 2(B): the one's-complement sum is byte-order independent, so the
// data is added as host-order 32-bit words into 64-bit lanes and the folded
// result is byte-swapped once on a little-endian host.

constexpr size_t kBlock = 64;
// Blocks per kernel call: keeps every 64-bit lane below 2^56, so the lanes of
// one call add up without overflow.
constexpr size_t kMaxBlocksPerCall = size_t{1} << 20;

// One's-complement addition of 64-bit partial sums (2^64 = 1 mod 0xffff).
uint64_t AddCarry64(uint64_t a, uint64_t b) {
  const uint64_t s = a + b;
  return s + (s < a ? 1 : 0);
}

// Folds a 64-bit one's-complement accumulator into 16 bits (RFC 1071 4.1).
uint32_t Fold64To16(uint64_t acc) {
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffu) + (acc >> 16);
  acc = (acc & 0xffffu) + (acc >> 16);
  return static_cast<uint32_t>(acc);
}

// A bulk kernel sums `blocks` blocks of kBlock octets at `p` as host-order
// 32-bit words and, when `d` is not null, copies them to `d`. The result is an
// unfolded one's-complement sum.
using BulkFn = uint64_t (*)(const uint8_t* p, uint8_t* d, size_t blocks);

uint64_t BulkPortable(const uint8_t* p, uint8_t* d, size_t blocks) {
  uint64_t acc = 0;
  for (size_t b = 0; b < blocks; ++b) {
    uint32_t w[kBlock / 4];
    std::memcpy(w, p, sizeof(w));
    if (d != nullptr) {
      std::memcpy(d, w, sizeof(w));
      d += kBlock;
    }
    for (uint32_t x : w) acc += x;
    p += kBlock;
  }
  return acc;
}

#ifdef IWARP_CHECKSUM_X86

uint64_t BulkSse2(const uint8_t* p, uint8_t* d, size_t blocks) {
  const __m128i zero = _mm_setzero_si128();
  __m128i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
  // The 32-bit words are widened into 64-bit lanes (unpack with zero), so a
  // lane carries without loss for kMaxBlocksPerCall blocks.
  auto add = [&](__m128i v, __m128i& lo, __m128i& hi) {
    lo = _mm_add_epi64(lo, _mm_unpacklo_epi32(v, zero));
    hi = _mm_add_epi64(hi, _mm_unpackhi_epi32(v, zero));
  };
  for (size_t b = 0; b < blocks; ++b) {
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
    const __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32));
    const __m128i v3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 48));
    if (d != nullptr) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d), v0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16), v1);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 32), v2);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 48), v3);
      d += kBlock;
    }
    add(v0, a0, a1);
    add(v1, a2, a3);
    add(v2, a0, a1);
    add(v3, a2, a3);
    p += kBlock;
  }
  const __m128i s = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
  uint64_t lanes[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), s);
  return lanes[0] + lanes[1];
}

__attribute__((target("avx2"))) uint64_t BulkAvx2(const uint8_t* p, uint8_t* d, size_t blocks) {
  const __m256i zero = _mm256_setzero_si256();
  __m256i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
  for (size_t b = 0; b < blocks; ++b) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    if (d != nullptr) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), v0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 32), v1);
      d += kBlock;
    }
    a0 = _mm256_add_epi64(a0, _mm256_unpacklo_epi32(v0, zero));
    a1 = _mm256_add_epi64(a1, _mm256_unpackhi_epi32(v0, zero));
    a2 = _mm256_add_epi64(a2, _mm256_unpacklo_epi32(v1, zero));
    a3 = _mm256_add_epi64(a3, _mm256_unpackhi_epi32(v1, zero));
    p += kBlock;
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t lanes[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

#endif  // IWARP_CHECKSUM_X86

ChecksumImpl PickImpl() {
#ifdef IWARP_CHECKSUM_X86
  __builtin_cpu_init();
  // Checks the OS saves the AVX state as well as the CPUID bit.
  if (__builtin_cpu_supports("avx2")) return ChecksumImpl::kAvx2;
  return ChecksumImpl::kSse2;
#else
  return ChecksumImpl::kPortable;
#endif
}

BulkFn KernelFor(ChecksumImpl impl) {
  switch (impl) {
#ifdef IWARP_CHECKSUM_X86
    case ChecksumImpl::kSse2: return BulkSse2;
    case ChecksumImpl::kAvx2:
      return ChecksumImplAvailable(ChecksumImpl::kAvx2) ? BulkAvx2 : BulkSse2;
#else
    case ChecksumImpl::kSse2:
    case ChecksumImpl::kAvx2:
#endif
    case ChecksumImpl::kPortable: break;
  }
  return BulkPortable;
}

// Adds the fewer than kBlock octets at `p` and the blocks' sum `bulk` to
// `sum`. At most 16 words below 2^32 each: the accumulator cannot overflow.
// Inline and free of calls: most calls (pseudo-headers, TCP/IP headers) are
// short spans and take only this path (common/checksum_bench, callgrind:
// as many instructions per short call as the former scalar loop).
inline uint32_t TailSum(const uint8_t* p, size_t n, uint64_t bulk, uint32_t sum) {
  uint64_t acc = 0;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, sizeof(w));
    acc += (w & 0xffffffffu) + (w >> 32);
    p += 8;
    n -= 8;
  }
  if (n >= 4) {
    uint32_t w;
    std::memcpy(&w, p, sizeof(w));
    acc += w;
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    uint16_t w;
    std::memcpy(&w, p, sizeof(w));
    acc += w;
    p += 2;
    n -= 2;
  }
  if (n == 1) {
    // RFC 1071 4.1: the odd final byte is the high byte of a zero-padded word.
    const uint8_t pad[2] = {p[0], 0};
    uint16_t w;
    std::memcpy(&w, pad, sizeof(w));
    acc += w;
  }
  uint32_t folded = Fold64To16(AddCarry64(acc, bulk));
  if constexpr (std::endian::native == std::endian::little) {
    folded = ((folded & 0xffu) << 8) | (folded >> 8);
  }
  // Add to the caller's running sum; stay within 32 bits.
  const uint64_t total = uint64_t{sum} + folded;
  return static_cast<uint32_t>((total & 0xffffffffu) + (total >> 32));
}

// Sums (and, with `d`, copies) `n` octets at `p` with `kernel` for whole
// blocks and 32/16/8-bit words for the tail; adds the result to `sum`.
// Spans shorter than a block (pseudo-headers, TCP/IP headers: most calls)
// never reach the kernel: ChecksumAdd takes them to TailSum directly.
uint32_t SumAndCopy(BulkFn kernel, const uint8_t* p, uint8_t* d, size_t n, uint32_t sum) {
  uint64_t bulk = 0;
  while (n >= kBlock) {
    const size_t blocks = n / kBlock < kMaxBlocksPerCall ? n / kBlock : kMaxBlocksPerCall;
    bulk = AddCarry64(bulk, kernel(p, d, blocks));
    p += blocks * kBlock;
    if (d != nullptr) d += blocks * kBlock;
    n -= blocks * kBlock;
  }
  if (d != nullptr && n > 0) std::memcpy(d, p, n);
  return TailSum(p, n, bulk, sum);
}

// Chosen once; read-only afterwards (a function-local static: safe to use
// from other translation units' static initialisers).
BulkFn BestKernel() {
  static const BulkFn kernel = KernelFor(PickImpl());
  return kernel;
}

// ChecksumAdd of a span of at least one block, out of line so that the
// short-span path of ChecksumAdd saves no registers (callgrind: 18 more
// instructions per short call otherwise).
[[gnu::noinline]] uint32_t AddLong(uint32_t sum, ByteSpan data) {
  return SumAndCopy(BestKernel(), data.data(), nullptr, data.size(), sum);
}

}  // namespace

uint32_t ChecksumAdd(uint32_t sum, ByteSpan data) {
  if (data.size() < kBlock) return TailSum(data.data(), data.size(), 0, sum);
  return AddLong(sum, data);
}

uint32_t ChecksumCopy(uint8_t* dst, ByteSpan src, uint32_t sum) {
  return SumAndCopy(BestKernel(), src.data(), dst, src.size(), sum);
}

uint32_t ChecksumAddWith(ChecksumImpl impl, uint32_t sum, ByteSpan data) {
  return SumAndCopy(KernelFor(impl), data.data(), nullptr, data.size(), sum);
}

uint32_t ChecksumCopyWith(ChecksumImpl impl, uint8_t* dst, ByteSpan src, uint32_t sum) {
  return SumAndCopy(KernelFor(impl), src.data(), dst, src.size(), sum);
}

std::string_view ChecksumImplName(ChecksumImpl impl) {
  using Enum = ChecksumImpl;
  switch (impl) { IWARP_CHECKSUM_IMPLS(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

bool ChecksumImplAvailable(ChecksumImpl impl) {
  switch (impl) {
    case ChecksumImpl::kPortable: return true;
#ifdef IWARP_CHECKSUM_X86
    case ChecksumImpl::kSse2: return true;
    case ChecksumImpl::kAvx2: {
      static const bool avx2 = PickImpl() == ChecksumImpl::kAvx2;
      return avx2;
    }
#else
    case ChecksumImpl::kSse2:
    case ChecksumImpl::kAvx2: return false;
#endif
  }
  return false;
}

ChecksumImpl ChecksumImplInUse() {
  static const ChecksumImpl impl = PickImpl();
  return impl;
}

uint16_t ChecksumFold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffffu) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffffu);
}

uint16_t ChecksumAdjust(uint16_t hc, uint16_t old_word, uint16_t new_word) {
  uint32_t sum = static_cast<uint16_t>(~hc);
  sum += static_cast<uint16_t>(~old_word);
  sum += new_word;
  return ChecksumFold(sum);
}

}  // namespace iwarp
