// Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//
// Pure functions on byte spans. Used by IPv4 (header checksum), ICMP, TCP and
// the capture tools.
#ifndef IWARPD_COMMON_CHECKSUM_H_
#define IWARPD_COMMON_CHECKSUM_H_

#include <cstdint>

#include "common/bytes.h"

namespace iwarp {

// Adds `data` to a running one's-complement sum as a sequence of big-endian
// 16-bit words (RFC 1071 4.1); an odd final byte is padded with a zero byte.
// The result is unfolded: pass it to ChecksumFold.
uint32_t ChecksumAdd(uint32_t sum, ByteSpan data);

// Folds the carries of a running sum into 16 bits and complements it
// (RFC 1071 4.1): the value to store in a checksum field.
uint16_t ChecksumFold(uint32_t sum);

// Checksum of `data`. Over a block that already contains its checksum field,
// the result is 0 exactly when the checksum is correct.
inline uint16_t InternetChecksum(ByteSpan data) {
  return ChecksumFold(ChecksumAdd(0, data));
}

// Updates checksum `hc` after a 16-bit word of the covered data changed from
// `old_word` to `new_word`: RFC 1624 3, eqn. 3, HC' = ~(~HC + ~m + m').
uint16_t ChecksumAdjust(uint16_t hc, uint16_t old_word, uint16_t new_word);

}  // namespace iwarp

#endif  // IWARPD_COMMON_CHECKSUM_H_
