// Fuzz target: TCP segment and option codecs (RFC 9293 3.1, 3.2; RFC 7323;
// RFC 2018).
//
// Input: one control octet (bit 0: verify the checksum, bit 1: parse options
// as if SYN were set whatever the flags say), 8 octets of IPv4 source and
// destination address, then the segment. Checks, trapping on any
// disagreement:
//  - parse -> encode -> parse gives the same header, options and payload, and
//    the re-encoded segment carries a correct checksum;
//  - when the input checksum was verified and the reserved bits are zero,
//    re-encoding with the input's option bytes reproduces the input header
//    byte for byte (a received checksum 0xFFFF comes back as 0x0000);
//  - parsed options re-encode (Linux layout) unless they need more than 40
//    octets, and parse back to the same options.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tcp_lite/tcp_segment.h"

namespace iwarp::tcp {
namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

bool SameSpan(ByteSpan a, ByteSpan b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

void CheckOptions(ByteSpan raw, bool syn) {
  Options o;
  const OptionStatus st = ParseOptions(raw, syn, &o);
  if (st != OptionStatus::kOk) {
    Check(st <= OptionStatus::kBadTimestampsLength);  // parse errors only
    return;
  }
  Check(!o.window_scale || *o.window_scale <= kMaxWindowScale);
  Check(o.sack_block_count <= kMaxSackBlocks);
  Check(syn || (!o.mss && !o.window_scale && !o.sack_permitted));
  uint8_t out[kMaxOptionsSize];
  const OptionsEncodeResult e = EncodeOptions(o, out);
  if (EncodedOptionsSize(o) > kMaxOptionsSize) {
    Check(e.status == OptionStatus::kTooLong && e.size == 0);
    return;
  }
  Check(e.status == OptionStatus::kOk && e.size % 4 == 0 && e.size == EncodedOptionsSize(o));
  Options back;
  Check(ParseOptions(ByteSpan(out, e.size), syn, &back) == OptionStatus::kOk);
  o.window_scale_clamped = false;
  Check(back == o);
}

}  // namespace
}  // namespace iwarp::tcp

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace iwarp;
  using namespace iwarp::tcp;
  if (size < 9) return 0;
  const uint8_t ctrl = data[0];
  const Ipv4Addresses addrs{LoadBe32(data + 1), LoadBe32(data + 5)};
  const ByteSpan in(data + 9, size - 9);
  const ChecksumCheck check = (ctrl & 1) ? ChecksumCheck::kVerify : ChecksumCheck::kSkip;

  // The option parser on the raw bytes as well, so it sees every layout.
  CheckOptions(in.first(std::min<size_t>(in.size(), kMaxOptionsSize)), ctrl & 2);

  Segment s;
  const SegmentStatus st = ParseSegment(in, in.size(), addrs, check, &s);
  if (st != SegmentStatus::kOk) {
    Check(st == SegmentStatus::kTruncated || st == SegmentStatus::kBadDataOffset ||
          st == SegmentStatus::kBadChecksum);
    return 0;
  }
  Check(s.data_offset >= 5 && size_t{s.data_offset} * 4 == kHeaderSize + s.options.size());
  Check(s.payload.data() + s.payload.size() == in.data() + in.size());
  const bool syn = s.header.Has(kFlagSyn) || (ctrl & 2);
  CheckOptions(s.options, syn);

  // Re-encode with the same option bytes: a correct checksum, and the input
  // bytes themselves when the input was verified and canonical.
  uint8_t hdr[kMaxHeaderSize];
  const SegmentEncodeResult e = EncodeSegmentHeader(s.header, s.options, addrs, s.payload, hdr);
  Check(e.status == SegmentStatus::kOk && e.size == kHeaderSize + s.options.size());
  if (check == ChecksumCheck::kVerify && s.reserved == 0) {
    Check(std::memcmp(hdr, in.data(), 16) == 0);
    Check(std::memcmp(hdr + 18, in.data() + 18, e.size - 18) == 0);
    // RFC 1624 3: 0xFFFF and 0x0000 are the two zeros of one's complement; a
    // received 0xFFFF verifies, and we always send 0x0000 for it.
    const uint16_t sent = LoadBe16(hdr + 16);
    Check(sent == s.checksum || (s.checksum == 0xFFFF && sent == 0));
  }

  // Rebuild the whole segment and parse it back with verification.
  static uint8_t seg[kMaxSegmentSize];
  std::memcpy(seg, hdr, e.size);
  if (!s.payload.empty()) std::memcpy(seg + e.size, s.payload.data(), s.payload.size());
  const size_t total = e.size + s.payload.size();
  Segment t;
  Check(ParseSegment(ByteSpan(seg, total), total, addrs, ChecksumCheck::kVerify, &t) ==
        SegmentStatus::kOk);
  Check(t.header == s.header && t.data_offset == s.data_offset && t.reserved == 0);
  Check(SameSpan(t.options, s.options) && SameSpan(t.payload, s.payload));

  // With options re-encoded in our own layout, the header still agrees.
  Options o;
  if (ParseOptions(s.options, syn, &o) == OptionStatus::kOk) {
    uint8_t opts[kMaxOptionsSize];
    const OptionsEncodeResult oe = EncodeOptions(o, opts);
    if (oe.status == OptionStatus::kOk) {
      const SegmentEncodeResult e2 =
          EncodeSegmentHeader(s.header, ByteSpan(opts, oe.size), addrs, s.payload, seg);
      if (e2.status == SegmentStatus::kSegmentTooLong) {
        Check(kHeaderSize + oe.size + s.payload.size() > kMaxSegmentSize);
        return 0;
      }
      Check(e2.status == SegmentStatus::kOk);
      if (!s.payload.empty()) std::memmove(seg + e2.size, s.payload.data(), s.payload.size());
      const size_t total2 = e2.size + s.payload.size();
      Segment u;
      Check(ParseSegment(ByteSpan(seg, total2), total2, addrs, ChecksumCheck::kVerify, &u) ==
            SegmentStatus::kOk);
      Check(u.header == s.header && SameSpan(u.payload, s.payload));
      Options back;
      Check(ParseOptions(u.options, syn, &back) == OptionStatus::kOk);
      o.window_scale_clamped = false;
      Check(back == o);
    }
  }
  return 0;
}
