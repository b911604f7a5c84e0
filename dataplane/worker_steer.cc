// Worker: flow steering. Which worker owns a flow (the device's RSS key and
// redirection table as read back, or software steering by flow_hash.h), the
// port filter that keeps worker 0's active opens on worker 0, and the one
// helper that hands a frame to its owner's steer ring. See worker.h.
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstring>

#include "dataplane/l3/flow_hash.h"
#include "dataplane/log.h"
#include "dataplane/worker.h"

namespace iwarp::dataplane {

void Worker::ReadRss(const PortRuntime& p) {
  // What SetupPort asked for (flow_hash.h's key, reta[i] = i % queues) is
  // not always what the device does: SetupPort programs the key only into a
  // device that reports a 40-byte key (net_null reports none and keeps its
  // own), and a table of 512 entries or a queue count that is not a
  // multiple of the workers sends a flow elsewhere than OwnerOfHash says.
  // So the device is asked; one that reports no key size holds 40 bytes.
  rte_eth_dev_info info;
  RssPort rp;
  bool ok = rte_eth_dev_info_get(p.port_id, &info) == 0 && info.reta_size > 0;
  if (ok) {
    // Toeplitz over the 12-byte IPv4 TCP input needs at least 16 key bytes.
    rp.key.resize(info.hash_key_size == 0 ? kRssKeyLen : info.hash_key_size);
    rte_eth_rss_conf conf{};
    conf.rss_key = rp.key.data();
    conf.rss_key_len = static_cast<uint8_t>(rp.key.size());
    ok = rp.key.size() >= 16 && rte_eth_dev_rss_hash_conf_get(p.port_id, &conf) == 0;
  }
  if (ok) {
    std::vector<rte_eth_rss_reta_entry64> groups(
        (info.reta_size + RTE_ETH_RETA_GROUP_SIZE - 1) / RTE_ETH_RETA_GROUP_SIZE);
    for (rte_eth_rss_reta_entry64& g : groups) g.mask = ~uint64_t{0};
    ok = rte_eth_dev_rss_reta_query(p.port_id, groups.data(), info.reta_size) == 0;
    for (uint16_t i = 0; ok && i < info.reta_size; ++i) {
      rp.reta.push_back(groups[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE]);
    }
  }
  if (!ok) {
    soft_rule_ = true;
    if (index_ == 0) {
      LogWarning("port '", p.name, "' (", p.driver,
                 "): RSS key or redirection table cannot be read back; worker 0's active opens "
                 "assume flow_hash.h's rule, and replies to built-in services' connections may "
                 "reach another worker (application QPs are steered by port)");
    }
    return;
  }
  rss_ports_.push_back(std::move(rp));
}

bool Worker::PortOwnedHere(void* worker, const tcp::FourTuple& t) {
  const Worker* w = static_cast<const Worker*>(worker);
  // The key of a segment the peer sends us: its address and port are the source.
  const FlowKey key{t.remote_addr, t.local_addr, t.remote_port, t.local_port};
  if (w->soft_rule_ && OwnerOfHash(FlowHash(key), w->worker_count_) != w->index_) return false;
  for (const RssPort& p : w->rss_ports_) {
    const uint16_t queue = p.reta[FlowHash(key, p.key) % p.reta.size()];
    if (queue % w->worker_count_ != w->index_) return false;
  }
  return true;
}

bool Worker::SteerTo(uint32_t owner, rte_mbuf* m) {
  if (rte_ring_mp_enqueue(peer_steer_rings_[owner], m) != 0) {
    stats_->Drop(DropReason::kSteerRingFull);
    return false;
  }
  stats_->steered_out.Add();
  if (idle_block_after_us_ != 0) {
    wake_peer_[owner] = 1;
    any_peer_to_wake_ = true;
  }
  return true;
}

}  // namespace iwarp::dataplane
