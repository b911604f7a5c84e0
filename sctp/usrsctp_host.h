// UsrsctpHost: the one usrsctp stack of a process, run in AF_CONN mode from
// the owner's poll loop (ARCHITECTURE.md, SCTP row).
//
// usrsctp keeps one global stack per process, so at most one UsrsctpHost
// exists at a time; Create() refuses a second one. Every call into it, and
// into any socket of the stack, must come from the one thread that owns the
// host (the SCTP lcore); usrsctp_init_nothreads still starts one internal
// iterator thread, which never calls back into this code.
//
// Packets are plain SCTP packets (common header + chunks, no IP header),
// exchanged as byte spans:
//   - outbound: usrsctp calls the conn_output hook synchronously inside
//     usrsctp_sendv / usrsctp_conninput / usrsctp_handle_timers. The hook only
//     copies the packet into a bounded, preallocated queue and fills in the
//     CRC32c (ISA-L, common/crc32c.h); the owner drains the queue with
//     DrainOutbound() from its loop, never from inside a callback.
//   - inbound: Input() verifies the CRC32c itself (usrsctp runs with the
//     checksum offloaded) and hands good packets to usrsctp_conninput.
// Poll() advances usrsctp's timers by the elapsed milliseconds.
//
// An AF_CONN "address" is an opaque cookie (a pointer-sized value the owner
// chooses, one per link it attaches). RegisterConn() must be called for a
// cookie before sockets bind to it; conn_output reports the local cookie of
// the association that sends, so the owner knows which link to use.
#ifndef IWARPD_SCTP_USRSCTP_HOST_H_
#define IWARPD_SCTP_USRSCTP_HOST_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/bytes.h"

namespace iwarp::sctp {

// X(enum_name, "wire_name", "description")
#define IWARP_SCTP_HOST_COUNTERS(X)                                                        \
  X(kRxPackets, "sctp_rx_packets", "SCTP packets handed to usrsctp")                        \
  X(kRxBadCrc, "sctp_rx_bad_crc", "drop: SCTP CRC32c mismatch (RFC 9260 6.8)")              \
  X(kRxTruncated, "sctp_rx_truncated", "drop: shorter than the 12-byte SCTP common header") \
  X(kRxOversize, "sctp_rx_oversize", "drop: longer than the configured maximum packet")     \
  X(kTxPackets, "sctp_tx_packets", "SCTP packets queued for the owner to send")             \
  X(kTxQueueFull, "sctp_tx_queue_full", "drop: outbound queue full when usrsctp sent")      \
  X(kTxOversize, "sctp_tx_oversize", "drop: usrsctp produced a packet above the slot size") \
  X(kTimerTicks, "sctp_timer_polls", "usrsctp_handle_timers calls")                         \
  /* usrsctp's own statistics (usrsctp_get_stat), refreshed by SyncStackStats */            \
  X(kStackRetransData, "sctp_stack_retransmitted_chunks", "DATA chunks usrsctp retransmitted") \
  X(kStackT3Timeouts, "sctp_stack_t3_timeouts", "usrsctp T3-rtx (data) timer expiries")     \
  X(kStackDupData, "sctp_stack_dup_data_in", "duplicate DATA chunks usrsctp received")       \
  X(kStackSendErrors, "sctp_stack_send_errors", "usrsctp output errors (conn_output failed)") \
  X(kStackBadVtag, "sctp_stack_bad_vtag", "drop: verification tag not the association's (RFC 9260 8.5)") \
  X(kStackHeaderDrops, "sctp_stack_header_drops", "drop: chunk headers cut short or longer than the packet") \
  X(kStackOutOfTheBlue, "sctp_stack_out_of_the_blue", "packets for no association (RFC 9260 8.4)") \
  X(kStackAborted, "sctp_stack_aborted", "associations that ended with an ABORT") \
  X(kStackPassiveEstab, "sctp_stack_passive_established", "associations a peer opened (COOKIE ECHO accepted)") \
  X(kStackControlChunksIn, "sctp_stack_control_chunks_in", "control chunks usrsctp received") \
  X(kStackControlChunksOut, "sctp_stack_control_chunks_out", "control chunks usrsctp sent")

enum class HostCounter : uint8_t {
#define IWARP_SCTP_X(e, n, d) e,
  IWARP_SCTP_HOST_COUNTERS(IWARP_SCTP_X)
#undef IWARP_SCTP_X
      kCount
};
std::string_view HostCounterName(HostCounter c);

struct HostConfig {
  // Largest SCTP packet (common header + chunks) the link carries: the IP
  // path MTU less the IP header. Sizes the outbound queue slots.
  uint32_t max_packet = 1480;
  // Outbound queue depth in packets (preallocated at Create()).
  uint32_t tx_queue_packets = 1024;
  // usrsctp's limit on DATA chunks queued and unacknowledged per
  // association (sysctl sctp_max_chunks_on_queue); it also bounds how far
  // ahead of the next expected DDP-SSN a legal sender can be (RFC 5043 10).
  uint32_t max_chunks_on_queue = 512;
};

// Where DrainOutbound() delivers packets: `conn` is the local AF_CONN cookie
// of the sending association. The span is valid only during the call.
class PacketSink {
 public:
  virtual ~PacketSink() = default;
  virtual void Transmit(void* conn, ByteSpan packet) = 0;
};

class UsrsctpHost {
 public:
  // Initialises usrsctp (usrsctp_init_nothreads, CRC32c offload). Fails with
  // FailedPrecondition if a host already exists in this process.
  static absl::StatusOr<std::unique_ptr<UsrsctpHost>> Create(const HostConfig& config);
  // The live host, or nullptr.
  static UsrsctpHost* Current();

  // Tears usrsctp down (usrsctp_finish, retried until every socket is gone).
  // All sockets must have been closed by their owners first.
  ~UsrsctpHost();
  UsrsctpHost(const UsrsctpHost&) = delete;
  UsrsctpHost& operator=(const UsrsctpHost&) = delete;

  // Registers / deregisters an AF_CONN address cookie (control path).
  void RegisterConn(void* conn);
  void DeregisterConn(void* conn);

  // One received SCTP packet for the local address `conn`. Verifies the
  // CRC32c and feeds usrsctp; never keeps a reference to `packet`.
  void Input(void* conn, ByteSpan packet);

  // Advances usrsctp's timers to `now_ms`, a monotonic millisecond clock
  // that must follow real time: usrsctp measures RTTs and picks the chunks
  // a T3 timeout retransmits by the wall clock (sctp_mark_all_for_resend).
  // The first call only records the origin.
  void Poll(uint64_t now_ms);

  // Hands up to `max` queued packets to `sink`, oldest first; returns how
  // many. Must not be called from inside a usrsctp callback.
  size_t DrainOutbound(PacketSink& sink, size_t max = SIZE_MAX);
  size_t outbound_pending() const { return tx_count_; }

  uint64_t counter(HostCounter c) const { return counters_[static_cast<size_t>(c)]; }
  // Copies usrsctp's stack-wide statistics into the kStack* counters (a
  // struct copy; call from the owning thread when counters are read).
  void SyncStackStats();
  const HostConfig& config() const { return config_; }

 private:
  explicit UsrsctpHost(const HostConfig& config);
  static int ConnOutput(void* addr, void* buffer, size_t length, uint8_t tos, uint8_t set_df);
  void Enqueue(void* conn, const uint8_t* data, size_t length);
  void Count(HostCounter c) { ++counters_[static_cast<size_t>(c)]; }

  struct Slot {
    void* conn = nullptr;
    uint32_t length = 0;
  };

  HostConfig config_;
  std::vector<uint8_t> tx_bytes_;  // tx_queue_packets * max_packet
  std::vector<Slot> tx_slots_;
  size_t tx_head_ = 0;   // oldest queued slot
  size_t tx_count_ = 0;  // queued slots
  bool have_last_poll_ = false;
  uint64_t last_poll_ms_ = 0;
  std::array<uint64_t, static_cast<size_t>(HostCounter::kCount)> counters_{};
};

// SCTP common header (RFC 9260 3.1) field offsets.
inline constexpr size_t kSctpChecksumOffset = 8;
inline constexpr size_t kSctpHeaderSize = 12;

// CRC32c of an SCTP packet as RFC 9260 6.8 defines it (checksum field taken
// as zero), and whether the packet's own checksum field matches it.
uint32_t SctpPacketCrc(ByteSpan packet);
bool SctpCrcValid(ByteSpan packet);
// Writes the CRC32c into the packet's checksum field (wire byte order of
// RFC 9260 appendix B, the same as iSCSI and MPA).
void SctpFillCrc(MutableByteSpan packet);

}  // namespace iwarp::sctp

#endif  // IWARPD_SCTP_USRSCTP_HOST_H_
