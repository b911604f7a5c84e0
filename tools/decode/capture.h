// Reading and writing packet captures for iwarp-decode and the wire tests.
//
// Reading: pcap and pcapng files through libpcap (Ethernet, Linux cooked and
// raw-IPv4 link types), parsed down to IPv4 + TCP or SCTP with every length
// checked. Writing: classic pcap with Ethernet framing and correct IPv4, TCP
// and SCTP checksums, so that captures synthesised from the project's encoders
// are indistinguishable from real ones to tshark.
#ifndef IWARPD_TOOLS_DECODE_CAPTURE_H_
#define IWARPD_TOOLS_DECODE_CAPTURE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/bytes.h"

namespace iwarp::decode {

inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoSctp = 132;

// TCP flag bits (RFC 9293 3.1).
inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpPsh = 0x08;
inline constexpr uint8_t kTcpAck = 0x10;

struct Endpoint {
  uint32_t ip = 0;  // host byte order
  uint16_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

// One IPv4 packet carrying TCP or SCTP. `payload` points into the reader's
// buffer and is valid only during the callback.
struct L4Packet {
  uint64_t frame = 0;  // 1-based position in the capture
  double time = 0;     // seconds since the epoch
  uint8_t protocol = 0;
  Endpoint src, dst;
  // TCP only.
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t tcp_flags = 0;
  // SCTP only: verification tag from the common header.
  uint32_t sctp_vtag = 0;
  // TCP: segment payload. SCTP: the chunks after the 12-byte common header.
  ByteSpan payload;
};

enum class FrameResult {
  kOk,
  kNotIpv4,       // other EtherType / IP version: skipped silently
  kNotTcpOrSctp,  // other IP protocol: skipped silently
  kFragment,      // IPv4 fragment: reported, not reassembled
  kTruncated,     // a header or length runs past the captured bytes
  kBadHeader,     // IHL or data offset out of range
};

// Parses one captured frame of the given libpcap link type.
FrameResult ParseFrame(int linktype, ByteSpan frame, L4Packet* out);

// Reads every packet of a pcap/pcapng file and calls `on_packet` for each
// IPv4 TCP/SCTP packet; `on_bad` (may be empty) for frames that are truncated
// or malformed. Returns an error if the file cannot be opened or read.
absl::Status ReadCapture(const std::string& path,
                         const std::function<void(const L4Packet&)>& on_packet,
                         const std::function<void(uint64_t frame, FrameResult)>& on_bad);

// Writes a classic pcap file (LINKTYPE_ETHERNET) of synthetic IPv4 traffic.
class CaptureWriter {
 public:
  CaptureWriter() = default;
  ~CaptureWriter();
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  absl::Status Open(const std::string& path);
  absl::Status Close();

  // A TCP segment from `src` to `dst`; the TCP checksum is computed.
  void Tcp(const Endpoint& src, const Endpoint& dst, uint32_t seq, uint32_t ack,
           uint8_t flags, ByteSpan payload, uint16_t window = 65535);
  // An SCTP packet: common header (checksum computed with CRC32c, RFC 9260
  // Appendix A) followed by `chunks` (already padded by the caller).
  void Sctp(const Endpoint& src, const Endpoint& dst, uint32_t vtag, ByteSpan chunks);

  uint64_t frames() const { return frames_; }

 private:
  void Emit(const Endpoint& src, const Endpoint& dst, uint8_t proto, ByteSpan l4);

  void* pcap_ = nullptr;    // pcap_t*
  void* dumper_ = nullptr;  // pcap_dumper_t*
  uint64_t frames_ = 0;
  uint16_t ip_id_ = 1;
  double clock_ = 1.7e9;
  std::vector<uint8_t> frame_;
};

std::string FormatEndpoint(const Endpoint& e);

}  // namespace iwarp::decode

#endif  // IWARPD_TOOLS_DECODE_CAPTURE_H_
