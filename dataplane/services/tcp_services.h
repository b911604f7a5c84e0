// Plain TCP services on a worker's TcpStack (config `services:`): echo, sink
// (counts and optionally SHA-256 hashes what it receives) and source (active
// open that sends a deterministic pattern). They let operators and tests
// drive tcp_lite without RDMA.
//
// DPDK-free: a service is a tcp::TcpUser over one TcpStack.
//
// Contract: services belong to the worker that owns the stack and run only on
// its lcore. Per-connection state is a table indexed by the stack's
// connection slot, allocated at construction; after Start() nothing
// allocates, locks, logs or throws. The worker calls Poll() every loop
// iteration (outside stack callbacks) for the work a callback may not do
// (DeliverPending, the source's delayed start).
#ifndef IWARPD_DATAPLANE_SERVICES_TCP_SERVICES_H_
#define IWARPD_DATAPLANE_SERVICES_TCP_SERVICES_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "common/sha256.h"
#include "config/config.h"
#include "tcp_lite/tcp_stack.h"

namespace iwarp::dataplane {

// The source's stream: byte i is i mod kPatternPeriod.
inline constexpr uint32_t kPatternPeriod = 251;

// The worker's clock as the services see it (microseconds, the stack's clock).
struct ServiceClock {
  uint64_t now_us = 0;
};

// One finished connection of a sink or a source.
struct TransferRecord {
  tcp::FourTuple tuple;
  uint64_t bytes = 0;          // received (sink) or sent and acknowledged (source)
  Sha256::Digest sha256{};     // valid when has_sha256
  bool has_sha256 = false;
  bool complete = false;       // sink: the peer's FIN arrived; source: every byte sent and closed normally
  tcp::CloseReason reason = tcp::CloseReason::kNormal;
};

struct ServiceCounters {
  uint64_t accepted = 0;   // passive opens handed to the service
  uint64_t connected = 0;  // source: active opens that reached ESTABLISHED
  uint64_t connect_failed = 0;  // source: Connect refused locally
  uint64_t closed = 0;
  uint64_t closed_abnormal = 0;  // reset, timeout, aborted, refused
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t active = 0;     // connections open now
};

class TcpService : public tcp::TcpUser {
 public:
  // Finished transfers kept for telemetry (newest replace the oldest).
  static constexpr size_t kRecent = 64;

  // Control path. `stack` and `clock` outlive the service; `max_connections`
  // is the stack's table size.
  static std::unique_ptr<TcpService> Create(const config::ServiceConfig& cfg, tcp::TcpStack* stack,
                                            const ServiceClock* clock, uint32_t max_connections,
                                            uint32_t local_ip);

  // Control path: listens (echo, sink). A source starts from Poll.
  virtual absl::Status Start() = 0;
  // Fast path, outside stack callbacks: deferred deliveries; the source's
  // connects once start_delay_ms passed since `start_ms` (first Poll).
  virtual void Poll(uint64_t now_ms);

  const config::ServiceConfig& config() const { return cfg_; }
  const ServiceCounters& counters() const { return counters_; }
  // The finished transfers, oldest first (at most kRecent).
  size_t recent_count() const { return recent_count_; }
  const TransferRecord& recent(size_t i) const;
  // Whether `conn` is one of this service's open connections.
  bool Owns(tcp::ConnId conn) const;

 protected:
  struct Conn {
    uint32_t generation = 0;
    bool active = false;
    bool peer_fin = false;
    bool shut = false;         // our FIN queued
    bool unconsumed = false;   // echo: bytes left in the receive buffer
    bool deliver_queued = false;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;    // source/echo: accepted by Send
    Sha256 sha;
    tcp::FourTuple tuple;
  };

  TcpService(const config::ServiceConfig& cfg, tcp::TcpStack* stack, const ServiceClock* clock,
             uint32_t max_connections);

  Conn* Find(tcp::ConnId conn);
  Conn& Open(tcp::ConnId conn, const tcp::FourTuple& tuple);
  void Record(const Conn& c, bool complete, tcp::CloseReason reason);
  // Asks Poll to call DeliverPending for `conn` (not allowed inside callbacks).
  void QueueDeliver(tcp::ConnId conn, Conn& c);

  void OnClosed(tcp::ConnId conn, tcp::CloseReason reason) override;
  // Whether a closing connection's transfer counts as complete.
  virtual bool Complete(const Conn& c, tcp::CloseReason reason) const = 0;

  const config::ServiceConfig cfg_;
  tcp::TcpStack* const stack_;
  const ServiceClock* const clock_;
  ServiceCounters counters_;
  std::vector<Conn> conns_;  // by connection slot
  std::vector<tcp::ConnId> deliver_;  // DeliverPending queue, capacity max_connections
  std::array<TransferRecord, kRecent> recent_{};
  size_t recent_next_ = 0;
  size_t recent_count_ = 0;
};

// Fills `out` with the source pattern for stream offsets [offset, offset + out.size()).
void FillPattern(uint64_t offset, MutableByteSpan out);

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_SERVICES_TCP_SERVICES_H_
