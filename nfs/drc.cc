#include "nfs/drc.h"

namespace iwarp::nfs {

uint64_t ArgsChecksum(ByteSpan bytes, uint64_t seed) {
  uint64_t h = seed;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

DrcLookup DuplicateRequestCache::Begin(const DrcKey& key, ByteSpan* reply) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    if (!it->second.done) {
      ++in_progress_drops_;
      return DrcLookup::kInProgress;
    }
    ++hits_;
    *reply = it->second.reply;
    return DrcLookup::kReplay;
  }
  Evict();
  order_.push_back(key);
  Entry& e = entries_[key];
  e.age = std::prev(order_.end());
  return DrcLookup::kNew;
}

void DuplicateRequestCache::Complete(const DrcKey& key, ByteSpan reply) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  it->second.done = true;
  it->second.reply.assign(reply.begin(), reply.end());
}

void DuplicateRequestCache::Abandon(const DrcKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.done) return;
  order_.erase(it->second.age);
  entries_.erase(it);
}

void DuplicateRequestCache::Evict() {
  while (entries_.size() >= capacity_ && !order_.empty()) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace iwarp::nfs
