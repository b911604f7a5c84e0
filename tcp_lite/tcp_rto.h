// Internal to tcp_lite/: a building block of TcpStack's implementation; not API.
//
// Retransmission timeout estimation (RFC 6298).
//
// Pure logic: the caller passes RTT samples in microseconds and tells the
// estimator when the retransmission timer expired; no clock is read here.
//
// Contracts:
//  - One estimator per connection, owned by the connection's worker core; not
//    thread safe. Nothing here allocates, throws or logs.
//  - Karn's algorithm (RFC 6298 3) is the caller's: OnRttSample() must not be
//    fed from an ACK of a retransmitted segment unless the sample comes from
//    the TCP Timestamps option (RFC 7323 4.1 / 4.2), which names the segment.
//  - Arithmetic is integer with the classic fractional scaling: SRTT is kept
//    times 8 and RTTVAR times 4, so alpha = 1/8 and beta = 1/4 (RFC 6298 2.3)
//    are shifts and K*RTTVAR (K = 4) is the scaled RTTVAR itself. Reported
//    values are rounded down to 1 us.
#ifndef IWARPD_TCP_LITE_TCP_RTO_H_
#define IWARPD_TCP_LITE_TCP_RTO_H_

#include <cstdint>

namespace iwarp::tcp {

struct RtoConfig {
  // Lower bound of the RTO. RFC 6298 2.4 says 1 s ("SHOULD"); the default is
  // 200 ms as in Linux, which suits the short RTTs of a storage network. Set
  // 1'000'000 for the RFC's value.
  uint64_t min_rto_us = 200'000;
  // Upper bound of the RTO; RFC 6298 2.5 allows any maximum of at least 60 s.
  uint64_t max_rto_us = 120'000'000;
  // RTO before the first RTT sample (RFC 6298 2.1).
  uint64_t initial_rto_us = 1'000'000;
  // Clock granularity G (RFC 6298 2.2, 2.3); the timer wheel tick.
  uint64_t granularity_us = 100;
};

class RtoEstimator {
 public:
  // Samples above this are taken as this (about 19 hours); keeps the scaled
  // arithmetic far from overflow whatever the caller passes.
  static constexpr uint64_t kMaxRttSampleUs = uint64_t{1} << 36;

  // An inconsistent config is repaired, not rejected: max_rto_us below
  // min_rto_us is raised to min_rto_us, initial_rto_us is clamped into
  // [min_rto_us, max_rto_us] and granularity_us to kMaxRttSampleUs. Configuration checks belong to config/.
  explicit RtoEstimator(const RtoConfig& config = RtoConfig());

  // A valid RTT measurement R in microseconds (RFC 6298 2.2 first sample,
  // 2.3 later samples). Recomputes the RTO, which also drops any backoff
  // (RFC 6298 5.7 "the RTO is recomputed" when a new sample arrives).
  void OnRttSample(uint64_t rtt_us);

  // The retransmission timer expired (RFC 6298 5.5): RTO <- 2 * RTO, held at
  // max_rto_us. The backed-off value stays until the next sample.
  void OnTimeout();

  // RFC 6298 5, note after 5.7: after several backoffs a host MAY forget
  // SRTT and RTTVAR; the next sample is then treated as the first. Also
  // resets the backoff.
  void ClearEstimate();

  // Current RTO including backoff, in [min_rto_us, max_rto_us].
  uint64_t rto_us() const { return rto_us_; }
  bool has_sample() const { return has_sample_; }
  // SRTT and RTTVAR rounded down to 1 us (0 before the first sample).
  uint64_t srtt_us() const { return srtt_x8_ >> 3; }
  uint64_t rttvar_us() const { return rttvar_x4_ >> 2; }
  // Unrounded state: SRTT in 1/8 us, RTTVAR in 1/4 us.
  uint64_t srtt_x8() const { return srtt_x8_; }
  uint64_t rttvar_x4() const { return rttvar_x4_; }
  // Timeouts since the last sample (the caller's give-up counter, RFC 1122
  // 4.2.3.5 R1/R2).
  uint32_t backoff_count() const { return backoff_count_; }
  const RtoConfig& config() const { return config_; }

 private:
  // RFC 6298 2.2 / 2.3: RTO = SRTT + max(G, K*RTTVAR), then 2.4 / 2.5 bounds.
  uint64_t ComputeRto() const;

  RtoConfig config_;
  uint64_t srtt_x8_ = 0;
  uint64_t rttvar_x4_ = 0;
  uint64_t rto_us_ = 0;
  uint32_t backoff_count_ = 0;
  bool has_sample_ = false;
};

}  // namespace iwarp::tcp

#endif  // IWARPD_TCP_LITE_TCP_RTO_H_
