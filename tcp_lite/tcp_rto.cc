#include "tcp_lite/tcp_rto.h"

#include <algorithm>

namespace iwarp::tcp {

RtoEstimator::RtoEstimator(const RtoConfig& config) : config_(config) {
  config_.granularity_us = std::min(config_.granularity_us, kMaxRttSampleUs);
  config_.max_rto_us = std::max(config_.max_rto_us, config_.min_rto_us);
  config_.initial_rto_us =
      std::clamp(config_.initial_rto_us, config_.min_rto_us, config_.max_rto_us);
  rto_us_ = config_.initial_rto_us;
}

void RtoEstimator::OnRttSample(uint64_t rtt_us) {
  const uint64_t r = std::min(rtt_us, kMaxRttSampleUs);
  if (!has_sample_) {
    // RFC 6298 2.2: SRTT <- R, RTTVAR <- R/2.
    srtt_x8_ = r << 3;
    rttvar_x4_ = r << 1;
    has_sample_ = true;
  } else {
    // RFC 6298 2.3, RTTVAR first (it uses the old SRTT):
    //   RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|  =>  x4 += |err|*4/4 - x4/4
    //   SRTT   <- 7/8 SRTT + 1/8 R'             =>  x8 += R' - x8/8
    const int64_t srtt8 = static_cast<int64_t>(srtt_x8_);
    const int64_t r8 = static_cast<int64_t>(r << 3);
    const int64_t abs_err_x4 = (srtt8 > r8 ? srtt8 - r8 : r8 - srtt8) / 2;
    const int64_t var4 = static_cast<int64_t>(rttvar_x4_);
    rttvar_x4_ = static_cast<uint64_t>(var4 + (abs_err_x4 - var4) / 4);
    srtt_x8_ = static_cast<uint64_t>(srtt8 + (r8 - srtt8) / 8);
  }
  backoff_count_ = 0;
  rto_us_ = ComputeRto();
}

uint64_t RtoEstimator::ComputeRto() const {
  // K * RTTVAR with K = 4 is rttvar_x4_ itself.
  const uint64_t rto = (srtt_x8_ >> 3) + std::max(config_.granularity_us, rttvar_x4_);
  return std::clamp(rto, config_.min_rto_us, config_.max_rto_us);
}

void RtoEstimator::OnTimeout() {
  rto_us_ = rto_us_ > config_.max_rto_us / 2 ? config_.max_rto_us : rto_us_ * 2;
  if (backoff_count_ != UINT32_MAX) ++backoff_count_;
}

void RtoEstimator::ClearEstimate() {
  has_sample_ = false;
  srtt_x8_ = 0;
  rttvar_x4_ = 0;
  backoff_count_ = 0;
  rto_us_ = config_.initial_rto_us;
}

}  // namespace iwarp::tcp
