// Frame-size limits of a port, checked at start-up (DPDK-free, so the rules
// are unit-tested without an EAL; port.cc fills DeviceFrameLimits from
// rte_eth_dev_info).
//
// Contract: called on the control thread while a port is set up; every
// refusal is an absl::Status whose message names the port, the device's
// limit and the fix, so an operator never has to read an ethdev log line.
#ifndef IWARPD_DATAPLANE_PORT_LIMITS_H_
#define IWARPD_DATAPLANE_PORT_LIMITS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace iwarp::dataplane {

// Ethernet header (14) + FCS (4): what ethdev adds to an MTU when a device
// reports no overhead of its own.
inline constexpr uint32_t kDefaultL2Overhead = 18;
// Ethernet header without FCS: the bytes of a received frame an mbuf holds
// beyond the IP packet when the device strips the FCS.
inline constexpr uint32_t kEthernetHeaderLen = 14;
inline constexpr uint32_t kUnlimitedMtu = 0xffff;  // dev_info.max_mtu "not reported"

// What a device reports about frame sizes (rte_eth_dev_info).
struct DeviceFrameLimits {
  uint32_t min_mtu = 0;
  uint32_t max_mtu = kUnlimitedMtu;
  uint32_t max_rx_pktlen = 0;  // largest frame, L2 header and FCS included
};

// The L2 overhead ethdev adds to an MTU to get a frame length (the same rule
// ethdev applies in rte_eth_dev_configure): max_rx_pktlen - max_mtu when the
// device reports both, otherwise Ethernet header + FCS.
uint32_t L2Overhead(const DeviceFrameLimits& dev);

// The largest MTU the device carries: max_mtu capped by max_rx_pktlen.
uint32_t DeviceMaxMtu(const DeviceFrameLimits& dev);

// The ring size of a net_virtio_user device: its queue_size devarg in
// `vdev` ("net_virtio_user0,path=...,queue_size=1024"), 256 (the driver's
// default) without one or with one that is not a number of at least 8.
uint32_t VirtioUserQueueSize(std::string_view vdev);

// OK when a port of driver `driver` can carry `mtu`; otherwise
// InvalidArgument, e.g. "port 'm0' (net_memif): mtu 9000 needs 9018-byte
// frames but net_memif accepts at most 1518 (mtu 1500); lower ports[].mtu to
// 1500 or use a device that carries jumbo frames (...)".
absl::Status CheckPortMtu(const std::string& port, const std::string& driver, uint32_t mtu,
                          const DeviceFrameLimits& dev);

// Bytes per mbuf (headroom included) so that one received frame of `mtu`
// fits one mbuf (no scattered RX): the configured data room, raised to
// headroom + MTU + the device's L2 overhead when that is larger. Never above
// 65535 (the mbuf's 16-bit buf_len); the config caps mtu at 9600, so a raise
// never reaches it.
uint32_t MbufDataRoomFor(uint32_t mtu, uint32_t l2_overhead, uint32_t headroom,
                         uint32_t configured_data_room);

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_PORT_LIMITS_H_
