#include "common/timer_wheel.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp {
namespace {

// What a callback saw: which timer, and the wheel's now() while it ran.
struct Fire {
  int id;
  uint64_t at;
};

// A timer owner as a connection would embed one.
struct Probe {
  Timer timer;
  int id = 0;
  uint64_t deadline = 0;  // the tick the test expects it to fire at
  TimerWheel* wheel = nullptr;
  std::vector<Fire>* log = nullptr;
};

void RecordFire(Timer& /*timer*/, void* context) {
  auto* p = static_cast<Probe*>(context);
  p->log->push_back({p->id, p->wheel->now()});
}

class Probes {
 public:
  Probes(TimerWheel& wheel, size_t n, Timer::Callback cb = RecordFire)
      : probes_(n) {
    for (size_t i = 0; i < n; ++i) {
      probes_[i].id = static_cast<int>(i);
      probes_[i].wheel = &wheel;
      probes_[i].log = &log_;
      probes_[i].timer.Init(cb, &probes_[i]);
    }
  }
  // Owners cancel before they go (the Timer contract).
  ~Probes() {
    for (Probe& probe : probes_) probe.wheel->Cancel(probe.timer);
  }
  Probes(const Probes&) = delete;
  Probes& operator=(const Probes&) = delete;

  Probe& operator[](size_t i) { return probes_[i]; }
  std::vector<Fire>& log() { return log_; }

 private:
  std::vector<Probe> probes_;
  std::vector<Fire> log_;
};

constexpr uint64_t kL1 = uint64_t{1} << 8;
constexpr uint64_t kL2 = uint64_t{1} << 16;
constexpr uint64_t kL3 = uint64_t{1} << 24;
constexpr uint64_t kRange = TimerWheel::kRange;

TEST(TimerWheel, FiresAtDeadlineNeverEarly) {
  TimerWheel wheel(0);
  Probes p(wheel, 1);
  wheel.Arm(p[0].timer, 10);
  EXPECT_TRUE(p[0].timer.armed());
  EXPECT_EQ(wheel.armed_count(), 1u);
  EXPECT_EQ(wheel.Advance(9), 0u);
  EXPECT_TRUE(p.log().empty());
  EXPECT_EQ(wheel.Advance(10), 1u);
  ASSERT_EQ(p.log().size(), 1u);
  EXPECT_EQ(p.log()[0].at, 10u);
  EXPECT_FALSE(p[0].timer.armed());
  EXPECT_EQ(wheel.armed_count(), 0u);
  EXPECT_EQ(wheel.now(), 10u);
}

TEST(TimerWheel, CancelUnarmedIsNoOpAndCancelledNeverFires) {
  TimerWheel wheel(0);
  Probes p(wheel, 2);
  wheel.Cancel(p[0].timer);
  EXPECT_EQ(wheel.armed_count(), 0u);
  wheel.Arm(p[0].timer, 5);
  wheel.Arm(p[1].timer, 5);
  wheel.Cancel(p[0].timer);
  wheel.Cancel(p[0].timer);
  EXPECT_EQ(wheel.armed_count(), 1u);
  EXPECT_EQ(wheel.Advance(100), 1u);
  ASSERT_EQ(p.log().size(), 1u);
  EXPECT_EQ(p.log()[0].id, 1);
}

TEST(TimerWheel, RearmMovesTheTimer) {
  TimerWheel wheel(0);
  Probes p(wheel, 1);
  wheel.Arm(p[0].timer, 100000);
  wheel.ArmAfter(p[0].timer, 20);
  EXPECT_EQ(wheel.armed_count(), 1u);
  EXPECT_EQ(p[0].timer.deadline(), 20u);
  wheel.Advance(200000);
  ASSERT_EQ(p.log().size(), 1u);
  EXPECT_EQ(p.log()[0].at, 20u);
}

TEST(TimerWheel, PastDeadlineFiresOnNextTick) {
  TimerWheel wheel(1000);
  Probes p(wheel, 2);
  wheel.Arm(p[0].timer, 10);    // long past
  wheel.Arm(p[1].timer, 1000);  // now()
  EXPECT_EQ(wheel.next_expiry(), std::optional<uint64_t>(1001));
  EXPECT_EQ(wheel.Advance(1000), 0u);
  EXPECT_EQ(wheel.Advance(1001), 2u);
  for (const Fire& f : p.log()) EXPECT_EQ(f.at, 1001u);
}

TEST(TimerWheel, TimeGoingBackIsIgnored) {
  TimerWheel wheel(500);
  Probes p(wheel, 1);
  wheel.Arm(p[0].timer, 510);
  EXPECT_EQ(wheel.Advance(100), 0u);
  EXPECT_EQ(wheel.now(), 500u);
  EXPECT_EQ(wheel.Advance(510), 1u);
}

TEST(TimerWheel, NextExpiry) {
  TimerWheel wheel(0);
  Probes p(wheel, 2);
  EXPECT_EQ(wheel.next_expiry(), std::nullopt);
  wheel.Arm(p[0].timer, 200);
  EXPECT_EQ(wheel.next_expiry(), std::optional<uint64_t>(200));
  // A far timer: the answer is a lower bound an idle worker can sleep to;
  // following it never fires early and converges on the deadline.
  wheel.Cancel(p[0].timer);
  const uint64_t far = 7200u * 10000u + 12345u;  // keepalive, 100 us ticks
  wheel.Arm(p[1].timer, far);
  int wakeups = 0;
  while (p.log().empty()) {
    std::optional<uint64_t> next = wheel.next_expiry();
    ASSERT_TRUE(next.has_value());
    ASSERT_LE(*next, far);
    ASSERT_GT(*next, wheel.now());
    wheel.Advance(*next);
    ASSERT_LE(++wakeups, TimerWheel::kLevels + 1);
  }
  EXPECT_EQ(p.log()[0].at, far);
  EXPECT_EQ(wheel.next_expiry(), std::nullopt);
}

TEST(TimerWheel, CallbackRearmsItself) {
  TimerWheel wheel(0);
  struct Periodic {
    TimerWheel* wheel;
    std::vector<uint64_t> fired;
  } ctx{&wheel, {}};
  Timer timer(
      [](Timer& t, void* c) {
        auto* self = static_cast<Periodic*>(c);
        self->fired.push_back(self->wheel->now());
        if (self->fired.size() < 5) self->wheel->ArmAfter(t, 300);
      },
      &ctx);
  wheel.Arm(timer, 300);
  EXPECT_EQ(wheel.Advance(10000), 5u);
  EXPECT_EQ(ctx.fired, (std::vector<uint64_t>{300, 600, 900, 1200, 1500}));
  EXPECT_FALSE(timer.armed());
}

TEST(TimerWheel, CallbackCancelsTimerDueInSameTick) {
  TimerWheel wheel(0);
  struct Pair {
    Timer a, b;
    TimerWheel* wheel;
    int fired = 0;
  } ctx;
  ctx.wheel = &wheel;
  auto cancel_other = [](Timer& t, void* c) {
    auto* self = static_cast<Pair*>(c);
    ++self->fired;
    self->wheel->Cancel(&t == &self->a ? self->b : self->a);
  };
  ctx.a.Init(cancel_other, &ctx);
  ctx.b.Init(cancel_other, &ctx);
  wheel.Arm(ctx.a, 700);
  wheel.Arm(ctx.b, 700);
  EXPECT_EQ(wheel.Advance(1000), 1u);
  EXPECT_EQ(ctx.fired, 1);
  EXPECT_EQ(wheel.armed_count(), 0u);
  EXPECT_FALSE(ctx.a.armed());
  EXPECT_FALSE(ctx.b.armed());
}

TEST(TimerWheel, CallbackArmsOthersIncludingDueNow) {
  TimerWheel wheel(0);
  Probes p(wheel, 4);
  struct Chain {
    Probes* p;
    TimerWheel* wheel;
  } chain{&p, &wheel};
  Timer first(
      [](Timer&, void* c) {
        auto* ch = static_cast<Chain*>(c);
        (*ch->p).log().push_back({-1, ch->wheel->now()});
        ch->wheel->Arm((*ch->p)[0].timer, ch->wheel->now());  // due now: next tick
        ch->wheel->Arm((*ch->p)[1].timer, ch->wheel->now() + 2);
        ch->wheel->Arm((*ch->p)[2].timer, ch->wheel->now() + kL2);  // cascades
        ch->wheel->Arm((*ch->p)[3].timer, 5000);                   // re-armed below
        ch->wheel->Cancel((*ch->p)[3].timer);
      },
      &chain);
  wheel.Arm(first, 5000);
  EXPECT_EQ(wheel.Advance(5000 + kL2 + 10), 4u);
  ASSERT_EQ(p.log().size(), 4u);
  EXPECT_EQ(p.log()[0].id, -1);
  EXPECT_EQ(p.log()[0].at, 5000u);
  EXPECT_EQ(p.log()[1].id, 0);
  EXPECT_EQ(p.log()[1].at, 5001u);
  EXPECT_EQ(p.log()[2].id, 1);
  EXPECT_EQ(p.log()[2].at, 5002u);
  EXPECT_EQ(p.log()[3].id, 2);
  EXPECT_EQ(p.log()[3].at, 5000 + kL2);
}

TEST(TimerWheel, CallbackMayDestroyItsOwner) {
  TimerWheel wheel(0);
  struct Owner {
    Timer timer;
    int* destroyed;
  };
  int destroyed = 0;
  auto* owner = new Owner{Timer(), &destroyed};
  owner->timer.Init(
      [](Timer&, void* c) {
        auto* o = static_cast<Owner*>(c);
        ++*o->destroyed;
        delete o;
      },
      owner);
  wheel.Arm(owner->timer, 3);
  EXPECT_EQ(wheel.Advance(3), 1u);
  EXPECT_EQ(destroyed, 1);
}

TEST(TimerWheel, DestroyingWheelDisarmsTimers) {
  Probe probe;
  {
    TimerWheel wheel(0);
    std::vector<Fire> log;
    probe.wheel = &wheel;
    probe.log = &log;
    probe.timer.Init(RecordFire, &probe);
    wheel.Arm(probe.timer, kL3 + 7);
    EXPECT_TRUE(probe.timer.armed());
  }
  EXPECT_FALSE(probe.timer.armed());
}

#ifndef NDEBUG
TEST(TimerWheelDeathTest, DestroyingArmedTimerAsserts) {
  EXPECT_DEATH(
      {
        TimerWheel wheel(0);
        alignas(Timer) unsigned char storage[sizeof(Timer)];
        Timer* t = new (storage) Timer([](Timer&, void*) {}, nullptr);
        wheel.Arm(*t, 5);
        t->~Timer();
      },
      "cancel it first");
}
#endif

// Deadlines exactly on, before and after every level boundary, both as delays
// and as absolute ticks aligned to each level's span.
TEST(TimerWheel, ExactAtEveryLevelBoundary) {
  for (uint64_t start : {uint64_t{0}, uint64_t{12345}, kL3 - 1, kRange - 3}) {
    TimerWheel wheel(start);
    std::vector<uint64_t> deadlines;
    for (uint64_t span : {kL1, kL2, kL3, kRange}) {
      for (uint64_t m : {uint64_t{1}, uint64_t{2}, uint64_t{255}}) {
        for (int64_t d : {-1, 0, 1}) {
          deadlines.push_back(start + span * m + static_cast<uint64_t>(d));
          const uint64_t aligned = (start / span + m) * span;
          deadlines.push_back(aligned + static_cast<uint64_t>(d));
        }
      }
    }
    deadlines.push_back(start + 2 * kRange + 5);
    // Deadlines at or before now() are due on the next tick.
    for (uint64_t& d : deadlines) d = std::max(d, start + 1);
    Probes p(wheel, deadlines.size());
    for (size_t i = 0; i < deadlines.size(); ++i) {
      p[i].deadline = deadlines[i];
      wheel.Arm(p[i].timer, deadlines[i]);
    }
    // Advance to each deadline minus one, then to the deadline.
    std::vector<uint64_t> sorted = deadlines;
    std::sort(sorted.begin(), sorted.end());
    size_t fired = 0;
    for (uint64_t d : sorted) {
      if (d <= wheel.now()) continue;
      fired += wheel.Advance(d - 1);
      ASSERT_EQ(fired, static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), d) -
                                           sorted.begin()))
          << "start " << start << " deadline " << d;
      fired += wheel.Advance(d);
    }
    ASSERT_EQ(p.log().size(), deadlines.size());
    for (const Fire& f : p.log()) {
      EXPECT_EQ(f.at, p[static_cast<size_t>(f.id)].deadline) << "start " << start;
    }
  }
}

// Randomized comparison against a std::multimap model on the same virtual
// clock: the same timers fire in the same Advance call, each at its deadline.
void RunAgainstModel(uint64_t base, uint32_t seed, int ops) {
  TimerWheel wheel(base);
  constexpr size_t kTimers = 3000;
  Probes p(wheel, kTimers);
  // Model keyed by deadline offset from `base` (offsets never wrap).
  std::multimap<uint64_t, int> model;
  std::vector<std::multimap<uint64_t, int>::iterator> where(kTimers, model.end());
  std::mt19937_64 rng(seed);
  uint64_t now = 0;  // offset of wheel.now() from base

  const uint64_t boundaries[] = {kL1, kL2, kL3, kRange};
  auto random_delta = [&]() -> uint64_t {
    switch (rng() % 4) {
      case 0: {  // a delay near a level size
        const uint64_t b = boundaries[rng() % 4] * (1 + rng() % 3);
        return b + (rng() % 7) - 3;
      }
      case 1: {  // an absolute tick near a span boundary
        const uint64_t span = boundaries[rng() % 4];
        const uint64_t aligned = ((base + now) / span + 1 + rng() % 2) * span;
        return aligned - (base + now) + (rng() % 5) - 2;
      }
      case 2:
        return rng() % 600;
      default:
        return rng() % (uint64_t{1} << (rng() % 35));
    }
  };

  for (int op = 0; op < ops; ++op) {
    const uint64_t r = rng() % 10;
    const size_t i = rng() % kTimers;
    if (r < 6) {
      uint64_t delta = random_delta();
      if (rng() % 50 == 0) delta = -static_cast<uint64_t>(rng() % 1000);  // past
      const uint64_t tick = base + now + delta;
      wheel.Arm(p[i].timer, tick);
      uint64_t off = now + delta;
      if (static_cast<int64_t>(delta) <= 0) off = now + 1;
      if (where[i] != model.end()) model.erase(where[i]);
      where[i] = model.emplace(off, static_cast<int>(i));
    } else if (r < 7) {
      wheel.Cancel(p[i].timer);
      if (where[i] != model.end()) model.erase(where[i]);
      where[i] = model.end();
    } else {
      uint64_t step = random_delta();
      if (static_cast<int64_t>(step) < 0) step = 0;
      const uint64_t to = now + step;
      std::vector<int> expected;
      std::vector<uint64_t> expected_at;
      while (!model.empty() && model.begin()->first <= to) {
        expected.push_back(model.begin()->second);
        expected_at.push_back(model.begin()->first);
        where[static_cast<size_t>(model.begin()->second)] = model.end();
        model.erase(model.begin());
      }
      const std::optional<uint64_t> next = wheel.next_expiry();
      if (expected_at.empty() && model.empty()) {
        ASSERT_EQ(next, std::nullopt);
      } else {
        ASSERT_TRUE(next.has_value());
        const uint64_t first = expected_at.empty() ? model.begin()->first : expected_at[0];
        ASSERT_LE(*next - base, first);
        ASSERT_GT(*next - base, now);
      }
      p.log().clear();
      const size_t fired = wheel.Advance(base + to);
      now = to;
      ASSERT_EQ(fired, expected.size()) << "op " << op;
      ASSERT_EQ(p.log().size(), expected.size());
      std::vector<int> got;
      for (size_t k = 0; k < p.log().size(); ++k) {
        const Fire& f = p.log()[k];
        got.push_back(f.id);
        // Each fires exactly at its deadline, so in deadline order.
        ASSERT_EQ(f.at - base, expected_at[k]) << "op " << op;
      }
      std::sort(got.begin(), got.end());
      std::sort(expected.begin(), expected.end());
      ASSERT_EQ(got, expected) << "op " << op;
    }
    ASSERT_EQ(wheel.armed_count(), model.size());
    ASSERT_EQ(wheel.now(), base + now);
  }
  // Drain everything still armed.
  const size_t left = model.size();
  EXPECT_EQ(wheel.Advance(base + now + 4 * kRange), left);
  EXPECT_EQ(wheel.armed_count(), 0u);
}

TEST(TimerWheel, MatchesModel) { RunAgainstModel(0, 1, 60000); }
TEST(TimerWheel, MatchesModelUnalignedStart) { RunAgainstModel(kL3 * 77 + 4321, 2, 60000); }
// The tick counter wraps modulo 2^64 in the middle of the run.
TEST(TimerWheel, MatchesModelAcrossTickWrap) {
  RunAgainstModel(~uint64_t{0} - 3 * kL2, 3, 60000);
  RunAgainstModel(~uint64_t{0} - 2 * kRange, 4, 60000);
}

TEST(TimerWheel, HundredThousandTimers) {
  constexpr size_t kN = 100000;
  TimerWheel wheel(0);
  auto p = std::make_unique<Probes>(wheel, kN);
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < kN; ++i) {
    (*p)[i].deadline = 1 + rng() % (uint64_t{1} << 27);  // up to ~3.7 h
    wheel.Arm((*p)[i].timer, (*p)[i].deadline);
  }
  EXPECT_EQ(wheel.armed_count(), kN);
  uint64_t prev = 0;
  int rounds = 0;
  while (wheel.armed_count() > 0) {
    ASSERT_LT(++rounds, 10000) << "timers never fire";
    const size_t before = p->log().size();
    const uint64_t to = wheel.now() + 1 + rng() % (uint64_t{1} << 21);
    wheel.Advance(to);
    for (size_t k = before; k < p->log().size(); ++k) {
      const Fire& f = p->log()[k];
      ASSERT_EQ(f.at, (*p)[static_cast<size_t>(f.id)].deadline);
      ASSERT_GE(f.at, prev);
      ASSERT_LE(f.at, to);
      prev = f.at;
    }
  }
  EXPECT_EQ(p->log().size(), kN);
}

// A stall of hours fires everything due, in deadline order, visiting only the
// ticks that hold work (bounded by a few visits per timer), not every tick.
TEST(TimerWheel, TimeJumpOfHours) {
  constexpr uint64_t kTicksPerSecond = 10000;  // 100 us ticks
  TimerWheel wheel(0);
  const std::vector<uint64_t> deadlines = {
      2,                           // delayed ACK
      2000,                        // 200 ms RTO
      120 * kTicksPerSecond,       // RTO backoff cap
      240 * kTicksPerSecond,       // TIME_WAIT
      7200 * kTicksPerSecond,      // keepalive
      7200 * kTicksPerSecond + 1,
      3 * 3600 * kTicksPerSecond,
  };
  Probes p(wheel, deadlines.size());
  for (size_t i = deadlines.size(); i-- > 0;) {
    p[i].deadline = deadlines[i];
    wheel.Arm(p[i].timer, deadlines[i]);
  }
  const uint64_t ticks_before = wheel.stats().ticks_processed;
  EXPECT_EQ(wheel.Advance(4 * 3600 * kTicksPerSecond), deadlines.size());
  ASSERT_EQ(p.log().size(), deadlines.size());
  for (size_t k = 0; k < deadlines.size(); ++k) {
    EXPECT_EQ(p.log()[k].id, static_cast<int>(k));
    EXPECT_EQ(p.log()[k].at, deadlines[k]);
  }
  EXPECT_LE(wheel.stats().ticks_processed - ticks_before,
            deadlines.size() * TimerWheel::kLevels);
  EXPECT_EQ(wheel.now(), 4 * 3600 * kTicksPerSecond);
}

TEST(TimerWheel, EmptyWheelJumpVisitsNoTick) {
  TimerWheel wheel(0);
  EXPECT_EQ(wheel.Advance(uint64_t{1} << 40), 0u);
  EXPECT_EQ(wheel.stats().ticks_processed, 0u);
  EXPECT_EQ(wheel.now(), uint64_t{1} << 40);
}

// With a budget, a stall is worked off in bounded batches, still in deadline
// order, each timer at its own deadline tick.
TEST(TimerWheel, BudgetedAdvanceKeepsDeadlineOrder) {
  constexpr size_t kN = 1000;
  TimerWheel wheel(0);
  Probes p(wheel, kN + 1);
  std::vector<size_t> order(kN);
  for (size_t i = 0; i < kN; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(5));
  for (size_t i : order) {
    p[i].deadline = 1 + i * 37;
    wheel.Arm(p[i].timer, p[i].deadline);
  }
  const uint64_t to = kN * 37 + 10;
  size_t batches = 0;
  size_t total = 0;
  while (total < kN + 1) {
    const size_t n = wheel.Advance(to, 64);
    ASSERT_EQ(n, std::min<size_t>(64, kN + 1 - total));
    total += n;
    ++batches;
    if (batches == 3) {
      // Between batches a due timer is still pending: next_expiry says so.
      ASSERT_TRUE(wheel.next_expiry().has_value());
      EXPECT_LE(*wheel.next_expiry(), wheel.now());
      // Armed mid-stall for "now": due on the next tick, in deadline order
      // with the timers still pending.
      wheel.Arm(p[kN].timer, 0);
      p[kN].deadline = wheel.now() + 1;
    }
  }
  EXPECT_EQ(batches, (kN + 1 + 63) / 64);
  ASSERT_EQ(p.log().size(), kN + 1);
  uint64_t prev = 0;
  for (const Fire& f : p.log()) {
    EXPECT_EQ(f.at, p[static_cast<size_t>(f.id)].deadline) << f.id;
    EXPECT_GE(f.at, prev);
    prev = f.at;
  }
  EXPECT_EQ(wheel.armed_count(), 0u);
  EXPECT_EQ(wheel.Advance(to + 1000), 0u);
}

TEST(TimerWheel, DelayTicksNeverEarly) {
  // 100 us ticks: 200 ms is 2000 ticks; rounding up plus the partial tick.
  EXPECT_EQ(DelayTicks(200'000'000, 100'000), 2001u);
  EXPECT_EQ(DelayTicks(200'000'001, 100'000), 2002u);
  EXPECT_EQ(DelayTicks(0, 100'000), 1u);
  // Arming at any real time within tick n, the expiry tick's start is at
  // least the duration away.
  const uint64_t tick_ns = 100'000;
  for (uint64_t real : {uint64_t{1'000'000}, uint64_t{1'099'999}}) {
    TimerWheel wheel(real / tick_ns);
    Timer t([](Timer&, void*) {}, nullptr);
    const uint64_t duration = 250'000'050;
    wheel.ArmAfter(t, DelayTicks(duration, tick_ns));
    EXPECT_GE(t.deadline() * tick_ns, real + duration);
    EXPECT_LT(t.deadline() * tick_ns, real + duration + 2 * tick_ns);
    wheel.Cancel(t);
  }
}

}  // namespace
}  // namespace iwarp
