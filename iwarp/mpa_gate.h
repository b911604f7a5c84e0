// MpaGate: the passive side of MPA connection setup before a QP is bound.
//
// A TCP connection a listener accepts costs nothing but a gate slot until its
// MPA Request (RFC 5044 7.1.1) has arrived whole and validated; only then is
// its owner asked to bind a QP (built-in services) or to report the request
// to an application (iwarp_listen). Deployed stacks do the same (iw_cm binds
// a QP at iwarp_accept): idle or half-open connections cannot take QPs.
//
// What a waiting connection costs and how long it may wait are bounded:
//  - at most max_pending connections wait per gate (one gate per listening
//    port); a new connection arriving at a full gate resets the one that has
//    waited longest (`evicted`), so a flood of idle connections only ever
//    delays itself: a healthy initiator sends its Request one round trip
//    after the handshake and is served long before it is the oldest;
//  - at most max_pending_per_source of them from one remote IPv4 address: a
//    further connection from that address resets that address's
//    longest-waiting one (`refused_per_source`), so a source's flood delays
//    only itself and a healthy client behind the same address still gets in;
//  - a connection without a complete Request after request_timeout_us is
//    reset (`request_timeouts`; RFC 5044 7.1.2 rules 8 and 10).
//
// Refusals, and what goes on the wire (tests pin each one):
//  - a frame that is not a valid MPA Request (bad key, a Reply key, bad
//    revision, PD_Length over 512, bytes after the Request): RFC 5044 7.1.2
//    rule 2 "MUST close": RST (`bad_requests`);
//  - a valid Request whose private data (the ULP's, after the RFC 6581
//    IRD/ORD block) exceeds max_private_data, or that the owner cannot serve
//    (no QP free, the application's request table full): an MPA Reply with the
//    Reject bit, the Request's revision and C bit, the IRD/ORD block (IRD and
//    ORD 0) when the Request had one, and the reason as ASCII private data;
//    then FIN (rule 2: "SHOULD return an MPA Reply Frame with the Rejected
//    Connection bit set"); a peer that does not close within
//    kRejectLingerUs is reset (`rejects_sent`, and the reason's counter);
//  - timeouts, evictions and per-source refusals precede any Request: RST,
//    since no Reply is possible.
//
// Threading: the core that owns the TcpStack. Allocation: Create() allocates
// every slot (kMaxRequestBytes each); nothing allocates afterwards.
#ifndef IWARPD_IWARP_MPA_GATE_H_
#define IWARPD_IWARP_MPA_GATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/bytes.h"
#include "mpa/mpa_frame.h"
#include "tcp_lite/tcp_stack.h"

namespace iwarp::engine {

// The longest MPA Request: header and the RFC's 512 bytes of private data.
inline constexpr size_t kMaxRequestBytes = mpa::kStartupHeaderSize + mpa::kMaxPrivateDataLength;
// How long a refused connection may stay open after our Reject and FIN.
inline constexpr uint64_t kRejectLingerUs = 1'000'000;

struct MpaGateOptions {
  uint32_t max_pending = 256;             // connections waiting for their Request
  uint32_t max_pending_per_source = 32;   // of those, from one remote address
  uint64_t request_timeout_us = 5'000'000;
  // Private data a Request may carry, not counting the 4-byte RFC 6581
  // IRD/ORD block (<= 508).
  uint32_t max_private_data = 256;
};

// X(field) counters of a gate.
#define IWARP_MPA_GATE_COUNTERS(X)                                                    \
  X(passive_opens)          /* TCP connections accepted into the gate */              \
  X(requests)               /* valid MPA Requests handed to the owner */              \
  X(refused_per_source)     /* source at its limit: its oldest waiting one reset */   \
  X(evicted)                /* waited longest, reset for a new connection (RST) */    \
  X(request_timeouts)       /* no complete Request in time (RST) */                   \
  X(bad_requests)           /* not a valid MPA Request (RST) */                       \
  X(refused_private_data)   /* Request's private data over the limit (Reject) */      \
  X(refused_no_qp)          /* owner had no QP (or request slot) free (Reject) */     \
  X(rejects_sent)           /* MPA Replies with the Reject bit sent */

struct MpaGateCounters {
#define IWARP_MPA_GATE_FIELD(f) uint64_t f = 0;
  IWARP_MPA_GATE_COUNTERS(IWARP_MPA_GATE_FIELD)
#undef IWARP_MPA_GATE_FIELD
  MpaGateCounters& operator+=(const MpaGateCounters& o) {
#define IWARP_MPA_GATE_ADD(f) f += o.f;
    IWARP_MPA_GATE_COUNTERS(IWARP_MPA_GATE_ADD)
#undef IWARP_MPA_GATE_ADD
    return *this;
  }
};

struct GateDecision {
  // true: the owner took the connection (it called TcpStack::SetUser);
  // false: it has nothing to serve it with (refused_no_qp).
  bool taken = false;
  // Sent in the Reject Reply (truncated to 508 bytes); copied before the
  // gate returns.
  ByteSpan private_data;
};

class MpaGateOwner {
 public:
  virtual ~MpaGateOwner() = default;
  // A valid MPA Request arrived on `conn` from `tuple`. `frame` is the
  // Request exactly as received (valid during the call: an owner binding a
  // QP replays it with Qp::AttachPassive, TcpStack::SetUser, Qp::OnData).
  // Called from inside the stack's delivery; may call Send, SetUser, Abort.
  virtual GateDecision OnMpaRequest(tcp::ConnId conn, const tcp::FourTuple& tuple,
                                    const mpa::StartupFrame& request, ByteSpan frame) = 0;
};

class MpaGate final : public tcp::TcpUser {
 public:
  static absl::StatusOr<std::unique_ptr<MpaGate>> Create(const MpaGateOptions& options,
                                                         tcp::TcpStack& stack,
                                                         MpaGateOwner& owner);
  ~MpaGate() override;

  // `now_us`: the owner's clock (the one Poll gets), so that the first
  // connections' deadlines are right before the first Poll.
  absl::Status Listen(uint16_t port, uint64_t now_us);
  // Stops listening and resets every waiting connection (while the stack
  // lives; the destructor leaves the stack alone, which may be gone).
  void Close(uint64_t now_us);
  // Timeouts and reject lingers; cheap unless a deadline passed.
  void Poll(uint64_t now_us);

  const MpaGateCounters& counters() const { return counters_; }
  // Connections waiting for their Request (or lingering after a Reject).
  uint32_t pending() const { return used_; }
  const MpaGateOptions& options() const { return options_; }

  // TcpUser.
  tcp::TcpUser* OnAccept(tcp::ConnId conn, const tcp::FourTuple& tuple) override;
  size_t OnData(tcp::ConnId conn, uint64_t stream_offset, ByteSpan data) override;
  // A peer that closes before its Request is done with us: its slot is
  // freed at once (RST: nothing of ours is in flight).
  void OnPeerFin(tcp::ConnId conn) override;
  void OnClosed(tcp::ConnId conn, tcp::CloseReason reason) override;

 private:
  enum class SlotState : uint8_t { kFree, kAwaiting, kRejected };
  struct Slot {
    SlotState state = SlotState::kFree;
    tcp::ConnId conn;
    tcp::FourTuple tuple;
    uint64_t since_us = 0;
    uint64_t deadline_us = 0;
    uint16_t len = 0;
    uint8_t buf[kMaxRequestBytes];
  };

  MpaGate(const MpaGateOptions& options, tcp::TcpStack& stack, MpaGateOwner& owner);
  Slot* Find(tcp::ConnId conn);
  void Free(Slot& s);
  // RST and free (timeouts, evictions, bad Requests).
  void Reset(Slot& s);
  void Reject(Slot& s, const mpa::StartupFrame& request, ByteSpan private_data);
  void NoteDeadline(uint64_t t) {
    if (t < next_deadline_us_) next_deadline_us_ = t;
  }

  const MpaGateOptions options_;
  tcp::TcpStack& stack_;
  MpaGateOwner& owner_;
  std::unique_ptr<Slot[]> slots_;
  std::vector<uint32_t> by_conn_;  // TcpStack slot -> gate slot + 1 (0: none)
  uint32_t used_ = 0;
  uint16_t port_ = 0;  // listening (0: not)
  uint64_t now_us_ = 0;
  uint64_t next_deadline_us_ = UINT64_MAX;
  MpaGateCounters counters_;
};

}  // namespace iwarp::engine

#endif  // IWARPD_IWARP_MPA_GATE_H_
