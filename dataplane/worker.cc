#include "dataplane/worker.h"

#include <rte_cycles.h>
#include <rte_epoll.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "dataplane/l3/flow_hash.h"
#include "dataplane/l3/ipv4.h"
#include "dataplane/log.h"

namespace iwarp::dataplane {

static_assert(kMaxPorts >= RTE_MAX_ETHPORTS, "port-indexed tables too small for this DPDK");

namespace {

// 128-bit products for the clock conversion (GCC and clang builtin type).
__extension__ typedef unsigned __int128 Uint128;

std::vector<L3Port> ToL3Ports(std::span<const PortRuntime> ports) {
  std::vector<L3Port> out;
  for (const PortRuntime& p : ports) {
    out.push_back(L3Port{p.port_id, p.mac, p.addrs, p.gateway, p.mtu});
  }
  return out;
}

L3Options ToL3Options(const config::Config& cfg) {
  L3Options o{cfg.arp.cache_entries, cfg.arp.timeout_s, cfg.arp.pending_packets,
              cfg.arp.retry_ms};
  o.deliver_tcp = cfg.tcp.enabled;
  o.deliver_sctp = cfg.sctp.enabled;
  o.udp_echo_port = cfg.udp_echo.port;
  return o;
}

// The configuration's tunables are the engine's (one table,
// tcp_lite/tcp_tunables.h); the port adds its MTU.
tcp::TcpOptions ToTcpOptions(const config::TcpConfig& t, uint16_t mtu) {
  tcp::TcpOptions o;
  static_cast<tcp::TcpTunables&>(o) = t;
  o.mtu = mtu;
  return o;
}

}  // namespace

Worker::Worker(uint32_t index, uint32_t lcore, std::span<const PortRuntime> ports,
               const config::Config& cfg, LcoreStats* stats, const std::atomic<bool>* stop)
    : index_(index),
      lcore_(lcore),
      burst_(std::min<uint16_t>(cfg.workers.burst, kMaxBurst)),
      idle_sleep_us_(cfg.workers.idle_sleep_us),
      idle_block_after_us_(cfg.workers.idle_block_after_us),
      idle_block_max_ms_(cfg.workers.idle_block_max_ms),
      stats_(stats),
      stop_(stop),
      stack_(ToL3Ports(ports), ToL3Options(cfg), stats, this),
      cfg_(cfg) {
  tx_index_.fill(-1);
  const uint32_t workers = static_cast<uint32_t>(cfg.workers.lcores.size());
  worker_count_ = std::max<uint32_t>(1, workers);
  bool first_port = true;
  for (const PortRuntime& p : ports) {
    for (const InterfaceAddress& a : p.addrs) {
      local_ips_.push_back(a.addr);
      local_addrs_.push_back(a);
    }
    // One MSS for the stack: the smallest MTU of the ports.
    if (first_port || p.mtu < tcp_mtu_) tcp_mtu_ = static_cast<uint16_t>(p.mtu);
    first_port = false;
  }
  for (const PortRuntime& p : ports) {
    // RX queue q is polled by worker q % workers; TX queue `index` is ours.
    for (uint16_t q = 0; q < p.nb_rxq; ++q) {
      if (q % workers == index_) rx_queues_.push_back({p.port_id, q, p.driver == "net_tap"});
    }
    tx_index_[p.port_id] = static_cast<int16_t>(tx_.size());
    TxBuffer tx;
    tx.port_id = p.port_id;
    tx.queue_id = static_cast<uint16_t>(index_);
    tx.tso = p.tso;
    tx.tx_ip_checksum = p.tx_ip_checksum;
    tx.by_reference = p.tso && p.tx_by_reference;
    any_tso_ = any_tso_ || p.tso;
    tx_.push_back(tx);
    pool_[p.port_id] = p.pool;
    soft_steer_[p.port_id] = p.steering == Steering::kSoftware;
    if (p.steering == Steering::kSoftware) soft_rule_ = true;
    if (p.steering == Steering::kRss) ReadRss(p);
    rx_coalesce_trusted_[p.port_id] = p.rx_offload_flags;
    rx_checksum_trusted_[p.port_id] = p.rx_offload_flags;
    for (const config::PortConfig& pc : cfg.ports) {
      if (pc.name != p.name || p.port_id >= kMaxPorts) continue;
      const config::ImpairmentConfig& imp = pc.impairment;
      // The RX stage rewrites frames after the device judged them.
      if (!imp.rx.empty()) rx_checksum_trusted_[p.port_id] = false;
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
  all_by_reference_ = !tx_.empty();
  for (const TxBuffer& tx : tx_) all_by_reference_ = all_by_reference_ && tx.by_reference;
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
  if (idle_block_after_us_ != 0) {
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("worker on lcore ", lcore_, ": wake eventfd: ", strerror(errno)));
    }
  }
  // Microseconds = cycles * 10^6 / hz as a 24.40 fixed-point multiply: the
  // poll loop reads the clock every iteration and three 64-bit divisions
  // per read showed up as a fifth of an idle worker's samples. The factor's
  // rounding error is below 2^-28 relative (a few ms a day), and every clock
  // of the worker (ms and us) derives from this one value, so they stay
  // consistent and monotonic.
  const uint64_t hz = std::max<uint64_t>(1, rte_get_timer_hz());
  us_per_cycle_q40_ = static_cast<uint64_t>((Uint128{1000000} << 40) / hz);
  publish_every_cycles_ = std::max<uint64_t>(1, hz / 1000);
  if (absl::Status st = InitSctp(); !st.ok()) return st;
  return InitTcp();
}

absl::Status Worker::InitSctp() {
  if (!cfg_.sctp.enabled || index_ != 0 || local_addrs_.empty()) return absl::OkStatus();
  const config::SctpConfig& c = cfg_.sctp;
  const uint32_t mtu = tcp_mtu_ == 0 ? 1500 : tcp_mtu_;
  sctp::EndpointConfig ec;
  // Every sctp: key but `enabled` (the table's rows name their members).
  sctp::ApplyTunables(c, &ec);
  ec.local_ip = local_addrs_[0].addr;
  ec.host.max_packet = mtu - kIpv4MinHeaderLen;
  ec.association.path_mtu = mtu;
  // The DDP reorder store and window from the buffers (the config loader
  // refused buffers beyond 32767 full-size chunks, RFC 5043 10).
  sctp::SizeReorderStore(&ec.association);
  ec.max_listeners = static_cast<uint32_t>(cfg_.services.size()) + 8;
  // Created on the control thread before the lcore starts; from then on
  // only this worker's loop calls into it (the launch orders the two).
  absl::StatusOr<std::unique_ptr<sctp::SctpEndpoint>> ep = sctp::SctpEndpoint::Create(ec);
  if (!ep.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker on lcore ", lcore_, ": sctp: ", ep.status().message()));
  }
  sctp_ = std::move(*ep);
  sctp_services_ = std::make_unique<SctpServiceHost>(sctp_.get(), c.streams);
  return absl::OkStatus();
}

absl::Status Worker::InitTcp() {
  if (!cfg_.tcp.enabled) return absl::OkStatus();
  absl::StatusOr<tcp::IsnGenerator> isn = tcp::IsnGenerator::Create();
  if (!isn.ok()) return isn.status();
  isn_ = std::make_unique<tcp::IsnGenerator>(*isn);
  clock_.now_us = NowUs();
  absl::StatusOr<std::unique_ptr<tcp::TcpStack>> stack = tcp::TcpStack::Create(
      ToTcpOptions(cfg_.tcp, tcp_mtu_ == 0 ? 1500 : tcp_mtu_), local_ips_, *this, *isn_,
      clock_.now_us);
  if (!stack.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker on lcore ", lcore_, ": tcp: ", stack.status().message()));
  }
  tcp_ = std::move(*stack);
  // With several workers, an active open picks a local port whose replies
  // hash to this worker (software steering and RSS use the same hash).
  if (worker_count_ > 1) tcp_->SetPortFilter(&Worker::PortOwnedHere, this);
  size_t max_qps = 0;
  for (const config::ServiceConfig& sc : cfg_.services) {
    const bool active = sc.type == config::ServiceType::kSource ||
                        sc.type == config::ServiceType::kIwarpClient ||
                        sc.type == config::ServiceType::kIwarpFpduTest;
    // A source runs once, on worker 0; listeners run on every worker, but
    // SCTP services live with the SCTP endpoint on worker 0.
    const bool over_sctp = sc.transport == config::IwarpTransport::kSctp;
    if ((active || over_sctp) && index_ != 0) {
      services_.push_back(nullptr);
      iwarp_services_.push_back(nullptr);
      continue;
    }
    uint32_t local_ip = 0;
    for (const InterfaceAddress& a : local_addrs_) {
      if (active && a.Contains(sc.remote)) local_ip = a.addr;
    }
    if (local_ip == 0 && !local_addrs_.empty()) local_ip = local_addrs_[0].addr;
    std::unique_ptr<TcpService> svc;
    IwarpService* iwarp = nullptr;
    if (sc.type == config::ServiceType::kIwarpResponder ||
        sc.type == config::ServiceType::kIwarpClient ||
        sc.type == config::ServiceType::kIwarpFpduTest) {
      absl::StatusOr<std::unique_ptr<IwarpService>> s =
          IwarpService::Create(sc, cfg_.iwarp, tcp_.get(), &clock_, cfg_.tcp.max_connections,
                               local_ip, over_sctp ? sctp_services_.get() : nullptr);
      if (!s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("service ", sc.name, " on lcore ", lcore_, ": ", s.status().message()));
      }
      iwarp = s->get();
      max_qps += iwarp->max_qps();
      if (sc.type == config::ServiceType::kIwarpFpduTest) prompt_service_ = iwarp;
      svc = std::move(*s);
    } else {
      svc = TcpService::Create(sc, tcp_.get(), &clock_, cfg_.tcp.max_connections, local_ip);
    }
    iwarp_services_.push_back(iwarp);
    if (absl::Status st = svc->Start(); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("service ", sc.name, " on lcore ", lcore_, ": ", st.message()));
    }
    services_.push_back(std::move(svc));
  }
  // Application QPs on the wire live on worker 0: the control thread hands
  // them to one engine, and with several workers the port filter above
  // keeps the replies of worker 0's active opens on worker 0.
  if (index_ == 0 && cfg_.app_interface.enabled && !local_addrs_.empty()) {
    appif::WireEngineOptions wo;
    wo.local_ip = local_addrs_[0].addr;
    wo.max_qps = 256;
    wo.max_listeners = 64;
    wo.max_pending = 64;
    wo.gate.max_pending = cfg_.iwarp.max_pending_requests;
    wo.gate.max_pending_per_source = cfg_.iwarp.max_pending_per_source;
    wo.gate.request_timeout_us = uint64_t{cfg_.iwarp.request_timeout_ms} * 1000;
    wo.gate.max_private_data = cfg_.iwarp.max_private_data;
    wo.stag_capacity = cfg_.app_interface.stag_table_size;
    wo.event_depth = 2048;
    // RDMA over SCTP for applications: worker 0's endpoint (nullptr unless
    // sctp.enabled); created before the engine and destroyed after it.
    wo.sctp = sctp_.get();
    // Receive steering of application ports to this worker (app_ports.h);
    // the built-in services' listening ports are theirs on every worker.
    app_ports_owned_ = std::make_unique<appif::AppPortTable>();
    for (const config::ServiceConfig& sc : cfg_.services) {
      const bool listens = sc.type == config::ServiceType::kEcho ||
                           sc.type == config::ServiceType::kSink ||
                           sc.type == config::ServiceType::kIwarpResponder;
      if (listens && sc.transport == config::IwarpTransport::kTcp) app_ports_owned_->Reserve(sc.port);
    }
    wo.app_ports = app_ports_owned_.get();
    absl::StatusOr<std::unique_ptr<appif::WireEngine>> w = appif::WireEngine::Create(wo, *tcp_);
    if (!w.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("app interface wire engine on lcore ", lcore_, ": ", w.status().message()));
    }
    wire_ = std::move(*w);
    wire_->SetWakeHook([](void* self) { static_cast<Worker*>(self)->Wake(); }, this);
  }
  snapshot_.enabled = true;
  snapshot_.conns.resize(cfg_.tcp.max_connections);
  snapshot_.conn_service.resize(cfg_.tcp.max_connections);
  snapshot_.services.resize(services_.size());
  snapshot_.qps.resize(max_qps);
  return absl::OkStatus();
}

uint32_t Worker::DrainSctp() {
  // usrsctp filled its queue inside Input / Poll / the services' sends; the
  // packets become IPv4 datagrams here, outside every usrsctp callback.
  class Sink final : public sctp::DatagramSink {
   public:
    explicit Sink(Worker* w) : w_(w) {}
    void Transmit(uint32_t dst_ip, ByteSpan packet) override {
      w_->EmitDatagram(kIpProtoSctp, w_->SourceFor(dst_ip), dst_ip, packet);
    }

   private:
    Worker* w_;
  } sink(this);
  // Paced by the room in the TX buffers: packets the device cannot take yet
  // wait in the endpoint's queue (sctp_outbound_pending) rather than being
  // dropped, so a window of ~700 packets released at once does not overrun
  // the port's ring. Enqueue flushes every `burst_` frames, so the room
  // comes back as fast as the device takes frames.
  const size_t room = TxRoom();
  if (room == 0) return 0;
  return static_cast<uint32_t>(sctp_->Drain(sink, room));
}

uint32_t Worker::PollTcp(uint64_t now_ms) {
  if (tcp_ == nullptr) return 0;
  tcp_->RunTimers(clock_.now_us);
  for (const std::unique_ptr<TcpService>& s : services_) {
    if (s != nullptr) s->Poll(now_ms);
  }
  return wire_ != nullptr ? wire_->Poll(clock_.now_us) : 0;
}

void Worker::FillTcpSnapshot() {
  if (sctp_ != nullptr) {
    TcpSnapshot::Sctp& o = snapshot_.sctp;
    o.enabled = true;
    sctp_->host().SyncStackStats();
    for (size_t i = 0; i < o.host.size(); ++i) o.host[i] = sctp_->host_counter(static_cast<sctp::HostCounter>(i));
    for (size_t i = 0; i < o.endpoint.size(); ++i) {
      o.endpoint[i] = sctp_->counter(static_cast<sctp::EndpointCounter>(i));
    }
    for (size_t i = 0; i < o.ddp.size(); ++i) {
      o.ddp[i] = sctp_->ddp_total(static_cast<sctp::DdpCounter>(i));
    }
    for (size_t i = 0; i < o.ends.size(); ++i) {
      o.ends[i] = sctp_->ends_total(static_cast<sctp::StreamEnd>(i));
    }
    o.associations = 0;
    o.associations_up = 0;
    sctp_->ForEachAssociation([&o](const sctp::SctpAssociation& a) {
      ++o.associations;
      if (a.ddp().state() == sctp::DdpAssociation::State::kUp) ++o.associations_up;
    });
    o.peers = sctp_->peers();
    o.outbound_pending = sctp_->outbound_pending();
  }
  if (tcp_ == nullptr) return;
  snapshot_.stats = tcp_->stats();
  snapshot_.conn_count = tcp_->ListConnections(snapshot_.conns);
  for (size_t i = 0; i < snapshot_.conn_count; ++i) {
    int16_t owner = -1;
    for (size_t s = 0; s < services_.size(); ++s) {
      if (services_[s] != nullptr && services_[s]->Owns(snapshot_.conns[i].id)) {
        owner = static_cast<int16_t>(s);
        break;
      }
    }
    snapshot_.conn_service[i] = owner;
  }
  for (size_t s = 0; s < services_.size(); ++s) {
    TcpSnapshot::Service& out = snapshot_.services[s];
    if (services_[s] == nullptr) {
      out = TcpSnapshot::Service{};
      continue;
    }
    out.counters = services_[s]->counters();
    out.recent_count = services_[s]->recent_count();
    for (size_t i = 0; i < out.recent_count; ++i) out.recent[i] = services_[s]->recent(i);
    out.iwarp = iwarp_services_[s] != nullptr;
    if (out.iwarp) {
      out.iwarp_counters = iwarp_services_[s]->iwarp_counters();
      out.run = iwarp_services_[s]->run_result();
      out.term_sent = iwarp_services_[s]->last_terminate_sent();
      out.term_received = iwarp_services_[s]->last_terminate_received();
      out.test_region = iwarp_services_[s]->test_region();
    }
  }
  snapshot_.qp_count = 0;
  for (size_t s = 0; s < iwarp_services_.size(); ++s) {
    if (iwarp_services_[s] == nullptr) continue;
    std::span<IwarpQpInfo> room(snapshot_.qps);
    const size_t n = iwarp_services_[s]->ListQps(room.subspan(snapshot_.qp_count));
    for (size_t i = 0; i < n; ++i) snapshot_.qps[snapshot_.qp_count + i].service = static_cast<int16_t>(s);
    snapshot_.qp_count += n;
  }
}

const TcpSnapshot* Worker::RequestTcpSnapshot(uint32_t timeout_ms) {
  const uint64_t want = snapshot_request_.fetch_add(1, std::memory_order_acq_rel) + 1;
  Wake();
  for (uint32_t waited_us = 0; waited_us < timeout_ms * 1000; waited_us += 100) {
    if (snapshot_done_.load(std::memory_order_acquire) >= want) return &snapshot_;
    rte_delay_us_sleep(100);
  }
  return nullptr;
}

void Worker::SetPeers(std::span<Worker* const> peers) {
  peer_steer_rings_.clear();
  peer_neighbor_rings_.clear();
  peers_.assign(peers.begin(), peers.end());
  wake_peer_.assign(peers.size(), 0);
  for (Worker* w : peers) {
    peer_steer_rings_.push_back(w->steer_ring_);
    peer_neighbor_rings_.push_back(w == this ? nullptr : w->neighbor_ring_);
  }
  // Worker 0's application ports, read on every worker's RX path (HandlePacket).
  app_ports_ = peers.size() > 1 ? peers[0]->app_ports_owned_.get() : nullptr;
}

void Worker::NeighborLearned(uint32_t ip, uint16_t port, const MacAddr& mac) {
  NeighborUpdate u{ip, port, {}};
  mac.Store(u.mac);
  for (rte_ring* r : peer_neighbor_rings_) {
    if (r == nullptr) continue;
    // A full ring only means that worker resolves the address itself later.
    if (rte_ring_enqueue_elem(r, &u, sizeof(u)) != 0) stats_->neighbor_updates_lost.Add();
  }
  if (idle_block_after_us_ != 0) {
    for (size_t i = 0; i < peer_neighbor_rings_.size(); ++i) {
      if (peer_neighbor_rings_[i] != nullptr) wake_peer_[i] = 1;
    }
    any_peer_to_wake_ = true;
  }
}

void Worker::HandlePacket(rte_mbuf* m, bool steered, uint64_t now_ms) {
  if (m->nb_segs != 1) {
    stats_->Drop(DropReason::kRxMultiSegment);
    rte_pktmbuf_free(m);
    return;
  }
  MutableByteSpan frame(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m));
  // Software steering (see flow_hash.h): a TCP/UDP flow is handled by the
  // worker its hash names, whichever queue the device put it on. Frames to
  // a port an application QP or listener holds go to worker 0 whatever the
  // steering (software or RSS) and whichever worker received them.
  const bool soft = !steered && m->port < kMaxPorts && soft_steer_[m->port];
  if (soft || (app_ports_ != nullptr && index_ != 0)) {
    FlowKey key;
    if (ExtractFlowKey(frame, &key)) {
      const bool app = app_ports_ != nullptr && app_ports_->Held(key.dst_port);
      const uint32_t owner =
          app ? 0
              : (soft ? OwnerOfHash(FlowHash(key), static_cast<uint32_t>(peer_steer_rings_.size()))
                      : index_);
      if (owner != index_) {
        if (!SteerTo(owner, m)) {
          rte_pktmbuf_free(m);
        } else if (app) {
          stats_->steered_app.Add();
        }
        return;
      }
    }
  }
  RxOffload offload;
  if (m->port < kMaxPorts && rx_coalesce_trusted_[m->port]) {
    offload.coalesced = (m->ol_flags & RTE_MBUF_F_RX_LRO) != 0;
    if (rx_checksum_trusted_[m->port]) {
      // RTE_MBUF_F_RX_L4_CKSUM_NONE: the checksum field is not filled in but
      // the data's integrity was verified (a virtio peer's checksum offload).
      const uint64_t l4 = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
      offload.l4_checksum_ok =
          l4 == RTE_MBUF_F_RX_L4_CKSUM_GOOD || l4 == RTE_MBUF_F_RX_L4_CKSUM_NONE;
    }
  }
  const RxAction a = stack_.HandleFrame(m->port, frame, now_ms, offload);
  if (a.kind == RxAction::Kind::kLocalTcp && tcp_ != nullptr) {
    tcp_->Input(a.src_ip, a.dst_ip, ByteSpan(frame.data() + a.l4_offset, a.l4_length),
                clock_.now_us,
                a.l4_checksum_ok ? tcp::ChecksumCheck::kSkip : tcp::ChecksumCheck::kVerify);
    rte_pktmbuf_free(m);
    // Test configurations only (iwarp_fpdu_test): a QP to replace before
    // the next segment of the burst.
    if (prompt_service_ != nullptr && prompt_service_->WantsPromptPoll()) {
      prompt_service_->Poll(now_ms);
    }
    return;
  }
  if (a.kind == RxAction::Kind::kLocalSctp) {
    if (sctp_ != nullptr) {
      sctp_->Input(a.src_ip, ByteSpan(frame.data() + a.l4_offset, a.l4_length));
    } else if (!steered && index_ != 0 && !peer_steer_rings_.empty()) {
      // All usrsctp calls happen on worker 0 (ARCHITECTURE.md, SCTP row).
      if (SteerTo(0, m)) return;
    } else {
      stats_->Drop(DropReason::kIpv4UnknownProtocol);  // no SCTP endpoint here
    }
    rte_pktmbuf_free(m);
    return;
  }
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

uint64_t Worker::NowMs() const { return NowUs() / 1000; }

uint64_t Worker::NowUs() const { return NowFromCycles(rte_get_timer_cycles()).us; }

Worker::Now Worker::NowBoth() const { return NowFromCycles(rte_get_timer_cycles()); }

Worker::Now Worker::NowFromCycles(uint64_t cycles) const {
  // 64 x 40-bit product in 128 bits: no overflow for any cycle count.
  const uint64_t us = static_cast<uint64_t>((Uint128{cycles} * us_per_cycle_q40_) >> 40);
  return Now{us / 1000, us};
}

void Worker::AccountLoop(uint64_t cycles, bool busy) {
  loop_cycles_ += cycles;
  if (busy) busy_cycles_ += cycles;
  unpublished_cycles_ += cycles;
  if (unpublished_cycles_ >= publish_every_cycles_) PublishLoopTime();
}

void Worker::PublishLoopTime() {
  unpublished_cycles_ = 0;
  const uint64_t poll = NowFromCycles(loop_cycles_).us;
  const uint64_t busy = NowFromCycles(busy_cycles_).us;
  stats_->poll_us.Add(poll - stats_->poll_us.Get());
  stats_->busy_us.Add(busy - stats_->busy_us.Get());
}

uint16_t Worker::ReceiveBurst(rte_mbuf* const* pkts, uint16_t n, uint64_t now_ms) {
  if (n == 0) return 0;
  now_ms_ = now_ms;
  clock_.now_us = NowUs();
  return HandleBurst(pkts, n, now_ms);
}

uint16_t Worker::HandleBurst(rte_mbuf* const* pkts, uint16_t n, uint64_t now_ms) {
  if (n == 0) return 0;
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < n; ++i) bytes += rte_pktmbuf_pkt_len(pkts[i]);
  stats_->rx_packets.Add(n);
  stats_->rx_bytes.Add(bytes);
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    ImpairmentStage* stage = m->port < kMaxPorts ? rx_impair_[m->port].get() : nullptr;
    if (stage != nullptr && m->nb_segs == 1) {
      // The stage may damage the frame after the device judged it, so the
      // worker checks TCP checksums itself on such ports: a checksum the
      // device left unfilled (its data vouched for) is filled in first.
      if (rx_coalesce_trusted_[m->port] &&
          (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_NONE) {
        FillTcpChecksum(MutableByteSpan(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m)));
      }
      stage->Process(m, MutableByteSpan(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m)),
                     now_ms);
    } else {
      HandlePacket(m, /*steered=*/false, now_ms);
    }
  }
  return n;
}

uint32_t Worker::PollOnce(uint64_t now_ms) { return PollAt(now_ms, NowUs()); }

uint32_t Worker::PollAt(uint64_t now_ms, uint64_t now_us) {
  rte_mbuf* pkts[kMaxBurst];
  NeighborUpdate updates[32];
  uint32_t work = 0;
  now_ms_ = now_ms;
  clock_.now_us = now_us;

  unsigned n = rte_ring_sc_dequeue_burst_elem(neighbor_ring_, updates, sizeof(NeighborUpdate), 32,
                                              nullptr);
  for (unsigned i = 0; i < n; ++i) {
    stack_.ApplyNeighbor(updates[i].ip, updates[i].port, MacAddr::Load(updates[i].mac), now_ms);
  }
  work += n;

  // One receive burst for TCP: in-order data is ACKed once per connection
  // at its end (TcpStack::BeginBurst), not every second segment.
  if (tcp_ != nullptr) tcp_->BeginBurst();
  // Rings carry void*: dequeue into void* and convert each (no aliasing
  // through a reinterpreted array).
  void* objs[kMaxBurst];
  n = rte_ring_sc_dequeue_burst(steer_ring_, objs, burst_, nullptr);
  stats_->steered_in.Add(n);
  // Receives the applications posted before this burst arrived reach their
  // engine QPs first (WireEngine::PostReceives).
  if (n != 0 && wire_ != nullptr) wire_->PostReceives();
  for (unsigned i = 0; i < n; ++i) {
    HandlePacket(static_cast<rte_mbuf*>(objs[i]), /*steered=*/true, now_ms);
  }
  work += n;

  for (const RxQueue& q : rx_queues_) {
    const uint16_t nb = rte_eth_rx_burst(q.port_id, q.queue_id, pkts, burst_);
    if (nb != 0 && wire_ != nullptr) wire_->PostReceives();
    work += HandleBurst(pkts, nb, now_ms);
  }
  if (tcp_ != nullptr) tcp_->EndBurst(clock_.now_us);

  if (now_ms != last_tick_ms_) {
    stack_.Tick(now_ms);
    last_tick_ms_ = now_ms;
  }
  for (ImpairmentStage* stage : impair_stages_) {
    if (stage->held() != 0) stage->Poll(now_ms);
  }
  // SCTP: timers, accepts and association events (which run the QPs'
  // receive side), then the services (PollTcp) post and send, then every
  // queued packet leaves.
  if (sctp_ != nullptr) sctp_->Poll(now_ms);
  work += PollTcp(now_ms);
  if (sctp_services_ != nullptr) {
    // Mirrored for the control thread, which logs every new one.
    const uint64_t t = sctp_services_->session_end_timeouts();
    const uint64_t f = sctp_services_->shutdowns_forced();
    if (t != stats_->sctp_session_end_timeouts.Get()) {
      stats_->sctp_session_end_timeouts.Add(t - stats_->sctp_session_end_timeouts.Get());
    }
    if (f != stats_->sctp_shutdowns_forced.Get()) {
      stats_->sctp_shutdowns_forced.Add(f - stats_->sctp_shutdowns_forced.Get());
    }
  }
  if (sctp_ != nullptr) work += DrainSctp();
  // A telemetry request: answer from this lcore, which owns the stack.
  const uint64_t request = snapshot_request_.load(std::memory_order_acquire);
  if (request != snapshot_served_) {
    FillTcpSnapshot();
    snapshot_served_ = request;
    snapshot_done_.store(request, std::memory_order_release);
  }
  FlushAll();
  if (any_peer_to_wake_) WakeMarkedPeers();
  return work;
}

void Worker::Run() {
  // net_tap learns that its queues have frames from SIGIO (O_ASYNC on the
  // queue descriptors, counted by its handler; rx_burst skips the read while
  // the count is unchanged). RunDaemon blocks it everywhere else so the
  // kernel delivers it to a running worker, not to a sleeping thread that
  // must be scheduled first. Once per worker, at start.
  sigset_t io;
  sigemptyset(&io);
  sigaddset(&io, SIGIO);
  pthread_sigmask(SIG_UNBLOCK, &io, nullptr);
  // An idle sleep of a few microseconds lasts about that long only with a
  // small timer slack (the default, 50 us, would add up to 50 us to the
  // first packet after every idle sleep). Once per worker, at start.
  if (idle_sleep_us_ != 0) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // The interrupts and the epoll instance are this thread's.
  const bool block = idle_block_after_us_ != 0 && SetUpIdleBlock();
  uint32_t idle_polls = 0;
  uint64_t last_work_us = NowUs();
  // Each iteration's time (one TSC read apart) counts as busy when its poll
  // found work; time in BlockIdle counts in idle_blocked_us instead.
  uint64_t prev_cycles = rte_get_timer_cycles();
  bool worked = false;
  while (!stop_->load(std::memory_order_acquire)) {
    const uint64_t cycles = rte_get_timer_cycles();
    AccountLoop(cycles - prev_cycles, worked);
    prev_cycles = cycles;
    const Now now = NowFromCycles(cycles);
    worked = PollAt(now.ms, now.us) != 0;
    if (worked) {
      idle_polls = 0;
      last_work_us = now.us;
    } else if (idle_sleep_us_ != 0 && ++idle_polls >= kIdlePollsBeforeSleep) {
      rte_delay_us_sleep(idle_sleep_us_);
    } else if (block && now.us - last_work_us >= idle_block_after_us_) {
      // Blocked, found work, or could not block yet (a timer due, frames
      // held): each starts a new quiet spell before the next try.
      BlockIdle(now.us);
      prev_cycles = rte_get_timer_cycles();
      last_work_us = NowFromCycles(prev_cycles).us;
    }
  }
  PublishLoopTime();
  for (ImpairmentStage* stage : impair_stages_) stage->ReleaseAll();
  // A stopping daemon aborts its SCTP associations (RFC 9260 9.1), so the
  // peers free their QP slots now rather than after heartbeat failure
  // detection; the ABORTs leave like every other SCTP packet.
  if (sctp_ != nullptr && sctp_->AbortAll() != 0) {
    for (int i = 0; i < 100 && sctp_->outbound_pending() != 0; ++i) {
      DrainSctp();
      FlushAll();
      if (sctp_->outbound_pending() != 0) rte_delay_us_sleep(100);
    }
  }
  // Frames the device still refuses after a few tries are given up (counted).
  for (int i = 0; i < 100 && TxRoom() < kMaxBurst; ++i) {
    FlushAll();
    if (TxRoom() < kMaxBurst) rte_delay_us_sleep(100);
  }
  DropHeldTx();
  DrainRings();
}

int WorkerMain(void* arg) {
  static_cast<Worker*>(arg)->Run();
  return 0;
}

}  // namespace iwarp::dataplane
