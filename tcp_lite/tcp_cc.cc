#include "tcp_lite/tcp_cc.h"

#include <utility>

namespace iwarp::tcp {
namespace {

__extension__ using Uint128 = unsigned __int128;

// C = 0.4 segments/s^3 = 2/5; with t in us, C*t^3 = 2*t^3 / (5 * 10^18).
constexpr uint64_t kFiveE18 = 5'000'000'000'000'000'000ull;
// Largest window in Q16 segments (kMaxCwnd bytes at MSS 1).
constexpr uint64_t kMaxWindowQ16 = uint64_t{kMaxCwnd} << Cubic::kQ;

// floor(cbrt(v)) for v < 2^123, bit by bit (each candidate's cube < 2^126).
uint64_t CubeRoot(Uint128 v) {
  uint64_t r = 0;
  for (int bit = 40; bit >= 0; --bit) {
    const uint64_t c = r | (uint64_t{1} << bit);
    if (Uint128{c} * c * c <= v) r = c;
  }
  return r;
}

}  // namespace

std::string_view CcAlgorithmName(CcAlgorithm a) {
  using Enum = CcAlgorithm;
  switch (a) { IWARP_TCP_CC_ALGORITHMS(IWARP_ENUM_NAME_CASE) }
  return "unknown";
}

std::string_view CcActionName(CcAction a) {
  using Enum = CcAction;
  switch (a) { IWARP_TCP_CC_ACTIONS(IWARP_ENUM_NAME_CASE) }
  return "unknown";
}

// RFC 5681 equation (4): ssthresh = max(FlightSize / 2, 2*SMSS); the base
// applies the 2*SMSS floor.
uint32_t NewReno::CongestionEvent(uint32_t flight_size, bool /*timeout*/) {
  bytes_acked_ = 0;
  return flight_size / 2;
}

// RFC 3465 2.1 (RFC 5681 3.1): count acknowledged bytes; each time they reach
// cwnd, cwnd grows by one SMSS. At most one SMSS per ACK; the surplus carried
// is held below one window.
void NewReno::GrowInAvoidance(const CcAck& a) {
  bytes_acked_ += a.acked_bytes;
  if (bytes_acked_ >= cwnd_) {
    bytes_acked_ -= cwnd_;
    cwnd_ = std::min(cwnd_ + mss_, kMaxCwnd);
    bytes_acked_ = std::min<uint64_t>(bytes_acked_, cwnd_ - 1);
  }
}

void Cubic::OnRttSample(uint64_t rtt_us) {
  const uint64_t r = std::min(rtt_us, uint64_t{1} << 36);
  // Smoothed like SRTT (RFC 6298 2.3, alpha = 1/8); RFC 9438 4.2 uses the
  // smoothed RTT in W_cubic(t + RTT) and W_est.
  srtt_us_ = have_rtt_ ? srtt_us_ - srtt_us_ / 8 + r / 8 : r;
  have_rtt_ = true;
}

// RFC 8312 4.5 (multiplicative decrease), 4.6 (fast convergence), 4.7
// (timeout: ssthresh from beta_cubic as well; cwnd = 1 SMSS is the base's).
uint32_t Cubic::CongestionEvent(uint32_t /*flight_size*/, bool timeout) {
  const uint64_t w = CwndQ16();
  if (timeout) {
    // RFC 9438 4.8: the first epoch after a timeout uses K = 0 and W_max =
    // the window at its start (StartEpoch).
    timed_out_ = true;
  } else if (w < w_last_max_q16_) {
    // Fast convergence: release bandwidth to a new flow,
    // W_max = cwnd * (1 + beta_cubic) / 2 = cwnd * 17/20.
    w_last_max_q16_ = w;
    w_max_q16_ = w * 17 / 20;
  } else {
    w_last_max_q16_ = w;
    w_max_q16_ = w;
  }
  epoch_started_ = false;
  cwnd_frac_ = 0;
  // ssthresh = cwnd * beta_cubic, beta_cubic = 0.7.
  return static_cast<uint32_t>(uint64_t{cwnd_} * 7 / 10);
}

// RFC 8312 4.1: the epoch (t = 0) starts at the first ACK of congestion
// avoidance after a window reduction.
void Cubic::StartEpoch(uint64_t now_us) {
  epoch_started_ = true;
  epoch_start_us_ = now_us;
  cwnd_epoch_q16_ = CwndQ16();
  cwnd_frac_ = 0;
  if (timed_out_ || w_max_q16_ <= cwnd_epoch_q16_) {
    // RFC 9438 4.8 after a timeout; otherwise the window is already at or
    // above W_max (no loss yet), so the curve starts convex from here.
    timed_out_ = false;
    w_max_q16_ = cwnd_epoch_q16_;
    k_us_ = 0;
    return;
  }
  // K^3 = (W_max - cwnd_epoch) / C seconds^3 = diff_q16 / 2^16 * 2.5 * 10^18
  // us^3 = diff_q16 * 5*10^18 / 2^17. diff_q16 < 2^47 keeps this < 2^110.
  const uint64_t diff = w_max_q16_ - cwnd_epoch_q16_;
  k_us_ = CubeRoot(Uint128{diff} * kFiveE18 >> (kQ + 1));
}

uint64_t Cubic::WCubicQ16(uint64_t t_us) const {
  if (!epoch_started_) return 0;
  const uint64_t dt = std::min(t_us > k_us_ ? t_us - k_us_ : k_us_ - t_us, kMaxCubicDtUs);
  // C*dt^3 in Q16 segments = dt^3 * 2 * 2^16 / (5 * 10^18); dt^3 < 2^96.
  const uint64_t term =
      static_cast<uint64_t>((Uint128{dt} * dt * dt << (kQ + 1)) / kFiveE18);
  if (t_us >= k_us_) return std::min(w_max_q16_ + term, kMaxWindowQ16);
  return w_max_q16_ > term ? w_max_q16_ - term : 0;
}

uint64_t Cubic::WEstQ16(uint64_t t_us) const {
  if (!have_rtt_) return cwnd_epoch_q16_;
  // alpha_cubic * t / RTT with alpha_cubic = 3 * 0.3 / 1.7 = 9/17.
  const Uint128 add =
      (Uint128{t_us} * 9 << kQ) / (Uint128{17} * std::max<uint64_t>(srtt_us_, 1));
  return static_cast<uint64_t>(std::min<Uint128>(cwnd_epoch_q16_ + add, kMaxWindowQ16));
}

void Cubic::GrowInAvoidance(const CcAck& a) {
  if (!epoch_started_) StartEpoch(a.now_us);
  const uint64_t t = a.now_us > epoch_start_us_ ? a.now_us - epoch_start_us_ : 0;
  const uint64_t cwnd_q16 = CwndQ16();

  // RFC 8312 4.2: in the TCP-friendly region cwnd follows W_est(t).
  if (have_rtt_) {
    const uint64_t w_est = WEstQ16(t);
    if (WCubicQ16(t) < w_est) {
      if (w_est > cwnd_q16) {
        const Uint128 bytes = (Uint128{w_est} * mss_) >> kQ;
        cwnd_ = static_cast<uint32_t>(std::min<Uint128>(bytes, kMaxCwnd));
        cwnd_frac_ = 0;
      }
      return;
    }
  }

  // RFC 8312 4.3 / 4.4: per segment acknowledged, cwnd += (target - cwnd) /
  // cwnd with target = W_cubic(t + RTT), bounded to [cwnd, 1.5 * cwnd] (RFC
  // 9438 4.2). In bytes: cwnd += (target - cwnd) * acked_bytes / cwnd.
  const uint64_t rtt = have_rtt_ ? srtt_us_ : 0;
  const uint64_t t_rtt = t > UINT64_MAX - rtt ? UINT64_MAX : t + rtt;
  const uint64_t target_q16 = std::min(WCubicQ16(t_rtt), cwnd_q16 + cwnd_q16 / 2);
  const uint64_t target_bytes_q16 = target_q16 * mss_;  // < 2^63
  const uint64_t cwnd_bytes_q16 = uint64_t{cwnd_} << kQ;
  if (target_bytes_q16 <= cwnd_bytes_q16) return;
  const uint64_t acked = std::min(a.acked_bytes, cwnd_);
  const uint64_t inc = static_cast<uint64_t>(
      Uint128{target_bytes_q16 - cwnd_bytes_q16} * acked / cwnd_);
  const uint64_t total = cwnd_frac_ + inc;
  cwnd_ = static_cast<uint32_t>(std::min<uint64_t>(cwnd_ + (total >> kQ), kMaxCwnd));
  cwnd_frac_ = static_cast<uint32_t>(total & ((uint64_t{1} << kQ) - 1));
}

CongestionControl::CongestionControl(CcAlgorithm algorithm, uint32_t mss)
    : impl_(algorithm == CcAlgorithm::kCubic
                ? std::variant<NewReno, Cubic>(std::in_place_type<Cubic>, mss)
                : std::variant<NewReno, Cubic>(std::in_place_type<NewReno>, mss)) {}

}  // namespace iwarp::tcp
