// Fuzz target: arbitrary bytes as a received Ethernet frame through the L3
// engine, plus resolutions and timer ticks driven by the input. Checks the
// engine's contracts: a reply fits the frame it was written into, every
// frame is either dropped under exactly one named reason or handled, and a
// packet given to Resolve is returned to the sink at most once.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "dataplane/l3/stack.h"

namespace {

using iwarp::ByteSpan;
using iwarp::dataplane::L3Options;
using iwarp::dataplane::L3Port;
using iwarp::dataplane::L3Sink;
using iwarp::dataplane::L3Stack;
using iwarp::dataplane::LcoreStats;
using iwarp::dataplane::MacAddr;
using iwarp::dataplane::NextHop;
using iwarp::dataplane::PacketHandle;
using iwarp::dataplane::ResolveResult;
using iwarp::dataplane::RxAction;
using iwarp::dataplane::RxOffload;

class CheckingSink : public L3Sink {
 public:
  void SendFrame(uint16_t, ByteSpan frame) override {
    if (frame.size() != 42) __builtin_trap();
  }
  void TransmitResolved(PacketHandle pkt, uint16_t, const MacAddr&, const MacAddr&) override {
    Return(pkt);
  }
  void FreePacket(PacketHandle pkt) override { Return(pkt); }
  void NeighborLearned(uint32_t ip, uint16_t, const MacAddr& mac) override {
    if (ip == 0 || mac.IsMulticast()) __builtin_trap();
  }
  void Return(PacketHandle pkt) {
    if (!outstanding.erase(pkt)) __builtin_trap();  // returned twice or never given
  }
  std::set<PacketHandle> outstanding;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The port's MTU (none, or 1500) and what the device reports about the
  // frame (RxOffload) vary with the input's length.
  const uint32_t mtu = size % 4 == 0 ? 1500 : 0;
  const L3Port kPort = [mtu] {
    L3Port p;
    p.port_id = 0;
    p.mac = MacAddr{{0x02, 0, 0, 0, 0, 0x01}};
    p.addrs = {{0xc6120001, 24}};  // 198.18.0.1/24
    p.gateway = 0xc61200fe;
    p.mtu = mtu;
    return p;
  }();
  const RxOffload offload{size % 7 == 0, size % 5 == 0};
  LcoreStats stats;
  CheckingSink sink;
  L3Options options{8, 1, 2, 10};
  options.deliver_tcp = size % 2 == 0;
  options.deliver_sctp = size % 3 == 0;
  options.udp_echo_port = size % 4 == 0 ? 7 : 0;
  L3Stack stack(std::span<const L3Port>(&kPort, 1), options, &stats, &sink);

  // The input is the frame; its first bytes also steer a few resolutions.
  std::vector<uint8_t> frame(data, data + size);
  uintptr_t next_handle = 1;
  for (size_t i = 0; i + 4 <= size && i < 16; i += 4) {
    uint32_t dst;
    std::memcpy(&dst, data + i, 4);
    PacketHandle h = reinterpret_cast<PacketHandle>(next_handle++);
    sink.outstanding.insert(h);
    NextHop nh;
    if (stack.Resolve(dst, h, i, &nh) == ResolveResult::kResolved) sink.Return(h);
  }
  const RxAction a = stack.HandleFrame(0, frame, 5, offload);
  // A datagram over the MTU is delivered only when the device coalesced it;
  // the checksum verdict passes through only from the device.
  if ((a.kind == RxAction::Kind::kLocalTcp || a.kind == RxAction::Kind::kLocalSctp) &&
      ((mtu != 0 && size_t{a.l4_length} + 20 > mtu && !offload.coalesced) ||
       (a.l4_checksum_ok && !offload.l4_checksum_ok))) {
    __builtin_trap();
  }
  switch (a.kind) {
    case RxAction::Kind::kTransmit:
      if (a.tx_length > size || a.tx_length < 14) __builtin_trap();
      // A UDP echo leaves only when the service is on.
      if (stats.udp_echoes_out.Get() != 0 && options.udp_echo_port == 0) __builtin_trap();
      break;
    case RxAction::Kind::kDrop:
      if (stats.Dropped(a.reason) == 0) __builtin_trap();
      break;
    case RxAction::Kind::kConsumed:
      break;
    case RxAction::Kind::kLocalTcp:
      // The segment lies inside the frame.
      if (!options.deliver_tcp || a.l4_offset < 34 ||
          size_t{a.l4_offset} + a.l4_length > size) {
        __builtin_trap();
      }
      break;
    case RxAction::Kind::kLocalSctp:
      if (!options.deliver_sctp || a.l4_offset < 34 ||
          size_t{a.l4_offset} + a.l4_length > size) {
        __builtin_trap();
      }
      break;
  }
  for (uint64_t t = 10; t <= 60; t += 10) stack.Tick(t);
  // After three unanswered tries every queued packet is back.
  if (!sink.outstanding.empty()) __builtin_trap();
  return 0;
}
