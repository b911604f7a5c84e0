// CRC32c throughput against memcpy of the same bytes, measured in one run.
//
//   Memcpy         baseline: plain memcpy of n bytes
//   Crc32c         CRC only (ISA-L crc32_iscsi)
//   CopyAndCrc32c  the placement primitive: copy + CRC block by block
//   CopyThenCrc32c memcpy of all n bytes, then CRC of all n bytes
//   CopyAndCrc32cBlock/B  CopyAndCrc32c of 64 KiB with block size B (chooses
//                  kCopyCrc32cBlock)
//   Cold*          memcpy / fused / separate passes with the source in DRAM
//   FpduCrcBetweenSse/Raw, /Ours  one FPDU's CRC calls (2 + 18 + 1428 + 4
//                  bytes, the payload copied) between bursts of legacy-SSE
//                  work, as on the worker's path: ISA-L's crc32_iscsi called
//                  as is (the baseline) against the Crc32cAccumulator, which
//                  cleans the vector registers' upper state after ISA-L's
//                  AVX-512 kernel (see crc32c.cc)
//
// After the usual Google Benchmark table a summary prints each variant's
// bytes/second as a ratio to memcpy at the same size.
#include <emmintrin.h>
#include <isa-l.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/crc32c.h"

namespace iwarp {
namespace {

constexpr size_t kMaxSize = 64 * 1024;

struct Buffers {
  Buffers() : src(kMaxSize + 64), dst(kMaxSize + 64) {
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  // 64-byte aligned views, like mbuf data and registered memory.
  uint8_t* Src() { return Align(src.data()); }
  uint8_t* Dst() { return Align(dst.data()); }
  static uint8_t* Align(uint8_t* p) {
    auto v = reinterpret_cast<uintptr_t>(p);
    return p + ((64 - v % 64) % 64);
  }
  std::vector<uint8_t> src, dst;
};

Buffers& Bufs() {
  static Buffers b;
  return b;
}

void BM_Memcpy(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  uint8_t* src = Bufs().Src();
  uint8_t* dst = Bufs().Dst();
  for (auto _ : state) {
    std::memcpy(dst, src, n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_Crc32c(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const uint8_t* src = Bufs().Src();
  for (auto _ : state) {
    uint32_t crc = Crc32c(ByteSpan(src, n));
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_CopyAndCrc32c(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  uint8_t* src = Bufs().Src();
  uint8_t* dst = Bufs().Dst();
  for (auto _ : state) {
    Crc32cAccumulator acc;
    CopyAndCrc32c(dst, src, n, acc);
    uint32_t crc = acc.Value();
    benchmark::DoNotOptimize(crc);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_CopyThenCrc32c(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  uint8_t* src = Bufs().Src();
  uint8_t* dst = Bufs().Dst();
  for (auto _ : state) {
    std::memcpy(dst, src, n);
    uint32_t crc = Crc32c(ByteSpan(src, n));
    benchmark::DoNotOptimize(crc);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_CopyAndCrc32cBlock(benchmark::State& state) {
  const auto block = static_cast<size_t>(state.range(0));
  uint8_t* src = Bufs().Src();
  uint8_t* dst = Bufs().Dst();
  for (auto _ : state) {
    Crc32cAccumulator acc;
    internal::CopyAndCrc32cBlocked(dst, src, kMaxSize, acc, block);
    uint32_t crc = acc.Value();
    benchmark::DoNotOptimize(crc);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kMaxSize));
}

// Cold source: each iteration reads the next 64 KiB of a 64 MiB pool, so the
// bytes come from DRAM as a freshly received burst would without DDIO. This
// is where one pass over the source (copy and CRC per block) should differ
// from two passes over the whole buffer.
constexpr size_t kColdPool = 64u << 20;
uint8_t* ColdPool() {
  static std::vector<uint8_t> pool = [] {
    std::vector<uint8_t> v(kColdPool + 64);
    for (size_t i = 0; i < v.size(); i += 64) v[i] = static_cast<uint8_t>(i >> 6);
    return v;
  }();
  return Buffers::Align(pool.data());
}

template <int kVariant>
void BM_Cold(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  uint8_t* pool = ColdPool();
  uint8_t* dst = Bufs().Dst();
  size_t off = 0;
  for (auto _ : state) {
    const uint8_t* src = pool + off;
    off = (off + kMaxSize) % kColdPool;
    if (kVariant == 0) {
      std::memcpy(dst, src, n);
    } else if (kVariant == 1) {
      Crc32cAccumulator acc;
      CopyAndCrc32c(dst, src, n, acc);
      uint32_t crc = acc.Value();
      benchmark::DoNotOptimize(crc);
    } else {
      std::memcpy(dst, src, n);
      uint32_t crc = Crc32c(ByteSpan(src, n));
      benchmark::DoNotOptimize(crc);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}
void BM_ColdMemcpy(benchmark::State& s) { BM_Cold<0>(s); }
void BM_ColdCopyAndCrc32c(benchmark::State& s) { BM_Cold<1>(s); }
void BM_ColdCopyThenCrc32c(benchmark::State& s) { BM_Cold<2>(s); }

// Legacy-SSE work standing for the TCP and framing code between CRC calls
// (this file, like the project, is compiled for baseline x86-64, so these
// intrinsics are legacy-encoded).
__attribute__((noinline)) int SseWork() {
  __m128i x = _mm_set1_epi32(1);
  const __m128i y = _mm_set1_epi32(3);
  for (int i = 0; i < 32; ++i) {
    x = _mm_add_epi32(x, y);
    asm volatile("" : "+x"(x));
  }
  return _mm_cvtsi128_si32(x);
}

constexpr size_t kFpduPayload = 1428;  // 2 + 18 + 1428 + 4 = one MSS-sized FPDU's CRC calls

template <bool kOurs>
void BM_FpduCrcBetweenSse(benchmark::State& state) {
  uint8_t* src = Bufs().Src();
  uint8_t* dst = Bufs().Dst();
  size_t off = 0;
  for (auto _ : state) {
    uint8_t* p = src + off;
    uint8_t* d = dst + off;
    off = (off + 1536) % (kMaxSize - 2048);
    uint32_t crc;
    if (kOurs) {
      Crc32cAccumulator acc;
      acc.Update(p, 2);
      acc.Update(p + 2, 18);
      CopyAndCrc32c(d, p + 20, kFpduPayload, acc);
      acc.Update(p + 20 + kFpduPayload, 4);
      crc = acc.Value();
    } else {
      crc = crc32_iscsi(p, 2, 0xFFFFFFFFu);
      crc = crc32_iscsi(p + 2, 18, crc);
      std::memcpy(d, p + 20, kFpduPayload);
      crc = crc32_iscsi(p + 20, static_cast<int>(kFpduPayload), crc);
      crc = ~crc32_iscsi(p + 20 + kFpduPayload, 4, crc);
    }
    benchmark::DoNotOptimize(crc);
    int w = SseWork();
    benchmark::DoNotOptimize(w);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (kFpduPayload + 24)));
}
void BM_FpduCrcBetweenSseRaw(benchmark::State& s) { BM_FpduCrcBetweenSse<false>(s); }
void BM_FpduCrcBetweenSseOurs(benchmark::State& s) { BM_FpduCrcBetweenSse<true>(s); }

BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(64, kMaxSize);
BENCHMARK(BM_Crc32c)->RangeMultiplier(4)->Range(64, kMaxSize);
BENCHMARK(BM_CopyAndCrc32c)->RangeMultiplier(4)->Range(64, kMaxSize);
BENCHMARK(BM_CopyThenCrc32c)->RangeMultiplier(4)->Range(64, kMaxSize);
BENCHMARK(BM_CopyAndCrc32cBlock)->RangeMultiplier(2)->Range(512, kMaxSize);
BENCHMARK(BM_ColdMemcpy)->Arg(4096)->Arg(kMaxSize);
BENCHMARK(BM_ColdCopyAndCrc32c)->Arg(4096)->Arg(kMaxSize);
BENCHMARK(BM_ColdCopyThenCrc32c)->Arg(4096)->Arg(kMaxSize);
BENCHMARK(BM_FpduCrcBetweenSseRaw);
BENCHMARK(BM_FpduCrcBetweenSseOurs);

// Console output plus a closing table of ratios to the memcpy baseline.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      auto it = r.counters.find("bytes_per_second");
      if (it == r.counters.end()) continue;
      rates_[r.run_name.function_name][std::strtol(r.run_name.args.c_str(), nullptr, 10)] =
          it->second.value;
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    const auto& base = rates_["BM_Memcpy"];
    std::printf("\nThroughput in GB/s and as a ratio to memcpy of the same bytes (same run):\n");
    std::printf("%8s %10s %18s %18s %18s\n", "bytes", "memcpy", "crc32c", "copy+crc fused",
                "copy then crc");
    for (const auto& [args, memcpy_rate] : base) {
      std::printf("%8ld %10.2f", args, memcpy_rate / 1e9);
      for (const char* name : {"BM_Crc32c", "BM_CopyAndCrc32c", "BM_CopyThenCrc32c"}) {
        const double rate = rates_[name][args];
        std::printf(" %9.2f (%5.2fx)", rate / 1e9, memcpy_rate > 0 ? rate / memcpy_rate : 0.0);
      }
      std::printf("\n");
    }
    const double base64k = base.count(long{kMaxSize}) ? base.at(long{kMaxSize}) : 0.0;
    std::printf("\nCopyAndCrc32c of 64 KiB by block size (kCopyCrc32cBlock = %zu):\n",
                kCopyCrc32cBlock);
    for (const auto& [args, rate] : rates_["BM_CopyAndCrc32cBlock"]) {
      std::printf("%8ld %10.2f GB/s (%5.2fx memcpy)\n", args, rate / 1e9,
                  base64k > 0 ? rate / base64k : 0.0);
    }
    const auto& cold = rates_["BM_ColdMemcpy"];
    std::printf("\nCold source (64 MiB pool), GB/s and ratio to cold memcpy:\n");
    for (const auto& [args, memcpy_rate] : cold) {
      std::printf("%8ld %10.2f", args, memcpy_rate / 1e9);
      for (const char* name : {"BM_ColdCopyAndCrc32c", "BM_ColdCopyThenCrc32c"}) {
        const double rate = rates_[name][args];
        std::printf(" %9.2f (%5.2fx)", rate / 1e9, memcpy_rate > 0 ? rate / memcpy_rate : 0.0);
      }
      std::printf("   [memcpy, fused, copy then crc]\n");
    }
    const double raw = rates_["BM_FpduCrcBetweenSseRaw"][0];
    const double ours = rates_["BM_FpduCrcBetweenSseOurs"][0];
    if (raw > 0 && ours > 0) {
      const double bytes = kFpduPayload + 24;
      std::printf("\nOne FPDU's CRC calls between legacy-SSE work (the worker's pattern), ns per "
                  "FPDU:\n  ISA-L crc32_iscsi as is %.1f, Crc32cAccumulator %.1f (%.2fx)\n",
                  bytes / raw * 1e9, bytes / ours * 1e9, ours / raw);
    }
  }

 private:
  std::map<std::string, std::map<long, double>> rates_;  // name -> size -> B/s
};

}  // namespace
}  // namespace iwarp

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  iwarp::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
