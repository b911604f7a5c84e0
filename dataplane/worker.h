// A worker lcore: one run-to-completion loop over its RX queues.
//
//   loop: neighbour updates from other workers
//         -> frames other workers steered to us
//         -> rx burst on each owned RX queue -> [rx impairment] -> (software
//            steering; frames to application ports -> worker 0) -> L3Stack
//         -> ARP timers -> held impaired frames -> flush the per-port TX
//            buffers (every frame sent passes the port's [tx impairment])
//         -> idle back-off
//
// Contract: a Worker and everything in it (L3 stack, ARP cache, TX buffers,
// its LcoreStats) belong to its lcore; the only cross-thread entry points are
// its two rings, filled by the other workers: steer_ring (mbufs whose flow it
// owns, multi-producer/single-consumer) and neighbor_ring (ARP entries the
// others learned). It also reads, never writes, worker 0's AppPortTable
// (appif/app_ports.h; relaxed atomics). The fast path does not allocate,
// lock, log or throw; with workers.idle_sleep_us > 0 an idle worker sleeps
// (a syscall) between polls.
//
// Blocking when idle (workers.idle_block_after_us > 0): after that long
// without work the worker arms its queues' receive interrupts, announces that
// it sleeps (`sleeping_`, and consumer_waiting on every wire QP's SQ), checks
// every source of work once more, and waits in epoll for a receive interrupt,
// its wake eventfd, or its next timer (at most workers.idle_block_max_ms).
// Whoever hands it work after that rings the eventfd (Wake): another worker after
// steering frames or a neighbour update to it, the control thread after a
// wire command, a snapshot request, an application's doorbell or the stop.
// Both sides fence between publishing and reading the other's flag
// (spsc_ring.h's handshake), so no wake-up is lost and nobody makes a system
// call while the worker polls.
#ifndef IWARPD_DATAPLANE_WORKER_H_
#define IWARPD_DATAPLANE_WORKER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "appif/wire_engine.h"
#include "config/config.h"
#include "dataplane/l3/flow_hash.h"
#include "dataplane/l3/stack.h"
#include "dataplane/impair/impairment.h"
#include "dataplane/services/iwarp_services.h"
#include "dataplane/services/tcp_services.h"
#include "sctp/endpoint.h"
#include "tcp_lite/tcp_stack.h"
#include "dataplane/l3/stats.h"
#include "dataplane/port.h"

struct rte_epoll_event;
struct rte_mbuf;
struct rte_mbuf_ext_shared_info;
struct rte_ring;
struct rte_mempool;

namespace iwarp::dataplane {

inline constexpr uint16_t kMaxBurst = 256;
inline constexpr unsigned kSteerRingSize = 1024;
inline constexpr unsigned kNeighborRingSize = 256;
// Empty polls in a row before an idle worker sleeps workers.idle_sleep_us.
inline constexpr uint32_t kIdlePollsBeforeSleep = 16;
// Upper bound on ethdev port ids this build handles (DPDK's RTE_MAX_ETHPORTS
// is 32 in Debian's build; checked in worker.cc).
inline constexpr size_t kMaxPorts = 32;

// What a worker reports about its TCP stack and services, filled on its own
// lcore on request (Worker::RequestTcpSnapshot) into buffers allocated at
// start-up.
struct TcpSnapshot {
  struct Service {
    ServiceCounters counters;
    size_t recent_count = 0;
    std::array<TransferRecord, TcpService::kRecent> recent{};
    bool iwarp = false;            // an iwarp_responder / iwarp_client
    IwarpServiceCounters iwarp_counters;
    IwarpRunResult run;            // iwarp_client
    std::optional<rdmap::TerminateCode> term_sent, term_received;  // the last ones
    IwarpService::TestRegion test_region;  // iwarp_fpdu_test
  };
  bool enabled = false;
  tcp::TcpStackStats stats;
  size_t conn_count = 0;                 // valid entries of conns
  std::vector<tcp::TcpConnInfo> conns;   // capacity tcp.max_connections
  std::vector<int16_t> conn_service;     // index into services, -1 = none
  std::vector<Service> services;         // same order as config services
  size_t qp_count = 0;                   // valid entries of qps
  std::vector<IwarpQpInfo> qps;          // iWARP QPs with a connection, all services
  // RDMA over SCTP (worker 0 with sctp.enabled).
  struct Sctp {
    bool enabled = false;
    std::array<uint64_t, static_cast<size_t>(sctp::HostCounter::kCount)> host{};
    std::array<uint64_t, static_cast<size_t>(sctp::EndpointCounter::kCount)> endpoint{};
    // DDP session counters and stream ends, every association so far.
    std::array<uint64_t, static_cast<size_t>(sctp::DdpCounter::kCount)> ddp{};
    std::array<uint64_t, static_cast<size_t>(sctp::StreamEnd::kCount)> ends{};
    uint64_t associations = 0;     // tracked now
    uint64_t associations_up = 0;  // of those, up for DDP
    uint64_t peers = 0;            // remote addresses with an AF_CONN link
    uint64_t outbound_pending = 0;
  } sctp;
};

class Worker final : public L3Sink, public tcp::TcpOutput {
 public:
  // `index` is the worker's position in workers.lcores; `stats` and `stop`
  // outlive it. The loop ends once `stop` reads true.
  Worker(uint32_t index, uint32_t lcore, std::span<const PortRuntime> ports,
         const config::Config& cfg, LcoreStats* stats, const std::atomic<bool>* stop);
  ~Worker() override;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Start-up: creates the rings on the lcore's socket, the TCP stack (tcp:)
  // and the services (services:; a source only on worker 0).
  absl::Status Init();
  // Start-up: the full set of workers (including this one), for steering and
  // neighbour updates.
  void SetPeers(std::span<Worker* const> peers);

  // The loop: PollOnce until the stop flag becomes true, with the idle
  // back-off; then flushes its TX buffers and frees what its ring holds.
  void Run();

  // One loop iteration (owning lcore only): neighbour updates, steered
  // frames, one rx burst per owned queue, timers, TX flush. Returns the
  // number of frames and updates handled. Reads the microsecond clock once.
  uint32_t PollOnce(uint64_t now_ms);

  // Handles frames as if just received (counts rx packets/bytes, steers,
  // runs the L3 stack, queues replies). Takes ownership of all `n`; returns n.
  uint16_t ReceiveBurst(rte_mbuf* const* pkts, uint16_t n, uint64_t now_ms);

  // Milliseconds / microseconds on the worker's clock (TSC based).
  uint64_t NowMs() const;
  uint64_t NowUs() const;
  // Both from one TSC read (the loop reads the clock once per iteration; a
  // TSC read is not free in a VM).
  struct Now {
    uint64_t ms;
    uint64_t us;
  };
  Now NowBoth() const;
  Now NowFromCycles(uint64_t cycles) const;

  // Any thread but the worker's (control path): asks the worker to fill its
  // TcpSnapshot and waits up to `timeout_ms` for it. On success the snapshot
  // stays unchanged until the next request; callers serialise requests.
  const TcpSnapshot* RequestTcpSnapshot(uint32_t timeout_ms);
  tcp::TcpStack* tcp_stack() { return tcp_.get(); }
  const std::vector<std::unique_ptr<TcpService>>& services() const { return services_; }
  // The engine of application QPs on the wire (libiwarp QPs connected to
  // other hosts): worker 0 only, when tcp: and app_interface: are enabled;
  // nullptr otherwise. Polled by this worker every loop; the control thread
  // reaches it only through its rings (appif/wire_engine.h).
  appif::WireEngine* wire_engine() { return wire_.get(); }
  // The process's SCTP endpoint (sctp/endpoint.h): worker 0 only, when
  // sctp.enabled; nullptr otherwise. Every call into it must come from this
  // worker's lcore (from inside its loop); it is polled and drained every
  // loop iteration, and SCTP packets other workers receive are steered here.
  sctp::SctpEndpoint* sctp_endpoint() { return sctp_.get(); }
  // The local TCP ports application QPs and listeners hold (appif/app_ports.h):
  // worker 0 only, next to its wire engine (which is its only writer);
  // nullptr otherwise. With several workers every worker reads it on RX and
  // hands frames to a held port to worker 0.
  appif::AppPortTable* app_ports() { return app_ports_owned_.get(); }

  const L3Stack& stack() const { return stack_; }
  // Frames the impairment stages of this worker hold (delay, reorder).
  size_t impair_held() const;

  uint32_t index() const { return index_; }
  uint32_t lcore() const { return lcore_; }

  // Any thread, after it made work visible to this worker: ends its block
  // if it blocks (workers.idle_block_after_us); no system call otherwise.
  void Wake();

  // L3Sink (owning lcore only).
  void SendFrame(uint16_t port, ByteSpan frame) override;
  void TransmitResolved(PacketHandle pkt, uint16_t port, const MacAddr& src,
                        const MacAddr& dst) override;
  void FreePacket(PacketHandle pkt) override;
  void NeighborLearned(uint32_t ip, uint16_t port, const MacAddr& mac) override;

  // tcp::TcpOutput (owning lcore only): Ethernet + IPv4 around the segment in
  // a fresh mbuf, next hop through L3Stack::Resolve.
  bool EmitSegment(uint32_t src_ip, uint32_t dst_ip, ByteSpan tcp_header,
                   std::span<const ByteSpan> payload) override;
  // The payload's checksum is computed while it is copied into the mbuf.
  bool SumsPayload() const override { return true; }
  // TCP send buffers in DPDK memory when a TSO port carries payload by
  // reference (PortRuntime::tx_by_reference); see TcpOutput.
  MutableByteSpan SendMemory(size_t buffers, size_t buffer_bytes) override;
  bool SendBufferReusable(uint32_t index) const override;

 private:
  // PollOnce / ReceiveBurst with the clock already read (one TSC read per
  // loop iteration).
  uint32_t PollAt(uint64_t now_ms, uint64_t now_us);
  uint16_t HandleBurst(rte_mbuf* const* pkts, uint16_t n, uint64_t now_ms);

  struct RxQueue {
    uint16_t port_id;
    uint16_t queue_id;
    bool tap;  // net_tap: rx_burst reads only after the SIGIO handler ran
  };
  // The TCP segment run a TSO frame is being built from (ports[].tso): the
  // last frame of a TX buffer, which later segments of the same connection
  // join while they are consecutive, carry the same ACK-only header but for
  // the sequence number, and every segment but the last has `seg_len` bytes.
  struct TsoRun {
    rte_mbuf* head = nullptr;  // the buffer's last frame; nullptr = no run
    rte_mbuf* last = nullptr;  // last mbuf of head's chain
    uint32_t next_seq = 0;     // sequence number the next segment must carry
    uint16_t seg_len = 0;      // payload bytes of each segment (tso_segsz)
    uint16_t segs = 0;         // segments the frame carries
    bool closed = false;       // a shorter segment was the last one
  };
  struct TxBuffer {
    uint16_t port_id = 0;
    uint16_t queue_id = 0;
    uint16_t count = 0;
    uint16_t held = 0;  // frames at the front already refused once (counted in tx_held)
    bool tso = false;             // the port takes TSO frames (PortRuntime::tso)
    bool tx_ip_checksum = false;  // ... and fills their IPv4 checksum
    bool by_reference = false;    // TSO payload attached from send memory, not copied
    TsoRun run;
    std::array<rte_mbuf*, kMaxBurst> pkts{};
  };
  // ARP knowledge passed between workers (ring element; size multiple of 4).
  struct NeighborUpdate {
    uint32_t ip;
    uint16_t port;
    uint8_t mac[6];
  };
  static_assert(sizeof(NeighborUpdate) == 12);

  // Adapts the DPDK-free impairment stages to mbufs: forwards into the RX
  // path (HandlePacket) or the TX buffers (Enqueue).
  class ImpairGlue final : public ImpairSink {
   public:
    ImpairGlue(Worker* w, bool tx) : worker_(w), tx_(tx) {}
    void Forward(PacketHandle pkt) override;
    PacketHandle Copy(PacketHandle pkt) override;
    void Release(PacketHandle pkt) override;

   private:
    Worker* worker_;
    bool tx_;
  };

  void HandlePacket(rte_mbuf* m, bool steered, uint64_t now_ms);
  // Writes the TCP checksum of an Ethernet/IPv4/TCP frame (any other frame
  // is left alone): for frames whose checksum the device left unfilled
  // before an rx impairment stage sees them.
  static void FillTcpChecksum(MutableByteSpan frame);
  // Every frame to send: through the port's TX impairment stage, then Enqueue.
  void Transmit(rte_mbuf* m);
  // Queues `m` on the TX buffer of m->port; sends a full buffer at once.
  void Enqueue(rte_mbuf* m);
  // Hands the buffer to tx_burst; frames the device does not take stay in
  // the buffer, in order, for the next flush (counted as tx_held).
  void Flush(TxBuffer& tx);
  void FlushAll();
  // Frames every TX buffer can still take (the smallest over the ports).
  size_t TxRoom() const;
  // Stop path: frees what the buffers still hold (counted as tx_ring_full).
  void DropHeldTx();
  void DrainRings();
  absl::Status InitTcp();
  absl::Status InitSctp();
  // Sends every SCTP packet the endpoint queued as an IPv4 datagram.
  uint32_t DrainSctp();
  // Ethernet + IPv4 (protocol `proto`) around `payload` in a fresh mbuf, next
  // hop through L3Stack::Resolve; false if no mbuf (counted).
  bool EmitDatagram(uint8_t proto, uint32_t src_ip, uint32_t dst_ip, ByteSpan payload);
  // The one IPv4 transmit path of EmitSegment and EmitDatagram: Ethernet +
  // IPv4 (protocol `proto`) around `first` then `rest`, copied into a fresh
  // mbuf, next hop through L3Stack::Resolve; false if no mbuf (counted).
  // With `tcp_payload_sum`, `first` is a TCP header whose checksum still
  // lacks the payload (tcp::TcpOutput::SumsPayload): `rest` is summed while
  // it is copied and the copied header's checksum completed.
  // `built`, when given, receives the frame's mbuf (nullptr if none was
  // made); it may already be sent or queued for ARP when this returns.
  bool EmitIpv4(uint8_t proto, uint32_t src_ip, uint32_t dst_ip, ByteSpan first,
                std::span<const ByteSpan> rest, bool tcp_payload_sum = false,
                rte_mbuf** built = nullptr);
  // Appends a segment's payload to the run's chain: by reference where it
  // lies in a send buffer (the last mbuf grows when the bytes follow on),
  // copied into further mbufs of `pool` otherwise. False, with the frame
  // unchanged, when mbufs run out.
  bool AppendPayload(TsoRun& r, rte_mempool* pool, bool by_ref, std::span<const ByteSpan> payload,
                     size_t len);
  // Attaches `piece` of the send buffer of `sh` to the fresh mbuf `e`.
  void AttachSendBuffer(rte_mbuf* e, ByteSpan piece, rte_mbuf_ext_shared_info* sh);
  // A TCP segment whose payload stays in a send buffer: headers in one
  // mbuf, the payload attached, the TCP checksum left to the device.
  bool EmitTcpByReference(uint32_t src_ip, uint32_t dst_ip, ByteSpan tcp_header,
                          ByteSpan payload, rte_mbuf_ext_shared_info* sh, rte_mbuf** built);
  // Hands a built frame to the next hop (or the ARP queue).
  void Route(rte_mbuf* m, uint32_t dst_ip);
  // The shared-info of the send buffer that holds all of `piece`, or null
  // (not send memory, or the buffer's reference count is full).
  rte_mbuf_ext_shared_info* SendBufferOf(ByteSpan piece) const;
  // TSO (ports[].tso): appends the segment to the run at the end of a TX
  // buffer when it continues it (see TsoRun); false if it does not, or no
  // mbuf was free, and the segment is then sent as a frame of its own. A
  // frame that can take no further segment is handed to the device at once.
  bool AppendToTsoRun(uint32_t src_ip, uint32_t dst_ip, ByteSpan tcp_header,
                      std::span<const ByteSpan> payload, size_t payload_len);
  // Starts a run at frame `m` (just built from this segment) if it is the
  // last frame of a TSO port's TX buffer and may be continued.
  void StartTsoRun(rte_mbuf* m, ByteSpan tcp_header, size_t payload_len);
  uint32_t SourceFor(uint32_t dst_ip) const;
  // Timers, services and the wire engine; returns the wire engine's work
  // (application QPs count as activity: no idle sleep while they move data).
  uint32_t PollTcp(uint64_t now_ms);
  void FillTcpSnapshot();
  // TcpStack port filter of worker 0's active opens: true if the peer's
  // replies to `tuple` reach this worker on every port - by the device's
  // RSS (its key and redirection table as read back at start-up, queue q
  // polled by worker q % workers) or by software steering (flow_hash.h).
  static bool PortOwnedHere(void* worker, const tcp::FourTuple& tuple);
  // Start-up: reads back the RSS key and redirection table of an RSS port.
  void ReadRss(const PortRuntime& p);
  // Blocking when idle (see the top of this file). On the worker's lcore, at
  // the start of Run: registers the receive interrupts and the wake eventfd
  // with the thread's epoll; false (logged) if that fails.
  bool SetUpIdleBlock();
  // Blocks until woken if nothing can be pending (otherwise returns at once,
  // or after the one poll that found work).
  void BlockIdle(uint64_t now_us);
  void SetRxInterrupts(bool on);
  // Wakes the peers this poll steered frames or neighbour updates to.
  void WakeMarkedPeers();
  // Hands `m` to worker `owner`'s steer ring (counted steered_out, the
  // owner marked for a wake-up); false, counted steer_ring_full, when the
  // ring is full: the caller still owns `m`.
  bool SteerTo(uint32_t owner, rte_mbuf* m);

  const uint32_t index_;
  const uint32_t lcore_;
  const uint16_t burst_;
  const uint32_t idle_sleep_us_;
  const uint32_t idle_block_after_us_;
  const uint32_t idle_block_max_ms_;
  // Blocking when idle: the wake eventfd, its epoll registration, whether
  // the worker sleeps (1) or is about to, and the peers to wake after this
  // poll (by worker index).
  int wake_fd_ = -1;
  std::unique_ptr<rte_epoll_event> wake_event_;
  alignas(64) std::atomic<uint32_t> sleeping_{0};
  std::vector<Worker*> peers_;
  std::vector<uint8_t> wake_peer_;
  bool any_peer_to_wake_ = false;
  LcoreStats* const stats_;
  const std::atomic<bool>* const stop_;
  L3Stack stack_;
  std::vector<RxQueue> rx_queues_;
  std::vector<TxBuffer> tx_;
  std::array<int16_t, kMaxPorts> tx_index_;        // port id -> tx_ slot, -1 if none
  std::array<rte_mempool*, kMaxPorts> pool_{};     // port id -> mempool
  std::array<bool, kMaxPorts> soft_steer_{};       // port id -> software steering
  // Ports whose device hashes flows to queues (Steering::kRss), as the
  // device does it: the low bits of the Toeplitz hash under `key` index
  // `reta` (entry -> RX queue).
  struct RssPort {
    std::vector<uint8_t> key;
    std::vector<uint16_t> reta;
  };
  std::vector<RssPort> rss_ports_;
  // Some port is steered in software, or an RSS port's key or table could
  // not be read back (then flow_hash.h's rule is all we know).
  bool soft_rule_ = false;
  // port id -> the device's coalesced-frame flag (RX_LRO) is believed
  // (ports[].tso not off).
  std::array<bool, kMaxPorts> rx_coalesce_trusted_{};
  // port id -> its TCP checksum verdict is believed as well (no rx
  // impairment rules rewriting frames after the device judged them).
  std::array<bool, kMaxPorts> rx_checksum_trusted_{};
  bool any_tso_ = false;                           // some TX buffer has tso
  bool all_by_reference_ = false;  // every TX buffer has tso and by_reference
  // TCP send buffers in DPDK memory (SendMemory): one shared-info per
  // buffer counts the worker's reference and every mbuf attached to the
  // buffer; the block goes with the last reference of all (mbufs may
  // outlive the worker in a device's queue until the port closes). The
  // destructor drops the worker's references; declared before tcp_ and the
  // services, it runs after they are gone.
  struct SendBuffers {
    rte_mbuf_ext_shared_info* infos = nullptr;  // one per buffer; null: none lent
    const uint8_t* mem = nullptr;
    size_t count = 0;
    size_t bytes = 0;  // per buffer
    SendBuffers() = default;
    SendBuffers(const SendBuffers&) = delete;
    SendBuffers& operator=(const SendBuffers&) = delete;
    ~SendBuffers();
  };
  SendBuffers send_;
  std::vector<rte_ring*> peer_steer_rings_;        // by worker index
  std::vector<rte_ring*> peer_neighbor_rings_;     // by worker index, ours excluded (nullptr)
  rte_ring* steer_ring_ = nullptr;
  rte_ring* neighbor_ring_ = nullptr;
  uint64_t us_per_cycle_q40_ = 0;  // 10^6 / timer hz, fixed point with 40 fraction bits
  // Run's loop accounting (LcoreStats::poll_us, busy_us): cycles summed
  // here, published in microseconds about once a millisecond.
  void AccountLoop(uint64_t cycles, bool busy);
  void PublishLoopTime();
  uint64_t loop_cycles_ = 0;
  uint64_t busy_cycles_ = 0;
  uint64_t unpublished_cycles_ = 0;
  uint64_t publish_every_cycles_ = 1;
  uint64_t last_tick_ms_ = 0;
  uint64_t now_ms_ = 0;  // time of the current poll, for frames the stages release
  ImpairGlue rx_glue_{this, false};
  ImpairGlue tx_glue_{this, true};
  // port id -> impairment stage, nullptr when the port has no rules.
  std::array<std::unique_ptr<ImpairmentStage>, kMaxPorts> rx_impair_;
  std::array<std::unique_ptr<ImpairmentStage>, kMaxPorts> tx_impair_;
  std::vector<ImpairmentStage*> impair_stages_;  // all of the above, for polling

  // TCP (tcp:, services:).
  const config::Config& cfg_;
  std::vector<uint32_t> local_ips_;
  std::vector<InterfaceAddress> local_addrs_;
  uint16_t tcp_mtu_ = 1500;
  uint32_t worker_count_ = 1;
  uint16_t ip_id_ = 0;
  std::unique_ptr<tcp::IsnGenerator> isn_;
  // SCTP (worker 0, sctp.enabled). Declared before the wire engine and the
  // services: destroyed after every association and listener they hold.
  std::unique_ptr<sctp::SctpEndpoint> sctp_;
  std::unique_ptr<SctpServiceHost> sctp_services_;
  // Declared before wire_: destroyed after the engine that writes it. Read
  // by the other workers through app_ports_ (set in SetPeers; nullptr with
  // one worker or no wire engine).
  std::unique_ptr<appif::AppPortTable> app_ports_owned_;
  const appif::AppPortTable* app_ports_ = nullptr;
  // Declared before tcp_: destroyed after the stack, which may still hold
  // its listeners and connection proxies.
  std::unique_ptr<appif::WireEngine> wire_;
  std::unique_ptr<tcp::TcpStack> tcp_;
  ServiceClock clock_;
  std::vector<std::unique_ptr<TcpService>> services_;
  std::vector<IwarpService*> iwarp_services_;  // same order; nullptr for plain TCP services
  // The one service that wants polling right after the segment that gave it
  // work (iwarp_fpdu_test, test configurations only); nullptr otherwise.
  IwarpService* prompt_service_ = nullptr;
  TcpSnapshot snapshot_;
  std::atomic<uint64_t> snapshot_request_{0};
  std::atomic<uint64_t> snapshot_done_{0};
  uint64_t snapshot_served_ = 0;
};

// rte_eal_remote_launch entry point; `arg` is a Worker*.
int WorkerMain(void* arg);

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_WORKER_H_
