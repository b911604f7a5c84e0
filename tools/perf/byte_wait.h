// Waiting for an RDMA Write to land, for the latency tests of iwarp-perf.
//
// An RDMA Write raises no completion at its target, so write_lat polls the
// last byte of the destination buffer (as perftest does). iwarpd's workers
// busy-poll (idle_sleep_us 0) on cores the application shares. A wait that
// never blocks keeps such a core for a whole scheduler slice: sched_yield()
// does not hand the core over under CFS for longer than the other task's
// slice either, so the worker that must move the next packet, or the waiter
// itself, waits milliseconds per round trip (measured: write_lat median
// ~10 ms with a sched_yield spin, against ~20 us for send_lat, whose waits
// sleep on the CQ's wake-up pipe).
//
// WaitForByte therefore spins for kByteWaitSpinNs only, then naps in short
// sleeps (kByteWaitNapMinNs doubling to kByteWaitNapMaxNs): a nap blocks, so
// whatever shares the core runs at once, and the timer's wake-up preempts it
// when the nap ends. Call LowerTimerSlack() once at start-up, or a nap lasts
// the default 50 us timer slack. A nap still costs 9-15 us on a VM, so
// write_lat first waits on the CQ for its own Write's completion (as
// perftest does), which comes with the ACK the peer's Write carries: by then
// the byte is usually there, and WaitForByte rarely naps.
#ifndef IWARPD_TOOLS_PERF_BYTE_WAIT_H_
#define IWARPD_TOOLS_PERF_BYTE_WAIT_H_

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace iwarp::perf {

inline constexpr uint64_t kByteWaitSpinNs = 2000;
inline constexpr uint64_t kByteWaitNapMinNs = 1000;
inline constexpr uint64_t kByteWaitNapMaxNs = 8000;

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The byte another agent (the daemon's placement, another thread) stores.
inline uint8_t LoadByte(const uint8_t* p) {
  return std::atomic_ref<uint8_t>(*const_cast<uint8_t*>(p)).load(std::memory_order_acquire);
}

// Sleeps of a few microseconds last about as long as asked.
inline void LowerTimerSlack() { prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); }

// Waits until *p == want. True when it did; false after `timeout_ns`.
inline bool WaitForByte(const uint8_t* p, uint8_t want, uint64_t timeout_ns) {
  if (LoadByte(p) == want) return true;
  const uint64_t since = MonotonicNs();
  uint64_t nap_ns = kByteWaitNapMinNs;
  for (uint32_t spins = 1; LoadByte(p) != want; ++spins) {
    if ((spins & 63) != 0) continue;  // the clock read costs more than a load
    const uint64_t waited = MonotonicNs() - since;
    if (waited < kByteWaitSpinNs) continue;
    if (waited > timeout_ns) return false;
    const timespec nap{0, static_cast<long>(nap_ns)};
    nanosleep(&nap, nullptr);
    nap_ns = std::min(nap_ns * 2, kByteWaitNapMaxNs);
  }
  return true;
}

}  // namespace iwarp::perf

#endif  // IWARPD_TOOLS_PERF_BYTE_WAIT_H_
