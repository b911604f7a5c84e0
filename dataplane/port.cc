#include "dataplane/port.h"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dataplane/eal_args.h"
#include "dataplane/l3/flow_hash.h"
#include "dataplane/log.h"
#include "dataplane/port_limits.h"

namespace iwarp::dataplane {

const char* SteeringName(Steering s) {
  switch (s) {
    case Steering::kSingleWorker: return "single_worker";
    case Steering::kRss: return "rss";
    case Steering::kSoftware: return "software";
  }
  return "unknown";
}

namespace {

// The hash input the software path computes (flow_hash.h): IPv4 addresses and
// TCP/UDP ports.
constexpr uint64_t kRssTypes =
    RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP;

absl::Status EthError(const PortRuntime& p, const std::string& what, int rc) {
  return absl::InternalError(absl::StrCat("port '", p.name, "' (", p.ethdev, "): ", what,
                                          " failed: ", rte_strerror(rc < 0 ? -rc : rc)));
}

absl::Status ProgramReta(const PortRuntime& p, uint16_t reta_size) {
  std::vector<rte_eth_rss_reta_entry64> reta(
      (reta_size + RTE_ETH_RETA_GROUP_SIZE - 1) / RTE_ETH_RETA_GROUP_SIZE);
  for (uint16_t i = 0; i < reta_size; ++i) {
    rte_eth_rss_reta_entry64& g = reta[i / RTE_ETH_RETA_GROUP_SIZE];
    g.mask |= uint64_t{1} << (i % RTE_ETH_RETA_GROUP_SIZE);
    g.reta[i % RTE_ETH_RETA_GROUP_SIZE] = static_cast<uint16_t>(i % p.nb_rxq);
  }
  int rc = rte_eth_dev_rss_reta_update(p.port_id, reta.data(), reta_size);
  if (rc != 0) return EthError(p, "RSS redirection table update", rc);
  return absl::OkStatus();
}

// TX TSO frames need the segmentation itself, the TCP checksum of every
// segment, and mbuf chains (the payload of the segments after the first is
// appended in further mbufs of the port's pool).
constexpr uint64_t kTsoTxOffloads =
    RTE_ETH_TX_OFFLOAD_TCP_TSO | RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_MULTI_SEGS;

// ports[].tso: TX TSO (and the IPv4 checksum with it where offered) and the
// RX TCP checksum verdict, from what the device offers.
absl::Status ChooseOffloads(const config::PortConfig& pc, const rte_eth_dev_info& info,
                            PortRuntime& p, rte_eth_conf& conf) {
  if (pc.tso == config::TsoMode::kOff) return absl::OkStatus();
  // DPDK 22.11's net_tap advertises TSO, but with it the kernel peer never
  // received the data of iwarpd's TSO frames (tests/tcp_interop.py source
  // and echo stalled): its software segmentation compares tso_segsz plus
  // the L2/L3/L4 header lengths with the IP MTU, which an MSS-sized segment
  // exceeds by the Ethernet header. Not used there.
  const bool tap = p.driver == "net_tap";
  const bool offered = !tap && (info.tx_offload_capa & kTsoTxOffloads) == kTsoTxOffloads;
  const std::string where = pc.tso_origin.text.empty() ? "" : pc.tso_origin.text + ": ";
  if (pc.tso == config::TsoMode::kOn && !offered) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "ports[].tso: port '", p.name, "' (", p.driver,
        ") does not offer TCP segmentation offload with TCP checksum offload and multi-segment "
        "frames (tx_offload_capa 0x", absl::Hex(info.tx_offload_capa),
        tap ? ", but its segmentation drops frames of MSS-sized segments in DPDK 22.11" : "",
        "); set tso: auto or off, or use a device that offers it (net_virtio_user whose "
        "net_vhost peer runs with tso=1, a NIC)"));
  }
  if (offered && !pc.impairment.tx.empty()) {
    // The TX impairment stage works on single-segment frames.
    if (pc.tso == config::TsoMode::kOn) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "ports[].tso: port '", p.name,
          "' has tx impairment rules, which act on single segments; set tso: auto or off, or "
          "remove impairment.tx"));
    }
    LogInfo("port '", p.name, "': tso not used (the port has tx impairment rules)");
  } else if (offered) {
    p.tso = true;
    conf.txmode.offloads |= kTsoTxOffloads;
    if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0) {
      p.tx_ip_checksum = true;
      conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    }
    // net_virtio_user hands the vhost-user backend each mbuf's virtual
    // address (it addresses by VA), and the backend maps all of the
    // daemon's DPDK memory: payload can stay in TCP send buffers allocated
    // there. Other devices would need IOVA-contiguous buffers.
    p.tx_by_reference = p.driver == "net_virtio_user";
  }
  p.rx_offload_flags = true;
  const bool rx_cksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM) != 0;
  if (rx_cksum) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
  LogInfo("port '", p.name, "' (", p.driver, "): tso ", p.tso ? "on" : "off",
          p.tso ? (p.tx_ip_checksum ? " (IPv4 checksum by the device)" : " (IPv4 checksum in software)") : "",
          p.tx_by_reference ? ", TSO payload read by the device from the TCP send buffers" : "",
          ", rx tcp checksum offload ", rx_cksum ? "on" : "off", " (tx capa 0x",
          absl::Hex(info.tx_offload_capa), ", rx capa 0x", absl::Hex(info.rx_offload_capa), ")");
  return absl::OkStatus();
}

absl::Status Configure(const config::Config& cfg, const config::PortConfig& pc, PortRuntime& p) {
  rte_eth_dev_info info;
  int rc = rte_eth_dev_info_get(p.port_id, &info);
  if (rc != 0) return EthError(p, "rte_eth_dev_info_get", rc);
  p.driver = info.driver_name != nullptr ? info.driver_name : "?";

  const uint16_t workers = static_cast<uint16_t>(cfg.workers.lcores.size());
  p.nb_rxq = pc.rx_queues != 0 ? pc.rx_queues : workers;
  p.nb_txq = pc.tx_queues != 0 ? pc.tx_queues : workers;
  if (p.nb_txq < workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "port '", p.name, "': tx_queues ", p.nb_txq, " is below the number of workers (",
        workers, "): each worker owns one TX queue"));
  }
  if (p.nb_rxq > info.max_rx_queues || p.nb_txq > info.max_tx_queues) {
    return absl::InvalidArgumentError(absl::StrCat(
        "port '", p.name, "' (", p.driver, "): ", p.nb_rxq, " RX / ", p.nb_txq,
        " TX queues requested, the device offers at most ", info.max_rx_queues, " / ",
        info.max_tx_queues));
  }
  // The frame a configured MTU needs (MTU + the device's L2 overhead) must be
  // one the device accepts (max_rx_pktlen and max_mtu); ethdev would refuse it
  // at rte_eth_dev_configure with a log line that names neither the port nor
  // the fix.
  const DeviceFrameLimits limits{info.min_mtu, info.max_mtu, info.max_rx_pktlen};
  if (absl::Status s = CheckPortMtu(p.name, p.driver, pc.mtu, limits); !s.ok()) return s;
  // No scattered RX (the worker reads one segment per frame): a whole frame
  // must fit one mbuf, so the data room follows the MTU.
  p.data_room = MbufDataRoomFor(pc.mtu, L2Overhead(limits), RTE_PKTMBUF_HEADROOM,
                                cfg.mempools.data_room);
  if (p.data_room != cfg.mempools.data_room) {
    LogInfo("port '", p.name, "': mbuf data room ", p.data_room, " bytes (mempools.data_room ",
            cfg.mempools.data_room, " is too small for mtu ", pc.mtu, " frames)");
  }
  p.mtu = pc.mtu;

  // Ownership of flows (flow_hash.h): RSS when the device hashes the same
  // 4-tuple with our key into several queues, otherwise the software hash and
  // a ring. net_tap advertises RSS types, but without its BPF flow rules the
  // kernel's tun flow steering picks the queue, so it is steered in software.
  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof(conf));
  conf.rxmode.mtu = pc.mtu;
  const bool device_hashes = p.driver != "net_tap";
  const bool rss = device_hashes && p.nb_rxq > 1 &&
                   (info.flow_type_rss_offloads & kRssTypes) == kRssTypes;
  if (workers == 1) {
    p.steering = Steering::kSingleWorker;
  } else {
    p.steering = rss ? Steering::kRss : Steering::kSoftware;
  }
  if (rss) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    if (info.hash_key_size == kRssKeyLen) {
      conf.rx_adv_conf.rss_conf.rss_key = const_cast<uint8_t*>(kRssKey.data());
      conf.rx_adv_conf.rss_conf.rss_key_len = kRssKeyLen;
    }
    conf.rx_adv_conf.rss_conf.rss_hf = kRssTypes;
  }
  if (absl::Status s = ChooseOffloads(pc, info, p, conf); !s.ok()) return s;
  // Workers that block when idle wake on receive interrupts (worker.h).
  if (cfg.workers.idle_block_after_us != 0) conf.intr_conf.rxq = 1;
  rc = rte_eth_dev_configure(p.port_id, p.nb_rxq, p.nb_txq, &conf);
  if (rc != 0) return EthError(p, "rte_eth_dev_configure", rc);

  p.nb_rxd = pc.rx_descriptors;
  p.nb_txd = pc.tx_descriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(p.port_id, &p.nb_rxd, &p.nb_txd);
  if (rc != 0) return EthError(p, "rte_eth_dev_adjust_nb_rx_tx_desc", rc);

  const std::string pool_name = absl::StrCat("iwarpd_mp_", p.port_id);
  p.pool = rte_pktmbuf_pool_create(pool_name.c_str(), cfg.mempools.mbufs, cfg.mempools.cache, 0,
                                   static_cast<uint16_t>(p.data_room), p.socket);
  if (p.pool == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "port '", p.name, "': mempool of ", cfg.mempools.mbufs, " mbufs of ", p.data_room,
        " bytes on socket ", p.socket,
        ": ", rte_strerror(rte_errno), " (raise eal.memory_mb or lower mempools.mbufs)"));
  }
  for (uint16_t q = 0; q < p.nb_rxq; ++q) {
    rc = rte_eth_rx_queue_setup(p.port_id, q, p.nb_rxd, static_cast<unsigned>(p.socket), nullptr,
                                p.pool);
    if (rc != 0) return EthError(p, absl::StrCat("RX queue ", q, " setup"), rc);
  }
  // Frames that reference TCP send buffers hold them until the driver frees
  // the mbufs, and a held buffer is not given to a new connection.
  // net_virtio_user frees sent mbufs only once fewer than tx_free_thresh
  // descriptors are free (default: a quarter of the ring, at most 32), so
  // the last frames sent would hold their buffers until the ring goes round
  // again: its highest threshold (ring size - 4, the driver's limit) frees
  // them on every burst instead.
  rte_eth_txconf txconf = info.default_txconf;
  const rte_eth_txconf* txconf_arg = nullptr;
  if (p.tx_by_reference) {
    txconf.offloads = conf.txmode.offloads;
    txconf.tx_free_thresh = static_cast<uint16_t>(VirtioUserQueueSize(pc.vdev) - 4);
    txconf_arg = &txconf;
  }
  for (uint16_t q = 0; q < p.nb_txq; ++q) {
    rc = rte_eth_tx_queue_setup(p.port_id, q, p.nb_txd, static_cast<unsigned>(p.socket),
                                txconf_arg);
    if (rc != 0) return EthError(p, absl::StrCat("TX queue ", q, " setup"), rc);
  }
  if (rss && info.reta_size > 0) {
    if (absl::Status s = ProgramReta(p, info.reta_size); !s.ok()) return s;
  }
  if (pc.promiscuous) {
    rc = rte_eth_promiscuous_enable(p.port_id);
    if (rc != 0) return EthError(p, "promiscuous mode", rc);
  }
  rc = rte_eth_dev_start(p.port_id);
  if (rc != 0) return EthError(p, "rte_eth_dev_start", rc);
  p.started = true;
  if (cfg.workers.idle_block_after_us != 0) {
    // Every queue needs an interrupt a blocked worker can wait on.
    for (uint16_t q = 0; q < p.nb_rxq; ++q) {
      if (rte_eth_dev_rx_intr_ctl_q_get_fd(p.port_id, q) >= 0) continue;
      const std::string& where = cfg.workers.idle_block_origin.text;
      return absl::InvalidArgumentError(absl::StrCat(
          where.empty() ? "" : where + ": ", "workers.idle_block_after_us: port '", p.name, "' (",
          p.driver, ") has no receive interrupt for queue ", q,
          "; set workers.idle_block_after_us to 0, or use workers.idle_sleep_us (a timed sleep)"));
    }
  }

  rte_ether_addr mac;
  rc = rte_eth_macaddr_get(p.port_id, &mac);
  if (rc != 0) return EthError(p, "rte_eth_macaddr_get", rc);
  p.mac = MacAddr::Load(mac.addr_bytes);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PortRuntime> SetupPort(const config::Config& cfg, size_t index) {
  const config::PortConfig& pc = cfg.ports[index];
  PortRuntime p;
  p.name = pc.name;
  p.ethdev = EthdevName(pc);
  for (const config::InterfaceConfig& itf : cfg.interfaces) {
    if (itf.port != pc.name) continue;
    p.addrs.push_back({itf.ipv4.address, itf.ipv4.prefix_len});
    if (itf.gateway.has_value() && p.gateway == 0) p.gateway = *itf.gateway;
  }
  if (rte_eth_dev_get_port_by_name(p.ethdev.c_str(), &p.port_id) != 0) {
    return absl::NotFoundError(absl::StrCat("port '", p.name, "': no ethdev named '", p.ethdev,
                                            "' after EAL start (check the vdev/pci spec and the "
                                            "EAL log above)"));
  }
  const int socket = rte_eth_dev_socket_id(p.port_id);
  p.socket = socket >= 0 ? socket : static_cast<int>(rte_socket_id());
  if (absl::Status s = Configure(cfg, pc, p); !s.ok()) {
    ClosePort(&p);
    return s;
  }
  return p;
}

void ClosePort(PortRuntime* p) {
  if (p->started) {
    int rc = rte_eth_dev_stop(p->port_id);
    if (rc != 0) LogWarning("port '", p->name, "': stop: ", rte_strerror(-rc));
    p->started = false;
  }
  if (rte_eth_dev_is_valid_port(p->port_id)) rte_eth_dev_close(p->port_id);
  if (p->pool != nullptr) {
    rte_mempool_free(p->pool);
    p->pool = nullptr;
  }
}

}  // namespace iwarp::dataplane
