#include "appif/app_ports.h"

namespace iwarp::appif {

static_assert(std::atomic<uint64_t>::is_always_lock_free);

AppPortTable::AppPortTable() : holds_(std::make_unique<uint16_t[]>(kPorts)) {
  for (std::atomic<uint64_t>& w : held_) w.store(0, std::memory_order_relaxed);
}

bool AppPortTable::Acquire(uint16_t port) {
  if (port == 0 || Reserved(port) || holds_[port] >= kMaxHolds) return false;
  if (holds_[port]++ == 0) {
    ++held_ports_;
    // Single writer: the read-modify-write cannot race with another writer;
    // release orders it after what the writer did before (see the header).
    held_[port >> 6].fetch_or(uint64_t{1} << (port & 63), std::memory_order_release);
  }
  return true;
}

bool AppPortTable::Release(uint16_t port) {
  if (holds_[port] == 0) return false;
  if (--holds_[port] == 0) {
    --held_ports_;
    held_[port >> 6].fetch_and(~(uint64_t{1} << (port & 63)), std::memory_order_release);
  }
  return true;
}

}  // namespace iwarp::appif
