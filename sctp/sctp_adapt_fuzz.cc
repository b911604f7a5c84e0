// Fuzz target: user data of one DDP-over-SCTP DATA chunk (or an INIT
// parameter). The input goes through every decoder of sctp/adaptation.h;
// whatever decodes must encode back to the same bytes, and the session
// sequencer and segment-size computation must keep their invariants.
// Disagreement calls __builtin_trap().
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sctp/adaptation.h"

namespace {

using namespace iwarp;        // NOLINT: fuzz driver
using namespace iwarp::sctp;  // NOLINT: fuzz driver

void CheckParam(ByteSpan in) {
  uint32_t ind = 0;
  if (ParseAdaptationParam(in, &ind) != AdaptStatus::kOk) return;
  std::array<uint8_t, kAdaptationParamSize> out{};
  if (EncodeAdaptationParam(ind, out) != out.size()) __builtin_trap();
  if (std::memcmp(out.data(), in.data(), out.size()) != 0) __builtin_trap();
  if ((ClassifyPeer(true, ind) == PeerAdaptation::kDdp) != (ind == kDdpAdaptationIndication)) {
    __builtin_trap();
  }
}

void CheckSegmentChunk(ByteSpan in) {
  SegmentChunk c;
  const uint32_t max = MaxDdpSegmentSize(PathParams{});
  const AdaptStatus st = ParseSegmentChunk(in, max, &c);
  if (st != AdaptStatus::kOk) {
    if (st == AdaptStatus::kSegmentTooLarge && in.size() - kSsnSize <= max) __builtin_trap();
    return;
  }
  if (c.segment.size() != in.size() - kSsnSize || c.segment.empty() || c.segment.size() > max ||
      c.segment.data() != in.data() + kSsnSize) {
    __builtin_trap();
  }
  std::array<uint8_t, kSsnSize> prefix{};
  if (EncodeSegmentChunkPrefix(c.ssn, prefix) != kSsnSize) __builtin_trap();
  if (std::memcmp(prefix.data(), in.data(), kSsnSize) != 0) __builtin_trap();
}

void CheckSessionControl(ByteSpan in) {
  SessionControl m;
  if (ParseSessionControl(in, &m) != AdaptStatus::kOk) return;
  static std::array<uint8_t, kSessionControlHeaderSize + kMaxPrivateData> out;
  size_t n = 0;
  if (EncodeSessionControl(m, out, &n) != AdaptStatus::kOk || n != in.size()) __builtin_trap();
  if (std::memcmp(out.data(), in.data(), n) != 0) __builtin_trap();
}

void CheckSequencer(ByteSpan in) {
  for (Role role : {Role::kActive, Role::kPassive}) {
    SessionSequencer s(role);
    for (size_t i = 0; i < in.size() && i < 64; ++i) {
      const bool was_closed = s.closed();
      const AdaptStatus st = s.OnReceive(static_cast<ChunkKind>(in[i] % 5));
      if (was_closed && st != AdaptStatus::kIllegalSequence) __builtin_trap();
      if (st == AdaptStatus::kIllegalSequence && !s.closed()) __builtin_trap();
    }
  }
}

void CheckMaxSegment(ByteSpan in) {
  if (in.size() < 9) return;
  PathParams p;
  p.path_mtu = LoadBe32(in.data());
  p.ipv6 = (in[4] & 1) != 0;
  p.ip_options = in[5];
  p.bundling_reserve = LoadBe16(in.data() + 6);
  const uint32_t got = MaxDdpSegmentSize(p);
  const uint64_t overhead = (p.ipv6 ? 40u : 20u) + p.ip_options + kSctpCommonHeaderSize +
                            kDataChunkHeaderSize + kSsnSize + p.bundling_reserve;
  if (got < kMinMaxDdpSegmentSize) __builtin_trap();
  if (got > kMinMaxDdpSegmentSize && got + overhead != p.path_mtu) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ByteSpan in(data, size);
  CheckParam(in);
  CheckSegmentChunk(in);
  CheckSessionControl(in);
  CheckSequencer(in);
  CheckMaxSegment(in);
  return 0;
}
