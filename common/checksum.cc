#include "common/checksum.h"

namespace iwarp {

uint32_t ChecksumAdd(uint32_t sum, ByteSpan data) {
  // 64-bit accumulator: no carry is lost for any input a frame can hold.
  uint64_t acc = sum;
  const size_t n = data.size();
  const uint8_t* p = data.data();
  size_t i = 0;
  for (; i + 1 < n; i += 2) acc += LoadBe16(p + i);
  if (i < n) acc += static_cast<uint64_t>(p[i]) << 8;  // RFC 1071 4.1: pad odd byte
  while (acc >> 32) acc = (acc & 0xffffffffu) + (acc >> 32);
  return static_cast<uint32_t>(acc);
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
