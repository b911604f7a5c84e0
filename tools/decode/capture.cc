#include "tools/decode/capture.h"

#include <pcap/pcap.h>

#include <array>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checksum.h"
#include "common/crc32c.h"

namespace iwarp::decode {
namespace {

constexpr int kLinktypeEthernet = 1;
constexpr int kLinktypeRaw = 101;       // LINKTYPE_RAW (raw IPv4/IPv6)
constexpr int kLinktypeLinuxSll = 113;  // LINKTYPE_LINUX_SLL
constexpr int kLinktypeIpv4 = 228;      // LINKTYPE_IPV4

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeVlan = 0x8100;
constexpr size_t kEthHeaderLen = 14;
constexpr size_t kSllHeaderLen = 16;
constexpr size_t kIpv4MinHeaderLen = 20;
constexpr size_t kTcpMinHeaderLen = 20;
constexpr size_t kSctpCommonHeaderLen = 12;

// Finds the IPv4 header inside a link-layer frame.
FrameResult LocateIpv4(int linktype, ByteSpan frame, ByteSpan* ip) {
  switch (linktype) {
    case kLinktypeEthernet: {
      if (frame.size() < kEthHeaderLen) return FrameResult::kTruncated;
      size_t off = 12;
      uint16_t type = LoadBe16(frame.data() + off);
      // One or more 802.1Q tags.
      while (type == kEtherTypeVlan) {
        off += 4;
        if (frame.size() < off + 2) return FrameResult::kTruncated;
        type = LoadBe16(frame.data() + off);
      }
      if (type != kEtherTypeIpv4) return FrameResult::kNotIpv4;
      *ip = frame.subspan(off + 2);
      return FrameResult::kOk;
    }
    case kLinktypeLinuxSll:
      if (frame.size() < kSllHeaderLen) return FrameResult::kTruncated;
      if (LoadBe16(frame.data() + 14) != kEtherTypeIpv4) return FrameResult::kNotIpv4;
      *ip = frame.subspan(kSllHeaderLen);
      return FrameResult::kOk;
    case kLinktypeRaw:
    case kLinktypeIpv4:
    case DLT_RAW:
      *ip = frame;
      return FrameResult::kOk;
    default:
      return FrameResult::kNotIpv4;
  }
}

}  // namespace

FrameResult ParseFrame(int linktype, ByteSpan frame, L4Packet* out) {
  ByteSpan ip;
  if (FrameResult r = LocateIpv4(linktype, frame, &ip); r != FrameResult::kOk) return r;
  if (ip.empty()) return FrameResult::kTruncated;
  if ((ip[0] >> 4) != 4) return FrameResult::kNotIpv4;
  if (ip.size() < kIpv4MinHeaderLen) return FrameResult::kTruncated;
  const size_t ihl = size_t{ip[0] & 0x0fu} * 4;
  const size_t total = LoadBe16(ip.data() + 2);
  if (ihl < kIpv4MinHeaderLen || total < ihl) return FrameResult::kBadHeader;
  // A capture may hold fewer bytes than the IP length claims (snaplen).
  if (total > ip.size()) return FrameResult::kTruncated;
  const uint16_t frag = LoadBe16(ip.data() + 6);
  if ((frag & 0x2000) != 0 || (frag & 0x1fff) != 0) return FrameResult::kFragment;
  out->protocol = ip[9];
  out->src.ip = LoadBe32(ip.data() + 12);
  out->dst.ip = LoadBe32(ip.data() + 16);
  ByteSpan l4 = ip.subspan(ihl, total - ihl);

  if (out->protocol == kIpProtoTcp) {
    if (l4.size() < kTcpMinHeaderLen) return FrameResult::kTruncated;
    const size_t doff = static_cast<size_t>(l4[12] >> 4) * 4;
    if (doff < kTcpMinHeaderLen) return FrameResult::kBadHeader;
    if (doff > l4.size()) return FrameResult::kTruncated;
    out->src.port = LoadBe16(l4.data());
    out->dst.port = LoadBe16(l4.data() + 2);
    out->seq = LoadBe32(l4.data() + 4);
    out->ack = LoadBe32(l4.data() + 8);
    out->tcp_flags = l4[13];
    out->payload = l4.subspan(doff);
    return FrameResult::kOk;
  }
  if (out->protocol == kIpProtoSctp) {
    if (l4.size() < kSctpCommonHeaderLen) return FrameResult::kTruncated;
    out->src.port = LoadBe16(l4.data());
    out->dst.port = LoadBe16(l4.data() + 2);
    out->sctp_vtag = LoadBe32(l4.data() + 4);
    out->payload = l4.subspan(kSctpCommonHeaderLen);
    return FrameResult::kOk;
  }
  return FrameResult::kNotTcpOrSctp;
}

absl::Status ReadCapture(const std::string& path,
                         const std::function<void(const L4Packet&)>& on_packet,
                         const std::function<void(uint64_t, FrameResult)>& on_bad) {
  std::array<char, PCAP_ERRBUF_SIZE> err{};
  pcap_t* p = pcap_open_offline(path.c_str(), err.data());
  if (p == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", err.data()));
  }
  const int linktype = pcap_datalink(p);
  uint64_t frame = 0;
  absl::Status status;
  for (;;) {
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(p, &hdr, &data);
    if (rc == PCAP_ERROR_BREAK) break;  // end of file
    if (rc != 1) {
      status = absl::DataLossError(
          absl::StrCat(path, ": read error after frame ", frame, ": ", pcap_geterr(p)));
      break;
    }
    ++frame;
    L4Packet pkt;
    pkt.frame = frame;
    pkt.time = static_cast<double>(hdr->ts.tv_sec) + hdr->ts.tv_usec / 1e6;
    const FrameResult r = ParseFrame(linktype, ByteSpan(data, hdr->caplen), &pkt);
    switch (r) {
      case FrameResult::kOk:
        on_packet(pkt);
        break;
      case FrameResult::kNotIpv4:
      case FrameResult::kNotTcpOrSctp:
        break;
      default:
        if (on_bad) on_bad(frame, r);
    }
  }
  pcap_close(p);
  return status;
}

std::string FormatEndpoint(const Endpoint& e) {
  return absl::StrFormat("%u.%u.%u.%u:%u", e.ip >> 24, (e.ip >> 16) & 0xff,
                         (e.ip >> 8) & 0xff, e.ip & 0xff, e.port);
}

CaptureWriter::~CaptureWriter() { (void)Close(); }

absl::Status CaptureWriter::Open(const std::string& path) {
  (void)Close();
  pcap_t* p = pcap_open_dead(DLT_EN10MB, 65535);
  if (p == nullptr) return absl::InternalError("pcap_open_dead failed");
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (d == nullptr) {
    absl::Status s = absl::InvalidArgumentError(absl::StrCat(path, ": ", pcap_geterr(p)));
    pcap_close(p);
    return s;
  }
  pcap_ = p;
  dumper_ = d;
  return absl::OkStatus();
}

absl::Status CaptureWriter::Close() {
  absl::Status s;
  if (dumper_ != nullptr) {
    auto* d = static_cast<pcap_dumper_t*>(dumper_);
    if (pcap_dump_flush(d) != 0) s = absl::DataLossError("pcap flush failed");
    pcap_dump_close(d);
    dumper_ = nullptr;
  }
  if (pcap_ != nullptr) {
    pcap_close(static_cast<pcap_t*>(pcap_));
    pcap_ = nullptr;
  }
  return s;
}

void CaptureWriter::Emit(const Endpoint& src, const Endpoint& dst, uint8_t proto,
                         ByteSpan l4) {
  if (dumper_ == nullptr) return;
  const size_t ip_len = kIpv4MinHeaderLen + l4.size();
  frame_.assign(kEthHeaderLen + ip_len, 0);
  uint8_t* eth = frame_.data();
  // Locally administered MACs derived from the IPv4 addresses.
  const uint8_t dmac[6] = {0x02, 0x00, static_cast<uint8_t>(dst.ip >> 24),
                           static_cast<uint8_t>(dst.ip >> 16),
                           static_cast<uint8_t>(dst.ip >> 8), static_cast<uint8_t>(dst.ip)};
  const uint8_t smac[6] = {0x02, 0x00, static_cast<uint8_t>(src.ip >> 24),
                           static_cast<uint8_t>(src.ip >> 16),
                           static_cast<uint8_t>(src.ip >> 8), static_cast<uint8_t>(src.ip)};
  std::copy(dmac, dmac + 6, eth);
  std::copy(smac, smac + 6, eth + 6);
  StoreBe16(eth + 12, kEtherTypeIpv4);
  uint8_t* ip = eth + kEthHeaderLen;
  ip[0] = 0x45;
  StoreBe16(ip + 2, static_cast<uint16_t>(ip_len));
  StoreBe16(ip + 4, ip_id_++);
  StoreBe16(ip + 6, 0x4000);  // DF
  ip[8] = 64;
  ip[9] = proto;
  StoreBe32(ip + 12, src.ip);
  StoreBe32(ip + 16, dst.ip);
  StoreBe16(ip + 10, InternetChecksum(ByteSpan(ip, kIpv4MinHeaderLen)));
  if (!l4.empty()) std::copy(l4.begin(), l4.end(), ip + kIpv4MinHeaderLen);

  pcap_pkthdr hdr{};
  clock_ += 0.000010;
  hdr.ts.tv_sec = static_cast<time_t>(clock_);
  hdr.ts.tv_usec = static_cast<suseconds_t>((clock_ - static_cast<double>(hdr.ts.tv_sec)) * 1e6);
  hdr.caplen = hdr.len = static_cast<bpf_u_int32>(frame_.size());
  pcap_dump(static_cast<u_char*>(dumper_), &hdr, frame_.data());
  ++frames_;
}

void CaptureWriter::Tcp(const Endpoint& src, const Endpoint& dst, uint32_t seq,
                        uint32_t ack, uint8_t flags, ByteSpan payload, uint16_t window) {
  std::vector<uint8_t> seg(kTcpMinHeaderLen + payload.size());
  uint8_t* t = seg.data();
  StoreBe16(t, src.port);
  StoreBe16(t + 2, dst.port);
  StoreBe32(t + 4, seq);
  StoreBe32(t + 8, ack);
  t[12] = 5 << 4;
  t[13] = flags;
  StoreBe16(t + 14, window);
  if (!payload.empty()) std::copy(payload.begin(), payload.end(), t + kTcpMinHeaderLen);
  // Pseudo-header (RFC 9293 3.1).
  std::array<uint8_t, 12> pseudo{};
  StoreBe32(pseudo.data(), src.ip);
  StoreBe32(pseudo.data() + 4, dst.ip);
  pseudo[9] = kIpProtoTcp;
  StoreBe16(pseudo.data() + 10, static_cast<uint16_t>(seg.size()));
  StoreBe16(t + 16, ChecksumFold(ChecksumAdd(ChecksumAdd(0, pseudo), seg)));
  Emit(src, dst, kIpProtoTcp, seg);
}

void CaptureWriter::Sctp(const Endpoint& src, const Endpoint& dst, uint32_t vtag,
                         ByteSpan chunks) {
  std::vector<uint8_t> pkt(kSctpCommonHeaderLen + chunks.size());
  StoreBe16(pkt.data(), src.port);
  StoreBe16(pkt.data() + 2, dst.port);
  StoreBe32(pkt.data() + 4, vtag);
  if (!chunks.empty()) std::copy(chunks.begin(), chunks.end(), pkt.data() + kSctpCommonHeaderLen);
  // RFC 9260 6.8: CRC32c over the packet with the checksum field zero. The
  // reflected CRC register is transmitted least significant byte first.
  const uint32_t crc = Crc32c(pkt);
  pkt[8] = static_cast<uint8_t>(crc);
  pkt[9] = static_cast<uint8_t>(crc >> 8);
  pkt[10] = static_cast<uint8_t>(crc >> 16);
  pkt[11] = static_cast<uint8_t>(crc >> 24);
  Emit(src, dst, kIpProtoSctp, pkt);
}

}  // namespace iwarp::decode
