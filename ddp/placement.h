// Data-sink validation of DDP segments before placement (RFC 5041 7.1) and
// the DDP error numbers (RFC 5041 7.2).
//
// Every check runs before a single payload byte is placed. The memory and
// queue state the checks need comes from two small interfaces the data plane
// implements (the STag table and the posted receive buffers); this file only
// decides, it never copies. Nothing here allocates or throws.
#ifndef IWARPD_DDP_PLACEMENT_H_
#define IWARPD_DDP_PLACEMENT_H_

#include <cstdint>
#include <string_view>

#include "common/enum_names.h"
#include "common/seq.h"
#include "ddp/ddp_header.h"

namespace iwarp::ddp {

// RFC 5041 7.2: 4-bit error types.
inline constexpr uint8_t kEtypeLocalCatastrophic = 0x0;
inline constexpr uint8_t kEtypeTaggedBuffer = 0x1;
inline constexpr uint8_t kEtypeUntaggedBuffer = 0x2;
inline constexpr uint8_t kEtypeLlp = 0x3;  // reserved for the LLP

// Every error a DDP data sink reports (RFC 5041 7.2), one enumerator per
// (error type, error code) pair. ToErrorNumber() gives the wire values.
// X(enumerator, "name")
#define IWARP_DDP_ERRORS(X)                                                                                 \
  X(kNone, "none")                                                                                          \
  X(kLocalCatastrophic, "ddp_local_catastrophic")  /* 0x0 / 0x00 */                                         \
  X(kTaggedInvalidStag, "ddp_tagged_invalid_stag")  /* 0x1 / 0x00 */                                        \
  X(kTaggedBaseBounds, "ddp_tagged_base_bounds")  /* 0x1 / 0x01 */                                          \
  X(kTaggedStagNotAssociated, "ddp_tagged_stag_not_associated")  /* 0x1 / 0x02 */                           \
  X(kTaggedToWrap, "ddp_tagged_to_wrap")  /* 0x1 / 0x03 */                                                  \
  X(kTaggedBadVersion, "ddp_tagged_bad_version")  /* 0x1 / 0x04 */                                          \
  X(kUntaggedInvalidQn, "ddp_untagged_invalid_qn")  /* 0x2 / 0x01 */                                        \
  X(kUntaggedNoBuffer, "ddp_untagged_no_buffer")  /* 0x2 / 0x02  Invalid MSN - no buffer available */       \
  X(kUntaggedMsnRange, "ddp_untagged_msn_range")  /* 0x2 / 0x03  Invalid MSN - MSN range is not valid */    \
  X(kUntaggedInvalidMo, "ddp_untagged_invalid_mo")  /* 0x2 / 0x04 */                                        \
  X(kUntaggedTooLong, "ddp_untagged_too_long")  /* 0x2 / 0x05  DDP Message too long for available buffer */ \
  X(kUntaggedBadVersion, "ddp_untagged_bad_version")  /* 0x2 / 0x06 */
enum class DdpError : uint8_t { IWARP_DDP_ERRORS(IWARP_ENUMERATOR) };

struct ErrorNumber {
  uint8_t etype = 0;  // 4 bits on the wire
  uint8_t code = 0;
  bool operator==(const ErrorNumber&) const = default;
};

// RFC 5041 7.2 values of `e`; kNone maps to {0, 0} and must not be sent.
ErrorNumber ToErrorNumber(DdpError e);
std::string_view DdpErrorName(DdpError e);

// The version error of RFC 5041 7.2 that matches the T bit of the segment.
inline DdpError BadVersionError(bool tagged) {
  return tagged ? DdpError::kTaggedBadVersion : DdpError::kUntaggedBadVersion;
}

// ---- Tagged buffers -------------------------------------------------------

// Remote access rights of a registered region (RFC 5042). DDP itself does not
// check them; RDMAP says which right each message needs.
inline constexpr uint8_t kAccessRemoteRead = 1u << 0;
inline constexpr uint8_t kAccessRemoteWrite = 1u << 1;

// Stream id of a region usable by every stream of its protection domain
// (RFC 5041 8.2 "Protection Domain association"); any other value ties the
// region to that one stream ("DDP Stream association").
inline constexpr uint32_t kAnyStream = 0xFFFFFFFFu;

// A registered tagged buffer as the STag table describes it. Its valid TO
// range is [base_to, base_to + length).
struct TaggedRegion {
  uint32_t stag = 0;       // full STag (index and key) it is registered under
  uint64_t base_to = 0;
  uint64_t length = 0;
  uint8_t access = 0;      // kAccessRemote* bits
  uint32_t pd = 0;         // owning protection domain
  uint32_t stream_id = kAnyStream;
  bool valid = false;      // false once invalidated or deregistered
  uint64_t handle = 0;     // opaque to DDP: what the placer uses to find memory
};

// The receiving stream, as far as STag association goes (RFC 5041 8.2).
struct StreamIdentity {
  uint32_t pd = 0;
  uint32_t stream_id = 0;
};

// Lookup of STags, implemented by the STag table. Called on the worker core
// that owns the stream; must not allocate or block.
class StagTable {
 public:
  virtual ~StagTable() = default;
  // The region registered under exactly `stag`, or nullptr if none. The
  // pointer is only used until the calling check returns.
  virtual const TaggedRegion* Find(uint32_t stag) const = 0;
};

// ---- Untagged buffers -----------------------------------------------------

struct UntaggedBuffer {
  uint64_t handle = 0;  // opaque to DDP
  uint32_t length = 0;  // bytes the buffer can hold
};

// State of one untagged queue when a segment arrives (RFC 5041 7.1 untagged
// check 5 and its implementers' note).
struct QueueWindow {
  Seq32 first_msn;    // MSN assigned to the first available buffer (lowest MSN not completed)
  uint32_t posted = 0;  // buffers available, for MSNs first_msn .. first_msn + posted - 1
  uint32_t depth = 0;   // most buffers the queue can hold: MSNs at or beyond
                        // first_msn + depth can never have a buffer
};

// Posted receive buffers of a stream, implemented by the queue owner.
class UntaggedQueues {
 public:
  virtual ~UntaggedQueues() = default;
  // False if `qn` is not a queue of this stream (RDMAP uses 0, 1 and 2).
  virtual bool Window(uint32_t qn, QueueWindow* out) const = 0;
  // The buffer for MSN first_msn + index; only called with index < posted.
  // nullptr counts as "no buffer".
  virtual const UntaggedBuffer* Buffer(uint32_t qn, uint32_t index) const = 0;
};

// ---- Results ----------------------------------------------------------------

// Where a validated segment's payload goes: `length` bytes at `offset` inside
// the buffer or region named by `handle`.
struct Placement {
  uint64_t handle = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  bool operator==(const Placement&) const = default;
};

// Checks of RFC 5041 7.1 for one tagged segment carrying `payload_length`
// bytes, plus the stream association of 8.2. On kNone fills `placement`
// (offset relative to region->base_to) and, if `region_out` is non-null, the
// region found (nullptr for a zero-length segment, whose STag and TO MUST NOT
// be checked, RFC 5041 5.2). On error nothing is filled.
DdpError CheckTagged(const DdpHeader& h, uint32_t payload_length,
                     const StreamIdentity& stream, const StagTable& stags,
                     Placement* placement, const TaggedRegion** region_out);

// The STag/TO/length checks alone, for a region already looked up (or not
// found: `region` nullptr). RDMAP reuses them for RDMA Read sources, with its
// own error codes. `length` > 0.
DdpError CheckRegion(const TaggedRegion* region, uint32_t stag, uint64_t to,
                     uint64_t length, const StreamIdentity& stream);

// Checks of RFC 5041 7.1 for one untagged segment carrying `payload_length`
// bytes. A zero-length segment is not placed, but it still needs a valid
// queue and a buffer to be delivered into, so the QN and MSN checks apply, and
// its MO may not exceed the buffer length (MO + length is the message length
// reported on delivery, RFC 5041 5.4). On kNone fills `placement` (offset = MO).
DdpError CheckUntagged(const DdpHeader& h, uint32_t payload_length,
                       const UntaggedQueues& queues, Placement* placement);

}  // namespace iwarp::ddp

#endif  // IWARPD_DDP_PLACEMENT_H_
