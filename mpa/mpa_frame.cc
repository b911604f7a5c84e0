#include "mpa/mpa_frame.h"

#include <algorithm>
#include <cstring>

namespace iwarp::mpa {
namespace {

// Field offsets, RFC 5044 7.1.1 Figure 8.
constexpr size_t kOffKey = 0;
constexpr size_t kOffFlags = 16;
constexpr size_t kOffRev = 17;
constexpr size_t kOffPdLength = 18;
// RFC 6581 IRD/ORD block, relative to the start of the private data.
constexpr size_t kOffIrd = 0;
constexpr size_t kOffOrd = 2;

std::string_view KeyFor(FrameType t) {
  return t == FrameType::kRequest ? kRequestKey : kReplyKey;
}

bool PrefixMatches(ByteSpan in, std::string_view key) {
  const size_t n = std::min(in.size(), key.size());
  return n == 0 || std::memcmp(in.data(), key.data(), n) == 0;
}

}  // namespace

bool SameFrame(const StartupFrame& a, const StartupFrame& b) {
  return a.type == b.type && a.markers == b.markers && a.crc == b.crc &&
         a.reject == b.reject && a.revision == b.revision && a.ird_ord == b.ird_ord &&
         a.reserved == b.reserved && a.private_data.size() == b.private_data.size() &&
         std::equal(a.private_data.begin(), a.private_data.end(), b.private_data.begin());
}

std::string_view FrameStatusName(FrameStatus s) {
  using Enum = FrameStatus;
  switch (s) { IWARP_MPA_FRAME_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

MpaError ToMpaError(FrameStatus s) {
  switch (s) {
    case FrameStatus::kOk:
    case FrameStatus::kNeedMoreBytes:
      return MpaError::kNone;
    default:
      return MpaError::kInvalidStartupFrame;
  }
}

size_t StartupFrameSize(const StartupFrame& f) {
  return kStartupHeaderSize + (f.ird_ord ? kIrdOrdSize : 0) + f.private_data.size();
}

FrameResult EncodeStartupFrame(const StartupFrame& f, MutableByteSpan out) {
  if (f.revision != kRevision1 && f.revision != kRevision2) {
    return {FrameStatus::kBadRevision, 0};
  }
  if (f.reserved != 0) return {FrameStatus::kReservedBitsSet, 0};
  if (f.ird_ord && f.revision != kRevision2) return {FrameStatus::kEnhancedNeedsRev2, 0};
  if (f.ird_ord && (f.ird_ord->ird > kIrdOrdMax || f.ird_ord->ord > kIrdOrdMax)) {
    return {FrameStatus::kIrdOrdOutOfRange, 0};
  }
  const size_t pd_length = StartupFrameSize(f) - kStartupHeaderSize;
  if (pd_length > kMaxPrivateDataLength) return {FrameStatus::kPrivateDataTooLong, 0};
  if (f.type == FrameType::kRequest && f.reject) return {FrameStatus::kRejectInRequest, 0};
  const size_t size = StartupFrameSize(f);
  if (out.size() < size) return {FrameStatus::kBufferTooSmall, 0};

  uint8_t* p = out.data();
  const std::string_view key = KeyFor(f.type);
  std::memcpy(p + kOffKey, key.data(), kKeySize);
  uint8_t flags = 0;
  if (f.markers) flags |= kFlagMarkers;
  if (f.crc) flags |= kFlagCrc;
  if (f.reject) flags |= kFlagReject;
  if (f.ird_ord) flags |= kFlagEnhanced;
  p[kOffFlags] = flags;
  p[kOffRev] = f.revision;
  StoreBe16(p + kOffPdLength, static_cast<uint16_t>(pd_length));
  uint8_t* pd = p + kStartupHeaderSize;
  if (f.ird_ord) {
    const IrdOrd& io = *f.ird_ord;
    uint16_t ird = io.ird;
    if (io.peer_to_peer) ird |= kIrdPeerToPeer;
    if (io.send_rtr) ird |= kIrdSendRtr;
    uint16_t ord = io.ord;
    if (io.write_rtr) ord |= kOrdWriteRtr;
    if (io.read_rtr) ord |= kOrdReadRtr;
    StoreBe16(pd + kOffIrd, ird);
    StoreBe16(pd + kOffOrd, ord);
    pd += kIrdOrdSize;
  }
  if (!f.private_data.empty()) {
    std::memcpy(pd, f.private_data.data(), f.private_data.size());
  }
  return {FrameStatus::kOk, size};
}

FrameResult DecodeStartupFrame(ByteSpan in, FrameType expected, StartupFrame* out,
                               const FrameDecodeOptions& options) {
  // RFC 5044 7.1.1 Key, 7.1.2 rules 5 and 8.
  if (!PrefixMatches(in, KeyFor(expected))) {
    const FrameType other =
        expected == FrameType::kRequest ? FrameType::kReply : FrameType::kRequest;
    if (!PrefixMatches(in, KeyFor(other))) return {FrameStatus::kBadKey, 0};
    // The other key so far: classify once the whole key is in.
    if (in.size() < kKeySize) return {FrameStatus::kNeedMoreBytes, kStartupHeaderSize};
    return {FrameStatus::kUnexpectedFrameType, 0};
  }
  if (in.size() < kStartupHeaderSize) return {FrameStatus::kNeedMoreBytes, kStartupHeaderSize};

  const uint8_t flags = in[kOffFlags];
  const uint8_t rev = in[kOffRev];
  const size_t pd_length = LoadBe16(in.data() + kOffPdLength);
  if (rev != kRevision1 && rev != kRevision2) return {FrameStatus::kBadRevision, 0};
  // RFC 6581 defines S for Rev 2 only; in a Rev 1 frame the bit is one of the
  // Res bits, which RFC 5044 7.1.1 says are not checked on reception.
  const uint8_t reserved_mask =
      rev == kRevision2 ? kFlagsReserved : static_cast<uint8_t>(kFlagsReserved | kFlagEnhanced);
  const bool enhanced = rev == kRevision2 && (flags & kFlagEnhanced) != 0;
  if (options.reject_reserved_bits && (flags & reserved_mask) != 0) {
    return {FrameStatus::kReservedBitsSet, 0};
  }
  // RFC 5044 7.1.1 PD_Length, 7.1.2 rule 9.
  if (pd_length > std::min(options.max_private_data, kMaxPrivateDataLength)) {
    return {FrameStatus::kPrivateDataTooLong, 0};
  }
  if (enhanced && pd_length < kIrdOrdSize) return {FrameStatus::kIrdOrdMissing, 0};
  const size_t size = kStartupHeaderSize + pd_length;
  if (in.size() < size) return {FrameStatus::kNeedMoreBytes, size};

  StartupFrame f;
  f.type = expected;
  f.markers = (flags & kFlagMarkers) != 0;
  f.crc = (flags & kFlagCrc) != 0;
  // R is not checked on reception in a Request (RFC 5044 7.1.1).
  f.reject = expected == FrameType::kReply && (flags & kFlagReject) != 0;
  f.revision = rev;
  f.reserved = flags & reserved_mask;
  ByteSpan pd = in.subspan(kStartupHeaderSize, pd_length);
  if (enhanced) {
    const uint16_t ird = LoadBe16(pd.data() + kOffIrd);
    const uint16_t ord = LoadBe16(pd.data() + kOffOrd);
    IrdOrd io;
    io.ird = ird & kIrdOrdMax;
    io.ord = ord & kIrdOrdMax;
    io.peer_to_peer = (ird & kIrdPeerToPeer) != 0;
    io.send_rtr = (ird & kIrdSendRtr) != 0;
    io.write_rtr = (ord & kOrdWriteRtr) != 0;
    io.read_rtr = (ord & kOrdReadRtr) != 0;
    f.ird_ord = io;
    pd = pd.subspan(kIrdOrdSize);
  }
  f.private_data = pd;
  *out = f;
  return {FrameStatus::kOk, size};
}

}  // namespace iwarp::mpa
