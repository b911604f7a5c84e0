// Single-producer single-consumer ring in memory shared by two processes.
//
// Layout at `base` (both sides compute it from the entry count, which the
// daemon chooses): one RingHeader, then `entries` fixed-size slots. The header
// holds indices only (never pointers): free-running 32-bit counters, slot =
// index & (entries - 1).
//
// Trust: either side may be buggy or hostile. Each side keeps its own index in
// private memory and only *reads* the other side's index from the shared
// header; a value that would make the ring hold more than `entries` items is
// reported as corrupt instead of being used. Entries are copied out before
// they are validated (no time-of-check/time-of-use on shared bytes).
//
// Doorbells: the consumer sets `consumer_waiting` before it sleeps and checks
// the ring again; the producer, after publishing, reads the flag (with a full
// fence between, both sides) and only then rings the eventfd. So a producer
// makes no system call while the consumer is busy polling.
#ifndef IWARPD_APPIF_SPSC_RING_H_
#define IWARPD_APPIF_SPSC_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace iwarp::appif {

inline constexpr size_t kCacheLine = 64;

struct RingHeader {
  alignas(kCacheLine) std::atomic<uint32_t> producer;  // written by the producer only
  alignas(kCacheLine) std::atomic<uint32_t> consumer;  // written by the consumer only
  // Set by the consumer before it blocks; cleared by whoever rings the doorbell.
  alignas(kCacheLine) std::atomic<uint32_t> consumer_waiting;
};
static_assert(sizeof(RingHeader) == 3 * kCacheLine);
static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "shared-memory atomics must be address-free");

inline constexpr bool IsPowerOfTwo(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Bytes a ring of `entries` slots of T occupies, rounded to a cache line.
template <typename T>
constexpr size_t RingBytes(uint32_t entries) {
  const size_t raw = sizeof(RingHeader) + size_t{entries} * sizeof(T);
  return (raw + kCacheLine - 1) / kCacheLine * kCacheLine;
}

// Full fence of the Dekker-style sleep/wake handshake, named for its purpose.
inline void FenceBeforeWaitCheck() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  SpscRing() = default;
  // `base` must be cache-line aligned and hold RingBytes<T>(entries) bytes;
  // `entries` a power of two. Init() zeroes the header (creator only).
  SpscRing(void* base, uint32_t entries)
      : hdr_(static_cast<RingHeader*>(base)),
        slots_(reinterpret_cast<T*>(static_cast<char*>(base) + sizeof(RingHeader))),
        entries_(entries),
        mask_(entries - 1) {}

  void Init() {
    hdr_->producer.store(0, std::memory_order_relaxed);
    hdr_->consumer.store(0, std::memory_order_relaxed);
    hdr_->consumer_waiting.store(0, std::memory_order_relaxed);
    local_ = 0;
  }
  // Picks up the indices after a ring was attached by the other side.
  void AttachAsProducer() { local_ = hdr_->producer.load(std::memory_order_relaxed); }
  void AttachAsConsumer() { local_ = hdr_->consumer.load(std::memory_order_relaxed); }

  bool valid() const { return hdr_ != nullptr; }
  uint32_t entries() const { return entries_; }
  RingHeader* header() const { return hdr_; }

  // ---- producer side ----
  // Free slots; -1 if the consumer's index is corrupt.
  int64_t FreeSlots() const {
    const uint32_t used = local_ - hdr_->consumer.load(std::memory_order_acquire);
    if (used > entries_) return -1;
    return entries_ - used;
  }
  // Writes `e` into the next slot without publishing it.
  void Stage(uint32_t i, const T& e) { std::memcpy(&slots_[(local_ + i) & mask_], &e, sizeof(T)); }
  // Makes `n` staged entries visible to the consumer (release).
  void Publish(uint32_t n) {
    local_ += n;
    hdr_->producer.store(local_, std::memory_order_release);
  }
  // True if the consumer asked for a doorbell; clears the request. Call after
  // Publish().
  bool TakeWakeRequest() {
    FenceBeforeWaitCheck();
    if (hdr_->consumer_waiting.load(std::memory_order_relaxed) == 0) return false;
    return hdr_->consumer_waiting.exchange(0, std::memory_order_acq_rel) != 0;
  }
  bool Push(const T& e) {
    if (FreeSlots() <= 0) return false;
    Stage(0, e);
    Publish(1);
    return true;
  }

  // ---- consumer side ----
  // Entries ready; -1 if the producer's index is corrupt.
  int64_t Available() const {
    const uint32_t n = hdr_->producer.load(std::memory_order_acquire) - local_;
    if (n > entries_) return -1;
    return n;
  }
  // Copies entry `i` (0 = oldest unconsumed) out of shared memory.
  void Peek(uint32_t i, T* out) const { std::memcpy(out, &slots_[(local_ + i) & mask_], sizeof(T)); }
  void Consume(uint32_t n) {
    local_ += n;
    hdr_->consumer.store(local_, std::memory_order_release);
  }
  bool Pop(T* out) {
    if (Available() <= 0) return false;
    Peek(0, out);
    Consume(1);
    return true;
  }
  // Before blocking: announce it, then re-check. Returns true if entries
  // arrived meanwhile (do not block).
  bool PrepareToWait() {
    hdr_->consumer_waiting.store(1, std::memory_order_relaxed);
    FenceBeforeWaitCheck();
    return Available() != 0;
  }
  void CancelWait() { hdr_->consumer_waiting.store(0, std::memory_order_relaxed); }

 private:
  RingHeader* hdr_ = nullptr;
  T* slots_ = nullptr;
  uint32_t entries_ = 0;
  uint32_t mask_ = 0;
  uint32_t local_ = 0;  // our own index, private copy
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_SPSC_RING_H_
