// Header decode cost, against a memcpy of the same header bytes measured in
// the same run. Run with `meson test --benchmark` or directly.
//
// Cases: an NFS WRITE-style call (one Read chunk of two segments, 76-byte
// header) and a header at the default-limit-sized worst case used here
// (8 read segments, 4 write chunks of 8 segments, reply chunk of 8: 896 bytes).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "rpcrdma/header.h"
#include "rpcrdma/validate.h"

namespace iwarp::rpcrdma {
namespace {

std::vector<uint8_t> Build(const HeaderSpec& spec, size_t rpc_len) {
  std::vector<uint8_t> out(EncodedHeaderSize(spec) + rpc_len, 0);
  size_t n = 0;
  if (EncodeHeader(spec, out, &n) != EncodeStatus::kOk) std::abort();
  StoreBe32(out.data() + n, spec.xid);  // the RPC XID
  return out;
}

std::vector<uint8_t> WriteCall() {
  static const ReadSegment reads[] = {{112, {0x1111, 4096, 0x7f0000001000}},
                                      {112, {0x1112, 904, 0x20000000}}};
  HeaderSpec s;
  s.xid = 0x1234;
  s.credit = 64;
  s.read_list = reads;
  return Build(s, 200);
}

std::vector<uint8_t> LargeCall() {
  static ReadSegment reads[8];
  static Segment segs[8];
  static WriteChunkSpec writes[4];
  for (uint32_t i = 0; i < 8; ++i) {
    reads[i] = ReadSegment{112, {i, 4096, uint64_t{i} << 12}};
    segs[i] = Segment{i + 100, 4096, uint64_t{i} << 20};
  }
  for (WriteChunkSpec& w : writes) w.segments = segs;
  HeaderSpec s;
  s.xid = 0x1234;
  s.credit = 64;
  s.read_list = reads;
  s.write_list = writes;
  s.has_reply_chunk = true;
  s.reply_chunk = segs;
  return Build(s, 200);
}

const Limits kLimits{.max_read_segments = 8, .max_write_chunks = 4, .max_segments_per_chunk = 8};

void Decode(benchmark::State& state, std::vector<uint8_t> (*make)()) {
  const std::vector<uint8_t> msg = make();
  uint64_t segs = 0;
  for (auto _ : state) {
    HeaderView h;
    HeaderError e = DecodeHeader(msg, kLimits, &h);
    benchmark::DoNotOptimize(e);
    segs += h.read_segment_count();
    benchmark::DoNotOptimize(segs);
  }
  state.SetLabel(std::to_string(msg.size() - 200) + "-byte header");
}

void CheckCallBench(benchmark::State& state, std::vector<uint8_t> (*make)()) {
  const std::vector<uint8_t> msg = make();
  CheckOptions o;
  o.limits = kLimits;
  for (auto _ : state) {
    CallCheck c = CheckCall(msg, o);
    benchmark::DoNotOptimize(c.verdict);
  }
}

void Memcpy(benchmark::State& state, std::vector<uint8_t> (*make)()) {
  const std::vector<uint8_t> msg = make();
  const size_t n = msg.size() - 200;  // header bytes only
  std::vector<uint8_t> dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), msg.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
}

BENCHMARK_CAPTURE(Memcpy, write_call, WriteCall);
BENCHMARK_CAPTURE(Decode, write_call, WriteCall);
BENCHMARK_CAPTURE(CheckCallBench, write_call, WriteCall);
BENCHMARK_CAPTURE(Memcpy, large_call, LargeCall);
BENCHMARK_CAPTURE(Decode, large_call, LargeCall);
BENCHMARK_CAPTURE(CheckCallBench, large_call, LargeCall);

// Prints each run as usual and keeps its time for the ratios at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) ns_[r.benchmark_name()] = r.GetAdjustedRealTime();
  }
  void PrintRatios() const {
    for (const char* c : {"write_call", "large_call"}) {
      auto base = ns_.find(std::string("Memcpy/") + c);
      if (base == ns_.end() || base->second <= 0) continue;
      for (const char* b : {"Decode/", "CheckCallBench/"}) {
        auto it = ns_.find(std::string(b) + c);
        if (it == ns_.end()) continue;
        std::printf("%s%s: %.1f ns per header = %.1fx memcpy of the same bytes (%.1f ns)\n", b, c,
                    it->second, it->second / base->second, base->second);
      }
    }
  }

 private:
  std::map<std::string, double> ns_;
};

}  // namespace
}  // namespace iwarp::rpcrdma

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  iwarp::rpcrdma::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
