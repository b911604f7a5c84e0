#include "dataplane/impair/impairment.h"

#include "common/checksum.h"
#include "dataplane/l3/ipv4.h"
#include "dataplane/l3/mac.h"

namespace iwarp::dataplane {
namespace {

constexpr uint8_t kProtoIcmp = kIpProtoIcmp;
constexpr uint8_t kProtoTcp = kIpProtoTcp;
constexpr uint8_t kProtoUdp = kIpProtoUdp;
// L4 header fields this stage reads or rewrites.
constexpr size_t kL4SrcPortOffset = 0;      // TCP and UDP
constexpr size_t kL4DstPortOffset = 2;      // TCP and UDP
constexpr size_t kTcpDataOffsetOffset = 12;  // RFC 9293 3.1, high nibble
constexpr size_t kTcpChecksumOffset = 16;   // RFC 9293 3.1
constexpr size_t kTcpMinHeaderLen = 20;
// kUdpHeaderLen, kUdpChecksumOffset: dataplane/l3/ipv4.h (RFC 768).

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

ImpairFrameInfo ParseImpairFrame(ByteSpan frame) {
  ImpairFrameInfo info;
  if (frame.size() < kEthHeaderLen + kIpv4MinHeaderLen ||
      LoadBe16(frame.data() + kEthTypeOffset) != kEtherTypeIpv4) {
    return info;
  }
  const uint8_t* ip = frame.data() + kEthHeaderLen;
  const size_t ip_room = frame.size() - kEthHeaderLen;
  const size_t ihl = static_cast<size_t>(ip[kIpv4VersionIhlOffset] & 0x0f) * 4;
  const size_t total = LoadBe16(ip + kIpv4TotalLengthOffset);
  if ((ip[kIpv4VersionIhlOffset] >> 4) != 4 || ihl < kIpv4MinHeaderLen || total < ihl ||
      total > ip_room) {
    return info;
  }
  // RFC 791 3.1: with MF or a fragment offset the L4 header may be absent.
  if ((LoadBe16(ip + kIpv4FlagsFragOffset) & (kIpv4FlagMoreFragments | kIpv4FragOffsetMask)) != 0) {
    return info;
  }
  info.protocol = ip[kIpv4ProtocolOffset];
  info.l4_offset = kEthHeaderLen + ihl;
  const size_t l4_len = total - ihl;
  const uint8_t* l4 = ip + ihl;
  size_t header = 0;
  switch (info.protocol) {
    case kProtoTcp:
      if (l4_len < kTcpMinHeaderLen) return info;
      header = static_cast<size_t>(l4[kTcpDataOffsetOffset] >> 4) * 4;
      if (header < kTcpMinHeaderLen || header > l4_len) return info;
      info.src_port = LoadBe16(l4 + kL4SrcPortOffset);
      info.dst_port = LoadBe16(l4 + kL4DstPortOffset);
      break;
    case kProtoUdp:
      if (l4_len < kUdpHeaderLen) return info;
      header = kUdpHeaderLen;
      info.src_port = LoadBe16(l4 + kL4SrcPortOffset);
      info.dst_port = LoadBe16(l4 + kL4DstPortOffset);
      break;
    case kProtoIcmp:
      if (l4_len < kIcmpHeaderLen) return info;
      header = kIcmpHeaderLen;
      break;
    default:
      header = 0;
      break;
  }
  info.payload_offset = info.l4_offset + header;
  info.payload_len = l4_len - header;
  info.ipv4 = true;
  return info;
}

ImpairmentStage::ImpairmentStage(std::span<const config::ImpairRule> rules, uint64_t seed,
                                 LcoreStats* stats, ImpairSink* sink, size_t hold_capacity)
    : rng_(SplitMix64(seed)), stats_(stats), sink_(sink), held_(hold_capacity) {
  for (const config::ImpairRule& r : rules) rules_.push_back({r, 0});
}

uint64_t ImpairmentStage::MixSeed(uint64_t seed, uint16_t port, bool tx, uint32_t worker) {
  return SplitMix64(seed ^ SplitMix64((uint64_t{worker} << 32) | (uint64_t{port} << 1) |
                                      (tx ? 1 : 0)));
}

// xorshift64* (Vigna): small state, good enough for fault selection.
uint64_t ImpairmentStage::Next() {
  if (rng_ == 0) rng_ = 0x2545f4914f6cdd1dULL;
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return rng_ * 0x2545f4914f6cdd1dULL;
}

bool ImpairmentStage::Matches(const config::ImpairRule& r, const ImpairFrameInfo& info) const {
  if (!info.ipv4) return false;
  switch (r.protocol) {
    case config::ImpairProtocol::kAny:
      break;
    case config::ImpairProtocol::kTcp:
      if (info.protocol != kProtoTcp) return false;
      break;
    case config::ImpairProtocol::kUdp:
      if (info.protocol != kProtoUdp) return false;
      break;
    case config::ImpairProtocol::kIcmp:
      if (info.protocol != kProtoIcmp) return false;
      break;
  }
  if (r.l4_port != 0) {
    if (info.protocol != kProtoTcp && info.protocol != kProtoUdp) return false;
    if (info.src_port != r.l4_port && info.dst_port != r.l4_port) return false;
  }
  if (info.payload_len < r.min_payload) return false;
  // corrupt damages payload: a frame without any is never selected.
  if (r.action == config::ImpairAction::kCorrupt && info.payload_len == 0) return false;
  return true;
}

// Counts the match and decides; the random draw is taken on every match so
// that the sequence of decisions depends only on the seed and the matches.
bool ImpairmentStage::Selects(RuleState& s) {
  const uint64_t index = ++s.matches;
  const uint64_t draw = Next() % 1000000;
  const config::ImpairRule& r = s.rule;
  if (r.every > 1 && index % r.every != 0) return false;
  if (r.first != 0 && index < r.first) return false;
  if (r.last != 0 && index > r.last) return false;
  return draw < r.probability_ppm;
}

bool ImpairmentStage::Hold(PacketHandle pkt, uint64_t due_ms, uint64_t release_after) {
  if (held_count_ == held_.size()) return false;
  held_[held_count_++] = Held{pkt, due_ms, release_after};
  return true;
}

// Flips one bit of one payload byte. With kFixed the L4 checksum is updated
// for the 16-bit word that changed (RFC 1624 3, eqn. 3); words are aligned to
// the L4 header start, which is what the checksum sums over (the pseudo
// header is 12 bytes, an even length).
bool ImpairmentStage::Corrupt(MutableByteSpan frame, const ImpairFrameInfo& info,
                              config::CorruptChecksum mode) {
  if (info.payload_len == 0) return false;
  const uint64_t r = Next();
  const size_t at = info.payload_offset + static_cast<size_t>(r % info.payload_len);
  const uint8_t mask = static_cast<uint8_t>(1u << ((r >> 32) % 8));
  const size_t word = info.l4_offset + ((at - info.l4_offset) & ~size_t{1});
  // The last byte of an odd-length payload pairs with an implicit zero.
  const bool has_pair = word + 1 < info.payload_offset + info.payload_len;
  const uint16_t old_word = static_cast<uint16_t>(
      (uint16_t{frame[word]} << 8) | (has_pair ? frame[word + 1] : 0));
  frame[at] ^= mask;
  if (mode == config::CorruptChecksum::kStale) {
    stats_->impair_corrupted_stale.Add();
    return true;
  }
  const uint16_t new_word = static_cast<uint16_t>(
      (uint16_t{frame[word]} << 8) | (has_pair ? frame[word + 1] : 0));
  size_t csum_at = 0;
  switch (info.protocol) {
    case kProtoTcp:
      csum_at = info.l4_offset + kTcpChecksumOffset;
      break;
    case kProtoUdp:
      csum_at = info.l4_offset + kUdpChecksumOffset;
      break;
    case kProtoIcmp:
      csum_at = info.l4_offset + kIcmpChecksumOffset;
      break;
    default:
      // No L4 checksum this stage knows: the damage goes through unseen.
      stats_->impair_corrupted_fixed.Add();
      return true;
  }
  const uint16_t old_sum = LoadBe16(frame.data() + csum_at);
  if (info.protocol == kProtoUdp && old_sum == 0) {
    // RFC 768: no checksum was computed; nothing to fix.
    stats_->impair_corrupted_fixed.Add();
    return true;
  }
  uint16_t new_sum = ChecksumAdjust(old_sum, old_word, new_word);
  if (info.protocol == kProtoUdp && new_sum == 0) new_sum = 0xffff;  // RFC 768
  StoreBe16(frame.data() + csum_at, new_sum);
  stats_->impair_corrupted_fixed.Add();
  return true;
}

void ImpairmentStage::Process(PacketHandle pkt, MutableByteSpan frame, uint64_t now_ms) {
  ++frames_seen_;
  if (!rules_.empty()) {
    const ImpairFrameInfo info = ParseImpairFrame(frame);
    for (RuleState& s : rules_) {
      if (!Matches(s.rule, info)) continue;
      stats_->impair_matched.Add();
      if (!Selects(s)) continue;
      switch (s.rule.action) {
        case config::ImpairAction::kDrop:
          stats_->Drop(DropReason::kImpairDrop);
          sink_->Release(pkt);
          return;
        case config::ImpairAction::kDuplicate: {
          PacketHandle copy = sink_->Copy(pkt);
          sink_->Forward(pkt);
          if (copy == nullptr) {
            stats_->impair_skipped.Add();
          } else {
            stats_->impair_duplicated.Add();
            sink_->Forward(copy);
          }
          return;
        }
        case config::ImpairAction::kReorder:
          if (Hold(pkt, now_ms + kReorderMaxHoldMs, frames_seen_ + s.rule.reorder_gap)) {
            stats_->impair_reordered.Add();
            return;
          }
          stats_->impair_skipped.Add();
          break;
        case config::ImpairAction::kDelay:
          if (Hold(pkt, now_ms + s.rule.delay_ms, 0)) {
            stats_->impair_delayed.Add();
            return;
          }
          stats_->impair_skipped.Add();
          break;
        case config::ImpairAction::kCorrupt:
          if (!Corrupt(frame, info, s.rule.corrupt_checksum)) stats_->impair_skipped.Add();
          break;
      }
      break;  // the first selecting rule decides
    }
  }
  sink_->Forward(pkt);
  // A reorder hold ends once enough later frames went past it.
  if (held_count_ != 0) Poll(now_ms);
}

void ImpairmentStage::Poll(uint64_t now_ms) {
  size_t kept = 0;
  for (size_t i = 0; i < held_count_; ++i) {
    const Held& h = held_[i];
    const bool due = now_ms >= h.due_ms || (h.release_after != 0 && frames_seen_ >= h.release_after);
    if (due) {
      sink_->Forward(h.pkt);
    } else {
      held_[kept++] = h;
    }
  }
  held_count_ = kept;
}

void ImpairmentStage::ReleaseAll() {
  for (size_t i = 0; i < held_count_; ++i) sink_->Forward(held_[i].pkt);
  held_count_ = 0;
}

}  // namespace iwarp::dataplane
