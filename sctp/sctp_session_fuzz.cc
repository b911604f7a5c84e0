// Fuzz target: the RFC 5043 session engine's receive path (DDP-SSN
// reordering, session control parsing, the legal sequences of 6.2-6.4),
// interleaved with the ULP's own calls and a send side that sometimes
// refuses. The input is a list of records:
//   op (1 byte) | stream (1 byte) | length (2 bytes, big-endian) | bytes
// op % 11: 0 chunk PPID 16, 1 chunk PPID 17, 2 chunk with another PPID,
// 3 Initiate(pd), 4 Accept(pd), 5 Reject(pd), 6 Terminate, 7 SendSegment,
// 8 toggle "send buffer full", 9 oversize message, 10 association down.
// Invariants (violations call __builtin_trap()):
//   - every chunk the engine sends has PPID 16 or 17, fits mulpdu + 2 bytes,
//     and carries DDP-SSN 0 or the previous DDP-SSN + 1 of its stream;
//   - delivered segments are non-empty and at most mulpdu bytes;
//   - held chunks and pending Initiates never exceed their limits.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "sctp/session_engine.h"

namespace {

using namespace iwarp;        // NOLINT: fuzz driver
using namespace iwarp::sctp;  // NOLINT: fuzz driver

constexpr uint16_t kStreams = 4;

SessionEngineConfig FuzzConfig() {
  SessionEngineConfig c;
  c.streams = kStreams;
  c.mulpdu = kMinMaxDdpSegmentSize;
  c.max_pending_initiates = 2;
  c.reorder_window = 64;
  c.reorder_chunks = 16;
  return c;
}

struct Out : ChunkOutput {
  bool full = false;
  std::array<std::optional<uint16_t>, kStreams> last_ssn{};
  SendResult SendChunk(uint16_t stream, uint32_t ppid, ByteSpan user_data) override {
    if (stream >= kStreams) __builtin_trap();
    if (ppid != kPpidDdpSegment && ppid != kPpidSessionControl) __builtin_trap();
    if (user_data.size() < kSsnSize || user_data.size() > FuzzConfig().mulpdu + kSsnSize) {
      __builtin_trap();
    }
    if (full) return SendResult::kWouldBlock;
    const uint16_t ssn = LoadBe16(user_data.data());
    auto& last = last_ssn[stream];
    // A deferred Terminate may repeat nothing and skip nothing: 0 starts a
    // session, anything else follows the previous chunk of the stream.
    if (ssn != 0 && (!last.has_value() || ssn != static_cast<uint16_t>(*last + 1))) {
      __builtin_trap();
    }
    last = ssn;
    return SendResult::kOk;
  }
};

struct Events : DdpLlpEvents {
  void OnSegment(uint16_t stream, ByteSpan seg) override {
    if (stream >= kStreams || seg.empty() || seg.size() > FuzzConfig().mulpdu) __builtin_trap();
  }
  void OnInitiate(uint16_t stream, ByteSpan pd) override {
    if (stream >= kStreams || pd.size() > kMaxPrivateData) __builtin_trap();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Out out;
  Events ev;
  const SessionEngineConfig cfg = FuzzConfig();
  SessionEngine engine(cfg, &out, &ev);
  ByteReader r(ByteSpan(data, size));
  while (r.remaining() >= 4) {
    const uint8_t op = r.U8() % 11;
    const uint8_t raw_stream = r.U8();
    // Mostly valid streams, sometimes one beyond the range.
    const uint16_t stream = raw_stream < 250 ? raw_stream % kStreams : raw_stream;
    const size_t len = std::min<size_t>(r.U16(), r.remaining());
    const ByteSpan body = r.Bytes(len);
    switch (op) {
      case 0:
        engine.OnChunk(stream, kPpidDdpSegment, true, body);
        break;
      case 1:
        engine.OnChunk(stream, kPpidSessionControl, (raw_stream & 1) == 0, body);
        break;
      case 2:
        engine.OnChunk(stream, 99, true, body);
        break;
      case 3:
        engine.Initiate(stream, body);
        break;
      case 4:
        engine.Accept(stream, body);
        break;
      case 5:
        engine.Reject(stream, body);
        break;
      case 6:
        engine.Terminate(stream);
        break;
      case 7:
        engine.SendSegment(stream, body);
        break;
      case 8:
        out.full = !out.full;
        if (!out.full) engine.FlushDeferred();
        break;
      case 9:
        engine.OnOversizeChunk(stream);
        break;
      case 10:
        engine.OnAssociationDown();
        out.last_ssn = {};
        break;
    }
    if (engine.held_chunks() > cfg.reorder_chunks) __builtin_trap();
    if (engine.pending_initiates() > cfg.max_pending_initiates) __builtin_trap();
  }
  return 0;
}
