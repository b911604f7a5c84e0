#include "tcp_lite/tcp_rto.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace iwarp::tcp {
namespace {

TEST(TcpRto, InitialRtoBeforeAnySample) {
  // RFC 6298 2.1: RTO = 1 s until the first measurement.
  RtoEstimator e;
  EXPECT_FALSE(e.has_sample());
  EXPECT_EQ(e.rto_us(), 1'000'000u);
  EXPECT_EQ(e.srtt_us(), 0u);
}

TEST(TcpRto, WorkedSequenceMatchesRfc6298) {
  RtoEstimator e(RtoConfig{.min_rto_us = 200'000, .max_rto_us = 120'000'000,
                           .initial_rto_us = 1'000'000, .granularity_us = 100});
  // 2.2, R = 100 ms: SRTT = 100000, RTTVAR = 100000/2 = 50000,
  // RTO = 100000 + max(100, 4*50000) = 300000.
  e.OnRttSample(100'000);
  EXPECT_EQ(e.srtt_us(), 100'000u);
  EXPECT_EQ(e.rttvar_us(), 50'000u);
  EXPECT_EQ(e.rto_us(), 300'000u);

  // 2.3, R' = 200 ms: RTTVAR = 3/4*50000 + 1/4*|100000-200000| = 37500 + 25000
  // = 62500; SRTT = 7/8*100000 + 1/8*200000 = 87500 + 25000 = 112500;
  // RTO = 112500 + 4*62500 = 362500.
  e.OnRttSample(200'000);
  EXPECT_EQ(e.rttvar_us(), 62'500u);
  EXPECT_EQ(e.srtt_us(), 112'500u);
  EXPECT_EQ(e.rto_us(), 362'500u);

  // R' = 50 ms: RTTVAR = 3/4*62500 + 1/4*|112500-50000| = 46875 + 15625 = 62500;
  // SRTT = 7/8*112500 + 1/8*50000 = 98437.5 + 6250 = 104687.5 (x8: 837500);
  // RTO = 104687.5 + 250000 = 354687.5, reported rounded down.
  e.OnRttSample(50'000);
  EXPECT_EQ(e.rttvar_x4(), 250'000u);
  EXPECT_EQ(e.srtt_x8(), 837'500u);
  EXPECT_EQ(e.srtt_us(), 104'687u);
  EXPECT_EQ(e.rto_us(), 354'687u);
}

TEST(TcpRto, GranularityFloorsTheVarianceTerm) {
  // min_rto 1 us so that only G matters; G = 1000 us, R = 1000 us each time.
  RtoEstimator e(RtoConfig{.min_rto_us = 1, .max_rto_us = 120'000'000,
                           .initial_rto_us = 1'000'000, .granularity_us = 1000});
  e.OnRttSample(1000);  // RTTVAR 500: RTO = 1000 + max(1000, 2000) = 3000
  EXPECT_EQ(e.rto_us(), 3000u);
  e.OnRttSample(1000);  // RTTVAR 375: 4*375 = 1500, RTO 2500
  EXPECT_EQ(e.rto_us(), 2500u);
  e.OnRttSample(1000);  // RTTVAR 281.25: 4*RTTVAR = 1125, RTO 2125
  EXPECT_EQ(e.rto_us(), 2125u);
  e.OnRttSample(1000);  // RTTVAR 210.94: 4*RTTVAR = 843.75 < G, RTO 1000 + 1000
  EXPECT_EQ(e.rto_us(), 2000u);
  EXPECT_EQ(e.srtt_us(), 1000u);
}

TEST(TcpRto, MinimumRtoApplies) {
  // R = 1 ms: SRTT + 4*RTTVAR = 1000 + 2000 = 3000 < 200 ms default floor.
  RtoEstimator e;
  e.OnRttSample(1000);
  EXPECT_EQ(e.rto_us(), 200'000u);
  // RFC 6298 2.4 value when configured: 1 s.
  RtoEstimator rfc(RtoConfig{.min_rto_us = 1'000'000});
  rfc.OnRttSample(1000);
  EXPECT_EQ(rfc.rto_us(), 1'000'000u);
}

TEST(TcpRto, MaximumRtoApplies) {
  // R = 100 s: 100 + 4*50 = 300 s, held at the 120 s maximum (RFC 6298 2.5).
  RtoEstimator e;
  e.OnRttSample(100'000'000);
  EXPECT_EQ(e.rto_us(), 120'000'000u);
}

TEST(TcpRto, BackoffDoublesClampsAndResetsOnSample) {
  RtoEstimator e;
  e.OnRttSample(100'000);  // RTO 300000 (see the worked sequence)
  ASSERT_EQ(e.rto_us(), 300'000u);
  // RFC 6298 5.5: RTO <- 2*RTO: 600000, 1200000, ..., 300000 * 2^8 = 76.8 s,
  // then 153.6 s is held at 120 s.
  uint64_t expect = 300'000;
  for (int i = 1; i <= 8; ++i) {
    e.OnTimeout();
    expect *= 2;
    EXPECT_EQ(e.rto_us(), expect) << i;
  }
  EXPECT_EQ(e.rto_us(), 76'800'000u);
  e.OnTimeout();
  EXPECT_EQ(e.rto_us(), 120'000'000u);
  e.OnTimeout();
  EXPECT_EQ(e.rto_us(), 120'000'000u);
  EXPECT_EQ(e.backoff_count(), 10u);
  // A new sample recomputes RTO from SRTT/RTTVAR: R = 100 ms again gives
  // RTTVAR = 3/4*50000 + 0 = 37500, SRTT = 100000, RTO = 100000 + 150000.
  e.OnRttSample(100'000);
  EXPECT_EQ(e.backoff_count(), 0u);
  EXPECT_EQ(e.rto_us(), 250'000u);
}

TEST(TcpRto, BackoffBeforeFirstSample) {
  RtoEstimator e;
  e.OnTimeout();
  EXPECT_EQ(e.rto_us(), 2'000'000u);
  e.OnTimeout();
  EXPECT_EQ(e.rto_us(), 4'000'000u);
}

TEST(TcpRto, ClearEstimateMakesNextSampleTheFirst) {
  RtoEstimator e;
  e.OnRttSample(100'000);
  e.OnTimeout();
  e.ClearEstimate();
  EXPECT_FALSE(e.has_sample());
  EXPECT_EQ(e.rto_us(), 1'000'000u);
  // First-sample rule again: SRTT = 40000, RTTVAR = 20000, RTO = 40000 + 80000
  // = 120000, raised to the 200 ms floor.
  e.OnRttSample(40'000);
  EXPECT_EQ(e.srtt_us(), 40'000u);
  EXPECT_EQ(e.rttvar_us(), 20'000u);
  EXPECT_EQ(e.rto_us(), 200'000u);
}

TEST(TcpRto, InconsistentConfigIsRepaired) {
  RtoEstimator e(RtoConfig{.min_rto_us = 5'000'000, .max_rto_us = 1'000'000,
                           .initial_rto_us = 1'000'000, .granularity_us = 100});
  EXPECT_EQ(e.config().max_rto_us, 5'000'000u);
  EXPECT_EQ(e.rto_us(), 5'000'000u);
}

TEST(TcpRto, HugeSamplesDoNotOverflow) {
  RtoEstimator e(RtoConfig{.min_rto_us = 0, .max_rto_us = UINT64_MAX,
                           .initial_rto_us = 1, .granularity_us = UINT64_MAX});
  e.OnRttSample(UINT64_MAX);
  // Sample held at 2^36: SRTT = 2^36, RTTVAR = 2^35, 4*RTTVAR = 2^37; G is held
  // at 2^36 too. RTO = 2^36 + 2^37.
  EXPECT_EQ(e.srtt_us(), uint64_t{1} << 36);
  EXPECT_EQ(e.rto_us(), (uint64_t{1} << 36) + (uint64_t{1} << 37));
  e.OnRttSample(0);
  e.OnRttSample(UINT64_MAX);
  for (int i = 0; i < 100; ++i) e.OnTimeout();
  EXPECT_EQ(e.rto_us(), UINT64_MAX);
}

}  // namespace
}  // namespace iwarp::tcp
