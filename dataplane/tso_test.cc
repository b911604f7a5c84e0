// TCP segmentation offload on the worker's transmit path (ports[].tso), on a
// real EAL (--no-huge, --no-pci) and a real worker.
//
// The port is a net_ring ethdev built from two rings this test owns: what the
// worker transmits lands in `tx_ring_` untouched (mbuf pointers, chains and
// offload fields as the worker left them). net_ring offers no TSO itself, so
// the test turns PortRuntime::tso on after SetupPort: the ring stands in for
// a TSO device (a test double at the device boundary), and ReferenceCut
// below stands in for the device's segmentation, implementing the contract of
// RTE_MBUF_F_TX_TCP_SEG (rte_mbuf_core.h): the headers of the frame repeated
// per tso_segsz bytes of payload, sequence number advanced, IPv4 total length,
// id (+1 per segment) and both checksums filled in per segment.
//
// The property checked: the frames the device would put on the wire from the
// TSO frames are byte-identical to the frames the same worker code sends
// with TSO off, for the same segments.
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "dataplane/l3/test_frames.h"
#include "dataplane/eal_test_env.h"
#include "dataplane/port.h"
#include "dataplane/worker.h"
#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

using testing::kOurIp;
using testing::kPeerIp;
using testing::kPeerMac;
using Bytes = std::vector<uint8_t>;

const ::testing::Environment* const kEal = RegisterEalTestEnvironment("tso");

constexpr uint8_t kAck = 0x10;
constexpr uint8_t kPsh = 0x08;
constexpr size_t kL2 = 14;
constexpr size_t kL3 = 20;

// A segment as tcp_lite hands it to TcpOutput::EmitSegment with
// SumsPayload() true: the checksum covers the pseudo-header (full TCP
// length) and the header only.
struct Segment {
  Bytes header;
  Bytes payload;
};

Segment MakeSegment(uint16_t sport, uint32_t seq, uint8_t flags, size_t len, uint32_t tsval = 7,
                    uint16_t window = 5000) {
  Segment s;
  s.header.assign(32, 0);  // 20 + NOP NOP TS (RFC 7323 3)
  uint8_t* h = s.header.data();
  StoreBe16(h, sport);
  StoreBe16(h + 2, 4791);
  StoreBe32(h + 4, seq);
  StoreBe32(h + 8, 0x12345678);
  h[12] = 8 << 4;
  h[13] = flags;
  StoreBe16(h + 14, window);
  h[20] = 1;
  h[21] = 1;
  h[22] = 8;
  h[23] = 10;
  StoreBe32(h + 24, tsval);
  StoreBe32(h + 28, 99);
  s.payload.resize(len);
  for (size_t i = 0; i < len; ++i) s.payload[i] = static_cast<uint8_t>(seq + i * 7);
  uint8_t pseudo[12];
  StoreBe32(pseudo, kOurIp);
  StoreBe32(pseudo + 4, kPeerIp);
  pseudo[8] = 0;
  pseudo[9] = 6;
  StoreBe16(pseudo + 10, static_cast<uint16_t>(s.header.size() + len));
  StoreBe16(h + 16, ChecksumFold(ChecksumAdd(ChecksumAdd(0, pseudo), s.header)));
  return s;
}

Bytes Linear(const rte_mbuf* m) {
  Bytes out;
  for (const rte_mbuf* s = m; s != nullptr; s = s->next) {
    const uint8_t* d = rte_pktmbuf_mtod(s, const uint8_t*);
    out.insert(out.end(), d, d + s->data_len);
  }
  return out;
}

bool TcpChecksumValid(const Bytes& frame) {
  const uint8_t* ip = frame.data() + kL2;
  const size_t tcp_len = LoadBe16(ip + 2) - kL3;
  uint8_t pseudo[12];
  std::memcpy(pseudo, ip + 12, 8);
  pseudo[8] = 0;
  pseudo[9] = 6;
  StoreBe16(pseudo + 10, static_cast<uint16_t>(tcp_len));
  return ChecksumFold(ChecksumAdd(ChecksumAdd(0, pseudo), ByteSpan(ip + kL3, tcp_len))) == 0;
}

// Recomputes the TCP checksum of an Ethernet/IPv4/TCP frame.
void FixTcpChecksum(Bytes& frame) {
  uint8_t* ip = frame.data() + kL2;
  const size_t tcp_len = LoadBe16(ip + 2) - kL3;
  uint8_t* th = ip + kL3;
  StoreBe16(th + 16, 0);
  uint8_t pseudo[12];
  std::memcpy(pseudo, ip + 12, 8);
  pseudo[8] = 0;
  pseudo[9] = 6;
  StoreBe16(pseudo + 10, static_cast<uint16_t>(tcp_len));
  StoreBe16(th + 16, ChecksumFold(ChecksumAdd(ChecksumAdd(0, pseudo), ByteSpan(th, tcp_len))));
}

// The device's side of RTE_MBUF_F_TX_TCP_SEG (see the file comment); PSH
// and FIN only on the last segment, as NICs, Linux GSO and librte_gso do.
std::vector<Bytes> ReferenceCut(const rte_mbuf* m) {
  Bytes f = Linear(m);
  if ((m->ol_flags & RTE_MBUF_F_TX_TCP_SEG) == 0) {
    // TCP checksum offload alone: the device fills in the checksum.
    if ((m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM) != 0) FixTcpChecksum(f);
    return {f};
  }
  const size_t hl = m->l2_len + m->l3_len + m->l4_len;
  std::vector<Bytes> out;
  const uint16_t id0 = LoadBe16(f.data() + kL2 + 4);
  const uint32_t seq0 = LoadBe32(f.data() + kL2 + kL3 + 4);
  for (size_t off = hl, i = 0; off < f.size(); off += m->tso_segsz, ++i) {
    const size_t n = std::min<size_t>(m->tso_segsz, f.size() - off);
    Bytes s(f.begin(), f.begin() + static_cast<ptrdiff_t>(hl));
    s.insert(s.end(), f.begin() + static_cast<ptrdiff_t>(off),
             f.begin() + static_cast<ptrdiff_t>(off + n));
    uint8_t* ip = s.data() + kL2;
    StoreBe16(ip + 2, static_cast<uint16_t>(m->l3_len + m->l4_len + n));
    StoreBe16(ip + 4, static_cast<uint16_t>(id0 + i));
    StoreBe16(ip + 10, 0);
    StoreBe16(ip + 10, InternetChecksum(ByteSpan(ip, kL3)));
    uint8_t* th = ip + kL3;
    StoreBe32(th + 4, static_cast<uint32_t>(seq0 + i * m->tso_segsz));
    if (off + n < f.size()) th[13] = static_cast<uint8_t>(th[13] & ~(kPsh | 0x01));
    FixTcpChecksum(s);
    out.push_back(std::move(s));
  }
  return out;
}

class TsoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EalTestUp()) GTEST_SKIP() << EalTestError();
    static int instance = 0;
    const std::string name = "net_ringtso" + std::to_string(instance++);
    rx_ring_ = rte_ring_create((name + "_rx").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    tx_ring_ = rte_ring_create((name + "_tx").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    ASSERT_NE(rx_ring_, nullptr);
    ASSERT_NE(tx_ring_, nullptr);
    const int port_id = rte_eth_from_rings(name.c_str(), &rx_ring_, 1, &tx_ring_, 1, 0);
    ASSERT_GE(port_id, 0);
    char ethdev[RTE_ETH_NAME_MAX_LEN];
    ASSERT_EQ(rte_eth_dev_get_name_by_port(static_cast<uint16_t>(port_id), ethdev), 0);
    cfg_.workers.lcores = {1};
    cfg_.mempools.mbufs = 4095;
    cfg_.mempools.cache = 32;
    cfg_.tcp.enabled = false;  // segments are handed to EmitSegment directly
    config::PortConfig pc;
    pc.name = "r0";
    pc.vdev = ethdev;
    cfg_.ports.push_back(pc);
    config::InterfaceConfig itf;
    itf.port = "r0";
    itf.ipv4 = {kOurIp, 24};
    cfg_.interfaces.push_back(itf);
    absl::StatusOr<PortRuntime> p = SetupPort(cfg_, 0);
    ASSERT_TRUE(p.ok()) << p.status();
    port_ = std::move(*p);
    // net_ring offers no offloads: tso: auto leaves it off.
    EXPECT_FALSE(port_.tso);
  }
  void TearDown() override {
    ClosePort(&port_);
    rte_ring_free(rx_ring_);
    rte_ring_free(tx_ring_);
  }

  // Sends `segs` through a fresh worker (IPv4 ids from 0) with TSO on or
  // off and returns what reached the device, one entry per frame.
  std::vector<rte_mbuf*> Send(const std::vector<Segment>& segs, bool tso, LcoreStats* stats) {
    PortRuntime p = port_;
    p.tso = tso;
    std::atomic<bool> stop{false};
    std::vector<rte_mbuf*> frames;
    Worker w(0, 1, std::span<const PortRuntime>(&p, 1), cfg_, stats, &stop);
    EXPECT_TRUE(w.Init().ok());
    LearnPeer(w);
    const uint64_t now = w.NowMs();
    for (const Segment& s : segs) {
      const ByteSpan piece(s.payload);
      EXPECT_TRUE(w.EmitSegment(kOurIp, kPeerIp, ByteSpan(s.header),
                                std::span<const ByteSpan>(&piece, s.payload.empty() ? 0 : 1)));
    }
    w.PollOnce(now);
    Drain(&frames);
    return frames;
  }
  // The worker learns the peer's MAC from its ARP request for our address;
  // the ARP reply is discarded.
  void LearnPeer(Worker& w) {
    Worker* self = &w;
    w.SetPeers(std::span<Worker* const>(&self, 1));
    const Bytes arp = testing::ArpFrame(1, MacAddr{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, kPeerMac,
                                        kPeerIp, MacAddr{}, kOurIp);
    rte_mbuf* m = rte_pktmbuf_alloc(port_.pool);
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(arp.size())), arp.data(), arp.size());
    m->port = port_.port_id;
    const uint64_t now = w.NowMs();
    w.ReceiveBurst(&m, 1, now);
    w.PollOnce(now);  // the ARP reply leaves
    std::vector<rte_mbuf*> frames;
    Drain(&frames);
    for (rte_mbuf* f : frames) rte_pktmbuf_free(f);
  }
  // A worker whose port takes TSO frames, the peer's MAC learnt; with
  // `by_reference`, a port that reads mbufs through their virtual address
  // (PortRuntime::tx_by_reference; net_ring stands in for net_virtio_user).
  std::unique_ptr<Worker> TsoWorker(LcoreStats* stats, bool by_reference) {
    tso_port_ = port_;
    tso_port_.tso = true;
    tso_port_.tx_by_reference = by_reference;
    auto w = std::make_unique<Worker>(0, 1, std::span<const PortRuntime>(&tso_port_, 1), cfg_,
                                      stats, &stop_);
    EXPECT_TRUE(w->Init().ok());
    LearnPeer(*w);
    return w;
  }
  std::unique_ptr<Worker> ByReferenceWorker(LcoreStats* stats) { return TsoWorker(stats, true); }
  // Hands `seg` to `w` with `piece` as its payload.
  void Emit(Worker& w, const Segment& seg, ByteSpan piece) {
    EXPECT_TRUE(w.EmitSegment(kOurIp, kPeerIp, ByteSpan(seg.header),
                              std::span<const ByteSpan>(&piece, 1)));
  }
  // Hands segment i to `w` with `pieces[i]` as its payload, polls once and
  // returns the frames that reached the device.
  std::vector<rte_mbuf*> EmitAll(Worker& w, const std::vector<Segment>& segs,
                                 std::span<const ByteSpan> pieces) {
    for (size_t i = 0; i < segs.size(); ++i) Emit(w, segs[i], pieces[i]);
    w.PollOnce(w.NowMs());
    std::vector<rte_mbuf*> frames;
    Drain(&frames);
    return frames;
  }
  void Drain(std::vector<rte_mbuf*>* out) {
    void* objs[256];
    unsigned n;
    while ((n = rte_ring_dequeue_burst(tx_ring_, objs, 256, nullptr)) > 0) {
      for (unsigned i = 0; i < n; ++i) out->push_back(static_cast<rte_mbuf*>(objs[i]));
    }
  }

  struct Outcome {
    size_t frames_on = 0;   // frames handed to the device with TSO on
    size_t tso_frames = 0;  // of those, TSO frames
    uint64_t tso_frames_out = 0;
    uint64_t tso_segments_out = 0;
  };
  // Sends `segs` with TSO off and on; checks that the device's segmentation
  // of the TSO run gives byte for byte the frames of the run without TSO.
  Outcome SendBothWays(const std::vector<Segment>& segs) {
    Outcome o;
    LcoreStats off_stats, on_stats;
    std::vector<rte_mbuf*> off = Send(segs, false, &off_stats);
    std::vector<rte_mbuf*> on = Send(segs, true, &on_stats);
    EXPECT_EQ(off.size(), segs.size());
    std::vector<Bytes> wire_off, wire_on;
    for (rte_mbuf* m : off) {
      EXPECT_EQ(m->ol_flags & RTE_MBUF_F_TX_TCP_SEG, 0u);
      wire_off.push_back(Linear(m));
      EXPECT_EQ(InternetChecksum(ByteSpan(wire_off.back()).subspan(kL2, kL3)), 0);
      EXPECT_TRUE(TcpChecksumValid(wire_off.back()));
    }
    // PSH collapses to the last segment of each TSO frame (RFC 9293
    // 3.9.1.2): the frames without TSO with that applied are the reference.
    size_t next = 0;
    for (rte_mbuf* m : on) {
      const size_t cut = ReferenceCut(m).size();
      for (size_t k = 0; k + 1 < cut && next + k < wire_off.size(); ++k) {
        Bytes& f = wire_off[next + k];
        f[kL2 + kL3 + 13] = static_cast<uint8_t>(f[kL2 + kL3 + 13] & ~kPsh);
        FixTcpChecksum(f);
      }
      next += cut;
    }
    for (rte_mbuf* m : on) {
      if ((m->ol_flags & RTE_MBUF_F_TX_TCP_SEG) != 0) {
        ++o.tso_frames;
        const uint64_t want = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM;
        EXPECT_EQ(m->ol_flags & want, want);
        EXPECT_EQ(m->l2_len, kL2);
        EXPECT_EQ(m->l3_len, kL3);
        EXPECT_EQ(m->l4_len, 32u);
        EXPECT_EQ(m->pkt_len, Linear(m).size());
        // The TCP checksum field holds DPDK's pseudo-header sum for TSO.
        const Bytes f = Linear(m);
        rte_ipv4_hdr ip;
        std::memcpy(&ip, f.data() + kL2, sizeof(ip));
        const uint16_t phdr = rte_ipv4_phdr_cksum(&ip, m->ol_flags);
        uint16_t field;
        std::memcpy(&field, f.data() + kL2 + kL3 + 16, 2);
        EXPECT_EQ(field, phdr);
        // IPv4 header checksum valid as handed over (no IP checksum offload).
        EXPECT_EQ(InternetChecksum(ByteSpan(f).subspan(kL2, kL3)), 0);
      }
      for (Bytes& s : ReferenceCut(m)) wire_on.push_back(std::move(s));
    }
    o.frames_on = on.size();
    EXPECT_EQ(wire_on.size(), wire_off.size());
    for (size_t i = 0; i < std::min(wire_on.size(), wire_off.size()); ++i) {
      EXPECT_EQ(wire_on[i], wire_off[i]) << "segment " << i;
    }
    for (rte_mbuf* m : off) rte_pktmbuf_free(m);
    for (rte_mbuf* m : on) rte_pktmbuf_free(m);
    EXPECT_EQ(off_stats.tso_frames_out.Get(), 0u);
    o.tso_frames_out = on_stats.tso_frames_out.Get();
    o.tso_segments_out = on_stats.tso_segments_out.Get();
    EXPECT_EQ(on_stats.tx_packets.Get(), on.size() + 1);  // + the ARP reply
    EXPECT_EQ(on_stats.DroppedTotal(), 0u);
    return o;
  }

  std::vector<Segment> Run(uint16_t sport, uint32_t seq, size_t n, size_t len) {
    std::vector<Segment> v;
    for (size_t i = 0; i < n; ++i) v.push_back(MakeSegment(sport, seq + uint32_t(i * len), kAck, len));
    return v;
  }

  config::Config cfg_;
  PortRuntime port_;
  PortRuntime tso_port_;
  std::atomic<bool> stop_{false};
  rte_ring* rx_ring_ = nullptr;
  rte_ring* tx_ring_ = nullptr;
};

TEST_F(TsoTest, A64KiBMessageLeavesAsTsoFramesTheDeviceCutsIntoTheSameSegments) {
  // 64 KiB in MSS-sized FPDUs of 1448 bytes (MTU 1500 with timestamps) and a
  // shorter last one: 45 segments fill one frame's 65535-byte IPv4 limit
  // (20 + 32 + 45 x 1448 = 65212), the remaining 1448 + 376 form a second.
  std::vector<Segment> segs = Run(40000, 1000, 46, 1448);
  segs.push_back(MakeSegment(40000, 1000 + 46 * 1448, kAck, 376));
  const unsigned free_before = rte_mempool_avail_count(port_.pool);
  const Outcome o = SendBothWays(segs);
  EXPECT_EQ(o.frames_on, 2u);
  EXPECT_EQ(o.tso_frames, 2u);
  EXPECT_EQ(o.tso_frames_out, 2u);
  EXPECT_EQ(o.tso_segments_out, 47u);
  EXPECT_EQ(rte_mempool_avail_count(port_.pool), free_before);  // chains freed whole
}

// A frame that can take no further segment goes to the device at once, not
// at the end of the poll: the peer starts on it while the next is built.
TEST_F(TsoTest, AFrameThatTakesNoFurtherSegmentLeavesAtOnce) {
  LcoreStats stats;
  std::unique_ptr<Worker> w = TsoWorker(&stats, /*by_reference=*/false);
  auto emit = [&](const Segment& seg) { Emit(*w, seg, seg.payload); };
  std::vector<Segment> segs = Run(40000, 1000, 46, 1448);
  segs.push_back(MakeSegment(40000, 1000 + 46 * 1448, kAck, 376));
  std::vector<rte_mbuf*> frames;
  for (size_t i = 0; i < 44; ++i) emit(segs[i]);
  Drain(&frames);
  EXPECT_TRUE(frames.empty());  // the frame can still grow: it waits for the poll's end
  emit(segs[44]);               // 45 segments: a 46th would pass 64 KiB
  Drain(&frames);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0]->pkt_len, kL2 + kL3 + 32 + 45 * 1448u);
  emit(segs[45]);
  Drain(&frames);
  EXPECT_EQ(frames.size(), 1u);
  emit(segs[46]);  // shorter: it ends the second frame
  Drain(&frames);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1]->pkt_len, kL2 + kL3 + 32 + 1448u + 376u);
  w->PollOnce(w->NowMs());
  Drain(&frames);
  EXPECT_EQ(frames.size(), 2u);
  EXPECT_EQ(stats.tso_segments_out.Get(), 47u);
  for (rte_mbuf* m : frames) rte_pktmbuf_free(m);
}

// A device that reads mbufs through their virtual address
// (PortRuntime::tx_by_reference; net_ring stands in for net_virtio_user):
// the payload of a TSO frame's segments stays in the TCP send buffers the
// worker lent the stack (Worker::SendMemory), and the frame references it.
// On the wire nothing changes; the buffer is not reusable while a frame
// references it, and stays readable after the worker is gone until the
// device frees the frame.
TEST_F(TsoTest, PayloadInTheSendBuffersTravelsByReference) {
  const std::vector<Segment> segs = Run(40020, 1000, 20, 1448);
  LcoreStats copy_stats;
  std::vector<Bytes> want;
  for (rte_mbuf* m : Send(segs, true, &copy_stats)) {
    for (Bytes& s : ReferenceCut(m)) want.push_back(std::move(s));
    rte_pktmbuf_free(m);
  }
  ASSERT_EQ(want.size(), segs.size());
  EXPECT_EQ(copy_stats.tx_payload_by_reference.Get(), 0u);

  const unsigned free_before = rte_mempool_avail_count(port_.pool);
  LcoreStats stats;
  std::unique_ptr<Worker> w = ByReferenceWorker(&stats);
  constexpr size_t kBuffers = 4;
  constexpr size_t kBufferBytes = 64 * 1024;
  const MutableByteSpan mem = w->SendMemory(kBuffers, kBufferBytes);
  ASSERT_EQ(mem.size(), kBuffers * kBufferBytes) << "no DPDK memory for the send buffers";
  // Buffer 2 holds the connection's bytes back to back, as tcp_lite's ring
  // does; each segment's payload is a piece of it.
  uint8_t* buf = mem.data() + 2 * kBufferBytes;
  std::vector<ByteSpan> pieces;
  size_t at = 0;
  for (const Segment& s : segs) {
    std::memcpy(buf + at, s.payload.data(), s.payload.size());
    pieces.emplace_back(buf + at, s.payload.size());
    at += s.payload.size();
  }
  std::vector<rte_mbuf*> frames = EmitAll(*w, segs, pieces);
  ASSERT_EQ(frames.size(), 1u);
  // The headers in one mbuf; the 20 segments' payload one reference to
  // the 20 x 1448 bytes in the buffer.
  const rte_mbuf* f = frames[0];
  ASSERT_EQ(f->nb_segs, 2u);
  EXPECT_FALSE(RTE_MBUF_HAS_EXTBUF(f));
  EXPECT_EQ(f->data_len, kL2 + kL3 + 32u);
  ASSERT_TRUE(RTE_MBUF_HAS_EXTBUF(f->next));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f->next->shinfo) % alignof(rte_mbuf_ext_shared_info), 0u);
  EXPECT_EQ(rte_pktmbuf_mtod(f->next, const uint8_t*), buf);
  EXPECT_EQ(f->next->data_len, 20u * 1448);
  EXPECT_EQ(f->pkt_len, kL2 + kL3 + 32u + 20u * 1448);
  EXPECT_EQ(stats.tx_payload_by_reference.Get(), 20u * 1448);
  EXPECT_FALSE(w->SendBufferReusable(2));
  EXPECT_TRUE(w->SendBufferReusable(1));

  // The worker goes first (its daemon stops), the device frees later.
  w.reset();
  std::vector<Bytes> got = ReferenceCut(frames[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "segment " << i;
  rte_pktmbuf_free(frames[0]);
  EXPECT_EQ(rte_mempool_avail_count(port_.pool), free_before);
}

// A segment that stays alone (here: the only one) leaves by reference too,
// with the TCP checksum left to the device; a FIN leaves copied.
TEST_F(TsoTest, ALoneSegmentLeavesByReferenceWithItsChecksumLeftToTheDevice) {
  const std::vector<Segment> segs = {MakeSegment(40022, 1000, kAck | kPsh, 700),
                                     MakeSegment(40022, 1700, kAck | 0x01, 300)};
  LcoreStats copy_stats;
  std::vector<Bytes> want;
  for (rte_mbuf* m : Send(segs, false, &copy_stats)) {
    want.push_back(Linear(m));
    rte_pktmbuf_free(m);
  }
  LcoreStats stats;
  std::unique_ptr<Worker> w = ByReferenceWorker(&stats);
  const MutableByteSpan mem = w->SendMemory(1, 4096);
  ASSERT_EQ(mem.size(), 4096u);
  std::memcpy(mem.data(), segs[0].payload.data(), 700);
  std::memcpy(mem.data() + 700, segs[1].payload.data(), 300);
  const ByteSpan pieces[] = {ByteSpan(mem.data(), 700), ByteSpan(mem.data() + 700, 300)};
  std::vector<rte_mbuf*> frames = EmitAll(*w, segs, pieces);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0]->nb_segs, 2u);
  EXPECT_EQ(frames[0]->ol_flags & (RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_TCP_CKSUM),
            RTE_MBUF_F_TX_TCP_CKSUM);
  EXPECT_EQ(frames[0]->l2_len + frames[0]->l3_len + frames[0]->l4_len, kL2 + kL3 + 32u);
  // The checksum field holds DPDK's pseudo-header sum (length included).
  const Bytes raw = Linear(frames[0]);
  rte_ipv4_hdr ip;
  std::memcpy(&ip, raw.data() + kL2, sizeof(ip));
  uint16_t field;
  std::memcpy(&field, raw.data() + kL2 + kL3 + 16, 2);
  EXPECT_EQ(field, rte_ipv4_phdr_cksum(&ip, 0));
  EXPECT_EQ(frames[1]->nb_segs, 1u);  // the FIN
  EXPECT_EQ(frames[1]->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM, 0u);
  EXPECT_EQ(stats.tx_payload_by_reference.Get(), 700u);
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(ReferenceCut(frames[0]), std::vector<Bytes>{want[0]});
  EXPECT_EQ(ReferenceCut(frames[1]), std::vector<Bytes>{want[1]});
  for (rte_mbuf* m : frames) rte_pktmbuf_free(m);
}

// Payload outside the lent memory (an application's region with
// tcp.zero_copy_tx, a piece that runs past its buffer) is copied.
TEST_F(TsoTest, PayloadOutsideTheSendBuffersIsCopied) {
  const std::vector<Segment> segs = Run(40021, 1000, 4, 1000);
  LcoreStats stats;
  std::unique_ptr<Worker> w = ByReferenceWorker(&stats);
  const MutableByteSpan mem = w->SendMemory(2, 4096);
  ASSERT_EQ(mem.size(), 8192u);
  // Segment 1 from the heap, segment 2 across buffers 0 and 1, segment 3
  // inside buffer 1.
  const ByteSpan pieces[] = {ByteSpan(segs[0].payload), ByteSpan(segs[1].payload),
                             ByteSpan(mem.data() + 3500, 1000), ByteSpan(mem.data() + 5000, 1000)};
  std::memcpy(mem.data() + 3500, segs[2].payload.data(), 1000);
  std::memcpy(mem.data() + 5000, segs[3].payload.data(), 1000);
  std::vector<rte_mbuf*> frames = EmitAll(*w, segs, pieces);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(stats.tx_payload_by_reference.Get(), 1000u);  // segment 3 only
  EXPECT_FALSE(w->SendBufferReusable(1));
  EXPECT_TRUE(w->SendBufferReusable(0));
  std::vector<Bytes> got = ReferenceCut(frames[0]);
  ASSERT_EQ(got.size(), segs.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Bytes payload(got[i].begin() + kL2 + kL3 + 32, got[i].end());
    EXPECT_EQ(payload, segs[i].payload) << "segment " << i;
  }
  for (rte_mbuf* m : frames) rte_pktmbuf_free(m);
  EXPECT_TRUE(w->SendBufferReusable(1));
}

// DPDK memory without room for the send buffers: the worker lends none (the
// stack then allocates its own, with a warning) and TSO frames copy.
TEST_F(TsoTest, WithoutRoomForTheSendBuffersFramesCopy) {
  const std::vector<Segment> segs = Run(40023, 1000, 3, 1000);
  LcoreStats stats;
  std::unique_ptr<Worker> w = ByReferenceWorker(&stats);
  EXPECT_TRUE(w->SendMemory(size_t{1} << 20, size_t{1} << 20).empty());  // 1 TiB
  std::vector<ByteSpan> pieces;
  for (const Segment& s : segs) pieces.emplace_back(s.payload);
  std::vector<rte_mbuf*> frames = EmitAll(*w, segs, pieces);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0]->ol_flags & RTE_MBUF_F_TX_TCP_SEG, RTE_MBUF_F_TX_TCP_SEG);
  EXPECT_EQ(ReferenceCut(frames[0]).size(), 3u);
  EXPECT_EQ(stats.tx_payload_by_reference.Get(), 0u);
  for (rte_mbuf* m : frames) rte_pktmbuf_free(m);
}

// ports[].tso: on is a promise the device must keep: a port without TSO
// stops the daemon at start-up with the key's position and the fix.
TEST_F(TsoTest, TsoOnRefusesADeviceWithoutIt) {
  rte_ring* rx = rte_ring_create("tso_on_rx", 64, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* tx = rte_ring_create("tso_on_tx", 64, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ASSERT_NE(rx, nullptr);
  ASSERT_NE(tx, nullptr);
  const int port_id = rte_eth_from_rings("tso_on", &rx, 1, &tx, 1, 0);
  ASSERT_GE(port_id, 0);
  char ethdev[RTE_ETH_NAME_MAX_LEN];
  ASSERT_EQ(rte_eth_dev_get_name_by_port(static_cast<uint16_t>(port_id), ethdev), 0);
  config::Config cfg = cfg_;
  cfg.ports[0].vdev = ethdev;
  cfg.ports[0].tso = config::TsoMode::kOn;
  cfg.ports[0].tso_origin.text = "t.yaml:5:10";
  absl::StatusOr<PortRuntime> p = SetupPort(cfg, 0);
  rte_ring_free(rx);
  rte_ring_free(tx);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(p.status().message());
  EXPECT_EQ(msg.rfind("t.yaml:5:10: ports[].tso: port 'r0' (net_ring) does not offer TCP "
                      "segmentation offload", 0), 0u) << msg;
  EXPECT_NE(msg.find("set tso: auto or off"), std::string::npos) << msg;
}

// tcp_lite sets PSH on each segment that empties its send buffer: FPDUs
// posted one at a time all carry it. A run collapses them (RFC 9293
// 3.9.1.2): the device puts PSH on the run's last segment only.
TEST_F(TsoTest, PshIsCollapsedToTheLastSegmentOfARun) {
  std::vector<Segment> segs;
  for (uint32_t i = 0; i < 8; ++i) segs.push_back(MakeSegment(40010, 1 + i * 1448, kAck | kPsh, 1448));
  segs.push_back(MakeSegment(40010, 1 + 8 * 1448, kAck, 1448));  // no PSH on the last
  segs.push_back(MakeSegment(40010, 1 + 9 * 1448, kAck | kPsh, 200));
  const Outcome o = SendBothWays(segs);  // compares with PSH collapsed
  EXPECT_EQ(o.frames_on, 1u);
  EXPECT_EQ(o.tso_segments_out, 10u);
}

TEST_F(TsoTest, SegmentsThatMustStaySeparateAreNotCoalesced) {
  // URG and FIN are properties of one segment: never in a run.
  std::vector<Segment> segs = Run(40001, 5000, 2, 1000);
  segs.push_back(MakeSegment(40001, 7000, kAck | 0x20, 1000));
  segs.push_back(MakeSegment(40001, 8000, kAck, 1000));
  Outcome o = SendBothWays(segs);
  EXPECT_EQ(o.frames_on, 3u);  // [1000+1000] [URG] [1000]
  EXPECT_EQ(o.tso_segments_out, 2u);

  // Not consecutive (a hole of one byte).
  segs = {MakeSegment(40002, 100, kAck, 1000), MakeSegment(40002, 1101, kAck, 1000)};
  o = SendBothWays(segs);
  EXPECT_EQ(o.frames_on, 2u);
  EXPECT_EQ(o.tso_frames, 0u);

  // A short middle segment ends the run: the next full one starts anew.
  segs = {MakeSegment(40003, 0, kAck, 1000), MakeSegment(40003, 1000, kAck, 500),
          MakeSegment(40003, 1500, kAck, 1000), MakeSegment(40003, 2500, kAck, 1000)};
  o = SendBothWays(segs);
  EXPECT_EQ(o.frames_on, 2u);  // [1000+500] [1000+1000]
  EXPECT_EQ(o.tso_frames_out, 2u);

  // FPDUs of different lengths (markers shift the FPDU boundaries): a
  // longer segment after a shorter one is never appended.
  segs = {MakeSegment(40004, 0, kAck, 1436), MakeSegment(40004, 1436, kAck, 1448),
          MakeSegment(40004, 2884, kAck, 1440)};
  o = SendBothWays(segs);
  EXPECT_EQ(o.frames_on, 2u);  // [1436] [1448+1440]

  // Another connection in between, a different window, a different
  // timestamp: each ends the run.
  segs = {MakeSegment(40005, 0, kAck, 1000), MakeSegment(40006, 0, kAck, 1000),
          MakeSegment(40005, 1000, kAck, 1000), MakeSegment(40005, 2000, kAck, 1000, 7, 4000),
          MakeSegment(40005, 3000, kAck, 1000, 8, 4000)};
  o = SendBothWays(segs);
  EXPECT_EQ(o.frames_on, 5u);
  EXPECT_EQ(o.tso_frames_out, 0u);

  // Pure ACKs (no data) and a FIN carrying data are never part of a run.
  segs = {MakeSegment(40007, 0, kAck, 0), MakeSegment(40007, 0, kAck, 0),
          MakeSegment(40007, 0, kAck, 1000), MakeSegment(40007, 1000, kAck | 0x01, 1000)};
  o = SendBothWays(segs);
  EXPECT_EQ(o.frames_on, 4u);
  EXPECT_EQ(o.tso_frames_out, 0u);
}

}  // namespace
}  // namespace iwarp::dataplane
