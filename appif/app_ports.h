// The local TCP ports the application interface holds, for receive steering.
//
// Application QPs on the wire (libiwarp QPs to other hosts) and application
// listeners live on one worker, worker 0 (dataplane/app_interface.h). With
// several workers a segment for them may arrive on any RX queue; a worker
// other than 0 that receives a TCP segment whose local (destination) port is
// held here hands the frame to worker 0 instead of its own TcpStack, which
// has no listener or connection for it and would answer RST.
//
// A port is held while worker 0 has an application listener on it, an
// application connection whose local port it is (active opens: the
// ephemeral port; passive: the listening port; also while the connection
// lingers in TIME-WAIT after the QP is gone), or both: a reference count
// per port, published as one bit when it goes 0 <-> 1. Ports are held
// whatever the remote address, so while an application holds a port every
// segment to it goes to worker 0 (built-in services never use such a port:
// an application cannot listen on a built-in service's port, Reserved, and
// worker 0's stack picks no ephemeral port that has a listener).
//
// Threading: one writer thread, worker 0 (the WireEngine's Poll), calls
// Acquire / Release; Reserve only at start-up, before the workers start.
// Any thread reads Held / Reserved: one relaxed 64-bit load, no lock, no
// allocation (the receive fast path). The bit store is a release, so a
// worker that sees it also sees everything worker 0 wrote before; a frame in
// flight while a bit changes may still take the old way (at worst one RST
// or one extra hop for a connection being set up or torn down).
#ifndef IWARPD_APPIF_APP_PORTS_H_
#define IWARPD_APPIF_APP_PORTS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

namespace iwarp::appif {

class AppPortTable {
 public:
  static constexpr uint32_t kPorts = 65536;
  // A port's holds saturate here (Acquire fails): far above any stack's
  // connection table.
  static constexpr uint32_t kMaxHolds = UINT16_MAX;

  AppPortTable();
  AppPortTable(const AppPortTable&) = delete;
  AppPortTable& operator=(const AppPortTable&) = delete;

  // ---- any thread (receive fast path) ----
  // True while worker 0 holds `port` for an application.
  bool Held(uint16_t port) const {
    return (held_[port >> 6].load(std::memory_order_relaxed) >> (port & 63)) & 1;
  }
  // True if a built-in service listens on `port` (set at start-up only).
  bool Reserved(uint16_t port) const { return (reserved_[port >> 6] >> (port & 63)) & 1; }

  // ---- start-up, before any reader or writer runs ----
  void Reserve(uint16_t port) { reserved_[port >> 6] |= uint64_t{1} << (port & 63); }

  // ---- the writer thread (worker 0) ----
  // One more hold of `port` (published on the first). False, changing
  // nothing, for port 0, a reserved port, or a port at kMaxHolds.
  bool Acquire(uint16_t port);
  // Gives back one hold (unpublished with the last). A port with no holds is
  // left alone (returns false): callers release only what they acquired,
  // and a mistake must not unpublish another holder's port.
  bool Release(uint16_t port);
  // Holds of `port` now; writer thread (or a quiescent table) only.
  uint32_t holds(uint16_t port) const { return holds_[port]; }
  // Ports with at least one hold; writer thread (or a quiescent table) only.
  uint32_t held_ports() const { return held_ports_; }

 private:
  static constexpr size_t kWords = kPorts / 64;
  std::array<std::atomic<uint64_t>, kWords> held_;
  std::array<uint64_t, kWords> reserved_{};
  std::unique_ptr<uint16_t[]> holds_;  // kPorts entries, writer only
  uint32_t held_ports_ = 0;
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_APP_PORTS_H_
