// Proves the timer wheel allocates nothing after construction (house style
// rule 13). Global operator new is replaced in this binary only, to count.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include "common/timer_wheel.h"
#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"

namespace iwarp {
namespace {

uint64_t Allocations() { return testutil::AllocationCount(); }

// Steady-state owner: on expiry it re-arms itself and moves a neighbour,
// as an RTO handler re-arms its own timer and cancels a delayed ACK.
struct Conn {
  Timer rto;
  Timer other;
  TimerWheel* wheel = nullptr;
  Conn* neighbour = nullptr;
  uint64_t expirations = 0;
};

void OnRto(Timer& timer, void* context) {
  auto* c = static_cast<Conn*>(context);
  ++c->expirations;
  if (c->expirations % 3 != 0) c->wheel->ArmAfter(timer, 1 + c->expirations * 97 % 70000);
  c->wheel->Cancel(c->neighbour->other);
  c->wheel->ArmAfter(c->neighbour->other, 40);
}

void OnOther(Timer&, void* context) { ++static_cast<Conn*>(context)->expirations; }

TEST(TimerWheelAlloc, CounterSeesAllocations) {
  const uint64_t before = Allocations();
  auto p = std::make_unique<int>(7);
  EXPECT_EQ(*p, 7);
  EXPECT_GT(Allocations(), before);
}

TEST(TimerWheelAlloc, SteadyStateAllocatesNothing) {
  constexpr size_t kConns = 10000;
  auto wheel = std::make_unique<TimerWheel>(0);
  std::vector<Conn> conns(kConns);
  for (size_t i = 0; i < kConns; ++i) {
    conns[i].wheel = wheel.get();
    conns[i].neighbour = &conns[(i + 1) % kConns];
    conns[i].rto.Init(OnRto, &conns[i]);
    conns[i].other.Init(OnOther, &conns[i]);
  }
  std::mt19937_64 rng(11);

  const uint64_t before = Allocations();
  for (size_t i = 0; i < kConns; ++i) {
    wheel->Arm(conns[i].rto, rng() % (uint64_t{1} << 30));
    if (i % 2 == 0) wheel->Arm(conns[i].other, rng() % 1000);
  }
  for (size_t i = 0; i < kConns; i += 3) wheel->Cancel(conns[i].rto);
  for (int round = 0; round < 200; ++round) {
    wheel->Advance(wheel->now() + rng() % 5000);
    wheel->Advance(wheel->now() + 100000, 50);
    (void)wheel->next_expiry();
  }
  wheel->Advance(wheel->now() + 3 * TimerWheel::kRange);  // hours-long stall
  const uint64_t after = Allocations();

  uint64_t expirations = 0;
  for (const Conn& c : conns) expirations += c.expirations;
  EXPECT_GT(expirations, kConns);  // the workload really ran callbacks
  EXPECT_EQ(wheel->stats().expired, expirations);
  EXPECT_EQ(after, before);
  EXPECT_EQ(wheel->armed_count(), 0u);
}

}  // namespace
}  // namespace iwarp
