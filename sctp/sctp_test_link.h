// Test support: an in-memory link between AF_CONN addresses of the one
// usrsctp stack, with seeded impairment (loss, duplication, reordering,
// corruption), and a loop that drives the host, the link and the
// associations with a virtual millisecond clock. Packets really go through
// usrsctp; only the wire is simulated. The clock is real (CLOCK_MONOTONIC):
// usrsctp's T3 retransmission compares chunk send times with the wall
// clock, so a clock running ahead of real time would stall recovery.
// Test-only code: it allocates freely.
#ifndef IWARPD_SCTP_SCTP_TEST_LINK_H_
#define IWARPD_SCTP_SCTP_TEST_LINK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "sctp/usrsctp_host.h"

namespace iwarp::sctp::testing {

struct Impairment {
  double loss = 0;       // probability a packet is dropped
  double duplicate = 0;  // probability a packet is delivered twice
  double reorder = 0;    // probability a packet is held back behind later ones
  double corrupt = 0;    // probability one byte of a packet is flipped
  uint32_t seed = 1;
};

class MemLink : public PacketSink {
 public:
  explicit MemLink(UsrsctpHost& host);
  // Packets sent from address `a` arrive at `b` and vice versa.
  void Join(void* a, void* b);
  void set_impairment(const Impairment& i);
  // Sees every packet the host sends (before impairment).
  void set_tap(std::function<void(void* from, ByteSpan packet)> tap) { tap_ = std::move(tap); }
  // Sees every packet handed to the receiving address (after impairment).
  void set_delivery_tap(std::function<void(void* to, ByteSpan packet)> tap) {
    delivery_tap_ = std::move(tap);
  }

  // One step: run usrsctp timers at the current time, move queued packets
  // across the link (with impairment), feed them in. Sleeps briefly when
  // there was nothing to move.
  void Step();
  // Milliseconds since the link was made.
  uint64_t now_ms() const;

  uint64_t delivered() const { return delivered_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t corrupted() const { return corrupted_; }
  uint64_t duplicated() const { return duplicated_; }
  uint64_t reordered() const { return reordered_; }

  void Transmit(void* conn, ByteSpan packet) override;

 private:
  struct Packet {
    void* to;
    std::vector<uint8_t> bytes;
  };
  UsrsctpHost& host_;
  std::map<void*, void*> peer_;
  Impairment imp_;
  std::mt19937 rng_{1};
  std::function<void(void*, ByteSpan)> tap_;
  std::function<void(void*, ByteSpan)> delivery_tap_;
  std::vector<Packet> wire_;
  std::vector<Packet> held_;  // reordered: delivered after the next batch
  uint64_t origin_ms_;
  uint64_t delivered_ = 0, dropped_ = 0, corrupted_ = 0, duplicated_ = 0, reordered_ = 0;
  bool Chance(double p);
};

// Runs `link` and the caller's `service` (Accept, Service(), engine polls)
// until `done()` holds or `timeout_ms` of real time passed; returns done().
template <typename Service, typename Done>
bool RunLinkUntil(MemLink& link, Service service, Done done, uint64_t timeout_ms) {
  const uint64_t end = link.now_ms() + timeout_ms;
  while (link.now_ms() < end) {
    service();
    if (done()) return true;
    link.Step();
  }
  service();
  return done();
}

// Benchmark support: a preallocated FIFO of SCTP packets between two AF_CONN
// addresses, without impairment, that allocates nothing after construction
// (so a benchmark measures the stacks, not the test link). A packet that
// finds the FIFO full, or is larger than a slot, is lost; SCTP recovers.
class RingLink final : public PacketSink {
 public:
  static constexpr size_t kSlots = 4096;
  static constexpr size_t kSlotBytes = 1500;
  RingLink(UsrsctpHost& host, void* a, void* b);

  // Runs usrsctp timers at the current (real) time, then delivers every
  // packet queued so far to its peer address.
  void Step();
  void Transmit(void* conn, ByteSpan packet) override;

 private:
  struct Slot {
    void* to;
    size_t len;
    uint8_t bytes[kSlotBytes];
  };
  UsrsctpHost& host_;
  void* a_;
  void* b_;
  std::vector<Slot> slots_;
  size_t head_ = 0, count_ = 0;
};

}  // namespace iwarp::sctp::testing

#endif  // IWARPD_SCTP_SCTP_TEST_LINK_H_
