// SHA-256 (FIPS 180-4 6.2) with an incremental API.
//
// Used by the TCP sink service to hash the bytes it receives so that an
// end-to-end transfer can be checked against sha256sum on the peer, by the
// iwarp_client service for every message of its run, and by the tests. No
// allocation; a Sha256 object is owned by one thread.
//
// Whole blocks go through the x86 SHA extensions (SHA-NI: sha256rnds2,
// sha256msg1, sha256msg2) when the CPU has them, checked once at run time
// (CPUID), else through the portable FIPS 180-4 code; both give the same
// digest (sha256_test compares them on random data). The SHA-NI path hashes
// at memory-like speed (GB/s) where the portable one manages ~200 MB/s, which
// made the hash, not the network, the limit of the iwarp_client service.
#ifndef IWARPD_COMMON_SHA256_H_
#define IWARPD_COMMON_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/bytes.h"

namespace iwarp {

class Sha256 {
 public:
  static constexpr size_t kDigestBytes = 32;
  static constexpr size_t kBlockBytes = 64;
  using Digest = std::array<uint8_t, kDigestBytes>;

  Sha256() { Reset(); }

  // Back to the initial hash value (FIPS 180-4 5.3.3).
  void Reset();
  // Appends `data` to the message.
  void Update(ByteSpan data);
  // Pads (FIPS 180-4 5.1.1) and returns the digest of everything passed to
  // Update since the last Reset. The object must be Reset before reuse.
  Digest Finish();

  // Message length so far, in bytes.
  uint64_t length() const { return length_; }

  // One-shot helper.
  static Digest Hash(ByteSpan data);

  // True when this CPU hashes with the SHA extensions.
  static bool Accelerated();

 private:
  void CompressBlocks(const uint8_t* p, size_t blocks);

  std::array<uint32_t, 8> h_{};
  std::array<uint8_t, kBlockBytes> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

// Lower-case hexadecimal, as sha256sum prints it. Control path only.
std::string ToHex(const Sha256::Digest& digest);

namespace sha256_internal {
// The two block functions, for the tests (both paths on one machine) and the
// benchmark: `blocks` 64-byte blocks at `p` folded into `h`.
void CompressPortable(uint32_t* h, const uint8_t* p, size_t blocks);
// False (and `h` untouched) on a CPU without the SHA extensions.
bool CompressShaNi(uint32_t* h, const uint8_t* p, size_t blocks);
}  // namespace sha256_internal

}  // namespace iwarp

#endif  // IWARPD_COMMON_SHA256_H_
