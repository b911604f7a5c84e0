// The STag table: registered tagged buffers of one daemon (RFC 5040 / 5041 /
// 5042).
//
// An STag is a 24-bit table index and an 8-bit key (RFC 5040 2.1 "STag":
// index and key; RFC 5042 5 on guessed and stale STags). Every reuse of a slot
// changes its key, and slots are reused in FIFO order, so a stale STag
// (deregistered or invalidated, then re-registered) does not match the new
// region for as long as possible. Index 0 is never issued: STags 0..255 are
// never valid.
//
// Threading: one owner thread (the daemon's control/queue thread). Find() is
// the fast-path lookup: no allocation, no locks. Register/Deregister run on
// the control path. All storage is allocated in the constructor.
#ifndef IWARPD_DDP_STAG_TABLE_H_
#define IWARPD_DDP_STAG_TABLE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/enum_names.h"
#include "ddp/placement.h"

namespace iwarp::ddp {

// Local write right (verbs "local write"): the region may be the target of a
// receive or the sink of an RDMA Read issued by its owner. The remote rights
// are kAccessRemoteRead / kAccessRemoteWrite from placement.h.
inline constexpr uint8_t kAccessLocalWrite = 1u << 2;
inline constexpr uint8_t kAccessAll = kAccessRemoteRead | kAccessRemoteWrite | kAccessLocalWrite;

inline constexpr uint32_t kStagMaxIndex = (1u << 24) - 1;
inline constexpr uint32_t StagIndex(uint32_t stag) { return stag >> 8; }
inline constexpr uint8_t StagKey(uint32_t stag) { return static_cast<uint8_t>(stag & 0xFFu); }
inline constexpr uint32_t MakeStag(uint32_t index, uint8_t key) { return (index << 8) | key; }

// X(enumerator, "name")
#define IWARP_DDP_STAG_STATUSES(X)                                                                         \
  X(kOk, "ok")                                                                                             \
  X(kInvalidStag, "invalid_stag")  /* no live region under exactly this STag (RFC 5040 7.4.1 code 0x00) */ \
  X(kWrongPd, "wrong_pd")  /* region belongs to another protection domain (code 0x03) */                   \
  X(kNotInvalidatable, "not_invalidatable")  /* region may not be invalidated by the peer (code 0x09) */
enum class StagStatus : uint8_t { IWARP_DDP_STAG_STATUSES(IWARP_ENUMERATOR) };
std::string_view StagStatusName(StagStatus s);

class FixedStagTable final : public StagTable {
 public:
  // `capacity` slots, 1 .. kStagMaxIndex; `first_key` seeds the slot keys.
  explicit FixedStagTable(uint32_t capacity, uint8_t first_key = 0x5A);

  // Files `r` (stag field ignored) in a free slot with a fresh key and returns
  // the STag. ResourceExhausted when every slot is in use.
  // `remote_invalidate` false protects the region against Send with
  // Invalidate (the peer may not revoke it).
  absl::StatusOr<uint32_t> Register(const TaggedRegion& r, bool remote_invalidate = true);

  // Removes the region registered under exactly `stag` in `pd` and frees its
  // slot (whether or not it was invalidated before).
  StagStatus Deregister(uint32_t stag, uint32_t pd);

  // RFC 5040 6.3.1 / RFC 5042 5.2: Send with Invalidate and local
  // invalidation. The region stays allocated (its owner deregisters it) but
  // no longer matches any access. `remote` is true for an invalidation asked
  // by the peer; regions registered with `remote_invalidate = false` refuse it.
  StagStatus Invalidate(uint32_t stag, uint32_t pd, bool remote);

  // StagTable: the live or invalidated region under exactly `stag`, nullptr
  // if none. CheckRegion() rejects invalidated ones.
  const TaggedRegion* Find(uint32_t stag) const override;

  uint32_t capacity() const { return capacity_; }
  uint32_t in_use() const { return in_use_; }

 private:
  struct Slot {
    TaggedRegion region;
    uint8_t key = 0;
    bool used = false;
    bool remote_invalidate = true;
  };
  uint32_t capacity_;
  uint32_t in_use_ = 0;
  std::vector<Slot> slots_;        // index 0 unused
  std::vector<uint32_t> free_;     // FIFO ring of free indices
  uint32_t free_head_ = 0;
  uint32_t free_count_ = 0;
};

}  // namespace iwarp::ddp

#endif  // IWARPD_DDP_STAG_TABLE_H_
