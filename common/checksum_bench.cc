// Internet checksum throughput per implementation, next to memcpy of the same
// bytes measured in the same run (the baseline).
//
//   sum   ChecksumAddWith: read-only pass (RX verify, TX payload sum)
//   copy  ChecksumCopyWith: copy + sum in one pass (payload into the packet)
//
// Sizes: a 20-octet TCP header, a 1460-octet and an 8960-octet segment
// payload (MTU 1500 / 9000) and a 64 KiB message. "portable" is the former
// ChecksumAdd's method (32-bit words into a 64-bit accumulator). Each figure is the best of several repetitions, in GB/s,
// with its ratio to memcpy.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/checksum.h"

namespace iwarp {
namespace {

volatile uint32_t g_sink;

template <typename Fn>
double BestGbps(size_t n, Fn&& fn) {
  using Clock = std::chrono::steady_clock;
  const size_t iters = std::max<size_t>(64, (size_t{256} << 20) / n);
  double best = 0;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = Clock::now();
    for (size_t i = 0; i < iters; ++i) fn();
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n * iters) / secs / 1e9);
  }
  return best;
}

int Run() {
  std::vector<uint8_t> src(65536 + 64), dst(65536 + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  std::printf("checksum implementation in use: %s\n",
              std::string(ChecksumImplName(ChecksumImplInUse())).c_str());
  std::printf("%-8s %-6s %-9s %10s %12s %8s\n", "size", "op", "impl", "GB/s", "memcpy GB/s",
              "ratio");
  for (size_t n : {size_t{20}, size_t{1460}, size_t{8960}, size_t{65536}}) {
    const ByteSpan s(src.data(), n);
    const double base = BestGbps(n, [&] {
      std::memcpy(dst.data(), src.data(), n);
      g_sink = dst[n - 1];
    });
    for (ChecksumImpl impl : {ChecksumImpl::kPortable, ChecksumImpl::kSse2, ChecksumImpl::kAvx2}) {
      if (!ChecksumImplAvailable(impl)) {
        std::printf("%-8zu %-9s skipped: not available on this CPU or build\n", n,
                    std::string(ChecksumImplName(impl)).c_str());
        continue;
      }
      const double sum = BestGbps(n, [&] { g_sink = ChecksumAddWith(impl, 0, s); });
      const double copy =
          BestGbps(n, [&] { g_sink = ChecksumCopyWith(impl, dst.data(), s, 0); });
      const std::string name(ChecksumImplName(impl));
      std::printf("%-8zu %-6s %-9s %10.2f %12.2f %8.2f\n", n, "sum", name.c_str(), sum, base,
                  sum / base);
      std::printf("%-8zu %-6s %-9s %10.2f %12.2f %8.2f\n", n, "copy", name.c_str(), copy, base,
                  copy / base);
    }
  }
  return 0;
}

}  // namespace
}  // namespace iwarp

int main() { return iwarp::Run(); }
