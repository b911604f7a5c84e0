// Timer wheel cost per timer against a std::multimap timer queue (the usual
// ordered-map design, as rte_timer's skiplist is ordered) in the same run.
//
//   WheelArmCancel / MapArmCancel    arm one timer then cancel it, with 10000
//                                    other timers armed (an RTO armed on send
//                                    and cancelled by the ACK)
//   WheelArmExpire / MapArmExpire    arm 1024 timers with deadlines spread
//                                    over the next R ticks, then advance time
//                                    by R so all of them expire (callbacks run)
// The argument R is the deadline range in ticks: 256 stays in level 0, 65536
// cascades once, 2^26 (about 2 hours at 100 us) cascades up to three times.
// After the table a summary prints ns per timer for both and their ratio.
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/timer_wheel.h"

namespace iwarp {
namespace {

constexpr size_t kBackground = 10000;
constexpr size_t kBatch = 1024;

std::vector<uint64_t> Delays(uint64_t range, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> v(n);
  for (uint64_t& d : v) d = 1 + rng() % range;
  return v;
}

void CountExpiry(Timer&, void* context) { ++*static_cast<uint64_t*>(context); }

// The baseline: deadline-ordered multimap of (deadline -> callback, context),
// cancel by the iterator the owner keeps.
struct MapTimer {
  Timer::Callback callback;
  void* context;
};
using MapQueue = std::multimap<uint64_t, MapTimer>;

void BM_WheelArmCancel(benchmark::State& state) {
  const auto range = static_cast<uint64_t>(state.range(0));
  TimerWheel wheel(0);
  uint64_t expired = 0;
  std::vector<Timer> background(kBackground);
  const std::vector<uint64_t> far = Delays(uint64_t{1} << 26, kBackground, 1);
  for (size_t i = 0; i < kBackground; ++i) {
    background[i].Init(CountExpiry, &expired);
    wheel.Arm(background[i], far[i]);
  }
  const std::vector<uint64_t> delays = Delays(range, 4096, 2);
  Timer timer(CountExpiry, &expired);
  size_t i = 0;
  for (auto _ : state) {
    wheel.ArmAfter(timer, delays[i++ & 4095]);
    wheel.Cancel(timer);
  }
  for (Timer& t : background) wheel.Cancel(t);
  benchmark::DoNotOptimize(expired);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_MapArmCancel(benchmark::State& state) {
  const auto range = static_cast<uint64_t>(state.range(0));
  MapQueue queue;
  uint64_t expired = 0;
  for (uint64_t d : Delays(uint64_t{1} << 26, kBackground, 1)) {
    queue.emplace(d, MapTimer{CountExpiry, &expired});
  }
  const std::vector<uint64_t> delays = Delays(range, 4096, 2);
  size_t i = 0;
  for (auto _ : state) {
    auto it = queue.emplace(delays[i++ & 4095], MapTimer{CountExpiry, &expired});
    queue.erase(it);
  }
  benchmark::DoNotOptimize(expired);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_WheelArmExpire(benchmark::State& state) {
  const auto range = static_cast<uint64_t>(state.range(0));
  TimerWheel wheel(0);
  uint64_t expired = 0;
  std::vector<Timer> timers(kBatch);
  for (Timer& t : timers) t.Init(CountExpiry, &expired);
  const std::vector<uint64_t> delays = Delays(range, kBatch, 3);
  for (auto _ : state) {
    for (size_t i = 0; i < kBatch; ++i) wheel.ArmAfter(timers[i], delays[i]);
    wheel.Advance(wheel.now() + range);
  }
  if (expired != state.iterations() * kBatch) state.SkipWithError("timers lost");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
}

void BM_MapArmExpire(benchmark::State& state) {
  const auto range = static_cast<uint64_t>(state.range(0));
  MapQueue queue;
  uint64_t now = 0;
  uint64_t expired = 0;
  const std::vector<uint64_t> delays = Delays(range, kBatch, 3);
  for (auto _ : state) {
    for (size_t i = 0; i < kBatch; ++i) {
      queue.emplace(now + delays[i], MapTimer{nullptr, &expired});
    }
    now += range;
    while (!queue.empty() && queue.begin()->first <= now) {
      auto node = queue.extract(queue.begin());
      Timer dummy;
      CountExpiry(dummy, node.mapped().context);
    }
  }
  if (expired != state.iterations() * kBatch) state.SkipWithError("timers lost");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
}

BENCHMARK(BM_WheelArmCancel)->Arg(256)->Arg(65536)->Arg(1 << 26);
BENCHMARK(BM_MapArmCancel)->Arg(256)->Arg(65536)->Arg(1 << 26);
BENCHMARK(BM_WheelArmExpire)->Arg(256)->Arg(65536)->Arg(1 << 26);
BENCHMARK(BM_MapArmExpire)->Arg(256)->Arg(65536)->Arg(1 << 26);

// Console output plus a closing table: ns per timer, wheel vs multimap.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      auto it = r.counters.find("items_per_second");
      if (it == r.counters.end() || it->second.value <= 0) continue;
      ns_[r.run_name.function_name][std::stol(r.run_name.args)] = 1e9 / it->second.value;
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nns per timer (same run), multimap baseline beside the wheel:\n");
    std::printf("%-12s %10s %12s %12s %8s\n", "operation", "range", "wheel", "multimap",
                "speedup");
    for (const char* op : {"ArmCancel", "ArmExpire"}) {
      const auto& wheel = ns_[std::string("BM_Wheel") + op];
      const auto& map = ns_[std::string("BM_Map") + op];
      for (const auto& [range, wheel_ns] : wheel) {
        const auto m = map.find(range);
        const double map_ns = m == map.end() ? 0.0 : m->second;
        std::printf("%-12s %10ld %12.1f %12.1f %7.2fx\n", op, range, wheel_ns, map_ns,
                    wheel_ns > 0 ? map_ns / wheel_ns : 0.0);
      }
    }
  }

 private:
  std::map<std::string, std::map<long, double>> ns_;
};

}  // namespace
}  // namespace iwarp

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  iwarp::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
