// DDP segment headers (RFC 5041 section 4): the control byte shared by both
// buffer models, the tagged header (14 bytes) and the untagged header
// (18 bytes). Fields are read and written at named offsets with the
// big-endian helpers of common/bytes.h; nothing here knows about TCP, MPA or
// SCTP, and nothing allocates.
#ifndef IWARPD_DDP_DDP_HEADER_H_
#define IWARPD_DDP_DDP_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "common/seq.h"

namespace iwarp::ddp {

// RFC 5041 4.1: DV MUST be one for the version this code implements.
inline constexpr uint8_t kDdpVersion = 1;

inline constexpr size_t kTaggedHeaderSize = 14;    // RFC 5041 4.2
inline constexpr size_t kUntaggedHeaderSize = 18;  // RFC 5041 4.3
inline constexpr size_t kMaxHeaderSize = kUntaggedHeaderSize;

// Control byte bits (RFC 5041 4.1, figure 3).
inline constexpr uint8_t kCtrlTagged = 0x80;
inline constexpr uint8_t kCtrlLast = 0x40;
inline constexpr uint8_t kCtrlReserved = 0x3C;
inline constexpr uint8_t kCtrlDvMask = 0x03;

// Offsets inside the DDP header (the MPA length field, when there is one, is
// not part of it).
namespace off {
inline constexpr size_t kControl = 0;
inline constexpr size_t kRsvdUlp0 = 1;  // RsvdULP[0:7] in both models
// Tagged (RFC 5041 4.2).
inline constexpr size_t kStag = 2;
inline constexpr size_t kTo = 6;
// Untagged (RFC 5041 4.3).
inline constexpr size_t kRsvdUlp1 = 2;  // RsvdULP[8:39]
inline constexpr size_t kQn = 6;
inline constexpr size_t kMsn = 10;
inline constexpr size_t kMo = 14;
}  // namespace off

// One parsed (or to-be-encoded) DDP header. `tagged` selects which of the
// model-specific fields are meaningful; the others are zero after a parse.
// The four reserved control bits are not kept: RFC 5041 4.1 says they are
// sent as zero and not checked on receive.
struct DdpHeader {
  bool tagged = false;
  bool last = false;
  uint8_t rsvd_ulp0 = 0;   // RsvdULP[0:7]: opaque to DDP (RDMAP control byte)
  uint32_t rsvd_ulp1 = 0;  // untagged RsvdULP[8:39] (RDMAP Invalidate STag)
  // Tagged buffer model.
  uint32_t stag = 0;
  uint64_t to = 0;
  // Untagged buffer model.
  uint32_t qn = 0;
  Seq32 msn;
  uint32_t mo = 0;

  size_t size() const { return tagged ? kTaggedHeaderSize : kUntaggedHeaderSize; }
  bool operator==(const DdpHeader&) const = default;
};

// X(enumerator, "name")
#define IWARP_DDP_HEADER_STATUSES(X)                                                                 \
  X(kOk, "ok")                                                                                       \
  X(kTruncated, "ddp_header_truncated")  /* fewer bytes than the header needs (or none at all) */    \
  X(kBadVersion, "ddp_bad_version")  /* DV != 1 (RFC 5041 4.1); the header layout is then unknown */
enum class HeaderStatus : uint8_t { IWARP_DDP_HEADER_STATUSES(IWARP_ENUMERATOR) };

std::string_view HeaderStatusName(HeaderStatus s);

// Parses the DDP header at the start of `segment` (a whole DDP segment as the
// LLP delivered it). On kOk, `out` holds every field and the payload starts at
// out->size(). On kBadVersion only out->tagged is set (it comes from the first
// byte, so the caller can pick the tagged or untagged version error of RFC
// 5041 7.2); on kTruncated out->tagged is set if at least one byte was there.
HeaderStatus ParseHeader(ByteSpan segment, DdpHeader* out);

// Writes `h` into out[0, h.size()) with DV = 1 and reserved bits zero.
// Returns the number of bytes written, or 0 (nothing written) if `out` is
// shorter than h.size().
size_t EncodeHeader(const DdpHeader& h, MutableByteSpan out);

}  // namespace iwarp::ddp

#endif  // IWARPD_DDP_DDP_HEADER_H_
