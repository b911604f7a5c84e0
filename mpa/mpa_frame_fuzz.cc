// Fuzz target: MPA Request/Reply frame codec (RFC 5044 7.1.1, RFC 6581).
//
// Input: one control octet (bit 0: expect a Reply, bit 1: reject reserved
// bits, bit 2: local private data limit 256), then the frame bytes.
// Checks, trapping on any disagreement:
//  - decode -> encode -> decode yields the same frame, and the encoded bytes
//    equal the input frame whenever the input was in canonical form;
//  - the reported size is consistent with the status;
//  - a frame built from the input bytes encodes, and decodes to itself.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mpa/mpa_frame.h"

namespace iwarp::mpa {
namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void DecodeEncodeDecode(ByteSpan in, FrameType expected, const FrameDecodeOptions& options) {
  StartupFrame f;
  const FrameResult r = DecodeStartupFrame(in, expected, &f, options);
  switch (r.status) {
    case FrameStatus::kOk:
      break;
    case FrameStatus::kNeedMoreBytes:
      Check(r.size > in.size() && r.size >= kStartupHeaderSize &&
            r.size <= kStartupHeaderSize + kMaxPrivateDataLength);
      return;
    case FrameStatus::kIrdOrdOutOfRange:
    case FrameStatus::kRejectInRequest:
    case FrameStatus::kBufferTooSmall:
      Check(false);  // encode-only statuses
      return;
    default:
      Check(r.size == 0);
      Check(ToMpaError(r.status) == MpaError::kInvalidStartupFrame);
      return;
  }
  Check(r.size <= in.size());
  Check(r.size == StartupFrameSize(f));
  Check(f.type == expected);
  Check(f.revision == kRevision1 || f.revision == kRevision2);
  Check(!f.ird_ord || (f.ird_ord->ird <= kIrdOrdMax && f.ird_ord->ord <= kIrdOrdMax));
  Check(f.private_data.data() >= in.data() && f.private_data.data() + f.private_data.size() <= in.data() + r.size);

  uint8_t out[kStartupHeaderSize + kMaxPrivateDataLength];
  if (f.reserved != 0) {
    Check(EncodeStartupFrame(f, out).status == FrameStatus::kReservedBitsSet);
    f.reserved = 0;
  }
  const FrameResult e = EncodeStartupFrame(f, out);
  Check(e.status == FrameStatus::kOk && e.size == r.size);
  // Canonical input (no Res bits, no R in a Request) re-encodes to itself.
  const uint8_t flags = in[16];
  const bool canonical = (flags & kFlagsReserved) == 0 &&
                         !(in[17] == kRevision1 && (flags & kFlagEnhanced) != 0) &&
                         !(expected == FrameType::kRequest && (flags & kFlagReject) != 0);
  if (canonical) Check(std::memcmp(out, in.data(), r.size) == 0);

  StartupFrame g;
  const FrameResult r2 = DecodeStartupFrame(ByteSpan(out, e.size), expected, &g, options);
  Check(r2.status == FrameStatus::kOk && r2.size == e.size);
  Check(SameFrame(f, g));
}

// Builds a frame from raw bytes, encodes it, decodes it back.
void EncodeDecode(ByteSpan in) {
  if (in.size() < 8) return;
  StartupFrame f;
  f.type = (in[0] & 1) ? FrameType::kReply : FrameType::kRequest;
  f.markers = in[0] & 2;
  f.crc = in[0] & 4;
  f.reject = f.type == FrameType::kReply && (in[0] & 8);
  f.revision = (in[0] & 16) ? kRevision2 : kRevision1;
  if (f.revision == kRevision2 && (in[0] & 32)) {
    IrdOrd io;
    io.ird = static_cast<uint16_t>(LoadBe16(in.data() + 1) & kIrdOrdMax);
    io.ord = static_cast<uint16_t>(LoadBe16(in.data() + 3) & kIrdOrdMax);
    io.peer_to_peer = in[5] & 1;
    io.send_rtr = in[5] & 2;
    io.write_rtr = in[5] & 4;
    io.read_rtr = in[5] & 8;
    f.ird_ord = io;
  }
  const size_t room = kMaxPrivateDataLength - (f.ird_ord ? kIrdOrdSize : 0);
  ByteSpan pd = in.subspan(6);
  if (pd.size() > room) pd = pd.first(room);
  f.private_data = pd;
  uint8_t out[kStartupHeaderSize + kMaxPrivateDataLength];
  const FrameResult e = EncodeStartupFrame(f, out);
  Check(e.status == FrameStatus::kOk && e.size == StartupFrameSize(f));
  StartupFrame g;
  const FrameResult d = DecodeStartupFrame(ByteSpan(out, e.size), f.type, &g);
  Check(d.status == FrameStatus::kOk && d.size == e.size);
  Check(SameFrame(f, g));
  // Every strict prefix asks for more bytes.
  const size_t cut = in[1] % e.size;
  Check(DecodeStartupFrame(ByteSpan(out, cut), f.type, &g).status == FrameStatus::kNeedMoreBytes);
}

}  // namespace

void FuzzOne(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const uint8_t ctl = data[0];
  FrameDecodeOptions options;
  options.reject_reserved_bits = ctl & 2;
  options.max_private_data = (ctl & 4) ? 256 : kMaxPrivateDataLength;
  const ByteSpan in(data + 1, size - 1);
  DecodeEncodeDecode(in, (ctl & 1) ? FrameType::kReply : FrameType::kRequest, options);
  EncodeDecode(in);
}

}  // namespace iwarp::mpa

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iwarp::mpa::FuzzOne(data, size);
  return 0;
}
