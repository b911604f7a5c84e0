// SHA-256 throughput on the path the sink service and iwarp_client use:
// Update calls of 64 B, 4 KiB and 64 KiB on one running hash. Columns, same
// buffers, same run, interleaved repetitions (median of kReps):
//   ours      the hand-written Sha256 class (SHA extensions where the CPU has
//             them, else the portable code)
//   evp       libcrypto's EVP_DigestUpdate on one EVP_MD_CTX made beforehand
//   low       libcrypto's SHA256_Update on a SHA256_CTX (deprecated in
//             OpenSSL 3, the same block code underneath)
//   portable  the portable FIPS 180-4 block function alone (what a CPU
//             without the SHA extensions gets from ours; the baseline)
// Ratios are library/ours: below 1 means the library is slower. Then the
// heap allocations libcrypto makes (counted through CRYPTO_set_mem_functions)
// for what the services do per connection: restart a hash (Reset) and copy a
// running one to read its digest (tcp_services.cc, iwarp_services.cc).
#define OPENSSL_SUPPRESS_DEPRECATED  // SHA256_Update, for its column
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/sha256.h"

namespace {

using iwarp::ByteSpan;
using iwarp::Sha256;
using Clock = std::chrono::steady_clock;

constexpr int kReps = 9;
volatile uint8_t g_sink;

// libcrypto's heap, counted.
uint64_t g_openssl_allocs = 0;
void* CountedMalloc(size_t n, const char*, int) {
  ++g_openssl_allocs;
  return std::malloc(n);
}
void* CountedRealloc(void* p, size_t n, const char*, int) {
  ++g_openssl_allocs;
  return std::realloc(p, n);
}
void CountedFree(void* p, const char*, int) { std::free(p); }

// libcrypto allocations made by fn().
template <typename Fn>
uint64_t OpensslAllocs(Fn&& fn) {
  const uint64_t before = g_openssl_allocs;
  fn();
  return g_openssl_allocs - before;
}

// MB/s of `bytes`-sized `update` calls over `total` bytes.
template <typename Fn>
double MbPerSec(size_t bytes, uint64_t total, Fn&& update) {
  const auto t0 = Clock::now();
  for (uint64_t done = 0; done < total; done += bytes) update();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(total) / secs / 1e6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  // Before libcrypto allocates anything, or it refuses.
  const bool counting = CRYPTO_set_mem_functions(CountedMalloc, CountedRealloc, CountedFree) == 1;
  std::vector<uint8_t> data(64 << 10);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (md == nullptr || ctx == nullptr || EVP_DigestInit_ex2(ctx, md, nullptr) != 1) {
    std::fprintf(stderr, "sha256_bench: libcrypto has no SHA-256\n");
    return 1;
  }
  Sha256 ours;
  std::printf("SHA-256 Update throughput, MB/s, median of %d interleaved runs; ours %s\n", kReps,
              Sha256::Accelerated() ? "with the SHA extensions" : "portable (no SHA extensions)");
  SHA256_CTX low;
  SHA256_Init(&low);
  std::printf("%-8s %9s %9s %9s %9s %9s %9s\n", "update", "ours", "evp", "low", "portable",
              "evp/ours", "low/ours");
  for (size_t bytes : {size_t{64}, size_t{4096}, size_t{65536}}) {
    const ByteSpan span(data.data(), bytes);
    const uint64_t fast_total = uint64_t{256} << 20;
    const uint64_t slow_total = uint64_t{32} << 20;
    std::vector<double> o, s, l, p;
    for (int rep = 0; rep < kReps; ++rep) {
      o.push_back(MbPerSec(bytes, fast_total, [&] { ours.Update(span); }));
      s.push_back(MbPerSec(bytes, fast_total, [&] { EVP_DigestUpdate(ctx, data.data(), bytes); }));
      l.push_back(MbPerSec(bytes, fast_total, [&] { SHA256_Update(&low, data.data(), bytes); }));
      uint32_t h[8] = {1, 2, 3, 4, 5, 6, 7, 8};
      p.push_back(MbPerSec(bytes, slow_total, [&] {
        iwarp::sha256_internal::CompressPortable(h, data.data(), bytes / Sha256::kBlockBytes);
      }));
      g_sink = static_cast<uint8_t>(h[0]);
    }
    const double mo = Median(o), ms = Median(s), ml = Median(l), mp = Median(p);
    std::printf("%-8zu %9.0f %9.0f %9.0f %9.0f %9.2f %9.2f\n", bytes, mo, ms, ml, mp, ms / mo,
                ml / mo);
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (counting) {
    EVP_MD_CTX* copy = EVP_MD_CTX_new();
    EVP_DigestInit_ex2(copy, md, nullptr);
    std::printf(
        "libcrypto heap allocations per call: EVP_DigestInit_ex2 on a used context %llu, "
        "EVP_MD_CTX_copy_ex into an initialised context %llu, EVP_DigestUpdate %llu, "
        "SHA256_Init + SHA256_Update + SHA256_Final %llu\n",
        static_cast<unsigned long long>(
            OpensslAllocs([&] { EVP_DigestInit_ex2(ctx, md, nullptr); })),
        static_cast<unsigned long long>(OpensslAllocs([&] { EVP_MD_CTX_copy_ex(copy, ctx); })),
        static_cast<unsigned long long>(
            OpensslAllocs([&] { EVP_DigestUpdate(ctx, data.data(), data.size()); })),
        static_cast<unsigned long long>(OpensslAllocs([&] {
          SHA256_CTX c;
          SHA256_Init(&c);
          SHA256_Update(&c, data.data(), data.size());
          SHA256_Final(out, &c);
        })));
    EVP_MD_CTX_free(copy);
  } else {
    std::printf("libcrypto heap allocations: not counted (CRYPTO_set_mem_functions refused)\n");
  }
  EVP_DigestFinal_ex(ctx, out, &len);
  g_sink = static_cast<uint8_t>(out[0] ^ ours.Finish()[0]);
  SHA256_Final(out, &low);
  g_sink = out[0];
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
  return 0;
}
