// iWARP engine cost on one core, DPDK-free: two Qps over two TcpStacks joined
// by tcp_lite's preallocated in-memory packet ring, both driven by this
// thread (every figure includes sender and receiver: framing, CRC32c on both
// ends, DDP checks, placement, TCP and its ACKs).
//
//   write_bw  64 MiB of RDMA Writes (1 MiB each, up to 16 outstanding) into a
//             registered region, MPA CRC on / off / CRC + Markers; goodput
//             beside memcpy of the same 64 MiB (1 MiB chunks) measured in the
//             same run as the baseline; "crc 4sge" posts each Write as 4 SGEs
//             of 256 KiB (gathered: the segments straddling SGEs are staged)
//
// Run through `meson test --benchmark` (tools/bench.sh); never part of the
// test suites. The machine is shared and noisy: compare the ratios.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"

namespace iwarp::engine {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

uint64_t NowUs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
          .count());
}

constexpr size_t kTotal = 64u << 20;
constexpr uint32_t kMsg = 1u << 20;

struct Bench {
  Bench(bool crc, bool markers, uint32_t num_sges)
      : pair(Options(crc, markers), NowUs()), sges(num_sges) {
    src = pair.ma.Register(kMsg, 0);
    sink = pair.mb.Register(kMsg, ddp::kAccessRemoteWrite);
    std::memset(pair.ma.Bytes(src).data(), 0x5A, kMsg);
  }
  static QpOptions Options(bool crc, bool markers) {
    QpOptions o;
    o.mpa.crc = crc;
    o.mpa.want_markers = markers;
    o.sq_depth = 32;
    return o;
  }
  bool Connect() { return pair.ConnectWithin(NowUs, 5'000'000); }
  // Returns seconds for kTotal bytes of Writes, or < 0 on failure.
  double Run() {
    Qp& qa = *pair.qa;
    const size_t msgs = kTotal / kMsg;
    size_t posted = 0, done = 0;
    uint64_t steps = 0, now = NowUs();
    Completion c[32];
    const auto t0 = Clock::now();
    while (done < msgs) {
      while (posted < msgs && posted - done < 16) {
        SendWr wr{posted, WrOpcode::kRdmaWrite, LocalSge{src, 0x10000, kMsg}, sink, 0x10000};
        if (sges > 1) {
          wr.local = SgeList{};
          for (uint32_t k = 0; k < sges; ++k) {
            wr.local.Add(LocalSge{src, 0x10000 + uint64_t{k} * (kMsg / sges), kMsg / sges});
          }
        }
        if (qa.PostSend(wr) != PostStatus::kOk) break;
        ++posted;
      }
      // The clock is read every 16 steps: a system clock read per step
      // would cost more than the engine work being measured.
      if ((++steps & 15) == 1) now = NowUs();
      pair.Step(now);
      const size_t n = qa.PollCompletions(std::span<Completion>(c));
      for (size_t i = 0; i < n; ++i) {
        if (c[i].status != WcStatus::kSuccess) return -1;
      }
      done += n;
      if (qa.state() != QpState::kRts) return -1;
    }
    const double s = Seconds(t0, Clock::now());
    if (pair.mb.Bytes(sink)[kMsg / 2] != 0x5A) return -1;
    return s;
  }

  testing::RingPair pair;
  uint32_t sges;
  uint32_t src = 0, sink = 0;
};

double MemcpyBaseline() {
  std::vector<uint8_t> s(kMsg, 0x5A), d(kMsg);
  const auto t0 = Clock::now();
  for (size_t i = 0; i < kTotal / kMsg; ++i) {
    s[i] = static_cast<uint8_t>(i);
    std::memcpy(d.data(), s.data(), kMsg);
  }
  const double sec = Seconds(t0, Clock::now());
  if (d[kTotal / kMsg - 1] != static_cast<uint8_t>(kTotal / kMsg - 1)) std::printf("(baseline check failed)\n");
  return sec;
}

int RunAll() {
  int rc = 0;
  struct Case {
    const char* name;
    bool crc, markers;
    uint32_t sges;
  } cases[] = {{"crc", true, false, 1},
               {"nocrc", false, false, 1},
               {"crc+markers", true, true, 1},
               {"crc 4sge", true, false, 4}};
  for (const Case& k : cases) {
    Bench bench(k.crc, k.markers, k.sges);
    if (!bench.Connect()) {
      std::printf("write_bw %-12s connection setup failed\n", k.name);
      rc = 1;
      continue;
    }
    const double base = MemcpyBaseline();
    const double s = bench.Run();
    if (s < 0) {
      std::printf("write_bw %-12s transfer failed\n", k.name);
      rc = 1;
      continue;
    }
    const double mbs = kTotal / s / 1e6;
    const double base_mbs = kTotal / base / 1e6;
    std::printf("write_bw %-12s 64 MiB in 1 MiB Writes: iwarp %8.1f MB/s   memcpy baseline %8.1f MB/s"
                "   ratio %.3f   fpdus %llu segments %llu rtx %llu\n",
                k.name, mbs, base_mbs, mbs / base_mbs,
                static_cast<unsigned long long>(bench.pair.qa->stats().fpdus_out),
                static_cast<unsigned long long>(bench.pair.a->stats().segments_out),
                static_cast<unsigned long long>(bench.pair.a->stats().retransmitted_segments));
  }
  return rc;
}

}  // namespace
}  // namespace iwarp::engine

int main() { return iwarp::engine::RunAll(); }
