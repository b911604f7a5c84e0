// WaitForByte (iwarp-perf's wait for an RDMA Write) on a core it shares with
// a busy-polling thread, as iwarp-perf shares cores with iwarpd's workers.
#include "tools/perf/byte_wait.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::perf {
namespace {

void StoreByte(uint8_t* p, uint8_t v) {
  std::atomic_ref<uint8_t>(*p).store(v, std::memory_order_release);
}

TEST(ByteWait, ReturnsAtOnceWhenTheByteIsThere) {
  uint8_t b = 7;
  const uint64_t t0 = MonotonicNs();
  EXPECT_TRUE(WaitForByte(&b, 7, 1000000000ull));
  EXPECT_LT(MonotonicNs() - t0, 1000000ull);
}

TEST(ByteWait, GivesUpAfterTheTimeout) {
  uint8_t b = 0;
  const uint64_t t0 = MonotonicNs();
  EXPECT_FALSE(WaitForByte(&b, 1, 5000000ull));
  const uint64_t took = MonotonicNs() - t0;
  EXPECT_GE(took, 5000000ull);
  EXPECT_LT(took, 2000000000ull);
}

// The regression: a responder that busy-polls and never sleeps (an iwarpd
// worker with idle_sleep_us 0) and the waiter on ONE core. A waiter that
// only spins and sched_yield()s sees each answer a scheduler slice late
// (milliseconds: iwarp-perf write_lat measured a ~10 ms median that way); a
// waiter that naps lets the responder run at once.
// The wait WaitForByte replaced: spin, yielding the core on every turn.
bool YieldingWait(const uint8_t* p, uint8_t want, uint64_t timeout_ns) {
  const uint64_t t0 = MonotonicNs();
  while (LoadByte(p) != want) {
    if (MonotonicNs() - t0 >= timeout_ns) return false;
    sched_yield();
  }
  return true;
}

// Median round trip (ns) of `rounds` ping-pongs between this thread, waiting
// with `wait`, and a responder that busy-polls on the same core; *lost
// counts timeouts.
uint64_t PingPongMedianNs(const char* what, bool (*wait)(const uint8_t*, uint8_t, uint64_t),
                          int cpu, int rounds, int* lost) {
  alignas(64) uint8_t ping = 0;
  alignas(64) uint8_t pong = 0;
  std::atomic<bool> stop{false};
  std::thread responder([&] {
    uint8_t seen = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint8_t v = LoadByte(&ping);
      if (v != seen) {
        seen = v;
        StoreByte(&pong, v);
      }
    }
  });
  std::vector<uint64_t> rtt_ns;
  rtt_ns.reserve(rounds);
  for (int i = 1; i <= rounds; ++i) {
    const uint8_t tag = static_cast<uint8_t>(i % 255 + 1);
    const uint64_t t0 = MonotonicNs();
    StoreByte(&ping, tag);
    if (!wait(&pong, tag, 1000000000ull)) ++*lost;
    rtt_ns.push_back(MonotonicNs() - t0);
  }
  stop = true;
  responder.join();
  std::sort(rtt_ns.begin(), rtt_ns.end());
  const uint64_t median = rtt_ns[rtt_ns.size() / 2];
  printf("%s: ping-pong with a busy poller on cpu %d: median %.1f us, min %.1f us, max %.1f us\n",
         what, cpu, median / 1e3, rtt_ns.front() / 1e3, rtt_ns.back() / 1e3);
  return median;
}

TEST(ByteWait, PingPongWithABusyPollerOnTheSameCore) {
  const int cpu = sched_getcpu();
  ASSERT_GE(cpu, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);  // this thread; the responder inherits it
  LowerTimerSlack();

  // 500 us is generous for a loaded machine (measured on a CFS kernel:
  // about 55 us) and well below where a spin that only yields lands there
  // (1.6 ms median; one scheduler tick is 4 ms at HZ=250). The best of up to
  // three runs of 300 round trips counts: a busy host slows some runs.
  int lost = 0;
  uint64_t nap = UINT64_MAX;
  for (int attempt = 0; attempt < 3 && nap >= 500000ull; ++attempt) {
    nap = std::min(nap, PingPongMedianNs("WaitForByte", WaitForByte, cpu, 300, &lost));
  }
  if (nap >= 500000ull) {
    // Some schedulers (seen on a 6.18 kernel, EEVDF) run a task woken from
    // a nap only when the busy poller's slice ends, which takes a napping
    // and a yielding waiter alike a slice per round trip. The yielding spin,
    // measured now, tells whether this kernel can show the difference.
    const uint64_t yield = PingPongMedianNs("yield spin", YieldingWait, cpu, 100, &lost);
    ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
    EXPECT_EQ(lost, 0);
    if (yield >= 500000ull && nap * 2 > yield) {
      GTEST_SKIP() << "this kernel's scheduler runs a woken waiter no sooner than a yielding one "
                      "beside a busy poller (median nap wait "
                   << nap / 1000 << " us, yield spin " << yield / 1000
                   << " us, same run): the property cannot be observed here";
    }
    // Napping clearly beats yielding, or yielding is fast and napping is not.
    EXPECT_LT(nap * 2, yield) << "nap " << nap << " ns against yield " << yield << " ns";
    return;
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(lost, 0);
}

}  // namespace
}  // namespace iwarp::perf
