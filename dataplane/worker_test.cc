// Worker tests on a real EAL (--no-huge, --no-pci) with a net_null port that
// receives nothing (no-rx=1; created per test): frames are fed through ReceiveBurst, so every
// count is exact. Two workers on one port with one RX queue use software
// steering.
#include "dataplane/worker.h"

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "dataplane/l3/flow_hash.h"
#include "dataplane/l3/test_frames.h"
#include "dataplane/eal_test_env.h"
#include "dataplane/port.h"
#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

using testing::kOurIp;
using testing::kPeerIp;
using testing::kPeerMac;

const ::testing::Environment* const kEal = RegisterEalTestEnvironment("worker");

std::vector<uint8_t> TcpFrame(const MacAddr& dst_mac, uint16_t src_port) {
  testing::Ipv4Fields ip;
  ip.protocol = 6;
  std::vector<uint8_t> tcp(20, 0);
  StoreBe16(tcp.data(), src_port);
  StoreBe16(tcp.data() + 2, 4791);
  return testing::Ipv4Frame(ip, tcp, dst_mac);
}

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EalTestUp()) GTEST_SKIP() << EalTestError();
    cfg_.workers.lcores = {1, 2};
    cfg_.mempools.mbufs = 4095;
    cfg_.mempools.cache = 32;
    // A small TCP stack per worker (its buffers are allocated up front).
    cfg_.tcp.max_connections = 16;
    cfg_.tcp.syn_backlog = syn_backlog_;
    cfg_.tcp.send_buffer_bytes = 16384;
    cfg_.tcp.receive_buffer_bytes = 16384;
    // Closing a vdev port releases it: each test gets a device of its own.
    static int instance = 0;
    vdev_ = vdev_driver_ + std::to_string(instance++);
    config::PortConfig pc;
    pc.name = "null0";
    pc.vdev = vdev_ + vdev_args_;
    ASSERT_EQ(rte_dev_probe(pc.vdev.c_str()), 0);
    pc.rx_queues = rx_queues_;  // two workers, one queue: software steering
    pc.impairment = impairment_;
    cfg_.ports.push_back(pc);
    config::InterfaceConfig itf;
    itf.port = "null0";
    itf.ipv4 = {kOurIp, 24};
    cfg_.interfaces.push_back(itf);
    absl::StatusOr<PortRuntime> p = SetupPort(cfg_, 0);
    ASSERT_TRUE(p.ok()) << p.status();
    ports_.push_back(std::move(*p));
    // One queue: software steering; two: net_null hashes with our RSS key.
    ASSERT_EQ(ports_[0].steering, rx_queues_ == 1 ? Steering::kSoftware : Steering::kRss);
    for (uint32_t i = 0; i < 2; ++i) {
      workers_.push_back(std::make_unique<Worker>(i, cfg_.workers.lcores[i], ports_, cfg_,
                                                  &stats_[i], &stop_));
      ASSERT_TRUE(workers_.back()->Init().ok());
    }
    std::vector<Worker*> peers = {workers_[0].get(), workers_[1].get()};
    for (auto& w : workers_) w->SetPeers(peers);
  }
  void TearDown() override {
    workers_.clear();
    for (PortRuntime& p : ports_) ClosePort(&p);
  }

  rte_mbuf* Mbuf(const std::vector<uint8_t>& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(ports_[0].pool);
    EXPECT_NE(m, nullptr);
    char* d = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
    std::memcpy(d, frame.data(), frame.size());
    m->port = ports_[0].port_id;
    return m;
  }
  uint32_t Owner(uint16_t src_port) const {
    return OwnerOfHash(FlowHash({kPeerIp, kOurIp, src_port, 4791}), 2);
  }
  unsigned FreeMbufs() const { return rte_mempool_avail_count(ports_[0].pool); }

  std::string vdev_;
  // Set by derived fixtures before SetUp.
  std::string vdev_driver_ = "net_null";
  std::string vdev_args_ = ",no-rx=1";
  config::ImpairmentConfig impairment_;  // set by derived fixtures before SetUp
  uint16_t rx_queues_ = 1;               // set by derived fixtures before SetUp
  uint32_t syn_backlog_ = 8;             // set by derived fixtures before SetUp
  config::Config cfg_;
  std::vector<PortRuntime> ports_;
  LcoreStats stats_[2];
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Worker>> workers_;
};

TEST_F(WorkerTest, SoftwareSteeringHandsEachFlowToItsOwner) {
  const unsigned free_before = FreeMbufs();
  std::vector<rte_mbuf*> burst;
  uint64_t owned[2] = {0, 0};
  for (uint16_t sport = 40000; sport < 40064; ++sport) {
    burst.push_back(Mbuf(TcpFrame(ports_[0].mac, sport)));
    ++owned[Owner(sport)];
  }
  ASSERT_GT(owned[0], 0u);
  ASSERT_GT(owned[1], 0u);
  const uint64_t now = workers_[0]->NowMs();
  EXPECT_EQ(workers_[0]->ReceiveBurst(burst.data(), static_cast<uint16_t>(burst.size()), now), 64);
  EXPECT_EQ(stats_[0].rx_packets.Get(), 64u);
  EXPECT_EQ(stats_[0].steered_out.Get(), owned[1]);
  // The owner's TCP stack gets the segment (and drops it: the test frames
  // carry no valid TCP checksum).
  const auto tcp_drops = [this](size_t w) {
    return workers_[w]->tcp_stack()->stats().drops[static_cast<size_t>(DropReason::kTcpBadChecksum)];
  };
  EXPECT_EQ(tcp_drops(0), owned[0]);
  EXPECT_EQ(workers_[1]->PollOnce(now), owned[1]);
  EXPECT_EQ(stats_[1].steered_in.Get(), owned[1]);
  EXPECT_EQ(stats_[1].rx_packets.Get(), 0u);
  EXPECT_EQ(tcp_drops(1), owned[1]);
  EXPECT_EQ(FreeMbufs(), free_before);  // every mbuf came back
}

TEST_F(WorkerTest, FullSteerRingDropsUnderItsName) {
  std::vector<uint16_t> to_worker1;
  for (uint16_t sport = 1024; to_worker1.size() < kSteerRingSize + 76; ++sport) {
    if (Owner(sport) == 1) to_worker1.push_back(sport);
  }
  const uint64_t now = workers_[0]->NowMs();
  for (uint16_t sport : to_worker1) {
    rte_mbuf* m = Mbuf(TcpFrame(ports_[0].mac, sport));
    workers_[0]->ReceiveBurst(&m, 1, now);
  }
  // An rte_ring of size N holds N - 1 entries.
  EXPECT_EQ(stats_[0].steered_out.Get(), kSteerRingSize - 1);
  EXPECT_EQ(stats_[0].Dropped(DropReason::kSteerRingFull), 77u);
  while (workers_[1]->PollOnce(now) != 0) {
  }
  EXPECT_EQ(stats_[1].steered_in.Get(), kSteerRingSize - 1);
}

TEST_F(WorkerTest, ArpLearnedByOneWorkerReachesTheOther) {
  const uint64_t now = workers_[0]->NowMs();
  rte_mbuf* m = Mbuf(testing::ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{},
                                       kOurIp));
  workers_[0]->ReceiveBurst(&m, 1, now);
  EXPECT_EQ(workers_[1]->stack().arp_cache().Lookup(kPeerIp, now), nullptr);
  EXPECT_EQ(workers_[1]->PollOnce(now), 1u);  // the neighbour update
  const ArpEntry* e = workers_[1]->stack().arp_cache().Lookup(kPeerIp, now);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->mac, kPeerMac);
  // Worker 0's reply leaves through its own TX queue when it flushes.
  EXPECT_EQ(stats_[0].tx_packets.Get(), 0u);
  workers_[0]->PollOnce(now);
  EXPECT_EQ(stats_[0].tx_packets.Get(), 1u);
  EXPECT_EQ(stats_[0].tx_bytes.Get(), 42u);
  EXPECT_EQ(stats_[0].arp_replies_out.Get(), 1u);
  rte_eth_stats st;
  ASSERT_EQ(rte_eth_stats_get(ports_[0].port_id, &st), 0);
  EXPECT_EQ(st.opackets, 1u);
}

TEST_F(WorkerTest, EchoReplyIsTrimmedToTheDatagram) {
  auto frame = testing::Ipv4Frame({}, testing::IcmpEcho(8, 1, 1, 10), ports_[0].mac);
  frame.resize(60, 0);  // padded to the Ethernet minimum
  rte_mbuf* m = Mbuf(frame);
  const uint64_t now = workers_[0]->NowMs();
  workers_[0]->ReceiveBurst(&m, 1, now);
  workers_[0]->PollOnce(now);
  EXPECT_EQ(stats_[0].icmp_echo_replies_out.Get(), 1u);
  EXPECT_EQ(stats_[0].rx_bytes.Get(), 60u);
  EXPECT_EQ(stats_[0].tx_bytes.Get(), 14u + 20 + 8 + 10);
}

TEST_F(WorkerTest, ChainedMbufIsDroppedUnderItsName) {
  const unsigned free_before = FreeMbufs();
  auto frame = testing::Ipv4Frame({}, testing::IcmpEcho(8, 1, 1, 10), ports_[0].mac);
  rte_mbuf* head = Mbuf(std::vector<uint8_t>(frame.begin(), frame.begin() + 20));
  rte_mbuf* tail = Mbuf(std::vector<uint8_t>(frame.begin() + 20, frame.end()));
  ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
  workers_[0]->ReceiveBurst(&head, 1, workers_[0]->NowMs());
  EXPECT_EQ(stats_[0].Dropped(DropReason::kRxMultiSegment), 1u);
  EXPECT_EQ(stats_[0].icmp_echo_requests_in.Get(), 0u);
  EXPECT_EQ(FreeMbufs(), free_before);
}

// net_ring without arguments: each queue is one rte_ring of 1024 slots
// (1023 usable) that TX fills and RX of the same queue empties, so a worker
// that sends more than 1023 frames before polling finds its device ring full.
class WorkerFullTxRingTest : public WorkerTest {
 protected:
  void SetUp() override {
    vdev_driver_ = "net_ring_txfull";
    vdev_args_ = "";
    WorkerTest::SetUp();
  }
};

TEST_F(WorkerFullTxRingTest, FramesTheDeviceRefusesAreHeldAndSentLaterNotDropped) {
  const unsigned free_before = FreeMbufs();
  const auto request = testing::Ipv4Frame({}, testing::IcmpEcho(8, 1, 1, 10), ports_[0].mac);
  constexpr uint32_t kFrames = 1100;  // 77 more than the ring holds, fewer than kMaxBurst more
  const uint64_t now = workers_[0]->NowMs();
  for (uint32_t i = 0; i < kFrames; ++i) {
    rte_mbuf* m = Mbuf(request);
    workers_[0]->ReceiveBurst(&m, 1, now);
  }
  EXPECT_EQ(stats_[0].icmp_echo_replies_out.Get(), kFrames);
  // The device took what its ring holds; the rest waits in the worker.
  EXPECT_EQ(stats_[0].tx_packets.Get(), 1023u);
  // Every frame the ring refused was held, each counted once.
  EXPECT_EQ(stats_[0].tx_held.Get(), kFrames - 1023u);
  EXPECT_EQ(stats_[0].Dropped(DropReason::kTxRingFull), 0u);
  // Each poll empties part of the ring (RX of the same queue) and flushes
  // what the worker held, in order, until every reply has left.
  for (int i = 0; i < 200 && stats_[0].tx_packets.Get() < kFrames; ++i) workers_[0]->PollOnce(now);
  EXPECT_EQ(stats_[0].tx_packets.Get(), kFrames);
  EXPECT_EQ(stats_[0].tx_held.Get(), kFrames - 1023u);  // retries do not count again
  EXPECT_EQ(stats_[0].Dropped(DropReason::kTxRingFull), 0u);
  for (int i = 0; i < 200 && workers_[0]->PollOnce(now) != 0; ++i) {
  }
  EXPECT_EQ(FreeMbufs(), free_before);  // nothing leaked or stuck
}

// A SYN (RFC 9293 3.1, no options) from the peer to our `dport`, with its
// checksum over the pseudo header.
std::vector<uint8_t> SynFrame(const MacAddr& dst_mac, uint16_t sport, uint16_t dport) {
  std::vector<uint8_t> tcp(20, 0);
  StoreBe16(tcp.data(), sport);
  StoreBe16(tcp.data() + 2, dport);
  StoreBe32(tcp.data() + 4, 1000);  // seq
  tcp[12] = 5 << 4;
  tcp[13] = 0x02;  // SYN
  StoreBe16(tcp.data() + 14, 65535);
  uint8_t pseudo[12];
  StoreBe32(pseudo, kPeerIp);
  StoreBe32(pseudo + 4, kOurIp);
  pseudo[8] = 0;
  pseudo[9] = 6;
  StoreBe16(pseudo + 10, 20);
  StoreBe16(tcp.data() + 16, ChecksumFold(ChecksumAdd(ChecksumAdd(0, pseudo), tcp)));
  testing::Ipv4Fields ip;
  ip.protocol = 6;
  return testing::Ipv4Frame(ip, tcp, dst_mac);
}

// TCP through a real worker: a SYN to the echo service is answered with a
// SYN-ACK built by the worker (Ethernet + IPv4 around the engine's segment)
// once the peer's MAC is known.
class WorkerTcpTest : public WorkerTest {
 protected:
  void SetUp() override {
    config::ServiceConfig echo;
    echo.name = "echo";
    echo.type = config::ServiceType::kEcho;
    echo.port = 7;
    cfg_.services.push_back(echo);
    WorkerTest::SetUp();
  }
};

TEST_F(WorkerTcpTest, SynToAServiceIsAnsweredAfterArp) {
  // A source port whose flow worker 0 owns, so no steering is involved.
  uint16_t sport = 40000;
  while (OwnerOfHash(FlowHash({kPeerIp, kOurIp, sport, 7}), 2) != 0) ++sport;
  const unsigned free_before = FreeMbufs();
  const uint64_t now = workers_[0]->NowMs();
  rte_mbuf* m = Mbuf(SynFrame(ports_[0].mac, sport, 7));
  workers_[0]->ReceiveBurst(&m, 1, now);
  workers_[0]->PollOnce(now);
  tcp::TcpStack* tcp = workers_[0]->tcp_stack();
  ASSERT_NE(tcp, nullptr);
  EXPECT_EQ(tcp->stats().segments_in, 1u);
  EXPECT_EQ(tcp->connection_count(), 1u);
  // The peer's MAC is unknown: the SYN-ACK waits for ARP, which went out.
  EXPECT_EQ(stats_[0].arp_requests_out.Get(), 1u);
  EXPECT_EQ(stats_[0].tx_packets.Get(), 1u);
  EXPECT_EQ(workers_[0]->stack().pending_packets(kPeerIp), 1u);
  rte_mbuf* reply = Mbuf(testing::ArpFrame(2, ports_[0].mac, kPeerMac, kPeerIp, ports_[0].mac,
                                           kOurIp));
  workers_[0]->ReceiveBurst(&reply, 1, now);
  workers_[0]->PollOnce(now);
  EXPECT_EQ(stats_[0].tx_packets.Get(), 2u);  // ARP request + SYN-ACK
  // The SYN carried no options, so the SYN-ACK carries the MSS only
  // (RFC 7323 2.2, 3.2; RFC 2018 2): 14 + 20 + 20 + 4 bytes.
  EXPECT_EQ(stats_[0].tx_bytes.Get() - 42, 58u);
  tcp::TcpConnInfo info;
  ASSERT_EQ(tcp->ListConnections(std::span<tcp::TcpConnInfo>(&info, 1)), 1u);
  EXPECT_EQ(info.state, tcp::TcpState::kSynReceived);
  EXPECT_EQ(info.tuple.local_port, 7);
  EXPECT_EQ(info.tuple.remote_port, sport);
  EXPECT_EQ(info.segments_out, 1u);
  workers_.clear();  // frees the worker's TCP stack and ARP queue
  EXPECT_EQ(FreeMbufs(), free_before);
}

// Application QPs and listeners live on worker 0 (app_interface.h): frames
// to a local port the application interface holds reach worker 0's stack
// whichever worker received them (appif/app_ports.h). An echo service on
// port 7 runs on both workers.
class WorkerAppTest : public WorkerTcpTest {
 protected:
  void SetUp() override {
    cfg_.app_interface.enabled = true;
    syn_backlog_ = 32;
    WorkerTcpTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_NE(workers_[0]->wire_engine(), nullptr);
    ASSERT_EQ(workers_[1]->wire_engine(), nullptr);
    ASSERT_NE(workers_[0]->app_ports(), nullptr);
  }
  // A command to worker 0's wire engine, answered by the worker's next poll;
  // returns the kAck status.
  int Command(appif::WireCommandType type, uint32_t listener_id, uint16_t port) {
    appif::WireEngine& w = *workers_[0]->wire_engine();
    appif::WireCommand c;
    c.type = type;
    c.seq = ++seq_;
    c.listener_id = listener_id;
    c.port = port;
    EXPECT_TRUE(w.PushCommand(c));
    workers_[0]->PollOnce(workers_[0]->NowMs());
    appif::WireEvent ev;
    while (w.PopEvent(&ev)) {
      if (ev.type == appif::WireEventType::kAck && ev.seq == c.seq) return ev.status;
    }
    ADD_FAILURE() << "no ack";
    return -1;
  }
  // Both workers learn the peer's MAC (its ARP request to worker 0), so
  // replies leave at once instead of waiting in an ARP queue.
  void LearnPeer() {
    const uint64_t now = workers_[0]->NowMs();
    rte_mbuf* m = Mbuf(testing::ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{},
                                         kOurIp));
    workers_[0]->ReceiveBurst(&m, 1, now);
    workers_[0]->PollOnce(now);
    workers_[1]->PollOnce(now);
    ASSERT_NE(workers_[1]->stack().arp_cache().Lookup(kPeerIp, now), nullptr);
  }
  uint32_t seq_ = 0;
};

TEST_F(WorkerAppTest, SynsToAnApplicationListenerReachWorkerZeroFromEitherWorker) {
  LearnPeer();
  const appif::AppPortTable& ports = *workers_[0]->app_ports();
  EXPECT_TRUE(ports.Reserved(7));  // the echo service's
  EXPECT_FALSE(ports.Held(4791));
  ASSERT_EQ(Command(appif::WireCommandType::kListen, 1, 4791), 0);
  EXPECT_TRUE(ports.Held(4791));
  EXPECT_EQ(ports.holds(4791), 1u);
  EXPECT_EQ(workers_[0]->wire_engine()->stats().tcp_port_holds, 1u);

  // 16 SYNs from different source ports, alternately received by worker 0
  // and worker 1; the flow hash owns about half of them to each worker.
  const unsigned free_before = FreeMbufs();
  const uint64_t now = workers_[0]->NowMs();
  uint32_t hashed_to[2] = {0, 0};
  for (uint16_t i = 0; i < 16; ++i) {
    const uint16_t sport = static_cast<uint16_t>(50000 + i);
    ++hashed_to[OwnerOfHash(FlowHash({kPeerIp, kOurIp, sport, 4791}), 2)];
    rte_mbuf* m = Mbuf(SynFrame(ports_[0].mac, sport, 4791));
    workers_[i % 2]->ReceiveBurst(&m, 1, now);
  }
  ASSERT_GT(hashed_to[0], 0u);
  ASSERT_GT(hashed_to[1], 0u);
  // Worker 1 handed its 8 to worker 0; worker 0 kept all of its own, also
  // those the flow hash gives to worker 1.
  EXPECT_EQ(stats_[1].steered_out.Get(), 8u);
  EXPECT_EQ(stats_[1].steered_app.Get(), 8u);
  EXPECT_EQ(stats_[0].steered_out.Get(), 0u);
  workers_[0]->PollOnce(now);
  EXPECT_EQ(stats_[0].steered_in.Get(), 8u);
  // Every SYN reached the listener on worker 0 (SYN-RECEIVED there); worker
  // 1's stack saw nothing, so it answered no RST.
  EXPECT_EQ(workers_[0]->tcp_stack()->stats().segments_in, 16u);
  EXPECT_EQ(workers_[0]->tcp_stack()->connection_count(), 16u);
  EXPECT_EQ(workers_[1]->tcp_stack()->stats().segments_in, 0u);
  EXPECT_EQ(workers_[1]->tcp_stack()->stats().rsts_out, 0u);

  // A port no application holds keeps the flow hash: a SYN to the echo
  // service that hashes to worker 1, received there, stays there.
  uint16_t sport = 40000;
  while (OwnerOfHash(FlowHash({kPeerIp, kOurIp, sport, 7}), 2) != 1) ++sport;
  rte_mbuf* m = Mbuf(SynFrame(ports_[0].mac, sport, 7));
  workers_[1]->ReceiveBurst(&m, 1, now);
  EXPECT_EQ(stats_[1].steered_out.Get(), 8u);
  EXPECT_EQ(workers_[1]->tcp_stack()->connection_count(), 1u);

  // After the application closes the listener the port is released and
  // its flows hash again: worker 1 answers a SYN it owns itself (RST).
  ASSERT_EQ(Command(appif::WireCommandType::kUnlisten, 1, 0), 0);
  EXPECT_FALSE(ports.Held(4791));
  EXPECT_EQ(workers_[0]->wire_engine()->stats().tcp_port_holds, 0u);
  sport = 50100;
  while (OwnerOfHash(FlowHash({kPeerIp, kOurIp, sport, 4791}), 2) != 1) ++sport;
  m = Mbuf(SynFrame(ports_[0].mac, sport, 4791));
  workers_[1]->ReceiveBurst(&m, 1, now);
  EXPECT_EQ(stats_[1].steered_app.Get(), 8u);
  EXPECT_EQ(workers_[1]->tcp_stack()->stats().segments_in, 2u);
  EXPECT_EQ(workers_[1]->tcp_stack()->stats().rsts_out, 1u);
  workers_[0]->PollOnce(now);
  workers_[1]->PollOnce(now);  // its TX buffer: the SYN-ACK of the echo service and the RST
  workers_.clear();
  EXPECT_EQ(FreeMbufs(), free_before);
}

TEST_F(WorkerAppTest, ListenOnABuiltInServicePortIsRefused) {
  EXPECT_EQ(Command(appif::WireCommandType::kListen, 1, 7), EADDRINUSE);
  EXPECT_EQ(workers_[0]->wire_engine()->stats().listens_reserved, 1u);
  EXPECT_FALSE(workers_[0]->app_ports()->Held(7));
  // The echo service still owns its port on both workers.
  EXPECT_EQ(Command(appif::WireCommandType::kListen, 2, 8), 0);
  EXPECT_TRUE(workers_[0]->app_ports()->Held(8));
}

// The same with hardware RSS (net_null hashes with our key into two RX
// queues, one per worker): no software steering, yet frames to an
// application's port that the device put on worker 1's queue reach worker 0.
class WorkerAppRssTest : public WorkerAppTest {
 protected:
  void SetUp() override {
    rx_queues_ = 2;
    WorkerAppTest::SetUp();
  }
};

TEST_F(WorkerAppRssTest, FramesOnWorkerOnesQueueReachWorkerZero) {
  LearnPeer();
  ASSERT_EQ(Command(appif::WireCommandType::kListen, 1, 4791), 0);
  const uint64_t now = workers_[0]->NowMs();
  for (uint16_t i = 0; i < 4; ++i) {
    rte_mbuf* m = Mbuf(SynFrame(ports_[0].mac, static_cast<uint16_t>(50000 + i), 4791));
    workers_[1]->ReceiveBurst(&m, 1, now);
  }
  // Not an application's port: worker 1 keeps what its queue got.
  rte_mbuf* m = Mbuf(SynFrame(ports_[0].mac, 40000, 7));
  workers_[1]->ReceiveBurst(&m, 1, now);
  EXPECT_EQ(stats_[1].steered_app.Get(), 4u);
  EXPECT_EQ(stats_[1].steered_out.Get(), 4u);
  EXPECT_EQ(workers_[1]->tcp_stack()->connection_count(), 1u);
  workers_[0]->PollOnce(now);
  EXPECT_EQ(workers_[0]->tcp_stack()->connection_count(), 4u);
}

// Worker 0's active opens pick local ports whose replies the device itself
// puts on one of worker 0's queues. With three RX queues for two workers
// (worker 0 polls queues 0 and 2), flow_hash.h's rule (hash % 128 % workers)
// is wrong for a third of the ports; the device's own table decides.
class WorkerRssThreeQueuesTest : public WorkerAppTest {
 protected:
  void SetUp() override {
    rx_queues_ = 3;
    WorkerAppTest::SetUp();
  }
  // The worker whose queue the device puts the peer's segment on.
  uint32_t DeviceOwner(const FlowKey& k) {
    const uint16_t port = ports_[0].port_id;
    rte_eth_dev_info info;
    EXPECT_EQ(rte_eth_dev_info_get(port, &info), 0);
    std::array<uint8_t, kRssKeyLen> key{};
    rte_eth_rss_conf conf{};
    conf.rss_key = key.data();
    conf.rss_key_len = kRssKeyLen;
    EXPECT_EQ(rte_eth_dev_rss_hash_conf_get(port, &conf), 0);
    std::vector<rte_eth_rss_reta_entry64> reta(info.reta_size / RTE_ETH_RETA_GROUP_SIZE);
    for (auto& g : reta) g.mask = ~uint64_t{0};
    EXPECT_EQ(rte_eth_dev_rss_reta_query(port, reta.data(), info.reta_size), 0);
    const uint32_t e = FlowHash(k, key) % info.reta_size;
    return reta[e / RTE_ETH_RETA_GROUP_SIZE].reta[e % RTE_ETH_RETA_GROUP_SIZE] % 2;
  }
};

TEST_F(WorkerRssThreeQueuesTest, ActiveOpensPickPortsTheDeviceSteersToWorkerZero) {
  ASSERT_EQ(ports_[0].steering, Steering::kRss);
  // The old rule and the device disagree on some ports (else this proves
  // nothing).
  uint32_t disagree = 0;
  for (uint16_t lport = 40000; lport < 40300; ++lport) {
    const FlowKey k{kPeerIp, kOurIp, 80, lport};
    disagree += (OwnerOfHash(FlowHash(k), 2) == 0) != (DeviceOwner(k) == 0);
  }
  ASSERT_GT(disagree, 30u);
  LearnPeer();
  struct User final : tcp::TcpUser {
    size_t OnData(tcp::ConnId, uint64_t, ByteSpan d) override { return d.size(); }
  } user;
  tcp::TcpStack& tcp = *workers_[0]->tcp_stack();
  const uint64_t now_us = workers_[0]->NowUs();
  for (int i = 0; i < 16; ++i) {
    absl::StatusOr<tcp::ConnId> c = tcp.Connect(kOurIp, kPeerIp, 80, user, 0, now_us);
    ASSERT_TRUE(c.ok()) << c.status();
    tcp::TcpConnInfo info;
    ASSERT_TRUE(tcp.GetConnection(*c, &info));
    EXPECT_EQ(DeviceOwner({kPeerIp, kOurIp, 80, info.tuple.local_port}), 0u)
        << "local port " << info.tuple.local_port;
  }
  workers_[0]->PollOnce(workers_[0]->NowMs());  // the SYNs leave
}

// The impairment stages wired into the RX and TX paths of a real worker.
class WorkerImpairTest : public WorkerTest {
 protected:
  void SetUp() override {
    config::ImpairRule drop;
    drop.action = config::ImpairAction::kDrop;
    drop.protocol = config::ImpairProtocol::kIcmp;
    drop.every = 2;
    impairment_.rx.push_back(drop);
    config::ImpairRule dup;
    dup.action = config::ImpairAction::kDuplicate;
    dup.first = 1;
    dup.last = 2;
    config::ImpairRule delay;
    delay.action = config::ImpairAction::kDelay;
    delay.delay_ms = 5;
    impairment_.tx = {dup, delay};
    WorkerTest::SetUp();
  }
};

TEST_F(WorkerImpairTest, RxDropAndTxDuplicateAndDelayOnMbufs) {
  const unsigned free_before = FreeMbufs();
  const uint64_t now = workers_[0]->NowMs();
  for (uint16_t seq = 1; seq <= 10; ++seq) {
    rte_mbuf* m = Mbuf(testing::Ipv4Frame({}, testing::IcmpEcho(8, 1, seq, 10), ports_[0].mac));
    workers_[0]->ReceiveBurst(&m, 1, now);
  }
  // Every second request dropped on the way in.
  EXPECT_EQ(stats_[0].Dropped(DropReason::kImpairDrop), 5u);
  EXPECT_EQ(stats_[0].icmp_echo_requests_in.Get(), 5u);
  EXPECT_EQ(stats_[0].icmp_echo_replies_out.Get(), 5u);
  // Replies 1 and 2 duplicated and sent; 3 to 5 held by the delay rule.
  workers_[0]->PollOnce(now);
  EXPECT_EQ(stats_[0].impair_duplicated.Get(), 2u);
  EXPECT_EQ(stats_[0].impair_delayed.Get(), 3u);
  EXPECT_EQ(stats_[0].tx_packets.Get(), 4u);
  EXPECT_EQ(workers_[0]->impair_held(), 3u);
  workers_[0]->PollOnce(now + 5);
  EXPECT_EQ(stats_[0].tx_packets.Get(), 7u);
  EXPECT_EQ(workers_[0]->impair_held(), 0u);
  rte_eth_stats st;
  ASSERT_EQ(rte_eth_stats_get(ports_[0].port_id, &st), 0);
  EXPECT_EQ(st.opackets, 7u);
  EXPECT_EQ(FreeMbufs(), free_before);
}

// RDMA over SCTP on real workers: worker 0 hosts the endpoint; SCTP frames
// another worker receives are steered to it; its packets leave as IPv4
// datagrams once ARP resolved the peer. One test: usrsctp is one stack per
// process.
class WorkerSctpTest : public WorkerTest {
 protected:
  void SetUp() override {
    cfg_.sctp.enabled = true;
    WorkerTest::SetUp();
  }
};

TEST_F(WorkerSctpTest, SctpIsSteeredToWorkerZeroAndSentAfterArp) {
  ASSERT_NE(workers_[0]->sctp_endpoint(), nullptr);
  EXPECT_EQ(workers_[1]->sctp_endpoint(), nullptr);
  sctp::SctpEndpoint& ep = *workers_[0]->sctp_endpoint();
  const unsigned free_before = FreeMbufs();
  const uint64_t now = workers_[0]->NowMs();
  // An SCTP packet with a good CRC32c, received by worker 1: steered to
  // worker 0, where nothing listens and no association knows the sender.
  std::vector<uint8_t> pkt(32, 0);
  StoreBe16(pkt.data(), 5000);
  StoreBe16(pkt.data() + 2, 5043);
  sctp::SctpFillCrc(MutableByteSpan(pkt));
  testing::Ipv4Fields ip;
  ip.protocol = 132;
  rte_mbuf* m = Mbuf(testing::Ipv4Frame(ip, pkt, ports_[0].mac));
  workers_[1]->ReceiveBurst(&m, 1, now);
  EXPECT_EQ(stats_[1].steered_out.Get(), 1u);
  EXPECT_EQ(ep.counter(sctp::EndpointCounter::kRxNoPeer), 0u);
  workers_[0]->PollOnce(now);
  EXPECT_EQ(stats_[0].steered_in.Get(), 1u);
  EXPECT_EQ(ep.counter(sctp::EndpointCounter::kRxNoPeer), 1u);
  // Received by worker 0 itself: handled there.
  m = Mbuf(testing::Ipv4Frame(ip, pkt, ports_[0].mac));
  workers_[0]->ReceiveBurst(&m, 1, now);
  EXPECT_EQ(ep.counter(sctp::EndpointCounter::kRxNoPeer), 2u);
  EXPECT_EQ(stats_[0].Dropped(DropReason::kIpv4UnknownProtocol), 0u);

  // An active open: the INIT waits for ARP, then leaves as protocol 132.
  auto a = ep.Connect(kPeerIp, 5043, nullptr);
  ASSERT_TRUE(a.ok()) << a.status();
  workers_[0]->PollOnce(now);
  EXPECT_EQ(ep.host_counter(sctp::HostCounter::kTxPackets), 1u);
  EXPECT_EQ(stats_[0].arp_requests_out.Get(), 1u);
  EXPECT_EQ(workers_[0]->stack().pending_packets(kPeerIp), 1u);
  const uint64_t tx_before = stats_[0].tx_packets.Get();
  const uint64_t bytes_before = stats_[0].tx_bytes.Get();
  rte_mbuf* reply =
      Mbuf(testing::ArpFrame(2, ports_[0].mac, kPeerMac, kPeerIp, ports_[0].mac, kOurIp));
  workers_[0]->ReceiveBurst(&reply, 1, now);
  workers_[0]->PollOnce(now);
  EXPECT_EQ(stats_[0].tx_packets.Get(), tx_before + 1);
  // Ethernet + IPv4 + the SCTP packet usrsctp queued (an INIT: common header
  // and at least the 20-byte INIT chunk).
  EXPECT_GE(stats_[0].tx_bytes.Get() - bytes_before, 14u + 20u + 12u + 20u);
  a->reset();
  workers_.clear();  // the endpoint and the worker's queues go
  EXPECT_EQ(FreeMbufs(), free_before);
}

}  // namespace
}  // namespace iwarp::dataplane
