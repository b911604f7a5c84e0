// Fuzz target: the streaming FPDU decoder and the FPDU encoder (RFC 5044).
//
// Input layout:
//   0      flags: bit 0 Markers, bit 1 CRC, bit 2 mode (0 raw, 1 encode)
//   1..4   marker origin (big endian)
//   5      start = origin + 4 * byte
//   6      maximum ULPDU length selector
//   7      number of split sizes k (mod 16), then k octets of piece sizes
//   rest   raw mode: the TCP payload to decode
//          encode mode: ULPDUs as [len_hi len_lo] then len octets (short
//          ULPDUs are filled with a pattern)
// Raw mode: decoding the payload in one piece and in the fuzzer's pieces must
// agree exactly (status, ULPDUs, error position), and LocateFpduFromMarker
// must not misbehave on any window. Encode mode: the encoded stream, fed in
// the fuzzer's pieces, must decode to exactly the ULPDUs given.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "mpa/mpa_decoder.h"
#include "mpa/mpa_fpdu.h"

namespace {

using iwarp::ByteSpan;
using iwarp::LoadBe16;
using iwarp::LoadBe32;
using iwarp::MutableByteSpan;
using iwarp::Seq32;
using iwarp::mpa::DecodeStatus;
using iwarp::mpa::FeedResult;
using iwarp::mpa::FpduConfig;
using iwarp::mpa::FpduDecoder;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

class Sink : public iwarp::mpa::UlpduSink {
 public:
  void OnUlpdu(ByteSpan ulpdu, Seq32 fpdu_seq) override {
    ulpdus.emplace_back(ulpdu.begin(), ulpdu.end());
    seqs.push_back(fpdu_seq.value());
  }
  std::vector<std::vector<uint8_t>> ulpdus;
  std::vector<uint32_t> seqs;
};

struct Splitter {
  ByteSpan sizes;
  size_t next = 0;
  size_t Next() {
    if (sizes.empty()) return 1 + next++ % 7;
    const uint8_t s = sizes[next++ % sizes.size()];
    return s == 0 ? 1500 : s;
  }
};

DecodeStatus FeedPieces(FpduDecoder& d, ByteSpan wire, Sink& sink, Splitter split) {
  size_t pos = 0;
  while (pos < wire.size()) {
    size_t n = split.Next();
    if (n > wire.size() - pos) n = wire.size() - pos;
    const FeedResult r = d.Feed(wire.subspan(pos, n), sink);
    if (r.status != DecodeStatus::kOk) return r.status;
    Check(r.consumed == n);
    pos += n;
  }
  return d.status();
}

void RawMode(ByteSpan wire, const FpduConfig& c, Seq32 start, size_t max_ulpdu, Splitter split) {
  FpduDecoder whole(c, start, max_ulpdu);
  Sink a;
  const FeedResult r = whole.Feed(wire, a);
  Check(r.ulpdus == a.ulpdus.size());
  Check(r.status != DecodeStatus::kOk || r.consumed == wire.size());
  FpduDecoder pieces(c, start, max_ulpdu);
  Sink b;
  const DecodeStatus s = FeedPieces(pieces, wire, b, split);
  Check(s == r.status);
  Check(a.ulpdus == b.ulpdus && a.seqs == b.seqs);
  if (s == DecodeStatus::kOk) {
    Check(whole.next_seq() == pieces.next_seq());
    Check(whole.at_fpdu_boundary() == pieces.at_fpdu_boundary());
  } else {
    Check(whole.error_fpdu_seq() == pieces.error_fpdu_seq());
  }
  for (const auto& u : a.ulpdus) Check(u.size() <= whole.max_ulpdu_length());
  // Out-of-order Marker lookup on a few windows of the payload.
  for (size_t off = 0; off < wire.size(); off += 97) {
    const auto hit = iwarp::mpa::LocateFpduFromMarker(wire.subspan(off), start + static_cast<uint32_t>(off),
                                                      c.marker_origin);
    if (hit) {
      const uint32_t at = static_cast<uint32_t>(hit->marker_seq - (start + static_cast<uint32_t>(off)));
      Check(at + 4 <= wire.size() - off);
      Check(iwarp::mpa::DistanceToMarker(hit->marker_seq, c.marker_origin) == 0);
    }
  }
}

void EncodeMode(ByteSpan in, const FpduConfig& c, Seq32 start, size_t max_ulpdu, Splitter split) {
  std::vector<std::vector<uint8_t>> ulpdus;
  size_t total = 0;
  while (in.size() >= 2 && ulpdus.size() < 64 && total < (1u << 18)) {
    const size_t len = LoadBe16(in.data()) % (max_ulpdu + 1);
    in = in.subspan(2);
    std::vector<uint8_t> u(len);
    for (size_t i = 0; i < len; ++i) u[i] = i < in.size() ? in[i] : static_cast<uint8_t>(i * 7);
    in = in.subspan(len < in.size() ? len : in.size());
    total += len;
    ulpdus.push_back(std::move(u));
  }
  std::vector<uint8_t> wire;
  Seq32 seq = start;
  for (const auto& u : ulpdus) {
    const size_t size = iwarp::mpa::FpduWireSize(u.size(), seq, c);
    const size_t at = wire.size();
    wire.resize(at + size);
    // Split the ULPDU into a header part and a payload part at a data-chosen point.
    const size_t cut = u.empty() ? 0 : u[0] % (u.size() + 1);
    const auto e = iwarp::mpa::EncodeFpdu(ByteSpan(u).first(cut), ByteSpan(u).subspan(cut), seq, c,
                                          MutableByteSpan(wire).subspan(at));
    Check(e.status == iwarp::mpa::FpduStatus::kOk && e.size == size);
    seq += static_cast<uint32_t>(size);
  }
  FpduDecoder d(c, start, max_ulpdu);
  Sink sink;
  Check(FeedPieces(d, wire, sink, split) == DecodeStatus::kOk);
  Check(sink.ulpdus == ulpdus);
  Check(d.at_fpdu_boundary());
  Check(d.next_seq() == seq);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  const ByteSpan in(data, size);
  FpduConfig c;
  c.markers = in[0] & 1;
  c.crc = in[0] & 2;
  const bool encode = in[0] & 4;
  c.marker_origin = Seq32(LoadBe32(in.data() + 1));
  const Seq32 start = c.marker_origin + 4u * in[5];
  static constexpr size_t kMaxUlpdu[] = {0, 1, 16, 100, 512, 1454, 4096, 64768};
  const size_t max_ulpdu = kMaxUlpdu[in[6] % 8];
  const size_t k = in[7] % 16;
  if (size < 8 + k) return 0;
  Splitter split{in.subspan(8, k)};
  const ByteSpan rest = in.subspan(8 + k);
  if (encode) {
    EncodeMode(rest, c, start, max_ulpdu, split);
  } else {
    RawMode(rest, c, start, max_ulpdu, split);
  }
  return 0;
}
