// SHA-256 throughput on the path the sink service and iwarp_client use:
// Update calls of 64 B, 4 KiB and 64 KiB on one running hash, next to memcpy
// of the same bytes (the baseline). Columns, same buffers, same run,
// interleaved repetitions (median of kReps), MB/s:
//   sha256  the Sha256 class (libcrypto's SHA256_Update)
//   evp     libcrypto's EVP_DigestUpdate on one EVP_MD_CTX made beforehand,
//           the non-deprecated API (the same block code underneath)
//   memcpy  memcpy of the same bytes
// Then the heap allocations libcrypto makes (counted through
// CRYPTO_set_mem_functions) for what the services do per connection: restart
// a hash and copy a running one to read its digest. EVP allocates there, the
// reason Sha256 keeps the SHA256_* calls (sha256.h).
//
// This replaced a hand-written SHA-256 (SHA extensions and portable code);
// in the same runs libcrypto's EVP/ours was 1.00 at 4 KiB and 1.00 at 64 KiB
// (median of 5 runs), see the commit that made the change.
#define OPENSSL_SUPPRESS_DEPRECATED  // SHA256_* in the allocation count
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
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
unsigned long long OpensslAllocs(Fn&& fn) {
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
  // Source and destination 64-byte aligned and 2 KiB apart modulo 4 KiB:
  // glibc's memcpy on this class of CPU runs some 20 times slower when
  // they are misaligned and nearly 4 KiB-aliased, which is not what the
  // baseline is for.
  std::vector<uint8_t> buffer(3 * (64 << 10));
  const auto base = reinterpret_cast<uintptr_t>(buffer.data());
  const std::span<uint8_t> data(buffer.data() + ((64 - base % 64) % 64), 64 << 10);
  const std::span<uint8_t> dst(data.data() + (64 << 10) + 2048, 64 << 10);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (md == nullptr || ctx == nullptr || EVP_DigestInit_ex2(ctx, md, nullptr) != 1) {
    std::fprintf(stderr, "sha256_bench: libcrypto has no SHA-256\n");
    return 1;
  }
  Sha256 sha;
  std::printf("SHA-256 Update throughput, MB/s, median of %d interleaved runs (%s)\n", kReps,
              OpenSSL_version(OPENSSL_VERSION));
  std::printf("%-8s %9s %9s %9s %14s %12s\n", "update", "sha256", "evp", "memcpy",
              "sha256/memcpy", "evp/sha256");
  for (size_t bytes : {size_t{64}, size_t{4096}, size_t{65536}}) {
    const ByteSpan span(data.data(), bytes);
    // About 0.1 s per sample each: memcpy is some 20 times faster.
    const uint64_t total = uint64_t{128} << 20;
    const uint64_t copy_total = (bytes < 4096 ? uint64_t{1} : uint64_t{2}) << 30;
    std::vector<double> s, e, m;
    for (int rep = 0; rep < kReps; ++rep) {
      s.push_back(MbPerSec(bytes, total, [&] { sha.Update(span); }));
      e.push_back(MbPerSec(bytes, total, [&] { EVP_DigestUpdate(ctx, data.data(), bytes); }));
      m.push_back(MbPerSec(bytes, copy_total, [&] {
        std::memcpy(dst.data(), data.data(), bytes);
        g_sink = dst[bytes - 1];
      }));
    }
    const double ms = Median(s), me = Median(e), mm = Median(m);
    std::printf("%-8zu %9.0f %9.0f %9.0f %14.2f %12.2f\n", bytes, ms, me, mm, ms / mm, me / ms);
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (counting) {
    EVP_MD_CTX* copy = EVP_MD_CTX_new();
    EVP_DigestInit_ex2(copy, md, nullptr);
    const unsigned long long evp_init =
        OpensslAllocs([&] { EVP_DigestInit_ex2(ctx, md, nullptr); });
    const unsigned long long evp_copy = OpensslAllocs([&] { EVP_MD_CTX_copy_ex(copy, ctx); });
    const unsigned long long evp_update =
        OpensslAllocs([&] { EVP_DigestUpdate(ctx, data.data(), data.size()); });
    const unsigned long long ours = OpensslAllocs([&] {
      Sha256 running;
      running.Update(ByteSpan(data.data(), data.size()));
      Sha256 c = running;
      g_sink = c.Finish()[0];
      running.Reset();
    });
    std::printf(
        "libcrypto heap allocations per call: EVP_DigestInit_ex2 on a used context %llu, "
        "EVP_MD_CTX_copy_ex %llu, EVP_DigestUpdate %llu; Sha256 reset + update + copy + finish "
        "%llu\n",
        evp_init, evp_copy, evp_update, ours);
    EVP_MD_CTX_free(copy);
  } else {
    std::printf("libcrypto heap allocations: not counted (CRYPTO_set_mem_functions refused)\n");
  }
  EVP_DigestFinal_ex(ctx, out, &len);
  g_sink = static_cast<uint8_t>(out[0] ^ sha.Finish()[0]);
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
  return 0;
}
