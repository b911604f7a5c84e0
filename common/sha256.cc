#include "common/sha256.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace iwarp {
namespace {

// FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
// roots of the first 64 primes.
constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// FIPS 180-4 6.2.2, steps 1 to 4, for one 512-bit block.
void CompressOne(uint32_t* state, const uint8_t* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) w[t] = LoadBe32(block + 4 * t);
  for (int t = 16; t < 64; ++t) {
    const uint32_t s0 = Rotr(w[t - 15], 7) ^ Rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = Rotr(w[t - 2], 17) ^ Rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int t = 0; t < 64; ++t) {
    const uint32_t big_s1 = Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25);
    const uint32_t ch = (e & f) ^ (~e & g);
    const uint32_t t1 = h + big_s1 + ch + kK[t] + w[t];
    const uint32_t big_s0 = Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22);
    const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    const uint32_t t2 = big_s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

#if defined(__x86_64__)
bool CpuHasShaNi() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const bool ssse3 = (c & (1u << 9)) != 0;
  const bool sse41 = (c & (1u << 19)) != 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  const bool sha = (b & (1u << 29)) != 0;
  return ssse3 && sse41 && sha;
}

// The SHA extensions keep the working variables as two vectors, ABEF and
// CDGH (A in the highest lane); sha256rnds2 runs two rounds from the low two
// lanes of its W+K operand and returns the new ABEF, the old ABEF becoming
// CDGH. Message words are big-endian in the block (FIPS 180-4 3.1), hence
// the byte shuffle on load. sha256msg1 adds sigma0 of the next words and
// sha256msg2 adds sigma1, completing W[t] (FIPS 180-4 6.2.2 step 1) four at
// a time together with the W[t-7] added in between.
__attribute__((target("sha,sse4.1,ssse3"))) void CompressBlocksShaNi(uint32_t* h,
                                                                        const uint8_t* p,
                                                                        size_t blocks) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i abcd = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));      // lanes a b c d
  __m128i efgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));  // lanes e f g h
  const __m128i badc = _mm_shuffle_epi32(abcd, 0xB1);
  const __m128i hgfe = _mm_shuffle_epi32(efgh, 0x1B);
  __m128i abef = _mm_alignr_epi8(badc, hgfe, 8);    // lanes f e b a
  __m128i cdgh = _mm_blend_epi16(hgfe, badc, 0xF0);  // lanes h g d c
  for (; blocks != 0; --blocks, p += Sha256::kBlockBytes) {
    const __m128i abef_in = abef;
    const __m128i cdgh_in = cdgh;
    __m128i m[4];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      __m128i& w = m[i % 4];  // becomes W[4i .. 4i+3]
      if (i < 4) {
        w = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), bswap);
      } else {
        const __m128i w7 = _mm_alignr_epi8(m[(i + 3) % 4], m[(i + 2) % 4], 4);  // W[t-7]
        w = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w, m[(i + 1) % 4]), w7),
                                 m[(i + 3) % 4]);
      }
      __m128i wk = _mm_add_epi32(w, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * i)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);  // now ABEF; abef holds CDGH
      wk = _mm_shuffle_epi32(wk, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, wk);  // ABEF again, cdgh CDGH
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }
  const __m128i abef_r = _mm_shuffle_epi32(abef, 0x1B);  // lanes a b e f
  const __m128i cdgh_r = _mm_shuffle_epi32(cdgh, 0xB1);  // lanes g h c d
  abcd = _mm_blend_epi16(abef_r, cdgh_r, 0xF0);
  efgh = _mm_alignr_epi8(cdgh_r, abef_r, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), abcd);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), efgh);
}

// Asked once, on first use (not during static initialisation, which another
// translation unit's globals might already hash in).
bool HaveShaNi() {
  static const bool have = CpuHasShaNi();
  return have;
}
#else
constexpr bool HaveShaNi() { return false; }
#endif

}  // namespace

namespace sha256_internal {

void CompressPortable(uint32_t* h, const uint8_t* p, size_t blocks) {
  for (; blocks != 0; --blocks, p += Sha256::kBlockBytes) CompressOne(h, p);
}

bool CompressShaNi([[maybe_unused]] uint32_t* h, [[maybe_unused]] const uint8_t* p,
                   [[maybe_unused]] size_t blocks) {
#if defined(__x86_64__)
  if (HaveShaNi()) {
    CompressBlocksShaNi(h, p, blocks);
    return true;
  }
#endif
  return false;
}

}  // namespace sha256_internal

bool Sha256::Accelerated() { return HaveShaNi(); }

void Sha256::CompressBlocks(const uint8_t* p, size_t blocks) {
  if (blocks == 0) return;
  if (!sha256_internal::CompressShaNi(h_.data(), p, blocks)) {
    sha256_internal::CompressPortable(h_.data(), p, blocks);
  }
}

void Sha256::Reset() {
  // FIPS 180-4 5.3.3.
  h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  buffered_ = 0;
  length_ = 0;
}

void Sha256::Update(ByteSpan data) {
  length_ += data.size();
  const uint8_t* p = data.data();
  size_t n = data.size();
  if (buffered_ != 0) {
    const size_t take = std::min(n, kBlockBytes - buffered_);
    std::memcpy(buffer_.data() + buffered_, p, take);
    buffered_ += take;
    p += take;
    n -= take;
    if (buffered_ < kBlockBytes) return;
    CompressBlocks(buffer_.data(), 1);
    buffered_ = 0;
  }
  CompressBlocks(p, n / kBlockBytes);
  p += n / kBlockBytes * kBlockBytes;
  n %= kBlockBytes;
  if (n != 0) {
    std::memcpy(buffer_.data(), p, n);
    buffered_ = n;
  }
}

Sha256::Digest Sha256::Finish() {
  // FIPS 180-4 5.1.1: a 1 bit, zeros to 448 mod 512, the 64-bit bit length.
  const uint64_t bit_length = length_ * 8;
  buffer_[buffered_++] = 0x80;
  if (buffered_ > kBlockBytes - 8) {
    std::memset(buffer_.data() + buffered_, 0, kBlockBytes - buffered_);
    CompressBlocks(buffer_.data(), 1);
    buffered_ = 0;
  }
  std::memset(buffer_.data() + buffered_, 0, kBlockBytes - 8 - buffered_);
  StoreBe64(buffer_.data() + kBlockBytes - 8, bit_length);
  CompressBlocks(buffer_.data(), 1);
  buffered_ = 0;
  Digest out;
  for (size_t i = 0; i < 8; ++i) StoreBe32(out.data() + 4 * i, h_[i]);
  return out;
}

Sha256::Digest Sha256::Hash(ByteSpan data) {
  Sha256 s;
  s.Update(data);
  return s.Finish();
}

std::string ToHex(const Sha256::Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * digest.size());
  for (uint8_t b : digest) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 0xf]);
  }
  return s;
}

}  // namespace iwarp
