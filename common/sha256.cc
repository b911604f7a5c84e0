// SHA256_Init/Update/Final are deprecated in OpenSSL 3 (see sha256.h for why
// they are used); this must come before the first OpenSSL header.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "common/sha256.h"

static_assert(SHA256_DIGEST_LENGTH == iwarp::Sha256::kDigestBytes);
static_assert(SHA256_CBLOCK == iwarp::Sha256::kBlockBytes);

namespace iwarp {

void Sha256::Reset() {
  SHA256_Init(&ctx_);
  length_ = 0;
}

void Sha256::Update(ByteSpan data) {
  length_ += data.size();
  if (!data.empty()) SHA256_Update(&ctx_, data.data(), data.size());
}

Sha256::Digest Sha256::Finish() {
  Digest out;
  SHA256_Final(out.data(), &ctx_);
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
