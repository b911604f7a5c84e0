// Flow hashing for worker ownership of IPv4 TCP/UDP flows.
//
// A flow (connection) belongs to exactly one worker. Where the NIC supports
// RSS, it computes a Toeplitz hash over the 4-tuple and its redirection table
// picks the RX queue, hence the worker. Where it does not, the worker that
// received the frame computes a Toeplitz hash in software (ToeplitzHash with
// kRssKey) and hands the frame to the owner (OwnerOfHash).
//
// kRssKey and reta[i] = i % queues are what the port set-up asks of an RSS
// device, not what every device does: one that reports no 40-byte key keeps
// its own, and a table size or queue count the rule does not describe sends
// flows elsewhere. Where a worker must predict the device (choosing the
// source port of an active open so the answers come back to it), it reads
// the device's key and table back (Worker::ReadRss) and hashes with those
// (FlowHash's rss_key); OwnerOfHash is the rule only for software steering
// and for devices that match it. No DPDK.
#ifndef IWARPD_DATAPLANE_L3_FLOW_HASH_H_
#define IWARPD_DATAPLANE_L3_FLOW_HASH_H_

#include <array>
#include <cstdint>
#include <span>

#include "common/bytes.h"

namespace iwarp::dataplane {

inline constexpr size_t kRssKeyLen = 40;

// The RSS key programmed into every port that takes a 40-byte key, and used
// by software steering. The repeated 0x6d5a pattern makes the hash symmetric
// (both directions of a flow hash alike).
extern const std::array<uint8_t, kRssKeyLen> kRssKey;

// Redirection table size used for ownership (entries i -> queue i % n).
inline constexpr uint32_t kRetaSize = 128;

// IPv4 4-tuple, host byte order.
struct FlowKey {
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
};

// Extracts the 4-tuple of an Ethernet frame carrying an unfragmented IPv4
// TCP or UDP datagram with room for the ports. Returns false for any other
// frame (including malformed ones: those are left to the full parser, which
// counts them). Does not verify checksums.
bool ExtractFlowKey(ByteSpan frame, FlowKey* key);

// Toeplitz hash of `input` under `key` (the Microsoft RSS definition). `key`
// must be at least input.size() + 4 bytes long.
uint32_t ToeplitzHash(std::span<const uint8_t> key, ByteSpan input);

// RSS hash of a flow: Toeplitz over src ip, dst ip, src port, dst port in
// network byte order (the NIC's RTE_ETH_RSS_NONFRAG_IPV4_TCP/UDP input).
uint32_t FlowHash(const FlowKey& key,
                  std::span<const uint8_t> rss_key = kRssKey);

// The owner among `n` (>= 1) workers of a flow with hash `hash`: the RETA rule
// reta[hash % kRetaSize] with reta[i] = i % n.
inline uint32_t OwnerOfHash(uint32_t hash, uint32_t n) {
  return (hash % kRetaSize) % n;
}

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_L3_FLOW_HASH_H_
