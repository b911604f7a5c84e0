// TCP congestion control: NewReno (RFC 5681, RFC 6582, RFC 3465, RFC 6928)
// and CUBIC (RFC 8312, with the RFC 9438 refinements named where used).
//
// Pure logic: the TCP sender passes byte counts, sequence numbers and times in
// microseconds; no clock is read here.
//
// Contracts:
//  - One controller per connection, owned by the connection's worker core; not
//    thread safe. Nothing here allocates, throws, logs or uses floating point.
//  - The caller classifies ACKs: OnAck() for an ACK that advances SND.UNA,
//    OnDupAck() for a duplicate ACK as defined in RFC 5681 2 (outstanding data,
//    no payload, no SYN/FIN, SEG.ACK == SND.UNA, unchanged window).
//  - Limited transmit on the first two duplicate ACKs (RFC 3042), the
//    retransmissions themselves, timer restarts and Karn's rule are the
//    caller's; the return values say when a retransmission is due.
//  - cwnd() is always in [mss(), kMaxCwnd]; ssthresh() is at least 2 * mss().
//    Any sequence of calls with any argument values keeps this true.
//  - Sender sequence numbers: `snd_nxt` arguments are SND.NXT (one past the
//    highest sequence number transmitted so far, SND.MAX if the caller rewinds
//    SND.NXT on retransmission).
#ifndef IWARPD_TCP_LITE_TCP_CC_H_
#define IWARPD_TCP_LITE_TCP_CC_H_

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <variant>

#include "common/enum_names.h"
#include "common/seq.h"

namespace iwarp::tcp {

// Largest window TCP can use (RFC 7323 2.3: 2^30 with window scale 14).
inline constexpr uint32_t kMaxCwnd = uint32_t{1} << 30;
// Initial ssthresh: "arbitrarily high" (RFC 5681 3.1).
inline constexpr uint32_t kInitialSsthresh = UINT32_MAX;
inline constexpr uint32_t kMaxMss = 65535;
inline constexpr uint64_t kNoRttSample = UINT64_MAX;

// X(enumerator, "name")
#define IWARP_TCP_CC_ALGORITHMS(X) \
  X(kNewReno, "newreno")         \
  X(kCubic, "cubic")
enum class CcAlgorithm : uint8_t { IWARP_TCP_CC_ALGORITHMS(IWARP_ENUMERATOR) };
std::string_view CcAlgorithmName(CcAlgorithm a);

// What the sender must do after an ACK event, beyond sending what cwnd allows.
// X(enumerator, "name")
#define IWARP_TCP_CC_ACTIONS(X)                                                   \
  X(kNone, "none")                                                                \
  /* Third duplicate ACK: retransmit the segment at SND.UNA now */                \
  /* (RFC 5681 3.2 step 2, RFC 6582 3.2 step 2). */                               \
  X(kFastRetransmit, "fast_retransmit")                                           \
  /* Partial ACK in fast recovery: retransmit the first unacknowledged segment */ \
  /* and, on the first partial ACK, restart the retransmission timer */           \
  /* (RFC 6582 3.2 step 3). */                                                    \
  X(kRetransmitNext, "retransmit_next")
enum class CcAction : uint8_t { IWARP_TCP_CC_ACTIONS(IWARP_ENUMERATOR) };
std::string_view CcActionName(CcAction a);

// An ACK that advanced SND.UNA.
struct CcAck {
  Seq32 ack;                 // SEG.ACK
  uint32_t acked_bytes = 0;  // SND.UNA advance
  uint32_t flight_size = 0;  // bytes outstanding after this ACK (RFC 5681 2)
  uint64_t now_us = 0;
  uint64_t rtt_us = kNoRttSample;  // Karn-valid sample carried by this ACK
};

// RFC 6928 2: IW = min(10*MSS, max(2*MSS, 14600)).
constexpr uint32_t InitialWindow(uint32_t mss) {
  return std::min(10 * mss, std::max(2 * mss, uint32_t{14600}));
}

// Loss detection and recovery shared by the algorithms: duplicate ACK
// counting, fast retransmit, NewReno fast recovery with the `recover`
// variable, retransmission timeout, slow start with appropriate byte
// counting. `Algo` supplies the window reduction and the growth in congestion
// avoidance:
//   uint32_t CongestionEvent(uint32_t flight_size, bool timeout)  -> ssthresh
//   void GrowInAvoidance(const CcAck&)   (cwnd >= ssthresh, not in recovery)
//   void OnRttSample(uint64_t rtt_us)
// Calls into Algo are static (CRTP): no virtual call per ACK.
template <typename Algo>
class LossRecoveryCc {
 public:
  uint32_t cwnd() const { return cwnd_; }
  uint32_t ssthresh() const { return ssthresh_; }
  uint32_t mss() const { return mss_; }
  bool in_recovery() const { return in_recovery_; }
  uint32_t dup_acks() const { return dup_acks_; }
  // RFC 6582 `recover`: highest sequence number sent when the last recovery
  // or timeout began; meaningful once has_recover().
  Seq32 recover() const { return recover_; }
  bool has_recover() const { return has_recover_; }

  // SMSS changed (PMTU or the peer's MSS option); clamped to [1, kMaxMss].
  // cwnd and ssthresh keep their byte values within the invariant bounds.
  void SetMss(uint32_t mss) {
    mss_ = std::clamp(mss, uint32_t{1}, kMaxMss);
    ssthresh_ = std::max(ssthresh_, 2 * mss_);
    cwnd_ = std::clamp(cwnd_, mss_, kMaxCwnd);
  }

  // An ACK that advanced SND.UNA.
  CcAction OnAck(const CcAck& a) {
    if (a.rtt_us != kNoRttSample) algo().OnRttSample(a.rtt_us);
    dup_acks_ = 0;
    timeout_pending_ = false;
    if (in_recovery_) {
      if (a.ack > recover_) {
        // RFC 6582 3.2 step 3, full acknowledgment.
        ExitRecovery(a.flight_size);
        return CcAction::kNone;
      }
      // RFC 6582 3.2 step 3, partial acknowledgment: deflate by the amount
      // acknowledged, add back one SMSS if at least one SMSS was acknowledged.
      cwnd_ = cwnd_ > a.acked_bytes ? cwnd_ - a.acked_bytes : 0;
      if (a.acked_bytes >= mss_) cwnd_ += mss_;
      cwnd_ = std::clamp(cwnd_, mss_, kMaxCwnd);
      return CcAction::kRetransmitNext;
    }
    if (cwnd_ < ssthresh_) {
      // Slow start with appropriate byte counting (RFC 3465 2.2, L = 2*SMSS;
      // RFC 3465 asks for L = 1*SMSS in the slow start after a timeout, when
      // one ACK may cover segments that left long ago).
      const uint32_t limit = after_timeout_ ? mss_ : 2 * mss_;
      cwnd_ = std::min(cwnd_ + std::min(a.acked_bytes, limit), kMaxCwnd);
      if (cwnd_ >= ssthresh_) after_timeout_ = false;
    } else {
      after_timeout_ = false;
      algo().GrowInAvoidance(a);
      cwnd_ = std::clamp(cwnd_, mss_, kMaxCwnd);
    }
    return CcAction::kNone;
  }

  // A duplicate ACK (RFC 5681 2). `ack` is SEG.ACK (== SND.UNA).
  CcAction OnDupAck(Seq32 ack, Seq32 snd_nxt, uint32_t flight_size) {
    if (in_recovery_) {
      // RFC 5681 3.2 step 4: inflate by SMSS per further duplicate ACK.
      cwnd_ = std::min(cwnd_ + mss_, kMaxCwnd);
      return CcAction::kNone;
    }
    if (dup_acks_ != UINT32_MAX) ++dup_acks_;
    if (dup_acks_ != 3) return CcAction::kNone;
    // RFC 6582 3.2 step 2: only if the ACK covers more than `recover`;
    // otherwise no fast retransmit and no second ssthresh reduction for
    // losses from the window already reduced.
    if (has_recover_ && !(ack > recover_)) return CcAction::kNone;
    EnterRecovery(snd_nxt, flight_size);
    return CcAction::kFastRetransmit;
  }

  // Enters fast recovery as the third duplicate ACK does (RFC 5681 3.2 steps
  // 2 and 3, RFC 6582 3.2 step 2): ssthresh from the algorithm, cwnd =
  // ssthresh + 3*SMSS, recover = highest sequence number sent. Public so a
  // sender with other loss detection (SACK) can use it; it does not check
  // `recover`.
  void EnterRecovery(Seq32 snd_nxt, uint32_t flight_size) {
    ssthresh_ = std::clamp(algo().CongestionEvent(flight_size, false), 2 * mss_, kMaxCwnd);
    cwnd_ = std::clamp(ssthresh_ + 3 * mss_, mss_, kMaxCwnd);
    recover_ = snd_nxt - 1u;
    has_recover_ = true;
    in_recovery_ = true;
    after_timeout_ = false;
  }

  // Leaves fast recovery (RFC 6582 3.2 step 3, full acknowledgment) with
  // option (1): cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS), which
  // avoids a burst when little data is outstanding. `flight_size` is what is
  // outstanding after the ACK.
  void ExitRecovery(uint32_t flight_size) {
    const uint32_t fs = std::min(std::max(flight_size, mss_), kMaxCwnd);
    cwnd_ = std::clamp(std::min(ssthresh_, fs + mss_), mss_, kMaxCwnd);
    in_recovery_ = false;
    dup_acks_ = 0;
  }

  // The retransmission timer expired. RFC 5681 3.1: ssthresh from equation
  // (4) (or the algorithm's rule) unless the segment was already resent by the
  // timer, i.e. on the first of consecutive timeouts only; cwnd = LW = 1 SMSS.
  // RFC 6582 3.2 step 4: recover = highest sequence number sent, leave fast
  // recovery.
  void OnRetransmitTimeout(Seq32 snd_nxt, uint32_t flight_size) {
    if (!timeout_pending_) {
      ssthresh_ = std::clamp(algo().CongestionEvent(flight_size, true), 2 * mss_, kMaxCwnd);
    }
    timeout_pending_ = true;
    after_timeout_ = true;
    cwnd_ = mss_;
    recover_ = snd_nxt - 1u;
    has_recover_ = true;
    in_recovery_ = false;
    dup_acks_ = 0;
  }

 protected:
  explicit LossRecoveryCc(uint32_t mss)
      : mss_(std::clamp(mss, uint32_t{1}, kMaxMss)), cwnd_(InitialWindow(mss_)) {}

  uint32_t mss_;
  uint32_t cwnd_;
  uint32_t ssthresh_ = kInitialSsthresh;
  uint32_t dup_acks_ = 0;
  Seq32 recover_;
  bool has_recover_ = false;  // RFC 6582 3.2 step 1: recover = ISS
  bool in_recovery_ = false;
  bool timeout_pending_ = false;  // a timeout with no new ACK since
  bool after_timeout_ = false;    // slow start after a timeout

 private:
  Algo& algo() { return static_cast<Algo&>(*this); }
};

// NewReno: RFC 5681 congestion avoidance with byte counting (RFC 3465 2.1),
// ssthresh = max(FlightSize/2, 2*SMSS) on loss (RFC 5681 equation (4)).
class NewReno : public LossRecoveryCc<NewReno> {
 public:
  explicit NewReno(uint32_t mss) : LossRecoveryCc(mss) {}

 private:
  friend class LossRecoveryCc<NewReno>;
  uint32_t CongestionEvent(uint32_t flight_size, bool timeout);
  void GrowInAvoidance(const CcAck& a);
  void OnRttSample(uint64_t) {}

  uint64_t bytes_acked_ = 0;  // RFC 3465 2.1
};

// CUBIC (RFC 8312). Windows are kept in MSS-sized segments in Q16 fixed point
// (segments * 65536); cwnd() is in bytes. Time is in microseconds.
//   W_cubic(t) = C*(t-K)^3 + W_max, C = 0.4 (RFC 8312 4.1 eq. 1)
//   K = cbrt((W_max - cwnd_epoch)/C), which is RFC 8312 eq. 2,
//       cbrt(W_max*(1-beta_cubic)/C), when cwnd_epoch = beta_cubic*W_max and
//       stays right when recovery ends below that (RFC 9438 4.2 form)
//   W_est(t) = cwnd_epoch + [3(1-beta)/(1+beta)] * t/RTT (RFC 8312 4.2 eq. 4
//       with W_max*beta_cubic = cwnd_epoch), 3*0.3/1.7 = 9/17
// The integer cube root runs once per congestion epoch; the per-ACK path uses
// 128-bit integer products and divisions only.
class Cubic : public LossRecoveryCc<Cubic> {
 public:
  static constexpr uint32_t kQ = 16;  // fraction bits of segment counts
  // t - K is held within this (about 71 minutes); the cubic term saturates.
  static constexpr uint64_t kMaxCubicDtUs = uint64_t{1} << 32;

  explicit Cubic(uint32_t mss) : LossRecoveryCc(mss) {}

  // W_cubic(t) of the current epoch in Q16 segments, t in us since the epoch
  // began; 0 before the first epoch (no loss yet). Exposed for tests and
  // diagnostics.
  uint64_t WCubicQ16(uint64_t t_us) const;
  // W_est(t) in Q16 segments with the smoothed RTT; cwnd_epoch without an RTT.
  uint64_t WEstQ16(uint64_t t_us) const;
  uint64_t k_us() const { return k_us_; }
  uint64_t w_max_q16() const { return w_max_q16_; }
  // W_max in bytes at the current MSS.
  uint64_t w_max_bytes() const { return (w_max_q16_ * mss_) >> kQ; }
  bool epoch_started() const { return epoch_started_; }
  uint64_t epoch_start_us() const { return epoch_start_us_; }
  uint64_t srtt_us() const { return srtt_us_; }

 private:
  friend class LossRecoveryCc<Cubic>;
  uint32_t CongestionEvent(uint32_t flight_size, bool timeout);
  void GrowInAvoidance(const CcAck& a);
  void OnRttSample(uint64_t rtt_us);
  void StartEpoch(uint64_t now_us);
  uint64_t CwndQ16() const { return (uint64_t{cwnd_} << kQ) / mss_; }

  uint64_t w_max_q16_ = 0;
  uint64_t w_last_max_q16_ = 0;  // RFC 8312 4.6
  uint64_t cwnd_epoch_q16_ = 0;
  uint64_t k_us_ = 0;
  uint64_t epoch_start_us_ = 0;
  uint64_t srtt_us_ = 0;
  uint32_t cwnd_frac_ = 0;  // sub-byte growth carried between ACKs, Q16 bytes
  bool epoch_started_ = false;
  bool have_rtt_ = false;
  bool timed_out_ = false;  // next epoch starts with K = 0 (RFC 9438 4.8)
};

// The controller a connection holds: one of the algorithms, chosen once from
// configuration. Calls dispatch through std::visit on two alternatives (a
// branch), not through a virtual call.
class CongestionControl {
 public:
  CongestionControl(CcAlgorithm algorithm, uint32_t mss);

  CcAlgorithm algorithm() const {
    return std::holds_alternative<NewReno>(impl_) ? CcAlgorithm::kNewReno : CcAlgorithm::kCubic;
  }
  uint32_t cwnd() const {
    return std::visit([](const auto& c) { return c.cwnd(); }, impl_);
  }
  uint32_t ssthresh() const {
    return std::visit([](const auto& c) { return c.ssthresh(); }, impl_);
  }
  uint32_t mss() const {
    return std::visit([](const auto& c) { return c.mss(); }, impl_);
  }
  bool in_recovery() const {
    return std::visit([](const auto& c) { return c.in_recovery(); }, impl_);
  }
  void SetMss(uint32_t mss) {
    std::visit([mss](auto& c) { c.SetMss(mss); }, impl_);
  }
  CcAction OnAck(const CcAck& a) {
    return std::visit([&a](auto& c) { return c.OnAck(a); }, impl_);
  }
  CcAction OnDupAck(Seq32 ack, Seq32 snd_nxt, uint32_t flight_size) {
    return std::visit([&](auto& c) { return c.OnDupAck(ack, snd_nxt, flight_size); }, impl_);
  }
  void EnterRecovery(Seq32 snd_nxt, uint32_t flight_size) {
    std::visit([&](auto& c) { c.EnterRecovery(snd_nxt, flight_size); }, impl_);
  }
  void ExitRecovery(uint32_t flight_size) {
    std::visit([&](auto& c) { c.ExitRecovery(flight_size); }, impl_);
  }
  void OnRetransmitTimeout(Seq32 snd_nxt, uint32_t flight_size) {
    std::visit([&](auto& c) { c.OnRetransmitTimeout(snd_nxt, flight_size); }, impl_);
  }

  // The algorithm object, for algorithm-specific diagnostics; nullptr if the
  // other algorithm was chosen.
  const NewReno* new_reno() const { return std::get_if<NewReno>(&impl_); }
  const Cubic* cubic() const { return std::get_if<Cubic>(&impl_); }

 private:
  std::variant<NewReno, Cubic> impl_;
};

}  // namespace iwarp::tcp

#endif  // IWARPD_TCP_LITE_TCP_CC_H_
