// SHA-256 (FIPS 180-4) with an incremental API, computed by OpenSSL's
// libcrypto.
//
// Used by the TCP sink service to hash the bytes it receives so that an
// end-to-end transfer can be checked against sha256sum on the peer, by the
// iwarp_client service for every message of its run, by the NFS handle MAC,
// and by the tests. A Sha256 object is a plain value: copying it copies the
// running hash (the services copy one to read its digest), and no call
// allocates (sha256_alloc_test counts libcrypto's heap as well as ours). It
// is owned by one thread.
//
// libcrypto picks its block code at run time: the x86 SHA extensions where
// the CPU has them, else AVX2/AVX/SSSE3 code. The state is libcrypto's
// SHA256_CTX driven by SHA256_Init/Update/Final, deprecated in OpenSSL 3 in
// favour of EVP_Digest*, because EVP frees and re-allocates its context at
// every restart and copy (OpenSSL 3.0; tools/bench.sh sha256 counts them),
// which the data path may not do (STYLE.md rule 13). Both run the same block
// code at the same speed.
#ifndef IWARPD_COMMON_SHA256_H_
#define IWARPD_COMMON_SHA256_H_

#include <openssl/sha.h>

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

 private:
  SHA256_CTX ctx_;
  uint64_t length_ = 0;
};

// Lower-case hexadecimal, as sha256sum prints it. Control path only.
std::string ToHex(const Sha256::Digest& digest);

}  // namespace iwarp

#endif  // IWARPD_COMMON_SHA256_H_
