#include "mpa/mpa_fpdu.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "common/crc32c.h"

namespace iwarp::mpa {
namespace {

constexpr uint32_t kMarkerPayloadSpacing = kMarkerInterval - kMarkerSize;  // 508

// Writes the octets of one FPDU in sequence order, inserting a Marker
// wherever the sequence position reaches a Marker slot, and with `crc` folds
// every octet before the CRC field into the CRC (RFC 5044 4.4: Markers
// included); without it (CRC not negotiated) the octets are only copied.
class FpduWriter {
 public:
  FpduWriter(uint8_t* out, bool markers, bool crc, uint32_t to_marker)
      : out_(out), markers_(markers), crc_on_(crc), to_marker_(to_marker) {
    // A Marker at the FPDU's first octet falls between FPDUs: FPDUPTR 0, and
    // the ULPDU_Length field follows it (RFC 5044 4.3).
    header_off_ = (markers_ && to_marker_ == 0) ? kMarkerSize : 0;
  }

  // Octets of ULPDU_Length, ULPDU or PAD.
  void Put(const uint8_t* p, size_t n) {
    while (n > 0) {
      if (markers_ && to_marker_ == 0) PutMarker();
      const size_t run = markers_ ? std::min<size_t>(n, to_marker_) : n;
      if (crc_on_) {
        CopyAndCrc32c(out_ + off_, p, run, crc_);
      } else if (run > 0) {
        std::memcpy(out_ + off_, p, run);
      }
      off_ += run;
      p += run;
      n -= run;
      if (markers_) to_marker_ -= static_cast<uint32_t>(run);
    }
  }

  // After the PAD: a Marker due right here is part of this FPDU and in its
  // CRC (RFC 5044 4.4 rule 1); then the CRC field.
  void Finish() {
    if (markers_ && to_marker_ == 0) PutMarker();
    StoreCrc32cWire(out_ + off_, crc_on_ ? crc_.Value() : 0);
    off_ += kCrcSize;
  }

  size_t size() const { return off_; }

 private:
  void PutMarker() {
    const size_t fpduptr = off_ == 0 ? 0 : off_ - header_off_;
    uint8_t* m = out_ + off_;
    StoreBe16(m, 0);  // RESERVED
    StoreBe16(m + 2, static_cast<uint16_t>(fpduptr));
    if (crc_on_) crc_.Update(m, kMarkerSize);
    off_ += kMarkerSize;
    to_marker_ = kMarkerPayloadSpacing;
  }

  uint8_t* out_;
  size_t off_ = 0;
  size_t header_off_ = 0;
  bool markers_;
  bool crc_on_;
  uint32_t to_marker_;
  Crc32cAccumulator crc_;
};

}  // namespace

size_t FpduMarkerCount(size_t ulpdu_len, Seq32 start_seq, const FpduConfig& config) {
  if (!config.markers) return 0;
  // Marker i (i >= 0) starts after d + 508 i octets of the FPDU proper; it
  // belongs to this FPDU iff that is before the FPDU's end.
  const size_t logical = FpduSizeWithoutMarkers(ulpdu_len);
  const size_t d = DistanceToMarker(start_seq, config.marker_origin);
  if (logical <= d) return 0;
  return (logical - d - 1) / kMarkerPayloadSpacing + 1;
}

FpduEncodeResult EncodeFpdu(ByteSpan ulpdu_header, ByteSpan payload, Seq32 start_seq,
                            const FpduConfig& config, MutableByteSpan out) {
  const size_t ulpdu_len = ulpdu_header.size() + payload.size();
  if (ulpdu_len > kMaxUlpduLength) return {FpduStatus::kUlpduTooLong, 0};
  if (config.markers && static_cast<uint32_t>(start_seq - config.marker_origin) % 4 != 0) {
    return {FpduStatus::kMisaligned, 0};
  }
  const size_t wire = FpduWireSize(ulpdu_len, start_seq, config);
  if (out.size() < wire) return {FpduStatus::kBufferTooSmall, 0};

  FpduWriter w(out.data(), config.markers, config.crc,
               config.markers ? DistanceToMarker(start_seq, config.marker_origin) : 0);
  uint8_t length_field[kUlpduLengthSize];
  StoreBe16(length_field, static_cast<uint16_t>(ulpdu_len));
  w.Put(length_field, kUlpduLengthSize);
  w.Put(ulpdu_header.data(), ulpdu_header.size());
  w.Put(payload.data(), payload.size());
  static constexpr uint8_t kZeros[3] = {0, 0, 0};
  const size_t pad = FpduSizeWithoutMarkers(ulpdu_len) - kCrcSize - kUlpduLengthSize - ulpdu_len;
  w.Put(kZeros, pad);
  w.Finish();
  assert(w.size() == wire);
  return {FpduStatus::kOk, w.size()};
}

FpduParts FrameFpduAround(ByteSpan ulpdu_header, ByteSpan payload, bool crc, MutableByteSpan head,
                          MutableByteSpan tail) {
  const size_t ulpdu_len = ulpdu_header.size() + payload.size();
  if (ulpdu_len > kMaxUlpduLength) return {FpduStatus::kUlpduTooLong, 0, 0};
  const size_t head_size = kUlpduLengthSize + ulpdu_header.size();
  const size_t pad = FpduSizeWithoutMarkers(ulpdu_len) - kCrcSize - kUlpduLengthSize - ulpdu_len;
  if (head.size() < head_size || tail.size() < pad + kCrcSize) {
    return {FpduStatus::kBufferTooSmall, 0, 0};
  }
  StoreBe16(head.data(), static_cast<uint16_t>(ulpdu_len));
  if (!ulpdu_header.empty()) {
    std::memcpy(head.data() + kUlpduLengthSize, ulpdu_header.data(), ulpdu_header.size());
  }
  std::memset(tail.data(), 0, pad + kCrcSize);
  if (crc) {
    Crc32cAccumulator acc;
    acc.Update(head.data(), head_size);
    acc.Update(payload);
    acc.Update(tail.data(), pad);
    StoreCrc32cWire(tail.data() + pad, acc.Value());
  }
  return {FpduStatus::kOk, head_size, pad + kCrcSize};
}

uint32_t Mulpdu(uint32_t emss, bool markers) {
  // RFC 5044 4.5.
  int64_t overhead = 6 + int64_t{emss % 4};
  if (markers) overhead += 4 * ((int64_t{emss} + kMarkerInterval - 1) / kMarkerInterval);
  const int64_t mulpdu = int64_t{emss} - overhead;
  return static_cast<uint32_t>(
      std::clamp<int64_t>(mulpdu, kMinMulpdu, static_cast<int64_t>(kMaxUlpduLength)));
}

std::optional<MarkerHit> LocateFpduFromMarker(ByteSpan segment, Seq32 segment_seq,
                                              Seq32 marker_origin) {
  const size_t d = DistanceToMarker(segment_seq, marker_origin);
  if (segment.size() < kMarkerSize || d > segment.size() - kMarkerSize) return std::nullopt;
  // RFC 5044 4.3: receivers treat the two low FPDUPTR bits as zero.
  const uint16_t fpduptr = LoadBe16(segment.data() + d + 2) & 0xFFFC;
  MarkerHit hit;
  hit.marker_seq = segment_seq + static_cast<uint32_t>(d);
  hit.fpdu_seq = fpduptr == 0 ? hit.marker_seq + static_cast<uint32_t>(kMarkerSize)
                              : hit.marker_seq - uint32_t{fpduptr};
  return hit;
}

}  // namespace iwarp::mpa
