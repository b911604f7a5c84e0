// Per-worker hierarchical timer wheel with cascading (ARCHITECTURE.md: one
// hashed timer wheel per worker, about 100 us tick). It drives TCP RTO,
// delayed ACK, persist, keepalive, TIME_WAIT, MPA timeouts and ARP retries.
//
// Ownership and threading: a TimerWheel and every Timer armed on it belong to
// one worker lcore; nothing here is thread-safe and nothing needs a lock.
//
// Time: the wheel never reads a clock. The caller passes the current time in
// ticks to Advance() (the data plane derives it from rte_get_tsc_cycles, tests
// from a virtual clock). Ticks are uint64_t and compared modulo 2^64, so the
// counter may wrap; every armed deadline must lie within 2^63 ticks of now().
//
// Layout: kLevels = 4 levels of 256 slots. Level L holds timers due between
// 256^L and 256^(L+1) ticks ahead (2^32 ticks in all: about 119 hours at
// 100 us). When the wheel reaches the start of a level-L slot's span, that
// slot is cascaded: its timers move down to the level that now fits them, so a
// timer always expires from a level-0 slot that holds exactly one deadline.
// Deadlines further than 2^32 ticks ahead park in the last level and are
// re-placed on each cascade until they fit.
//
// Guarantees at tick resolution: a timer armed for deadline tick d fires in
// the first Advance(t) call with t >= d, never earlier and never in a later
// call (unless Advance's expiration budget ran out; see Advance). A deadline
// at or before now() is treated as now() + 1. Timers fire in non-decreasing
// deadline order; timers with equal deadlines fire in no specified order.
//
// Real-time error: if the caller's tick is floor(time / tick_length), a timer
// armed with ArmAfter(n) fires after a real delay in (n - 1, n] ticks plus the
// caller's polling latency. DelayTicks() rounds a duration so that the timer
// never fires before the duration has elapsed (at most 2 ticks late plus the
// polling latency).
//
// Cost: Arm, ArmAfter and Cancel are O(1). Advance does O(1) work per timer
// per level it passes through (at most kLevels cascades per timer), plus a
// scan of occupancy bitmaps (16 words) per non-empty tick; empty stretches of
// time are skipped without visiting each tick, so a stall of hours costs as
// much as the timers it fires. Nothing allocates after construction.
#ifndef IWARPD_COMMON_TIMER_WHEEL_H_
#define IWARPD_COMMON_TIMER_WHEEL_H_

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

namespace iwarp {

class Timer;
class TimerWheel;

namespace internal {
// Intrusive circular doubly-linked list hook. A hook that is not on a list has
// next == nullptr.
struct TimerHook {
  TimerHook* prev = nullptr;
  TimerHook* next = nullptr;
};
}  // namespace internal

// Ticks to pass to ArmAfter() so that a timer never fires before `duration_ns`
// has elapsed in real time, given ticks of `tick_ns` nanoseconds (tick_ns > 0)
// counted as floor(time / tick_ns): ceil(duration_ns / tick_ns) + 1.
constexpr uint64_t DelayTicks(uint64_t duration_ns, uint64_t tick_ns) {
  return duration_ns / tick_ns + (duration_ns % tick_ns != 0 ? 1 : 0) + 1;
}

// A timer embedded in its owner (a connection, an ARP entry). It is armed on
// at most one wheel at a time; arming an armed timer moves it.
//
// Contract: the owner cancels the timer (TimerWheel::Cancel) before destroying
// it, unless the wheel has been destroyed first. Destroying an armed timer is
// a bug, caught by a debug assertion.
class Timer {
 public:
  // Runs when the timer expires, on the wheel's lcore, from inside
  // TimerWheel::Advance. The timer is already disarmed; the callback may
  // re-arm it, arm or cancel any other timer on the same wheel (including
  // ones due in the same tick), or destroy the timer's owner (after
  // cancelling the owner's other timers). It must not call Advance on the
  // same wheel.
  using Callback = void (*)(Timer& timer, void* context);

  Timer() = default;
  Timer(Callback callback, void* context)
      : callback_(callback), context_(context) {}
  ~Timer() { assert(!armed() && "Timer destroyed while armed: cancel it first"); }

  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Sets what runs on expiry. Only while unarmed.
  void Init(Callback callback, void* context) {
    assert(!armed());
    callback_ = callback;
    context_ = context;
  }

  bool armed() const { return hook_.next != nullptr; }
  // The tick the timer is due at; meaningful only while armed.
  uint64_t deadline() const { return deadline_; }
  void* context() const { return context_; }

 private:
  friend class TimerWheel;

  internal::TimerHook hook_;  // first member: TimerWheel converts back with FromHook
  uint64_t deadline_ = 0;
  Callback callback_ = nullptr;
  void* context_ = nullptr;
  uint16_t slot_ = 0;  // index into TimerWheel::slots_, or kExpiringSlot
};

// Per-worker counters (house style rule 10: per-core counters).
struct TimerWheelStats {
  uint64_t expired = 0;          // callbacks run
  uint64_t cascaded = 0;         // timers moved down a level
  uint64_t ticks_processed = 0;  // ticks whose slots were actually visited
};

class TimerWheel {
 public:
  static constexpr int kLevels = 4;
  static constexpr int kSlotBits = 8;
  static constexpr int kSlots = 1 << kSlotBits;
  // Deadlines this far ahead or further are parked and re-placed on cascade.
  static constexpr uint64_t kRange = uint64_t{1} << (kLevels * kSlotBits);
  static constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();

  // The wheel starts with now() == now_tick: the first tick Advance can
  // expire is now_tick + 1.
  explicit TimerWheel(uint64_t now_tick = 0);
  // Disarms every timer still armed (without running callbacks), so their
  // owners may be destroyed afterwards. Not for the fast path.
  ~TimerWheel();

  TimerWheel(const TimerWheel&) = delete;
  TimerWheel& operator=(const TimerWheel&) = delete;

  // Arms `timer` to fire at tick `deadline_tick` (moving it if armed). O(1).
  void Arm(Timer& timer, uint64_t deadline_tick);
  // Arms `timer` to fire at now() + delay_ticks. O(1).
  void ArmAfter(Timer& timer, uint64_t delay_ticks) {
    Arm(timer, now() + delay_ticks);
  }
  // Disarms `timer` if it is armed on this wheel; a no-op if it is unarmed.
  // O(1). After Cancel the callback will not run.
  void Cancel(Timer& timer);

  // Moves time forward to `now_tick` (a value behind now() is ignored) and
  // runs the callback of every timer whose deadline is <= now_tick, in
  // deadline order. At most `max_expirations` callbacks run; if the budget
  // runs out, the remaining due timers stay armed, now() may already equal
  // now_tick, and the next Advance call (with any time) runs them first, still
  // in deadline order. Returns the number of callbacks run.
  size_t Advance(uint64_t now_tick, size_t max_expirations = kNoLimit);

  // The last tick Advance reached. Inside a callback: the tick being expired.
  uint64_t now() const { return next_tick_ - 1; }

  // A tick at or before the earliest armed deadline, or nullopt when no timer
  // is armed. Exact when the earliest timer is within 256 ticks and no
  // cascade is due before it; otherwise the tick of the next cascade, after
  // which Advance can give a closer answer. Advance(t) for any t earlier than
  // the result runs no callback, so an idle worker may sleep until then.
  std::optional<uint64_t> next_expiry() const;

  // Timers armed, including due ones left over by a spent Advance budget.
  size_t armed_count() const { return armed_count_; }
  const TimerWheelStats& stats() const { return stats_; }

 private:
  static constexpr int kTotalSlots = kLevels * kSlots;
  static constexpr uint16_t kExpiringSlot = kTotalSlots;
  static constexpr int kBitmapWords = kSlots / 64;

  static Timer* FromHook(internal::TimerHook* hook) {
    return reinterpret_cast<Timer*>(hook);
  }
  static bool ListEmpty(const internal::TimerHook& head) {
    return head.next == &head;
  }
  static void ListPushBack(internal::TimerHook& head, internal::TimerHook& node);
  static void ListUnlink(internal::TimerHook& node);

  // Places an unlinked timer by its deadline relative to next_tick_.
  void Insert(Timer& timer);
  void Unlink(Timer& timer);
  void Cascade(int level);
  // Cascades and moves the level-0 slot of next_tick_ to expiring_.
  void ProcessTick();
  // Distance from next_tick_ to the first tick at which a slot must be
  // visited (an expiry or a cascade), or nullopt if every slot is empty.
  std::optional<uint64_t> NextEventDistance() const;
  // First occupied slot of `level` at or after `start`, cyclically, or -1.
  int FindOccupied(int level, int start) const;

  void SetBit(int slot) {
    bitmap_[slot / 64] |= uint64_t{1} << (slot % 64);
  }
  void ClearBit(int slot) {
    bitmap_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
  }

  uint64_t next_tick_;  // the first tick not yet processed: now() + 1
  size_t armed_count_ = 0;
  TimerWheelStats stats_;
  std::array<uint64_t, kTotalSlots / 64> bitmap_{};  // one bit per non-empty slot
  internal::TimerHook expiring_;  // due timers whose callbacks have not run
  std::array<internal::TimerHook, kTotalSlots> slots_;
};

}  // namespace iwarp

#endif  // IWARPD_COMMON_TIMER_WHEEL_H_
