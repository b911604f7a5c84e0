// Port bring-up and tear-down on ethdev.
//
// Contract: the control thread (main lcore) sets ports up before any worker
// starts and closes them after every worker stopped; in between a
// PortRuntime is immutable and read by workers and the telemetry thread.
#ifndef IWARPD_DATAPLANE_PORT_H_
#define IWARPD_DATAPLANE_PORT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "dataplane/l3/mac.h"
#include "dataplane/l3/stack.h"

struct rte_mempool;

namespace iwarp::dataplane {

// How flows of a port reach the worker that owns them.
enum class Steering : uint8_t {
  kSingleWorker,  // one worker: it owns everything
  kRss,           // the NIC hashes the 4-tuple (kRssKey) to RX queues
  kSoftware,      // the receiving worker hashes and forwards through a ring
};
const char* SteeringName(Steering s);

struct PortRuntime {
  std::string name;    // operator's name from the config
  std::string ethdev;  // DPDK device name
  std::string driver;
  uint16_t port_id = 0;
  int socket = 0;
  MacAddr mac;
  uint32_t mtu = 0;
  uint32_t data_room = 0;  // bytes per mbuf of `pool`, headroom included
  uint16_t nb_rxq = 0;
  uint16_t nb_txq = 0;
  uint16_t nb_rxd = 0;
  uint16_t nb_txd = 0;
  Steering steering = Steering::kSingleWorker;
  // TCP segmentation offload (ports[].tso): the device takes TSO frames
  // (RTE_ETH_TX_OFFLOAD_TCP_TSO with TCP checksum offload and mbuf chains).
  bool tso = false;
  // The device fills the IPv4 header checksum of TSO frames itself; without
  // it the header checksum is computed in software once per frame.
  bool tx_ip_checksum = false;
  // TSO frames carry their payload by reference: mbufs attached (external
  // buffers) to the TCP send buffers, which then live in DPDK memory
  // (Worker::SendMemory), instead of a copy. Only for devices that read
  // mbuf data through its virtual address from memory they map.
  bool tx_by_reference = false;
  // ports[].tso is not off: the device's receive flags (TCP checksum
  // verdict, coalesced frames) are believed (RxOffload); RX TCP checksum
  // offload is enabled where the device offers it.
  bool rx_offload_flags = false;
  rte_mempool* pool = nullptr;  // owned; freed by ClosePort
  std::vector<InterfaceAddress> addrs;
  uint32_t gateway = 0;
  bool started = false;
};

// Finds the ethdev of config port `index`, creates its mempool on the port's
// NUMA socket, configures queues (one per worker unless configured; every
// worker needs its own TX queue), RSS where the device offers it, MTU and
// descriptors, then starts it. On error everything it created is released.
absl::StatusOr<PortRuntime> SetupPort(const config::Config& cfg, size_t index);

// Stops and closes the device and frees its mempool. Only after all workers
// stopped.
void ClosePort(PortRuntime* port);

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_PORT_H_
