#include "ddp/stag_table.h"

#include "absl/status/status.h"

namespace iwarp::ddp {

std::string_view StagStatusName(StagStatus s) {
  using Enum = StagStatus;
  switch (s) { IWARP_DDP_STAG_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

FixedStagTable::FixedStagTable(uint32_t capacity, uint8_t first_key)
    : capacity_(capacity == 0 ? 1 : (capacity > kStagMaxIndex ? kStagMaxIndex : capacity)),
      slots_(capacity_ + 1),
      free_(capacity_) {
  for (uint32_t i = 0; i < capacity_; ++i) {
    free_[i] = i + 1;
    // Different slots start on different keys so that STags of neighbouring
    // slots do not differ only in the index.
    slots_[i + 1].key = static_cast<uint8_t>(first_key + i * 37u);
  }
  free_count_ = capacity_;
}

absl::StatusOr<uint32_t> FixedStagTable::Register(const TaggedRegion& r, bool remote_invalidate) {
  if (free_count_ == 0) {
    return absl::ResourceExhaustedError("STag table full");
  }
  const uint32_t index = free_[free_head_];
  free_head_ = (free_head_ + 1) % capacity_;
  --free_count_;
  Slot& s = slots_[index];
  s.key = static_cast<uint8_t>(s.key + 1);  // every reuse changes the key
  s.used = true;
  s.remote_invalidate = remote_invalidate;
  s.region = r;
  s.region.stag = MakeStag(index, s.key);
  s.region.valid = true;
  ++in_use_;
  return s.region.stag;
}

const TaggedRegion* FixedStagTable::Find(uint32_t stag) const {
  const uint32_t index = StagIndex(stag);
  if (index == 0 || index > capacity_) return nullptr;
  const Slot& s = slots_[index];
  if (!s.used || s.key != StagKey(stag)) return nullptr;
  return &s.region;
}

StagStatus FixedStagTable::Deregister(uint32_t stag, uint32_t pd) {
  const uint32_t index = StagIndex(stag);
  if (index == 0 || index > capacity_) return StagStatus::kInvalidStag;
  Slot& s = slots_[index];
  if (!s.used || s.key != StagKey(stag)) return StagStatus::kInvalidStag;
  if (s.region.pd != pd) return StagStatus::kWrongPd;
  s.used = false;
  s.region = TaggedRegion{};
  free_[(free_head_ + free_count_) % capacity_] = index;
  ++free_count_;
  --in_use_;
  return StagStatus::kOk;
}

StagStatus FixedStagTable::Invalidate(uint32_t stag, uint32_t pd, bool remote) {
  const uint32_t index = StagIndex(stag);
  if (index == 0 || index > capacity_) return StagStatus::kInvalidStag;
  Slot& s = slots_[index];
  // RFC 5040 6.3.1: an STag that is already invalid cannot be invalidated.
  if (!s.used || s.key != StagKey(stag) || !s.region.valid) return StagStatus::kInvalidStag;
  if (s.region.pd != pd) return StagStatus::kWrongPd;
  if (remote && !s.remote_invalidate) return StagStatus::kNotInvalidatable;
  s.region.valid = false;
  return StagStatus::kOk;
}

}  // namespace iwarp::ddp
