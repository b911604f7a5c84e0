// Test-only STag table and receive queues with fixed capacity (no
// allocation after construction), shared by the ddp unit tests and fuzzer.
#ifndef IWARPD_DDP_TEST_TABLES_H_
#define IWARPD_DDP_TEST_TABLES_H_

#include <array>
#include <cstdint>

#include "ddp/placement.h"
#include "ddp/rdmap.h"

namespace iwarp::ddp::testing {

// Regions are filed by STag index (the top 24 bits); Find() returns the
// region in that slot whatever its key, so a stale key reaches the key check
// in CheckRegion as it would with the real table.
class FakeStagTable final : public StagTable {
 public:
  static constexpr size_t kSlots = 16;

  void Put(const TaggedRegion& r) { slots_[Slot(r.stag)] = r; used_[Slot(r.stag)] = true; }
  void Clear() { used_.fill(false); }
  // The slot of `stag` (marked used), for tests that edit a region in place.
  TaggedRegion& Mutable(uint32_t stag) {
    used_[Slot(stag)] = true;
    return slots_[Slot(stag)];
  }

  const TaggedRegion* Find(uint32_t stag) const override {
    const size_t s = Slot(stag);
    return used_[s] ? &slots_[s] : nullptr;
  }

 private:
  static size_t Slot(uint32_t stag) { return (stag >> 8) % kSlots; }
  std::array<TaggedRegion, kSlots> slots_{};
  std::array<bool, kSlots> used_{};
};

// Three queues (RDMAP QN 0, 1, 2), each a window of up to kMaxPosted buffers.
class FakeQueues final : public UntaggedQueues {
 public:
  static constexpr uint32_t kMaxPosted = 8;

  struct Queue {
    QueueWindow window;
    std::array<UntaggedBuffer, kMaxPosted> buffers{};
  };

  FakeQueues() {
    for (auto& q : queues_) {
      q.window.first_msn = Seq32(1);  // RFC 5041 4.3: MSN starts at one
      q.window.depth = kMaxPosted;
    }
  }

  Queue& queue(uint32_t qn) { return queues_[qn]; }

  // Appends a buffer to queue `qn`.
  void Post(uint32_t qn, uint64_t handle, uint32_t length) {
    Queue& q = queues_[qn];
    if (q.window.posted < kMaxPosted) q.buffers[q.window.posted++] = {handle, length};
  }

  bool Window(uint32_t qn, QueueWindow* out) const override {
    if (qn >= rdmap::kNumQueues) return false;
    *out = queues_[qn].window;
    return true;
  }
  const UntaggedBuffer* Buffer(uint32_t qn, uint32_t index) const override {
    if (qn >= rdmap::kNumQueues || index >= kMaxPosted) return nullptr;
    return &queues_[qn].buffers[index];
  }

 private:
  std::array<Queue, rdmap::kNumQueues> queues_{};
};

}  // namespace iwarp::ddp::testing

#endif  // IWARPD_DDP_TEST_TABLES_H_
