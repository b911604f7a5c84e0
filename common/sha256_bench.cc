// SHA-256 throughput: the SHA-extension path against the portable FIPS 180-4
// code on the same buffers in the same run (the portable path is the
// baseline, and what a CPU without the extensions gets). Prints MB/s for
// 4 KiB and 64 KiB buffers and the ratio.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/sha256.h"

namespace {

using iwarp::Sha256;
namespace internal = iwarp::sha256_internal;

// MB/s of `fn` over `bytes` (a multiple of the block), best of 5 runs.
template <typename Fn>
double MbPerSec(Fn fn, const std::vector<uint8_t>& data, size_t bytes, uint64_t total) {
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    uint32_t h[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t done = 0; done < total; done += bytes) fn(h, data.data(), bytes / 64);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    volatile uint32_t sink = h[0];
    (void)sink;
    best = std::max(best, static_cast<double>(total) / secs / 1e6);
  }
  return best;
}

}  // namespace

int main() {
  std::vector<uint8_t> data(64 << 10);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  std::printf("SHA-256 (best of 5), portable FIPS 180-4 code as the baseline\n");
  std::printf("%-10s %16s %16s %8s\n", "buffer", "SHA-NI MB/s", "portable MB/s", "ratio");
  for (size_t bytes : {size_t{4096}, size_t{65536}}) {
    const double portable = MbPerSec(
        [](uint32_t* h, const uint8_t* p, size_t n) { internal::CompressPortable(h, p, n); }, data,
        bytes, 64 << 20);
    if (!Sha256::Accelerated()) {
      std::printf("%-10zu %16s %16.0f %8s  (no SHA extensions on this CPU)\n", bytes, "-",
                  portable, "-");
      continue;
    }
    const double ni = MbPerSec(
        [](uint32_t* h, const uint8_t* p, size_t n) { internal::CompressShaNi(h, p, n); }, data,
        bytes, 512 << 20);
    std::printf("%-10zu %16.0f %16.0f %8.2f\n", bytes, ni, portable, ni / portable);
  }
  return 0;
}
