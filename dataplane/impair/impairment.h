// The impairment stage: drop, duplicate, reorder, delay and corrupt frames of
// one port and direction, as configured in ports[].impairment (see
// config/examples/reference.yaml). It replaces netem, which the test machines
// lack, and is deterministic for a given seed and frame sequence.
//
// DPDK-free: it sees frames as byte spans plus an opaque PacketHandle, and
// hands packets on through an ImpairSink (the worker's mbuf glue in the data
// plane, a fake in tests).
//
// Contract: one stage per (worker, port, direction), used only by the owning
// lcore. The hold queue (delay, reorder) is allocated at construction; after
// that no method allocates, locks, logs or throws. Every action is counted in
// the worker's LcoreStats (impair_* counters; a drop is the drop reason
// impair_drop). A frame the stage cannot impair as asked (hold queue full,
// no buffer for a copy, no payload to corrupt) passes unchanged and is
// counted under impair_skipped.
#ifndef IWARPD_DATAPLANE_IMPAIR_IMPAIRMENT_H_
#define IWARPD_DATAPLANE_IMPAIR_IMPAIRMENT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "config/config.h"
#include "dataplane/l3/stack.h"
#include "dataplane/l3/stats.h"

namespace iwarp::dataplane {

class ImpairSink {
 public:
  virtual ~ImpairSink() = default;
  // Passes a packet on along its path (to the stack on RX, to the TX queue on
  // TX). Ownership moves to the sink.
  virtual void Forward(PacketHandle pkt) = 0;
  // A deep copy of `pkt`, or nullptr when no buffer is available.
  virtual PacketHandle Copy(PacketHandle pkt) = 0;
  // Frees a packet the stage dropped (already counted).
  virtual void Release(PacketHandle pkt) = 0;
};

// What the stage learned about a frame's IPv4/L4 headers.
struct ImpairFrameInfo {
  bool ipv4 = false;
  uint8_t protocol = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  size_t l4_offset = 0;       // from the frame start
  size_t payload_offset = 0;  // from the frame start
  size_t payload_len = 0;     // bytes of L4 payload inside the IPv4 total length
};

// Parses Ethernet + IPv4 (+ TCP/UDP header) with bounds checks. Returns info
// with ipv4 == false for anything it cannot read as an unfragmented IPv4
// packet.
ImpairFrameInfo ParseImpairFrame(ByteSpan frame);

class ImpairmentStage {
 public:
  // Frames a reorder rule holds at most this long when fewer than
  // reorder_gap frames follow.
  static constexpr uint64_t kReorderMaxHoldMs = 100;
  static constexpr size_t kDefaultHoldCapacity = 1024;

  // Start-up only. `seed` should already be mixed with port, direction and
  // worker (MixSeed). `stats` and `sink` outlive the stage.
  ImpairmentStage(std::span<const config::ImpairRule> rules, uint64_t seed, LcoreStats* stats,
                  ImpairSink* sink, size_t hold_capacity = kDefaultHoldCapacity);

  ImpairmentStage(const ImpairmentStage&) = delete;
  ImpairmentStage& operator=(const ImpairmentStage&) = delete;

  static uint64_t MixSeed(uint64_t seed, uint16_t port, bool tx, uint32_t worker);

  bool active() const { return !rules_.empty(); }

  // Takes ownership of `pkt`, whose bytes are `frame` (which the stage may
  // modify in place for corrupt). Forwards, drops, copies or holds it.
  void Process(PacketHandle pkt, MutableByteSpan frame, uint64_t now_ms);

  // Forwards held packets that are due (delay elapsed, reorder gap reached or
  // reorder hold time over), oldest first. Call every loop iteration.
  void Poll(uint64_t now_ms);

  // Forwards every held packet (shutdown).
  void ReleaseAll();

  size_t held() const { return held_count_; }

 private:
  struct RuleState {
    config::ImpairRule rule;
    uint64_t matches = 0;
  };
  struct Held {
    PacketHandle pkt = nullptr;
    uint64_t due_ms = 0;
    uint64_t release_after = 0;  // frames_seen_ value that frees it; 0 = time only
  };

  bool Matches(const config::ImpairRule& r, const ImpairFrameInfo& info) const;
  bool Selects(RuleState& s);
  bool Hold(PacketHandle pkt, uint64_t due_ms, uint64_t release_after);
  bool Corrupt(MutableByteSpan frame, const ImpairFrameInfo& info, config::CorruptChecksum mode);
  uint64_t Next();

  std::vector<RuleState> rules_;
  uint64_t rng_;
  LcoreStats* stats_;
  ImpairSink* sink_;
  std::vector<Held> held_;  // [0, held_count_) in arrival order; capacity fixed
  size_t held_count_ = 0;
  uint64_t frames_seen_ = 0;
};

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_IMPAIR_IMPAIRMENT_H_
