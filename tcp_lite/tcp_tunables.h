// The TCP engine's tunables: one table that both the engine's TcpOptions and
// the daemon's configuration (the `tcp:` section) are generated from, so a
// tunable's name, type, default and operator range are written once.
//
// X(kind, type, name, default, lo, hi)
//   kind   how the configuration reads and prints it:
//          Bool; Uint (lo..hi); UintOrAuto (lo..hi, or "auto" = default);
//          Mss (0 = the port's MTU - 40, or lo..hi); Enum (the names are
//          the config's).
//   lo/hi  the range an operator may configure (config/ checks it, with the
//          file, line and column). TcpStack::Create checks only what the
//          engine needs to run (it serves tests and tools with smaller
//          values than an operator would choose).
#ifndef IWARPD_TCP_LITE_TCP_TUNABLES_H_
#define IWARPD_TCP_LITE_TCP_TUNABLES_H_

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "common/enum_names.h"
#include "tcp_lite/tcp_cc.h"

namespace iwarp::tcp {

// X(enumerator, "name")
#define IWARP_TCP_SYN_COOKIE_MODES(X)                                                             \
  X(kOff, "off")  /* a SYN beyond the backlog is dropped (counted) */                             \
  X(kOnPressure, "on_pressure")  /* stateless SYN-ACKs once the backlog is full (RFC 4987 3.6) */ \
  X(kAlways, "always")  /* every passive open goes through a cookie (tests, SYN floods) */
enum class SynCookieMode : uint8_t { IWARP_TCP_SYN_COOKIE_MODES(IWARP_ENUMERATOR) };
std::string_view SynCookieModeName(SynCookieMode m);

// clang-format off
#define IWARPD_TCP_TUNABLES(X)                                                              \
  /* Connection table: established, half-open (SYN-RECEIVED) and TIME_WAIT */              \
  /* connections all take a slot. */                                                        \
  X(Uint, uint32_t, max_connections, 256, 1, 1u << 20)                                      \
  X(Uint, uint32_t, max_listeners, 16, 1, 1024)                                             \
  /* Half-open passive connections held at most (RFC 4987 3.1 backlog). */                  \
  X(Uint, uint32_t, syn_backlog, 128, 1, 1u << 20)                                          \
  X(Enum, ::iwarp::tcp::SynCookieMode, syn_cookies,                                         \
    ::iwarp::tcp::SynCookieMode::kOnPressure, 0, 0)                                         \
  /* The MSS we announce; 0: the port's mtu - 40. 88 leaves room for options. */            \
  X(Mss, uint16_t, mss, 0, 88, 9560)                                                 \
  /* Per-connection buffers, allocated up front for every table slot. */                    \
  X(Uint, uint32_t, send_buffer_bytes, 256 * 1024, 4096, 64u << 20)                         \
  X(Uint, uint32_t, receive_buffer_bytes, 256 * 1024, 4096, 64u << 20)                      \
  /* Caller-owned (zero-copy) sends outstanding per connection at most. */                  \
  X(Uint, uint32_t, max_zero_copy_sends, 64, 1, 65536)                                      \
  /* Record boundaries (SendRecord) remembered per connection at most; */                   \
  /* auto (0): EffectiveMaxSendRecords. */                                                  \
  X(UintOrAuto, uint32_t, max_send_records, 0, 1, 1u << 20)                                 \
  /* Out-of-order segments held per connection (their bytes live in the */                 \
  /* receive buffer). */                                                                    \
  X(Uint, uint32_t, max_ooo_segments, 512, 1, 4096)                                         \
  /* RFC 7323 2: our window shift; auto (-1) picks the smallest shift whose */              \
  /* 16-bit window covers receive_buffer_bytes. Shifts above 14 are not allowed (2.3). */   \
  X(UintOrAuto, int32_t, window_scale, -1, 0, 14)                                           \
  X(Bool, bool, sack, true, 0, 0)       /* RFC 2018 */                                      \
  X(Bool, bool, timestamps, true, 0, 0) /* RFC 7323 */                                      \
  /* Delayed ACK (RFC 9293 3.8.6.3, RFC 5681 4.2): an ACK is sent at latest this long */    \
  /* after the first unacknowledged segment, and at once for every second full-sized */     \
  /* segment, out-of-order data or a filled hole. 0 acks every segment at once, or, */      \
  /* inside BeginBurst/EndBurst, in-order data once at the burst's end. A connection */     \
  /* whose timer fired (no reply of ours carried the ACK in time) acknowledges as with */   \
  /* 0 until data we send within delayed_ack_us of receiving carries an ACK again */        \
  /* (quick-ACK and ping-pong modes; counted in quick_ack_entries). RFC 1122 4.2.3.2: */    \
  /* less than 0.5 s. */                                                                    \
  X(Uint, uint32_t, delayed_ack_us, 200, 0, 500000)                                         \
  X(Bool, bool, nagle, false, 0, 0) /* RFC 9293 3.7.4; off: small writes go out at once */  \
  /* Keepalive (RFC 9293 3.8.4, RFC 1122 4.2.3.6), off by default. */                       \
  X(Bool, bool, keepalive, false, 0, 0)                                                     \
  X(Uint, uint32_t, keepalive_idle_s, 7200, 1, 86400 * 7)                                   \
  X(Uint, uint32_t, keepalive_interval_s, 75, 1, 86400)                                     \
  X(Uint, uint32_t, keepalive_count, 9, 1, 127)                                             \
  /* TIME_WAIT duration (2*MSL, RFC 9293 3.3.2) and the most connections held in it; */     \
  /* beyond that the oldest TIME_WAIT slot is reused (counted). */                          \
  X(Uint, uint32_t, time_wait_s, 60, 0, 600)                                                \
  X(Uint, uint32_t, max_time_wait, 64, 0, 1u << 20)                                         \
  /* RFC 6298 bounds (see RtoConfig); min <= initial <= max. */                             \
  X(Uint, uint64_t, rto_min_us, 200'000, 1000, 600'000'000)                                 \
  X(Uint, uint64_t, rto_max_us, 60'000'000, 1000, 600'000'000)                              \
  X(Uint, uint64_t, rto_initial_us, 1'000'000, 1000, 600'000'000)                           \
  /* Give up after this many retransmissions of one segment (RFC 1122 4.2.3.5 R2) */        \
  /* and of a SYN (R2 for SYN). */                                                          \
  X(Uint, uint32_t, max_retransmissions, 15, 1, 255)                                        \
  X(Uint, uint32_t, max_syn_retransmissions, 6, 1, 255)                                     \
  X(Enum, ::iwarp::tcp::CcAlgorithm, congestion_control, ::iwarp::tcp::CcAlgorithm::kCubic,  \
    0, 0)                                                                                   \
  /* RFC 5961 7: challenge ACKs sent per second per stack, at most. */                      \
  X(Uint, uint32_t, challenge_ack_limit, 1000, 0, 1000000)                                  \
  /* Ephemeral ports for Connect() with local_port 0 (RFC 6056); min <= max. */             \
  X(Uint, uint16_t, ephemeral_port_min, 32768, 1024, 65535)                                 \
  X(Uint, uint16_t, ephemeral_port_max, 60999, 1024, 65535)                                 \
  /* Timer wheel tick. */                                                                   \
  X(Uint, uint32_t, timer_tick_us, 100, 10, 10000)
// clang-format on

// Every tunable, with its default; the configuration's TcpConfig holds the same
// members (config/config.h).
struct TcpTunables {
#define IWARPD_TCP_TUNABLE_MEMBER(kind, type, name, def, lo, hi) type name = def;
  IWARPD_TCP_TUNABLES(IWARPD_TCP_TUNABLE_MEMBER)
#undef IWARPD_TCP_TUNABLE_MEMBER

  friend bool operator==(const TcpTunables&, const TcpTunables&) = default;
};

// max_send_records, resolved: as configured, or for auto (0) enough records
// for a send buffer of 1 KiB FPDUs, at least 1024.
inline uint32_t EffectiveMaxSendRecords(uint32_t max_send_records, uint32_t send_buffer_bytes) {
  if (max_send_records != 0) return max_send_records;
  return std::max<uint32_t>(1024, (send_buffer_bytes + 1023) / 1024);
}

}  // namespace iwarp::tcp

#endif  // IWARPD_TCP_LITE_TCP_TUNABLES_H_
