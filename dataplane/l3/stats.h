// Per-lcore data-plane counters.
//
// Contract: each LcoreStats belongs to one worker lcore, which is its only
// writer; the telemetry thread reads it concurrently. Counters are relaxed
// atomics updated with a plain load + store (no locked read-modify-write: a
// single writer needs none), so a read sees each counter torn-free but the set
// of counters is not a snapshot. Each block is cache-line aligned so that two
// workers never write to the same line.
#ifndef IWARPD_DATAPLANE_L3_STATS_H_
#define IWARPD_DATAPLANE_L3_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "common/drop_reasons.h"

namespace iwarp::dataplane {

inline constexpr size_t kCacheLine = 64;

class Counter {
 public:
  // Writer side: only the owning lcore calls Add.
  void Add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};
static_assert(sizeof(Counter) == sizeof(uint64_t));
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// X(member, "telemetry_name")
#define IWARP_LCORE_COUNTERS(X)                   \
  X(rx_packets, "rx_packets")                     \
  X(rx_bytes, "rx_bytes")                         \
  X(tx_packets, "tx_packets")                     \
  X(tx_bytes, "tx_bytes")                         \
  X(arp_requests_in, "arp_requests_in")           \
  X(arp_replies_in, "arp_replies_in")             \
  X(arp_requests_out, "arp_requests_out")         \
  X(arp_replies_out, "arp_replies_out")           \
  X(icmp_echo_requests_in, "icmp_echo_requests_in") \
  X(icmp_echo_replies_out, "icmp_echo_replies_out") \
  /* udp_echo: datagrams to the echo port answered (RFC 862) */ \
  X(udp_echoes_out, "udp_echoes_out")             \
  X(steered_out, "steered_out")                   \
  X(steered_in, "steered_in")                     \
  /* of steered_out: frames to a port an application QP or listener holds, */ \
  /* handed to worker 0 (appif/app_ports.h) */   \
  X(steered_app, "steered_app")                   \
  X(neighbor_updates_lost, "neighbor_updates_lost") \
  /* TX: frames a tx_burst did not take, kept for the next try (not lost; */ \
  /* each frame counted once, however many bursts it waits) */             \
  X(tx_held, "tx_held")                           \
  /* TCP segmentation offload (ports[].tso): frames handed to the device */ \
  /* as one TSO frame, the segments they carry, and received frames the */  \
  /* device had coalesced (LRO / a peer's TSO frame) */                     \
  X(tso_frames_out, "tso_frames_out")             \
  X(tso_segments_out, "tso_segments_out")         \
  X(rx_coalesced, "rx_coalesced")                 \
  /* payload bytes of TSO frames the device reads from the TCP send */    \
  /* buffers instead of a copy (PortRuntime::tx_by_reference) */         \
  X(tx_payload_by_reference, "tx_payload_by_reference") \
  /* SCTP iwarp_client teardown failures (worker 0; logged by the daemon) */ \
  X(sctp_session_end_timeouts, "sctp_session_end_timeouts") \
  X(sctp_shutdowns_forced, "sctp_shutdowns_forced") \
  /* impairment stage (ports[].impairment) */     \
  X(impair_matched, "impair_matched")             \
  X(impair_duplicated, "impair_duplicated")       \
  X(impair_reordered, "impair_reordered")         \
  X(impair_delayed, "impair_delayed")             \
  X(impair_corrupted_stale, "impair_corrupted_stale") \
  X(impair_corrupted_fixed, "impair_corrupted_fixed") \
  X(impair_skipped, "impair_skipped")             \
  /* workers.idle_block_after_us: times the worker blocked until woken, */ \
  /* and the microseconds it spent blocked */      \
  X(idle_blocks, "idle_blocks")                   \
  X(idle_blocked_us, "idle_blocked_us")           \
  /* The poll loop's own load: microseconds it ran (not blocked), and of */ \
  /* them those in polls that found work (frames, ring entries, work */    \
  /* requests); busy_us over poll_us between two reads is the share of */  \
  /* the worker's core doing work, where top shows 100% for a busy poller */ \
  X(poll_us, "poll_us")                           \
  X(busy_us, "busy_us")

struct alignas(kCacheLine) LcoreStats {
#define IWARP_COUNTER_MEMBER(member, name) Counter member;
  IWARP_LCORE_COUNTERS(IWARP_COUNTER_MEMBER)
#undef IWARP_COUNTER_MEMBER
  std::array<Counter, kNumDropReasons> drops;

  void Drop(DropReason r, uint64_t n = 1) { drops[static_cast<size_t>(r)].Add(n); }
  uint64_t Dropped(DropReason r) const { return drops[static_cast<size_t>(r)].Get(); }
  uint64_t DroppedTotal() const {
    uint64_t t = 0;
    for (const Counter& c : drops) t += c.Get();
    return t;
  }
};
static_assert(alignof(LcoreStats) == kCacheLine);
static_assert(sizeof(LcoreStats) % kCacheLine == 0);

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_L3_STATS_H_
