#include "sctp/adaptation.h"

namespace iwarp::sctp {

namespace {

// Offsets in the adaptation layer indication parameter.
constexpr size_t kParamTypeOff = 0;
constexpr size_t kParamLengthOff = 2;
constexpr size_t kParamValueOff = 4;

// Offsets in the chunk user data (RFC 5043 5.2.2 / 5.2.3).
constexpr size_t kSsnOff = 0;
constexpr size_t kFunctionOff = 2;
constexpr size_t kPrivateDataOff = kSessionControlHeaderSize;

bool KnownFunction(uint16_t f) {
  return f >= static_cast<uint16_t>(FunctionCode::kInitiate) &&
         f <= static_cast<uint16_t>(FunctionCode::kTerminate);
}

AdaptStatus CheckPrivateData(FunctionCode f, size_t pd_len) {
  // RFC 5043 5.2.3: no private data in Terminate, at most 512 bytes otherwise.
  if (f == FunctionCode::kTerminate && pd_len != 0) return AdaptStatus::kPrivateDataNotAllowed;
  if (pd_len > kMaxPrivateData) return AdaptStatus::kPrivateDataTooLong;
  return AdaptStatus::kOk;
}

}  // namespace

std::string_view AdaptStatusName(AdaptStatus s) {
  using Enum = AdaptStatus;
  switch (s) { IWARP_SCTP_ADAPT_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

size_t EncodeAdaptationParam(uint32_t indication, MutableByteSpan out) {
  if (out.size() < kAdaptationParamSize) return 0;
  StoreBe16(out.data() + kParamTypeOff, kAdaptationParamType);
  StoreBe16(out.data() + kParamLengthOff, static_cast<uint16_t>(kAdaptationParamSize));
  StoreBe32(out.data() + kParamValueOff, indication);
  return kAdaptationParamSize;
}

AdaptStatus ParseAdaptationParam(ByteSpan in, uint32_t* indication) {
  *indication = 0;
  if (in.size() < kAdaptationParamSize) return AdaptStatus::kTruncated;
  if (LoadBe16(in.data() + kParamTypeOff) != kAdaptationParamType) {
    return AdaptStatus::kBadParameterType;
  }
  if (LoadBe16(in.data() + kParamLengthOff) != kAdaptationParamSize) {
    return AdaptStatus::kBadParameterLength;
  }
  *indication = LoadBe32(in.data() + kParamValueOff);
  return AdaptStatus::kOk;
}

PeerAdaptation ClassifyPeer(bool indication_present, uint32_t indication) {
  if (!indication_present) return PeerAdaptation::kNone;
  return indication == kDdpAdaptationIndication ? PeerAdaptation::kDdp : PeerAdaptation::kOther;
}

AdaptStatus ParseSegmentChunk(ByteSpan user_data, uint32_t max_segment, SegmentChunk* out) {
  *out = SegmentChunk{};
  if (user_data.size() < kSsnSize) return AdaptStatus::kTruncated;
  const size_t seg_len = user_data.size() - kSsnSize;
  if (seg_len == 0) return AdaptStatus::kEmptySegment;
  if (seg_len > max_segment) return AdaptStatus::kSegmentTooLarge;  // RFC 5043 9
  out->ssn = Seq16(LoadBe16(user_data.data() + kSsnOff));
  out->segment = user_data.subspan(kSsnSize);
  return AdaptStatus::kOk;
}

size_t EncodeSegmentChunkPrefix(Seq16 ssn, MutableByteSpan out) {
  if (out.size() < kSsnSize) return 0;
  StoreBe16(out.data() + kSsnOff, ssn.value());
  return kSsnSize;
}

AdaptStatus ParseSessionControl(ByteSpan user_data, SessionControl* out) {
  *out = SessionControl{};
  if (user_data.size() < kSessionControlHeaderSize) return AdaptStatus::kTruncated;
  const uint16_t f = LoadBe16(user_data.data() + kFunctionOff);
  if (!KnownFunction(f)) return AdaptStatus::kUnknownFunctionCode;
  const auto function = static_cast<FunctionCode>(f);
  const ByteSpan pd = user_data.subspan(kPrivateDataOff);
  const AdaptStatus st = CheckPrivateData(function, pd.size());
  if (st != AdaptStatus::kOk) return st;
  out->ssn = Seq16(LoadBe16(user_data.data() + kSsnOff));
  out->function = function;
  out->private_data = pd;
  return AdaptStatus::kOk;
}

AdaptStatus EncodeSessionControl(const SessionControl& m, MutableByteSpan out, size_t* written) {
  *written = 0;
  if (!KnownFunction(static_cast<uint16_t>(m.function))) return AdaptStatus::kUnknownFunctionCode;
  const AdaptStatus st = CheckPrivateData(m.function, m.private_data.size());
  if (st != AdaptStatus::kOk) return st;
  ByteWriter w(out);
  w.U16(m.ssn.value());
  w.U16(static_cast<uint16_t>(m.function));
  w.Bytes(m.private_data);
  if (!w.ok()) return AdaptStatus::kOutputTooSmall;
  *written = w.offset();
  return AdaptStatus::kOk;
}

AdaptStatus SessionSequencer::OnReceive(ChunkKind kind) {
  switch (state_) {
    case State::kStart:
      if (role_ == Role::kPassive) {
        // RFC 5043 6.2-6.4: a session starts with the active side's Initiate.
        if (kind != ChunkKind::kInitiate) break;
        state_ = State::kOpen;
        return AdaptStatus::kOk;
      }
      // Active side: the passive side answers with Accept (6.2), Reject
      // (6.3) or, when it cannot pass the request to its ULP, Terminate (6.4).
      if (kind == ChunkKind::kAccept) {
        state_ = State::kOpen;
        return AdaptStatus::kOk;
      }
      if (kind == ChunkKind::kReject || kind == ChunkKind::kTerminate) {
        state_ = State::kClosed;
        return AdaptStatus::kOk;
      }
      break;
    case State::kOpen:
      // RFC 5043 6.2: DDP segments, then optionally a final Terminate.
      if (kind == ChunkKind::kDdpSegment) return AdaptStatus::kOk;
      if (kind == ChunkKind::kTerminate) {
        state_ = State::kClosed;
        return AdaptStatus::kOk;
      }
      break;
    case State::kClosed:
      break;  // nothing follows the last chunk of a session
  }
  state_ = State::kClosed;
  return AdaptStatus::kIllegalSequence;
}

uint32_t MaxDdpSegmentSize(const PathParams& p) {
  const uint64_t overhead = uint64_t{p.ipv6 ? 40u : 20u} + p.ip_options + kSctpCommonHeaderSize +
                            kDataChunkHeaderSize + kSsnSize + p.bundling_reserve;
  if (p.path_mtu <= overhead + kMinMaxDdpSegmentSize) return kMinMaxDdpSegmentSize;
  return static_cast<uint32_t>(p.path_mtu - overhead);
}

}  // namespace iwarp::sctp
