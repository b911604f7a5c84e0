#include "common/timer_wheel.h"

#include <bit>
#include <cstddef>
#include <type_traits>

namespace iwarp {

namespace {

constexpr uint64_t kSlotMask = TimerWheel::kSlots - 1;

constexpr int Shift(int level) { return level * TimerWheel::kSlotBits; }

// Wrap-safe "a is before b" on the modulo-2^64 tick line.
constexpr bool Before(uint64_t a, uint64_t b) {
  return static_cast<int64_t>(a - b) < 0;
}

}  // namespace

static_assert(std::is_standard_layout_v<Timer>,
              "FromHook relies on Timer being standard layout");
// Embedded in every connection and ARP entry: keep it within 48 bytes.
static_assert(sizeof(Timer) <= 48, "Timer grew");

TimerWheel::TimerWheel(uint64_t now_tick) : next_tick_(now_tick + 1) {
  expiring_.prev = expiring_.next = &expiring_;
  for (internal::TimerHook& head : slots_) head.prev = head.next = &head;
}

TimerWheel::~TimerWheel() {
  auto drain = [](internal::TimerHook& head) {
    while (!ListEmpty(head)) ListUnlink(*head.next);
  };
  drain(expiring_);
  for (internal::TimerHook& head : slots_) drain(head);
}

void TimerWheel::ListPushBack(internal::TimerHook& head,
                              internal::TimerHook& node) {
  node.prev = head.prev;
  node.next = &head;
  head.prev->next = &node;
  head.prev = &node;
}

void TimerWheel::ListUnlink(internal::TimerHook& node) {
  node.prev->next = node.next;
  node.next->prev = node.prev;
  node.prev = node.next = nullptr;
}

void TimerWheel::Insert(Timer& timer) {
  const uint64_t delta = timer.deadline_ - next_tick_;
  int level = 0;
  uint64_t placed = timer.deadline_;
  if (delta >= kRange) {
    level = kLevels - 1;
    placed = next_tick_ + (kRange - 1);
  } else if (delta >= kSlots) {
    level = (std::bit_width(delta) - 1) / kSlotBits;
  }
  const int slot =
      level * kSlots + static_cast<int>((placed >> Shift(level)) & kSlotMask);
  timer.slot_ = static_cast<uint16_t>(slot);
  ListPushBack(slots_[slot], timer.hook_);
  SetBit(slot);
}

void TimerWheel::Unlink(Timer& timer) {
  ListUnlink(timer.hook_);
  const int slot = timer.slot_;
  if (slot != kExpiringSlot && ListEmpty(slots_[slot])) ClearBit(slot);
}

void TimerWheel::Arm(Timer& timer, uint64_t deadline_tick) {
  assert(timer.callback_ != nullptr && "Timer armed without a callback");
  if (timer.armed()) {
    Unlink(timer);
  } else {
    ++armed_count_;
  }
  timer.deadline_ =
      Before(deadline_tick, next_tick_) ? next_tick_ : deadline_tick;
  Insert(timer);
}

void TimerWheel::Cancel(Timer& timer) {
  if (!timer.armed()) return;
  Unlink(timer);
  assert(armed_count_ > 0);
  --armed_count_;
}

void TimerWheel::Cascade(int level) {
  const int slot =
      level * kSlots +
      static_cast<int>((next_tick_ >> Shift(level)) & kSlotMask);
  internal::TimerHook& head = slots_[slot];
  if (ListEmpty(head)) return;
  // Detach the whole slot first: re-inserted timers may not land in it again
  // (their deadlines are now less than 256^level ticks ahead), but the list
  // must not be walked while it is being modified.
  internal::TimerHook moving;
  moving.next = head.next;
  moving.prev = head.prev;
  moving.next->prev = &moving;
  moving.prev->next = &moving;
  head.prev = head.next = &head;
  ClearBit(slot);
  while (!ListEmpty(moving)) {
    Timer& timer = *FromHook(moving.next);
    ListUnlink(timer.hook_);
    Insert(timer);
    ++stats_.cascaded;
  }
}

void TimerWheel::ProcessTick() {
  ++stats_.ticks_processed;
  for (int level = kLevels - 1; level > 0; --level) {
    const uint64_t span_mask = (uint64_t{1} << Shift(level)) - 1;
    if ((next_tick_ & span_mask) == 0) Cascade(level);
  }
  const int slot = static_cast<int>(next_tick_ & kSlotMask);
  internal::TimerHook& head = slots_[slot];
  if (ListEmpty(head)) return;
  for (internal::TimerHook* h = head.next; h != &head; h = h->next) {
    FromHook(h)->slot_ = kExpiringSlot;
  }
  // Append the slot to expiring_ (which may still hold earlier due timers).
  head.next->prev = expiring_.prev;
  expiring_.prev->next = head.next;
  head.prev->next = &expiring_;
  expiring_.prev = head.prev;
  head.prev = head.next = &head;
  ClearBit(slot);
}

int TimerWheel::FindOccupied(int level, int start) const {
  const int base_word = level * kBitmapWords;
  // Words start/64 .. end, then wrap to the words before start.
  for (int i = 0; i <= kBitmapWords; ++i) {
    const int word = (start / 64 + i) % kBitmapWords;
    uint64_t bits = bitmap_[base_word + word];
    if (i == 0) {
      bits &= ~uint64_t{0} << (start % 64);
    } else if (i == kBitmapWords) {
      bits &= (uint64_t{1} << (start % 64)) - 1;
    }
    if (bits != 0) return word * 64 + std::countr_zero(bits);
  }
  return -1;
}

std::optional<uint64_t> TimerWheel::NextEventDistance() const {
  std::optional<uint64_t> best;
  for (int level = 0; level < kLevels; ++level) {
    const int shift = Shift(level);
    // Visits for this level and those above fall on multiples of
    // 256^level: none can come before an event already found closer.
    if (best && *best < ((~next_tick_ + 1) & ((uint64_t{1} << shift) - 1))) break;
    // First span of this level whose slot is still to be visited: the span
    // holding next_tick_ if next_tick_ is its first tick, else the one after.
    uint64_t span = next_tick_ >> shift;
    if (level > 0 && (next_tick_ & ((uint64_t{1} << shift) - 1)) != 0) ++span;
    const int start = static_cast<int>(span & kSlotMask);
    const int slot = FindOccupied(level, start);
    if (slot < 0) continue;
    const uint64_t ahead = static_cast<uint64_t>((slot - start) & kSlotMask);
    const uint64_t tick = (span + ahead) << shift;
    const uint64_t distance = tick - next_tick_;
    if (!best || distance < *best) best = distance;
  }
  return best;
}

std::optional<uint64_t> TimerWheel::next_expiry() const {
  if (!ListEmpty(expiring_)) return FromHook(expiring_.next)->deadline_;
  const std::optional<uint64_t> distance = NextEventDistance();
  if (!distance) return std::nullopt;
  return next_tick_ + *distance;
}

size_t TimerWheel::Advance(uint64_t now_tick, size_t max_expirations) {
  size_t fired = 0;
  for (;;) {
    while (!ListEmpty(expiring_)) {
      if (fired == max_expirations) return fired;
      Timer& timer = *FromHook(expiring_.next);
      ListUnlink(timer.hook_);
      --armed_count_;
      ++fired;
      ++stats_.expired;
      timer.callback_(timer, timer.context_);
    }
    if (Before(now_tick, next_tick_)) return fired;
    const std::optional<uint64_t> distance =
        armed_count_ == 0 ? std::nullopt : NextEventDistance();
    if (!distance || *distance > now_tick - next_tick_) {
      // Nothing to visit up to now_tick: skip the empty stretch.
      next_tick_ = now_tick + 1;
      return fired;
    }
    next_tick_ += *distance;
    ProcessTick();
    ++next_tick_;
  }
}

}  // namespace iwarp
