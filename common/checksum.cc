#include "common/checksum.h"

#include <bit>
#include <cstring>

namespace iwarp {

namespace {

// Folds a 64-bit one's-complement accumulator into 16 bits (RFC 1071 4.1).
uint32_t Fold64To16(uint64_t acc) {
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffu) + (acc >> 16);
  acc = (acc & 0xffffu) + (acc >> 16);
  return static_cast<uint32_t>(acc);
}

}  // namespace

uint32_t ChecksumAdd(uint32_t sum, ByteSpan data) {
  // RFC 1071 2(B): the one's-complement sum is byte-order independent, so the
  // words are added in host order, 32 bits at a time into a 64-bit
  // accumulator (no carry is lost below 2^32 additions), and the folded
  // result is byte-swapped once on a little-endian host.
  const uint8_t* p = data.data();
  size_t n = data.size();
  uint64_t acc = 0;
  while (n >= 32) {
    uint32_t w[8];
    std::memcpy(w, p, sizeof(w));
    acc += uint64_t{w[0]} + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7];
    p += 32;
    n -= 32;
  }
  while (n >= 4) {
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
  uint32_t folded = Fold64To16(acc);
  if constexpr (std::endian::native == std::endian::little) {
    folded = ((folded & 0xffu) << 8) | (folded >> 8);
  }
  // Add to the caller's running sum; stay within 32 bits.
  const uint64_t total = uint64_t{sum} + folded;
  return static_cast<uint32_t>((total & 0xffffffffu) + (total >> 32));
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
