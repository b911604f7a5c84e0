#include "mpa/mpa_decoder.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>

namespace iwarp::mpa {
namespace {

constexpr uint32_t kMarkerPayloadSpacing = kMarkerInterval - kMarkerSize;  // 508
constexpr uint16_t kFpduPtrMask = 0xFFFC;  // RFC 5044 4.3: low two bits read as 0

// ULPDU + PAD octets of an FPDU carrying `ulpdu_len` octets.
size_t BodyLength(size_t ulpdu_len) {
  return FpduSizeWithoutMarkers(ulpdu_len) - kUlpduLengthSize - kCrcSize;
}

}  // namespace

std::string_view DecodeStatusName(DecodeStatus s) {
  using Enum = DecodeStatus;
  switch (s) { IWARP_MPA_DECODE_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

MpaError ToMpaError(DecodeStatus s) {
  switch (s) {
    case DecodeStatus::kOk: return MpaError::kNone;
    case DecodeStatus::kCrcError: return MpaError::kCrcError;
    case DecodeStatus::kMarkerMismatch: return MpaError::kMarkerLengthMismatch;
    case DecodeStatus::kUlpduTooLong: return MpaError::kNone;
  }
  return MpaError::kCrcError;
}

FpduDecoder::FpduDecoder(const FpduConfig& config, Seq32 start_seq, size_t max_ulpdu_length)
    : config_(config),
      max_ulpdu_(std::min(max_ulpdu_length, kMaxUlpduLength)),
      buf_(new uint8_t[max_ulpdu_ + 3]),
      seq_(start_seq),
      fpdu_seq_(start_seq),
      error_fpdu_seq_(start_seq) {
  // Our own configuration, not peer input: FPDUs start at origin + 4k.
  assert(!config_.markers || static_cast<uint32_t>(start_seq - config_.marker_origin) % 4 == 0);
  to_marker_ = config_.markers ? DistanceToMarker(start_seq, config_.marker_origin)
                               : std::numeric_limits<uint32_t>::max();
}

FeedResult FpduDecoder::Feed(ByteSpan data, UlpduSink& sink) {
  FeedResult r;
  size_t pos = 0;
  while (status_ == DecodeStatus::kOk && pos < data.size()) {
    const ByteSpan rest = data.subspan(pos);
    size_t used = 0;
    if (config_.markers && to_marker_ == 0) {
      // RFC 5044 4.3: a Marker occupies this slot, possibly split over pieces.
      used = std::min(kMarkerSize - marker_have_, rest.size());
      std::memcpy(marker_ + marker_have_, rest.data(), used);
      marker_have_ += used;
      fpdu_started_ = true;  // a Marker is part of an FPDU, even between FPDUs
      seq_ += static_cast<uint32_t>(used);
      pos += used;
      stats_.octets += used;
      if (marker_have_ == kMarkerSize) OnMarkerComplete();
      continue;
    }
    if (phase_ == Phase::kHeader && hdr_have_ == 0) {
      used = TryInPlace(rest, sink);
      if (used > 0) ++r.ulpdus;
    }
    if (used == 0 && status_ == DecodeStatus::kOk) {
      // Octets up to the next Marker slot belong to the FPDU.
      const size_t span = config_.markers ? std::min<size_t>(rest.size(), to_marker_) : rest.size();
      size_t delivered = 0;
      used = ConsumeFpduOctets(rest.first(span), sink, &delivered);
      r.ulpdus += delivered;
    }
    seq_ += static_cast<uint32_t>(used);
    if (config_.markers) to_marker_ -= static_cast<uint32_t>(used);
    pos += used;
    stats_.octets += used;
  }
  r.consumed = pos;
  r.status = status_;
  return r;
}

// RFC 5044 6: an FPDU lying wholly in `in`, with no Marker slot before its
// end, is checked and delivered where it lies. Returns the octets used, or 0
// when the FPDU is incomplete, has a Marker inside, or failed (status_ set).
size_t FpduDecoder::TryInPlace(ByteSpan in, UlpduSink& sink) {
  if (in.size() < kUlpduLengthSize) return 0;
  const size_t ulpdu_len = LoadBe16(in.data());
  if (ulpdu_len > max_ulpdu_) {
    fpdu_seq_ = seq_;
    Fail(DecodeStatus::kUlpduTooLong);
    return 0;
  }
  const size_t size = FpduSizeWithoutMarkers(ulpdu_len);
  if (in.size() < size) return 0;
  if (config_.markers && to_marker_ < size) return 0;
  fpdu_seq_ = seq_;
  fpdu_started_ = true;
  if (config_.crc) crc_.Update(in.data(), size - kCrcSize);
  if (!CompleteFpdu(in.subspan(kUlpduLengthSize, ulpdu_len),
                    LoadCrc32cWire(in.data() + size - kCrcSize), sink)) {
    return 0;
  }
  ++stats_.fpdus_in_place;
  return size;
}

// `in` holds no Marker slot. Advances through header, body and CRC; stops
// after completing an FPDU or on error.
size_t FpduDecoder::ConsumeFpduOctets(ByteSpan in, UlpduSink& sink, size_t* delivered) {
  size_t used = 0;
  while (used < in.size()) {
    const uint8_t* p = in.data() + used;
    const size_t avail = in.size() - used;
    switch (phase_) {
      case Phase::kHeader: {
        if (hdr_have_ == 0) fpdu_seq_ = seq_ + static_cast<uint32_t>(used);
        fpdu_started_ = true;
        const size_t take = std::min(kUlpduLengthSize - hdr_have_, avail);
        std::memcpy(hdr_ + hdr_have_, p, take);
        if (config_.crc) crc_.Update(p, take);
        hdr_have_ += take;
        used += take;
        if (hdr_have_ < kUlpduLengthSize) break;
        ulpdu_len_ = LoadBe16(hdr_);
        if (ulpdu_len_ > max_ulpdu_) {
          Fail(DecodeStatus::kUlpduTooLong);
          return used;
        }
        body_len_ = BodyLength(ulpdu_len_);
        body_have_ = 0;
        phase_ = Phase::kBody;
        break;
      }
      case Phase::kBody: {
        const size_t take = std::min(body_len_ - body_have_, avail);
        if (config_.crc) {
          CopyAndCrc32c(buf_.get() + body_have_, p, take, crc_);
        } else {
          std::memcpy(buf_.get() + body_have_, p, take);
        }
        body_have_ += take;
        used += take;
        if (body_have_ == body_len_) phase_ = Phase::kCrc;
        break;
      }
      case Phase::kCrc: {
        const size_t take = std::min(kCrcSize - crc_have_, avail);
        std::memcpy(crc_field_ + crc_have_, p, take);
        crc_have_ += take;
        used += take;
        if (crc_have_ < kCrcSize) break;
        if (!CompleteFpdu(ByteSpan(buf_.get(), ulpdu_len_), LoadCrc32cWire(crc_field_), sink)) {
          return used;
        }
        ++*delivered;
        return used;
      }
    }
  }
  return used;
}

// RFC 5044 4.3: FPDUPTR of a Marker inside an FPDU is the distance back to
// its ULPDU_Length field; a Marker between FPDUs (before any octet of the
// next FPDU) carries 0 and belongs to, and is in the CRC of, the next FPDU.
void FpduDecoder::OnMarkerComplete() {
  const Seq32 marker_seq = seq_ - static_cast<uint32_t>(kMarkerSize);
  const uint16_t fpduptr = LoadBe16(marker_ + 2) & kFpduPtrMask;
  const bool between = phase_ == Phase::kHeader && hdr_have_ == 0;
  const uint32_t expected = between ? 0 : static_cast<uint32_t>(marker_seq - fpdu_seq_);
  if (fpduptr != expected) marker_mismatch_ = true;
  if (between) fpdu_seq_ = seq_;
  fpdu_started_ = true;
  if (config_.crc) crc_.Update(marker_, kMarkerSize);  // RFC 5044 4.4: Markers are in the CRC
  ++stats_.markers;
  marker_have_ = 0;
  to_marker_ = kMarkerPayloadSpacing;
}

// RFC 5044 4.4 and 6: CRC first, then the Marker agreement, then delivery.
bool FpduDecoder::CompleteFpdu(ByteSpan ulpdu, uint32_t received_crc, UlpduSink& sink) {
  if (config_.crc && crc_.Value() != received_crc) {
    Fail(DecodeStatus::kCrcError);
    return false;
  }
  if (marker_mismatch_) {
    Fail(DecodeStatus::kMarkerMismatch);
    return false;
  }
  ++stats_.fpdus;
  sink.OnUlpdu(ulpdu, fpdu_seq_);
  StartNextFpdu();
  return true;
}

void FpduDecoder::StartNextFpdu() {
  phase_ = Phase::kHeader;
  hdr_have_ = 0;
  crc_have_ = 0;
  body_have_ = 0;
  ulpdu_len_ = 0;
  marker_mismatch_ = false;
  fpdu_started_ = false;
  crc_.Reset();
}

void FpduDecoder::Fail(DecodeStatus s) {
  status_ = s;
  error_fpdu_seq_ = fpdu_seq_;
}

}  // namespace iwarp::mpa
