#include "tcp_lite/tcp_segment.h"

#include <algorithm>

#include "common/checksum.h"

namespace iwarp::tcp {
namespace {

// Header field offsets (RFC 9293 3.1).
constexpr size_t kOffSrcPort = 0;
constexpr size_t kOffDstPort = 2;
constexpr size_t kOffSeq = 4;
constexpr size_t kOffAck = 8;
constexpr size_t kOffDataOffset = 12;
constexpr size_t kOffFlags = 13;
constexpr size_t kOffWindow = 14;
constexpr size_t kOffChecksum = 16;
constexpr size_t kOffUrgent = 18;
constexpr size_t kSackBlockSize = 8;

// RFC 9293 3.1: pseudo-header sum (source, destination, zero, PTCL, TCP length).
uint32_t PseudoHeaderSum(const Ipv4Addresses& addrs, size_t tcp_length) {
  uint8_t ph[12];
  StoreBe32(ph, addrs.src);
  StoreBe32(ph + 4, addrs.dst);
  ph[8] = 0;
  ph[9] = kIpProtocolTcp;
  StoreBe16(ph + 10, static_cast<uint16_t>(tcp_length));
  return ChecksumAdd(0, ph);
}

// Adds two unfolded one's-complement sums without losing a carry.
uint32_t SumAdd(uint32_t a, uint32_t b) {
  uint64_t s = uint64_t{a} + b;
  return static_cast<uint32_t>((s & 0xffffffffu) + (s >> 32));
}

// Folds an unfolded sum to 16 bits without complementing it.
uint16_t Fold16(uint32_t sum) { return static_cast<uint16_t>(~ChecksumFold(sum)); }

}  // namespace

std::string_view SegmentStatusName(SegmentStatus s) {
  using Enum = SegmentStatus;
  switch (s) { IWARP_TCP_SEGMENT_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

std::string_view OptionStatusName(OptionStatus s) {
  using Enum = OptionStatus;
  switch (s) { IWARP_TCP_OPTION_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

PayloadSum SumPayload(ByteSpan payload) { return {payload.size(), ChecksumAdd(0, payload)}; }

PayloadSum SumPayload(std::span<const ByteSpan> pieces) {
  PayloadSum r;
  for (ByteSpan p : pieces) {
    uint16_t s = Fold16(ChecksumAdd(0, p));
    // RFC 1071 2(B): a piece placed at an odd offset contributes its sum with
    // the two octets swapped.
    if (r.length % 2 != 0) s = static_cast<uint16_t>((s << 8) | (s >> 8));
    r.sum = SumAdd(r.sum, s);
    r.length += p.size();
  }
  return r;
}

PayloadSum CopyAndSumPayload(std::span<const ByteSpan> pieces, uint8_t* dst) {
  PayloadSum r;
  for (ByteSpan p : pieces) {
    uint16_t s = Fold16(ChecksumCopy(dst + r.length, p, 0));
    // RFC 1071 2(B), as in SumPayload.
    if (r.length % 2 != 0) s = static_cast<uint16_t>((s << 8) | (s >> 8));
    r.sum = SumAdd(r.sum, s);
    r.length += p.size();
  }
  return r;
}

bool AddPayloadSum(MutableByteSpan tcp_header, PayloadSum payload) {
  if (tcp_header.size() < kHeaderSize) return false;
  uint8_t* p = tcp_header.data();
  // RFC 1624 3: ~checksum is the folded sum over pseudo-header and header
  // (never 0: the pseudo-header's protocol word is not zero), to which the
  // payload's sum is added.
  const uint16_t partial = static_cast<uint16_t>(~LoadBe16(p + kOffChecksum));
  StoreBe16(p + kOffChecksum, ChecksumFold(SumAdd(partial, payload.sum)));
  return true;
}

SegmentStatus ParseSegment(ByteSpan in, size_t tcp_length, const Ipv4Addresses& addrs,
                           ChecksumCheck check, Segment* out) {
  if (tcp_length > in.size() || tcp_length < kHeaderSize || tcp_length > kMaxSegmentSize) {
    return SegmentStatus::kTruncated;
  }
  const ByteSpan seg = in.first(tcp_length);
  const uint8_t* p = seg.data();
  // RFC 9293 3.1: the sum over pseudo-header and segment, checksum field
  // included, folds to zero exactly when the checksum is right.
  if (check == ChecksumCheck::kVerify &&
      ChecksumFold(ChecksumAdd(PseudoHeaderSum(addrs, tcp_length), seg)) != 0) {
    return SegmentStatus::kBadChecksum;
  }
  const uint8_t data_offset = p[kOffDataOffset] >> 4;
  const size_t header_len = size_t{data_offset} * 4;
  if (header_len < kHeaderSize || header_len > tcp_length) return SegmentStatus::kBadDataOffset;

  SegmentHeader& h = out->header;
  h.src_port = LoadBe16(p + kOffSrcPort);
  h.dst_port = LoadBe16(p + kOffDstPort);
  h.seq = Seq32(LoadBe32(p + kOffSeq));
  h.ack = Seq32(LoadBe32(p + kOffAck));
  h.flags = p[kOffFlags];
  h.window = LoadBe16(p + kOffWindow);
  h.urgent_pointer = LoadBe16(p + kOffUrgent);
  out->data_offset = data_offset;
  out->reserved = p[kOffDataOffset] & 0x0F;
  out->checksum = LoadBe16(p + kOffChecksum);
  out->options = seg.subspan(kHeaderSize, header_len - kHeaderSize);
  out->payload = seg.subspan(header_len);
  return SegmentStatus::kOk;
}

SegmentEncodeResult EncodeSegmentHeader(const SegmentHeader& h, ByteSpan options,
                                        const Ipv4Addresses& addrs, PayloadSum payload,
                                        MutableByteSpan out) {
  if (options.size() % 4 != 0 || options.size() > kMaxOptionsSize) {
    return {SegmentStatus::kBadOptionsLength, 0};
  }
  const size_t header_len = kHeaderSize + options.size();
  if (payload.length > kMaxSegmentSize - header_len) return {SegmentStatus::kSegmentTooLong, 0};
  if (out.size() < header_len) return {SegmentStatus::kBufferTooSmall, 0};

  uint8_t* p = out.data();
  StoreBe16(p + kOffSrcPort, h.src_port);
  StoreBe16(p + kOffDstPort, h.dst_port);
  StoreBe32(p + kOffSeq, h.seq.value());
  StoreBe32(p + kOffAck, h.ack.value());
  p[kOffDataOffset] = static_cast<uint8_t>((header_len / 4) << 4);  // reserved bits zero
  p[kOffFlags] = h.flags;
  StoreBe16(p + kOffWindow, h.window);
  StoreBe16(p + kOffChecksum, 0);
  StoreBe16(p + kOffUrgent, h.urgent_pointer);
  if (!options.empty()) std::copy(options.begin(), options.end(), p + kHeaderSize);

  uint32_t sum = PseudoHeaderSum(addrs, header_len + payload.length);
  sum = ChecksumAdd(sum, out.first(header_len));
  sum = SumAdd(sum, payload.sum);
  StoreBe16(p + kOffChecksum, ChecksumFold(sum));
  return {SegmentStatus::kOk, header_len};
}

// ---------------------------------------------------------------- options

OptionStatus ParseOptions(ByteSpan in, bool syn, Options* out) {
  *out = Options{};
  size_t i = 0;
  const size_t n = in.size();
  while (i < n) {
    const uint8_t kind = in[i];
    // RFC 9293 3.2: EOL ends the list; NOP is a single octet.
    if (kind == kOptEol) break;
    if (kind == kOptNop) {
      ++i;
      continue;
    }
    if (n - i < 2) return OptionStatus::kMissingLength;
    const uint8_t len = in[i + 1];
    if (len < 2) return OptionStatus::kBadLength;
    if (len > n - i) return OptionStatus::kLengthPastEnd;
    const uint8_t* v = in.data() + i + 2;
    switch (kind) {
      case kOptMss:  // RFC 9293 3.2, 3.7.1
        if (len != kOptMssLength) return OptionStatus::kBadMssLength;
        if (syn) out->mss = LoadBe16(v);
        break;
      case kOptWindowScale:  // RFC 7323 2.2, 2.3
        if (len != kOptWindowScaleLength) return OptionStatus::kBadWindowScaleLength;
        if (syn) {
          out->window_scale_clamped = v[0] > kMaxWindowScale;
          out->window_scale = std::min(v[0], kMaxWindowScale);
        }
        break;
      case kOptSackPermitted:  // RFC 2018 2
        if (len != kOptSackPermittedLength) return OptionStatus::kBadSackPermittedLength;
        if (syn) out->sack_permitted = true;
        break;
      case kOptSack: {  // RFC 2018 3: length 8n + 2
        const size_t blocks = (len - 2u) / kSackBlockSize;
        if ((len - 2u) % kSackBlockSize != 0 || blocks == 0 || blocks > kMaxSackBlocks) {
          return OptionStatus::kBadSackLength;
        }
        out->sack_blocks = {};
        out->sack_block_count = static_cast<uint8_t>(blocks);
        for (size_t b = 0; b < blocks; ++b) {
          out->sack_blocks[b].left_edge = Seq32(LoadBe32(v + b * kSackBlockSize));
          out->sack_blocks[b].right_edge = Seq32(LoadBe32(v + b * kSackBlockSize + 4));
        }
        break;
      }
      case kOptTimestamps:  // RFC 7323 3.2
        if (len != kOptTimestampsLength) return OptionStatus::kBadTimestampsLength;
        out->timestamps = Timestamps{LoadBe32(v), LoadBe32(v + 4)};
        break;
      default:  // RFC 9293 3.2: unknown kinds are skipped by their length
        break;
    }
    i += len;
  }
  return OptionStatus::kOk;
}

size_t EncodedOptionsSize(const Options& o) {
  size_t size = 0;
  if (o.mss) size += kOptMssLength;
  if (o.timestamps) {
    size += 2 + kOptTimestampsLength;  // SACK-permitted or NOP NOP in front
  } else if (o.sack_permitted) {
    size += 2 + kOptSackPermittedLength;
  }
  if (o.window_scale) size += 1 + kOptWindowScaleLength;
  if (o.sack_block_count > 0) size += 4 + kSackBlockSize * o.sack_block_count;
  return size;
}

OptionsEncodeResult EncodeOptions(const Options& o, MutableByteSpan out) {
  if (o.window_scale && *o.window_scale > kMaxWindowScale) return {OptionStatus::kBadWindowScale};
  if (o.sack_block_count > kMaxSackBlocks) return {OptionStatus::kTooLong};
  const size_t size = EncodedOptionsSize(o);
  if (size > kMaxOptionsSize) return {OptionStatus::kTooLong};
  if (out.size() < size) return {OptionStatus::kBufferTooSmall};

  ByteWriter w(out);
  if (o.mss) {
    w.U8(kOptMss);
    w.U8(kOptMssLength);
    w.U16(*o.mss);
  }
  if (o.timestamps) {
    if (o.sack_permitted) {
      w.U8(kOptSackPermitted);
      w.U8(kOptSackPermittedLength);
    } else {
      w.U8(kOptNop);
      w.U8(kOptNop);
    }
    w.U8(kOptTimestamps);
    w.U8(kOptTimestampsLength);
    w.U32(o.timestamps->ts_val);
    w.U32(o.timestamps->ts_ecr);
  } else if (o.sack_permitted) {
    w.U8(kOptNop);
    w.U8(kOptNop);
    w.U8(kOptSackPermitted);
    w.U8(kOptSackPermittedLength);
  }
  if (o.window_scale) {
    w.U8(kOptNop);
    w.U8(kOptWindowScale);
    w.U8(kOptWindowScaleLength);
    w.U8(*o.window_scale);
  }
  if (o.sack_block_count > 0) {
    w.U8(kOptNop);
    w.U8(kOptNop);
    w.U8(kOptSack);
    w.U8(static_cast<uint8_t>(2 + kSackBlockSize * o.sack_block_count));
    for (const SackBlock& b : o.sack()) {
      w.U32(b.left_edge.value());
      w.U32(b.right_edge.value());
    }
  }
  if (!w.ok() || w.offset() != size) return {OptionStatus::kBufferTooSmall};
  return {OptionStatus::kOk, size, o.sack_block_count};
}

OptionsEncodeResult EncodeSynOptions(const SynOptions& s, MutableByteSpan out) {
  Options o;
  o.mss = s.mss;
  o.window_scale = s.window_scale;
  o.sack_permitted = s.sack_permitted;
  o.timestamps = s.timestamps;
  return EncodeOptions(o, out);
}

OptionsEncodeResult EncodeAckOptions(const std::optional<Timestamps>& ts,
                                     std::span<const SackBlock> sack, MutableByteSpan out) {
  Options o;
  o.timestamps = ts;
  // RFC 2018 3: with Timestamps 3 blocks fit in 40 octets, without 4.
  const size_t fit = ts ? 3 : kMaxSackBlocks;
  o.sack_block_count = static_cast<uint8_t>(std::min(sack.size(), fit));
  std::copy_n(sack.begin(), o.sack_block_count, o.sack_blocks.begin());
  return EncodeOptions(o, out);
}

}  // namespace iwarp::tcp
