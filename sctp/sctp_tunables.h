// The SCTP endpoint's tunables: one table that the daemon's configuration
// (the `sctp:` section) and its copy into the endpoint's EndpointConfig are
// generated from, so a tunable's name, type, default, operator range and
// place in EndpointConfig are written once. Header only, without usrsctp:
// config/ includes it.
//
// X(kind, type, name, default, lo, hi, member)
//   kind    how the configuration reads and prints it: Uint (lo..hi).
//   lo/hi   the range an operator may configure (config/ checks it, with the
//           file, line and column; the checks across keys stay there).
//   member  where the value goes in sctp::EndpointConfig (sctp/endpoint.h,
//           ApplyTunables). The defaults are EndpointConfig's (endpoint.cc
//           checks that at compile time).
#ifndef IWARPD_SCTP_SCTP_TUNABLES_H_
#define IWARPD_SCTP_SCTP_TUNABLES_H_

#include <cstdint>

namespace iwarp::sctp {

// clang-format off
#define IWARPD_SCTP_TUNABLES(X)                                                                 \
  /* DDP streams per association, SCTP_INITMSG in == out (RFC 5043 8: one DDP stream per */   \
  /* SCTP stream pair). */                                                                     \
  X(Uint, uint16_t, streams, 8, 1, 1024, association.streams)                                  \
  /* SO_SNDBUF / SO_RCVBUF per association. */                                                 \
  X(Uint, uint32_t, send_buffer_bytes, 256 * 1024, 16384, 64u << 20, association.send_buffer)  \
  X(Uint, uint32_t, receive_buffer_bytes, 256 * 1024, 16384, 64u << 20,                        \
    association.receive_buffer)                                                                \
  /* Outbound packets queued between loop drains. */                                           \
  X(Uint, uint32_t, tx_queue_packets, 1024, 16, 65536, host.tx_queue_packets)                  \
  /* usrsctp DATA chunks queued per association; kept within the DDP-SSN reorder window */     \
  /* (1024, RFC 5043 10). */                                                                   \
  X(Uint, uint32_t, max_chunks_on_queue, 512, 1, 1024, host.max_chunks_on_queue)               \
  /* SCTP_RTOINFO (RFC 9260 15); min <= initial <= max. */                                     \
  X(Uint, uint32_t, rto_initial_ms, 3000, 1, 600000, association.rto_initial_ms)               \
  X(Uint, uint32_t, rto_min_ms, 1000, 1, 600000, association.rto_min_ms)                       \
  X(Uint, uint32_t, rto_max_ms, 60000, 1, 600000, association.rto_max_ms)                      \
  /* SCTP_DELAYED_SACK: sack_delay and sack_freq (1 = a SACK for every packet). */             \
  X(Uint, uint32_t, delayed_sack_ms, 10, 1, 500, association.delayed_sack_ms)                  \
  X(Uint, uint32_t, sack_frequency, 2, 1, 64, association.sack_frequency)                      \
  /* Remote addresses at once, and associations tracked at once. */                            \
  X(Uint, uint32_t, max_peers, 64, 1, 4096, max_peers)                                         \
  X(Uint, uint32_t, max_associations, 256, 1, 4096, max_associations)
// clang-format on

// Every tunable, with its default; the configuration's SctpConfig holds the
// same members (config/config.h).
struct SctpTunables {
#define IWARPD_SCTP_TUNABLE_MEMBER(kind, type, name, def, lo, hi, member) type name = def;
  IWARPD_SCTP_TUNABLES(IWARPD_SCTP_TUNABLE_MEMBER)
#undef IWARPD_SCTP_TUNABLE_MEMBER

  friend bool operator==(const SctpTunables&, const SctpTunables&) = default;
};

}  // namespace iwarp::sctp

#endif  // IWARPD_SCTP_SCTP_TUNABLES_H_
