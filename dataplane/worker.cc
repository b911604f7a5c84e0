#include "dataplane/worker.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "dataplane/l3/flow_hash.h"

namespace iwarp::dataplane {

static_assert(kMaxPorts >= RTE_MAX_ETHPORTS, "port-indexed tables too small for this DPDK");

namespace {

std::vector<L3Port> ToL3Ports(std::span<const PortRuntime> ports) {
  std::vector<L3Port> out;
  for (const PortRuntime& p : ports) {
    out.push_back(L3Port{p.port_id, p.mac, p.addrs, p.gateway});
  }
  return out;
}

L3Options ToL3Options(const config::Config& cfg) {
  return L3Options{cfg.arp.cache_entries, cfg.arp.timeout_s, cfg.arp.pending_packets,
                   cfg.arp.retry_ms};
}

}  // namespace

Worker::Worker(uint32_t index, uint32_t lcore, std::span<const PortRuntime> ports,
               const config::Config& cfg, LcoreStats* stats, const std::atomic<bool>* stop)
    : index_(index),
      lcore_(lcore),
      burst_(std::min<uint16_t>(cfg.workers.burst, kMaxBurst)),
      idle_sleep_us_(cfg.workers.idle_sleep_us),
      stats_(stats),
      stop_(stop),
      stack_(ToL3Ports(ports), ToL3Options(cfg), stats, this) {
  tx_index_.fill(-1);
  const uint32_t workers = static_cast<uint32_t>(cfg.workers.lcores.size());
  for (const PortRuntime& p : ports) {
    // RX queue q is polled by worker q % workers; TX queue `index` is ours.
    for (uint16_t q = 0; q < p.nb_rxq; ++q) {
      if (q % workers == index_) rx_queues_.push_back({p.port_id, q});
    }
    tx_index_[p.port_id] = static_cast<int16_t>(tx_.size());
    TxBuffer tx;
    tx.port_id = p.port_id;
    tx.queue_id = static_cast<uint16_t>(index_);
    tx_.push_back(tx);
    pool_[p.port_id] = p.pool;
    soft_steer_[p.port_id] = p.steering == Steering::kSoftware;
    for (const config::PortConfig& pc : cfg.ports) {
      if (pc.name != p.name || p.port_id >= kMaxPorts) continue;
      const config::ImpairmentConfig& imp = pc.impairment;
      if (!imp.rx.empty()) {
        rx_impair_[p.port_id] = std::make_unique<ImpairmentStage>(
            imp.rx, ImpairmentStage::MixSeed(imp.seed, p.port_id, false, index_), stats_,
            &rx_glue_);
        impair_stages_.push_back(rx_impair_[p.port_id].get());
      }
      if (!imp.tx.empty()) {
        tx_impair_[p.port_id] = std::make_unique<ImpairmentStage>(
            imp.tx, ImpairmentStage::MixSeed(imp.seed, p.port_id, true, index_), stats_,
            &tx_glue_);
        impair_stages_.push_back(tx_impair_[p.port_id].get());
      }
    }
  }
}

void Worker::ImpairGlue::Forward(PacketHandle pkt) {
  rte_mbuf* m = static_cast<rte_mbuf*>(pkt);
  if (tx_) {
    worker_->Enqueue(m);
  } else {
    worker_->HandlePacket(m, /*steered=*/false, worker_->now_ms_);
  }
}

PacketHandle Worker::ImpairGlue::Copy(PacketHandle pkt) {
  rte_mbuf* m = static_cast<rte_mbuf*>(pkt);
  rte_mempool* pool = m->port < kMaxPorts ? worker_->pool_[m->port] : nullptr;
  if (pool == nullptr) pool = m->pool;
  return rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);
}

void Worker::ImpairGlue::Release(PacketHandle pkt) {
  rte_pktmbuf_free(static_cast<rte_mbuf*>(pkt));
}

size_t Worker::impair_held() const {
  size_t n = 0;
  for (const ImpairmentStage* s : impair_stages_) n += s->held();
  return n;
}

Worker::~Worker() {
  rte_ring_free(steer_ring_);
  rte_ring_free(neighbor_ring_);
}

absl::Status Worker::Init() {
  const int socket = static_cast<int>(rte_lcore_to_socket_id(lcore_));
  const std::string steer = absl::StrCat("iwarpd_steer_", lcore_);
  steer_ring_ = rte_ring_create(steer.c_str(), kSteerRingSize, socket, RING_F_SC_DEQ);
  const std::string neigh = absl::StrCat("iwarpd_neigh_", lcore_);
  neighbor_ring_ = rte_ring_create_elem(neigh.c_str(), sizeof(NeighborUpdate), kNeighborRingSize,
                                        socket, RING_F_SC_DEQ);
  if (steer_ring_ == nullptr || neighbor_ring_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("worker on lcore ", lcore_, ": rings: ", rte_strerror(rte_errno)));
  }
  cycles_per_ms_ = std::max<uint64_t>(1, rte_get_timer_hz() / 1000);
  return absl::OkStatus();
}

void Worker::SetPeers(std::span<Worker* const> peers) {
  peer_steer_rings_.clear();
  peer_neighbor_rings_.clear();
  for (Worker* w : peers) {
    peer_steer_rings_.push_back(w->steer_ring_);
    peer_neighbor_rings_.push_back(w == this ? nullptr : w->neighbor_ring_);
  }
}

void Worker::SendFrame(uint16_t port, ByteSpan frame) {
  rte_mbuf* m = port < kMaxPorts && pool_[port] != nullptr ? rte_pktmbuf_alloc(pool_[port]) : nullptr;
  if (m == nullptr) {
    stats_->Drop(DropReason::kNoMbuf);
    return;
  }
  char* dst = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
  if (dst == nullptr) {
    rte_pktmbuf_free(m);
    stats_->Drop(DropReason::kNoMbuf);
    return;
  }
  std::memcpy(dst, frame.data(), frame.size());
  m->port = port;
  Transmit(m);
}

void Worker::TransmitResolved(PacketHandle pkt, uint16_t port, const MacAddr& src,
                              const MacAddr& dst) {
  rte_mbuf* m = static_cast<rte_mbuf*>(pkt);
  if (rte_pktmbuf_data_len(m) < kEthHeaderLen) {
    rte_pktmbuf_free(m);
    stats_->Drop(DropReason::kEthTruncated);
    return;
  }
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  dst.Store(f + kEthDstOffset);
  src.Store(f + kEthSrcOffset);
  m->port = port;
  Transmit(m);
}

void Worker::FreePacket(PacketHandle pkt) { rte_pktmbuf_free(static_cast<rte_mbuf*>(pkt)); }

void Worker::NeighborLearned(uint32_t ip, uint16_t port, const MacAddr& mac) {
  NeighborUpdate u{ip, port, {}};
  mac.Store(u.mac);
  for (rte_ring* r : peer_neighbor_rings_) {
    if (r == nullptr) continue;
    // A full ring only means that worker resolves the address itself later.
    if (rte_ring_enqueue_elem(r, &u, sizeof(u)) != 0) stats_->neighbor_updates_lost.Add();
  }
}

void Worker::Transmit(rte_mbuf* m) {
  if (m->port < kMaxPorts && tx_impair_[m->port] != nullptr && m->nb_segs == 1) {
    tx_impair_[m->port]->Process(
        m, MutableByteSpan(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m)), now_ms_);
    return;
  }
  Enqueue(m);
}

void Worker::Enqueue(rte_mbuf* m) {
  const int16_t slot = m->port < kMaxPorts ? tx_index_[m->port] : -1;
  if (slot < 0) {
    rte_pktmbuf_free(m);
    stats_->Drop(DropReason::kTxRingFull);
    return;
  }
  TxBuffer& tx = tx_[static_cast<size_t>(slot)];
  tx.pkts[tx.count++] = m;
  if (tx.count >= burst_) Flush(tx);
}

void Worker::Flush(TxBuffer& tx) {
  if (tx.count == 0) return;
  // Byte counts are taken before the burst: the driver may free the mbufs.
  uint64_t bytes[kMaxBurst + 1];
  bytes[0] = 0;
  for (uint16_t i = 0; i < tx.count; ++i) bytes[i + 1] = bytes[i] + rte_pktmbuf_pkt_len(tx.pkts[i]);
  const uint16_t sent = rte_eth_tx_burst(tx.port_id, tx.queue_id, tx.pkts.data(), tx.count);
  stats_->tx_packets.Add(sent);
  stats_->tx_bytes.Add(bytes[sent]);
  if (sent < tx.count) {
    stats_->Drop(DropReason::kTxRingFull, tx.count - sent);
    rte_pktmbuf_free_bulk(tx.pkts.data() + sent, tx.count - sent);
  }
  tx.count = 0;
}

void Worker::FlushAll() {
  for (TxBuffer& tx : tx_) Flush(tx);
}

void Worker::HandlePacket(rte_mbuf* m, bool steered, uint64_t now_ms) {
  if (m->nb_segs != 1) {
    stats_->Drop(DropReason::kRxMultiSegment);
    rte_pktmbuf_free(m);
    return;
  }
  MutableByteSpan frame(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m));
  // Software steering (see flow_hash.h): a TCP/UDP flow is handled by the
  // worker its hash names, whichever queue the device put it on.
  if (!steered && m->port < kMaxPorts && soft_steer_[m->port]) {
    FlowKey key;
    if (ExtractFlowKey(frame, &key)) {
      const uint32_t owner =
          OwnerOfHash(FlowHash(key), static_cast<uint32_t>(peer_steer_rings_.size()));
      if (owner != index_) {
        if (rte_ring_mp_enqueue(peer_steer_rings_[owner], m) != 0) {
          stats_->Drop(DropReason::kSteerRingFull);
          rte_pktmbuf_free(m);
        } else {
          stats_->steered_out.Add();
        }
        return;
      }
    }
  }
  const RxAction a = stack_.HandleFrame(m->port, frame, now_ms);
  if (a.kind != RxAction::Kind::kTransmit) {
    rte_pktmbuf_free(m);
    return;
  }
  // The reply was written in place; cut link padding and drop the RX offload
  // flags (keeping those that describe the buffer itself).
  rte_pktmbuf_trim(m, static_cast<uint16_t>(rte_pktmbuf_data_len(m) - a.tx_length));
  m->ol_flags &= RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL;
  Transmit(m);
}

void Worker::DrainRings() {
  void* objs[kMaxBurst];
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst(steer_ring_, objs, kMaxBurst, nullptr)) > 0) {
    for (unsigned i = 0; i < n; ++i) rte_pktmbuf_free(static_cast<rte_mbuf*>(objs[i]));
  }
}

uint64_t Worker::NowMs() const { return rte_get_timer_cycles() / cycles_per_ms_; }

uint16_t Worker::ReceiveBurst(rte_mbuf* const* pkts, uint16_t n, uint64_t now_ms) {
  if (n == 0) return 0;
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < n; ++i) bytes += rte_pktmbuf_pkt_len(pkts[i]);
  stats_->rx_packets.Add(n);
  stats_->rx_bytes.Add(bytes);
  now_ms_ = now_ms;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    ImpairmentStage* stage = m->port < kMaxPorts ? rx_impair_[m->port].get() : nullptr;
    if (stage != nullptr && m->nb_segs == 1) {
      stage->Process(m, MutableByteSpan(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m)),
                     now_ms);
    } else {
      HandlePacket(m, /*steered=*/false, now_ms);
    }
  }
  return n;
}

uint32_t Worker::PollOnce(uint64_t now_ms) {
  rte_mbuf* pkts[kMaxBurst];
  NeighborUpdate updates[32];
  uint32_t work = 0;
  now_ms_ = now_ms;

  unsigned n = rte_ring_sc_dequeue_burst_elem(neighbor_ring_, updates, sizeof(NeighborUpdate), 32,
                                              nullptr);
  for (unsigned i = 0; i < n; ++i) {
    stack_.ApplyNeighbor(updates[i].ip, updates[i].port, MacAddr::Load(updates[i].mac), now_ms);
  }
  work += n;

  // Rings carry void*: dequeue into void* and convert each (no aliasing
  // through a reinterpreted array).
  void* objs[kMaxBurst];
  n = rte_ring_sc_dequeue_burst(steer_ring_, objs, burst_, nullptr);
  stats_->steered_in.Add(n);
  for (unsigned i = 0; i < n; ++i) {
    HandlePacket(static_cast<rte_mbuf*>(objs[i]), /*steered=*/true, now_ms);
  }
  work += n;

  for (const RxQueue& q : rx_queues_) {
    const uint16_t nb = rte_eth_rx_burst(q.port_id, q.queue_id, pkts, burst_);
    work += ReceiveBurst(pkts, nb, now_ms);
  }

  if (now_ms != last_tick_ms_) {
    stack_.Tick(now_ms);
    last_tick_ms_ = now_ms;
  }
  for (ImpairmentStage* stage : impair_stages_) {
    if (stage->held() != 0) stage->Poll(now_ms);
  }
  FlushAll();
  return work;
}

void Worker::Run() {
  uint32_t idle_polls = 0;
  while (!stop_->load(std::memory_order_acquire)) {
    if (PollOnce(NowMs()) != 0) {
      idle_polls = 0;
    } else if (idle_sleep_us_ != 0 && ++idle_polls >= kIdlePollsBeforeSleep) {
      rte_delay_us_sleep(idle_sleep_us_);
    }
  }
  for (ImpairmentStage* stage : impair_stages_) stage->ReleaseAll();
  FlushAll();
  DrainRings();
}

int WorkerMain(void* arg) {
  static_cast<Worker*>(arg)->Run();
  return 0;
}

}  // namespace iwarp::dataplane
