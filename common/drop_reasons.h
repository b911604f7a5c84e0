// The one table of named drop reasons (house style rule 10).
//
// Every packet the data plane discards is counted under exactly one of these
// names, per worker lcore. Each layer adds its reasons to its own block; the
// names are what `iwarpctl stats` and the telemetry show, so they are stable
// operator-facing identifiers: rename with care.
#ifndef IWARPD_COMMON_DROP_REASONS_H_
#define IWARPD_COMMON_DROP_REASONS_H_

#include <cstdint>
#include <string_view>

namespace iwarp {

// X(enum_name, "wire_name", "description")
#define IWARP_DROP_REASONS(X)                                                   \
  X(kNone, "none", "not dropped")                                               \
  /* Ethernet */                                                                \
  X(kEthTruncated, "eth_truncated", "frame shorter than an Ethernet header")    \
  X(kEthNotForUs, "eth_not_for_us", "destination MAC neither ours nor broadcast") \
  X(kEthUnknownType, "eth_unknown_ethertype", "EtherType not ARP or IPv4")      \
  X(kEthBadSource, "eth_bad_source", "source MAC is a group (multicast) address") \
  /* ARP */                                                                     \
  X(kArpTruncated, "arp_truncated", "ARP packet shorter than 28 bytes")         \
  X(kArpUnsupported, "arp_unsupported", "ARP hardware/protocol type not Ethernet/IPv4") \
  X(kArpNotForUs, "arp_not_for_us", "ARP target address is not ours")           \
  X(kArpBadOpcode, "arp_bad_opcode", "ARP opcode neither request nor reply")    \
  X(kArpBadSender, "arp_bad_sender", "ARP sender MAC multicast/zero or sender IP ours/invalid") \
  X(kArpPendingOverflow, "arp_pending_overflow", "queue waiting for ARP resolution is full") \
  X(kArpUnresolved, "arp_unresolved", "ARP resolution timed out for a queued packet") \
  /* IPv4 */                                                                    \
  X(kIpv4Truncated, "ipv4_truncated", "IPv4 header or total length beyond frame") \
  X(kIpv4BadVersion, "ipv4_bad_version", "IP version is not 4")                 \
  X(kIpv4BadHeaderLength, "ipv4_bad_ihl", "IHL below 5 or beyond total length") \
  X(kIpv4BadChecksum, "ipv4_bad_checksum", "IPv4 header checksum mismatch")     \
  X(kIpv4Fragment, "ipv4_fragment", "IPv4 fragment (reassembly not supported)") \
  X(kIpv4NotForUs, "ipv4_not_for_us", "destination address is not ours")       \
  X(kIpv4BadSource, "ipv4_bad_source", "source address ours, zero, loopback or multicast") \
  X(kIpv4NoRoute, "ipv4_no_route", "no interface or gateway for the destination") \
  X(kIpv4TtlExpired, "ipv4_ttl_expired", "TTL zero on arrival")                 \
  X(kIpv4UnknownProtocol, "ipv4_unknown_protocol", "no handler for IP protocol") \
  X(kIpv4OverMtu, "ipv4_over_mtu", "datagram longer than the port MTU and not coalesced by the device") \
  /* ICMP */                                                                    \
  X(kIcmpTruncated, "icmp_truncated", "ICMP message shorter than its header")   \
  X(kIcmpBadChecksum, "icmp_bad_checksum", "ICMP checksum mismatch")            \
  X(kIcmpUnhandledType, "icmp_unhandled_type", "ICMP type other than echo request") \
  /* UDP (only the echo service of udp_echo: is served) */                      \
  X(kUdpTruncated, "udp_truncated", "UDP header or length beyond the datagram")   \
  X(kUdpBadChecksum, "udp_bad_checksum", "UDP checksum mismatch")               \
  X(kUdpNoService, "udp_no_service", "UDP to a port nothing serves")            \
  /* Transmit side */                                                           \
  X(kTxRingFull, "tx_ring_full", "transmit queue full, packet not sent")        \
  X(kNoMbuf, "no_mbuf", "mbuf pool exhausted")                                  \
  X(kSteerRingFull, "steer_ring_full", "ring to the owning worker was full")    \
  /* Receive side */                                                            \
  X(kRxMultiSegment, "rx_multi_segment", "chained mbuf received (scattered RX not supported)") \
  /* TCP (tcp_lite) */                                                          \
  X(kTcpMalformed, "tcp_malformed", "TCP header truncated or data offset invalid") \
  X(kTcpBadChecksum, "tcp_bad_checksum", "TCP checksum mismatch")               \
  X(kTcpBadOptions, "tcp_bad_options", "TCP option list malformed")             \
  X(kTcpNotForUs, "tcp_not_for_us", "destination address not owned by this TCP stack") \
  X(kTcpBadPort, "tcp_bad_port", "source or destination port zero")             \
  X(kTcpNoConnection, "tcp_no_connection", "no connection or listener (RST sent unless RST)") \
  X(kTcpSynBacklogFull, "tcp_syn_backlog_full", "SYN dropped: backlog full and SYN cookies off") \
  X(kTcpTableFull, "tcp_table_full", "no connection slot for a new connection") \
  X(kTcpBadSynCookie, "tcp_bad_syn_cookie", "ACK to a listener with an invalid or expired SYN cookie") \
  X(kTcpListenBadFlags, "tcp_listen_bad_flags", "segment to a listener neither SYN nor cookie ACK") \
  X(kTcpSynSentBadAck, "tcp_syn_sent_bad_ack", "SYN-SENT: unacceptable ACK (RST sent) or no SYN") \
  X(kTcpOutOfWindow, "tcp_out_of_window", "sequence number not acceptable (ACK sent)") \
  X(kTcpPaws, "tcp_paws", "RFC 7323 5: timestamp older than TS.Recent (ACK sent)") \
  X(kTcpRstOutOfWindow, "tcp_rst_out_of_window", "RST outside the receive window") \
  X(kTcpRstChallenged, "tcp_rst_challenged", "RFC 5961 3: in-window RST not at RCV.NXT") \
  X(kTcpSynChallenged, "tcp_syn_challenged", "RFC 5961 4: SYN in a synchronized state") \
  X(kTcpNoAck, "tcp_no_ack", "segment without ACK in a synchronized state")    \
  X(kTcpAckInvalid, "tcp_ack_invalid", "RFC 5961 5: ACK outside [SND.UNA - MAX.SND.WND, SND.NXT]") \
  X(kTcpDuplicateData, "tcp_duplicate_data", "data already received (D-SACK sent)") \
  X(kTcpBeyondFin, "tcp_beyond_fin", "data after the peer's FIN")               \
  X(kTcpReasmFull, "tcp_reasm_full", "out-of-order data beyond the reassembly capacity") \
  X(kTcpDataAfterClose, "tcp_data_after_close", "data for a receive side already closed") \
  X(kTcpTimeWait, "tcp_time_wait", "segment to a TIME_WAIT connection (ACK sent if needed)") \
  X(kTcpTimeWaitOldSyn, "tcp_time_wait_old_syn", "RFC 6191: SYN to a TIME_WAIT connection not of a new incarnation") \
  X(kTcpTxNoBuffer, "tcp_tx_no_buffer", "data plane had no buffer for a segment") \
  /* Impairment stage */                                                        \
  X(kImpairDrop, "impair_drop", "dropped by a configured impairment rule")

enum class DropReason : uint16_t {
#define IWARP_DROP_ENUM(name, wire, desc) name,
  IWARP_DROP_REASONS(IWARP_DROP_ENUM)
#undef IWARP_DROP_ENUM
      kCount
};

inline constexpr size_t kNumDropReasons = static_cast<size_t>(DropReason::kCount);

inline std::string_view DropReasonName(DropReason r) {
  constexpr std::string_view kNames[] = {
#define IWARP_DROP_NAME(name, wire, desc) wire,
      IWARP_DROP_REASONS(IWARP_DROP_NAME)
#undef IWARP_DROP_NAME
  };
  auto i = static_cast<size_t>(r);
  return i < kNumDropReasons ? kNames[i] : std::string_view("invalid");
}

inline std::string_view DropReasonDescription(DropReason r) {
  constexpr std::string_view kDescs[] = {
#define IWARP_DROP_DESC(name, wire, desc) desc,
      IWARP_DROP_REASONS(IWARP_DROP_DESC)
#undef IWARP_DROP_DESC
  };
  auto i = static_cast<size_t>(r);
  return i < kNumDropReasons ? kDescs[i] : std::string_view("invalid");
}

}  // namespace iwarp

#endif  // IWARPD_COMMON_DROP_REASONS_H_
