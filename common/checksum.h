// Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//
// Pure functions on byte spans. Used by IPv4 (header checksum), ICMP, TCP and
// the capture tools. The bulk sum runs on SSE2 (every x86-64) or AVX2 when the
// CPU has it, chosen once at run time (the packages are built for generic
// x86-64); other architectures use the portable 32-bit-word loop.
#ifndef IWARPD_COMMON_CHECKSUM_H_
#define IWARPD_COMMON_CHECKSUM_H_

#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"

namespace iwarp {

// Adds `data` to a running one's-complement sum as a sequence of big-endian
// 16-bit words (RFC 1071 4.1); an odd final byte is padded with a zero byte.
// The result is unfolded: pass it to ChecksumFold.
uint32_t ChecksumAdd(uint32_t sum, ByteSpan data);

// Copies `src` to `dst` (which must hold src.size() octets and must not
// overlap it) and returns ChecksumAdd(sum, src), in one pass over the data:
// for the copy of a payload into a packet buffer whose checksum is still to
// be computed.
uint32_t ChecksumCopy(uint8_t* dst, ByteSpan src, uint32_t sum);

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

// The bulk-sum implementations, for tests and benchmarks that compare them.
// X(enumerator, "name")
#define IWARP_CHECKSUM_IMPLS(X)                                          \
  X(kPortable, "portable")  /* 32-bit words into a 64-bit accumulator */ \
  X(kSse2, "sse2")  /* x86-64 baseline */                                \
  X(kAvx2, "avx2")  /* x86-64 with AVX2 (checked at run time) */
enum class ChecksumImpl : uint8_t { IWARP_CHECKSUM_IMPLS(IWARP_ENUMERATOR) };

std::string_view ChecksumImplName(ChecksumImpl impl);

// Whether this build and CPU can run `impl`.
bool ChecksumImplAvailable(ChecksumImpl impl);

// The implementation ChecksumAdd and ChecksumCopy use (the fastest available).
ChecksumImpl ChecksumImplInUse();

// ChecksumAdd / ChecksumCopy with a given implementation; `impl` must be
// available (otherwise the portable one runs).
uint32_t ChecksumAddWith(ChecksumImpl impl, uint32_t sum, ByteSpan data);
uint32_t ChecksumCopyWith(ChecksumImpl impl, uint8_t* dst, ByteSpan src, uint32_t sum);

}  // namespace iwarp

#endif  // IWARPD_COMMON_CHECKSUM_H_
