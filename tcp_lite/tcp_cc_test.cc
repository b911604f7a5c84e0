#include "tcp_lite/tcp_cc.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::tcp {
namespace {

constexpr uint32_t kMss = 1000;

CcAck Ack(uint32_t ack, uint32_t acked, uint32_t flight, uint64_t now_us = 0,
          uint64_t rtt_us = kNoRttSample) {
  return CcAck{.ack = Seq32(ack), .acked_bytes = acked, .flight_size = flight,
               .now_us = now_us, .rtt_us = rtt_us};
}

// Three duplicate ACKs of `una`; returns the action of the third.
template <typename Cc>
CcAction ThreeDupAcks(Cc& cc, uint32_t una, uint32_t snd_nxt, uint32_t flight) {
  EXPECT_EQ(cc.OnDupAck(Seq32(una), Seq32(snd_nxt), flight), CcAction::kNone);
  EXPECT_EQ(cc.OnDupAck(Seq32(una), Seq32(snd_nxt), flight), CcAction::kNone);
  return cc.OnDupAck(Seq32(una), Seq32(snd_nxt), flight);
}

// Slow start from the initial window in ACKs of 2*MSS (each adds L = 2*MSS).
template <typename Cc>
void GrowTo(Cc& cc, uint32_t cwnd) {
  while (cc.cwnd() < cwnd) cc.OnAck(Ack(0, 2 * kMss, cc.cwnd()));
  ASSERT_EQ(cc.cwnd(), cwnd);
}

TEST(TcpCc, InitialWindowRfc6928) {
  // min(10*MSS, max(2*MSS, 14600)).
  EXPECT_EQ(InitialWindow(1460), 14600u);  // min(14600, 14600)
  EXPECT_EQ(InitialWindow(536), 5360u);    // min(5360, 14600)
  EXPECT_EQ(InitialWindow(4000), 14600u);  // min(40000, max(8000, 14600))
  EXPECT_EQ(InitialWindow(9000), 18000u);  // min(90000, max(18000, 14600))
  NewReno nr(1460);
  EXPECT_EQ(nr.cwnd(), 14600u);
  EXPECT_EQ(nr.ssthresh(), kInitialSsthresh);
  Cubic cu(9000);
  EXPECT_EQ(cu.cwnd(), 18000u);
}

TEST(TcpCcNewReno, SlowStartCountsBytesUpToTwoMss) {
  NewReno cc(kMss);
  ASSERT_EQ(cc.cwnd(), 10'000u);
  // RFC 3465 2.2: cwnd += min(N, L), L = 2*SMSS = 2000.
  EXPECT_EQ(cc.OnAck(Ack(1000, 1000, 9000)), CcAction::kNone);
  EXPECT_EQ(cc.cwnd(), 11'000u);  // + 1000
  cc.OnAck(Ack(4000, 3000, 9000));
  EXPECT_EQ(cc.cwnd(), 13'000u);  // + min(3000, 2000)
  cc.OnAck(Ack(4500, 500, 9000));
  EXPECT_EQ(cc.cwnd(), 13'500u);  // + 500
  cc.OnAck(Ack(4500 + 100'000, 100'000, 9000));
  EXPECT_EQ(cc.cwnd(), 15'500u);  // + 2000 at most
}

TEST(TcpCcNewReno, FastRetransmitRecoveryPartialAndFullAck) {
  NewReno cc(kMss);
  // 10 segments outstanding, [5000, 15000); the segment at 5000 is lost.
  EXPECT_EQ(ThreeDupAcks(cc, 5000, 15'000, 10'000), CcAction::kFastRetransmit);
  // RFC 5681 eq. (4): ssthresh = max(10000/2, 2*1000) = 5000;
  // step 3: cwnd = ssthresh + 3*SMSS = 8000.
  EXPECT_TRUE(cc.in_recovery());
  EXPECT_EQ(cc.ssthresh(), 5000u);
  EXPECT_EQ(cc.cwnd(), 8000u);
  EXPECT_EQ(cc.recover(), Seq32(14'999));
  // Step 4: inflate by SMSS per further duplicate ACK.
  EXPECT_EQ(cc.OnDupAck(Seq32(5000), Seq32(15'000), 10'000), CcAction::kNone);
  EXPECT_EQ(cc.cwnd(), 9000u);
  cc.OnDupAck(Seq32(5000), Seq32(15'000), 10'000);
  EXPECT_EQ(cc.cwnd(), 10'000u);
  // RFC 6582 3.2 step 3, partial ACK of 2000 (< recover): cwnd = 10000 - 2000 +
  // 1000 = 9000, still in recovery, retransmit the next hole.
  EXPECT_EQ(cc.OnAck(Ack(7000, 2000, 8000)), CcAction::kRetransmitNext);
  EXPECT_TRUE(cc.in_recovery());
  EXPECT_EQ(cc.cwnd(), 9000u);
  // A partial ACK of less than one SMSS adds nothing back: 9000 - 500.
  EXPECT_EQ(cc.OnAck(Ack(7500, 500, 7500)), CcAction::kRetransmitNext);
  EXPECT_EQ(cc.cwnd(), 8500u);
  EXPECT_EQ(cc.ssthresh(), 5000u);
  // Full ACK (covers recover = 14999): exit with option (1),
  // cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS) = min(5000, 6000 + 1000).
  EXPECT_EQ(cc.OnAck(Ack(15'000, 7500, 6000)), CcAction::kNone);
  EXPECT_FALSE(cc.in_recovery());
  EXPECT_EQ(cc.cwnd(), 5000u);
  EXPECT_EQ(cc.ssthresh(), 5000u);
}

TEST(TcpCcNewReno, FullAckWithLittleOutstandingAvoidsBurst) {
  NewReno cc(kMss);
  ThreeDupAcks(cc, 5000, 15'000, 10'000);
  // Nothing outstanding after the full ACK: min(5000, max(0, 1000) + 1000).
  cc.OnAck(Ack(15'000, 10'000, 0));
  EXPECT_EQ(cc.cwnd(), 2000u);
}

TEST(TcpCcNewReno, CongestionAvoidanceOneMssPerWindowOfBytes) {
  NewReno cc(kMss);
  cc.OnRetransmitTimeout(Seq32(10'000), 10'000);  // ssthresh 5000, cwnd 1000
  ASSERT_EQ(cc.ssthresh(), 5000u);
  // Slow start after a timeout counts at most 1 SMSS per ACK (RFC 3465).
  for (uint32_t c = 2000; c <= 5000; c += 1000) {
    cc.OnAck(Ack(0, 3000, 5000));
    EXPECT_EQ(cc.cwnd(), c);
  }
  // cwnd == ssthresh: congestion avoidance, RFC 3465 2.1 byte counting.
  for (int i = 0; i < 4; ++i) cc.OnAck(Ack(0, 1000, 5000));
  EXPECT_EQ(cc.cwnd(), 5000u);  // 4000 bytes counted < cwnd
  cc.OnAck(Ack(0, 1000, 5000));
  EXPECT_EQ(cc.cwnd(), 6000u);  // 5000 counted == cwnd: + SMSS, count 0
  cc.OnAck(Ack(0, 6000, 6000));
  EXPECT_EQ(cc.cwnd(), 7000u);
  // One huge ACK: still + 1 SMSS, surplus 20000 - 7000 kept below cwnd (7999).
  cc.OnAck(Ack(0, 20'000, 6000));
  EXPECT_EQ(cc.cwnd(), 8000u);
  cc.OnAck(Ack(0, 1, 6000));  // 7999 + 1 == 8000
  EXPECT_EQ(cc.cwnd(), 9000u);
  cc.OnAck(Ack(0, 1, 6000));
  EXPECT_EQ(cc.cwnd(), 9000u);
}

TEST(TcpCcNewReno, RetransmitTimeoutSetsLossWindow) {
  NewReno cc(kMss);
  GrowTo(cc, 20'000);
  ThreeDupAcks(cc, 0, 20'000, 20'000);
  ASSERT_TRUE(cc.in_recovery());
  // RFC 5681 3.1: ssthresh = max(16000/2, 2000) = 8000, cwnd = LW = 1 SMSS;
  // leaves recovery (RFC 6582 3.2 step 4).
  cc.OnRetransmitTimeout(Seq32(20'000), 16'000);
  EXPECT_FALSE(cc.in_recovery());
  EXPECT_EQ(cc.ssthresh(), 8000u);
  EXPECT_EQ(cc.cwnd(), 1000u);
  // The same segment times out again: ssthresh is held (eq. (4) applies only
  // to a segment not yet resent by the timer); otherwise it would be
  // max(1000/2, 2000) = 2000.
  cc.OnRetransmitTimeout(Seq32(20'000), 1000);
  EXPECT_EQ(cc.ssthresh(), 8000u);
  EXPECT_EQ(cc.cwnd(), 1000u);
  // After a new ACK, a later timeout reduces again: max(6000/2, 2000).
  cc.OnAck(Ack(1000, 1000, 6000));
  cc.OnRetransmitTimeout(Seq32(20'000), 6000);
  EXPECT_EQ(cc.ssthresh(), 3000u);
}

TEST(TcpCcNewReno, NoSecondReductionForTheSameWindow) {
  NewReno cc(kMss);
  GrowTo(cc, 20'000);
  // Timeout with [0, 20000) outstanding: recover = 19999, ssthresh 10000.
  cc.OnRetransmitTimeout(Seq32(20'000), 20'000);
  ASSERT_EQ(cc.recover(), Seq32(19'999));
  ASSERT_EQ(cc.ssthresh(), 10'000u);
  cc.OnAck(Ack(2000, 2000, 18'000));  // go-back-N retransmission acked
  const uint32_t cwnd = cc.cwnd();
  // RFC 6582 3.2 step 2: duplicate ACKs for 2000 <= recover are from the
  // window already reduced: no fast retransmit, ssthresh unchanged.
  EXPECT_EQ(ThreeDupAcks(cc, 2000, 20'000, 18'000), CcAction::kNone);
  EXPECT_FALSE(cc.in_recovery());
  EXPECT_EQ(cc.ssthresh(), 10'000u);
  EXPECT_EQ(cc.cwnd(), cwnd);
  // Further duplicates do not trigger it either.
  EXPECT_EQ(cc.OnDupAck(Seq32(2000), Seq32(20'000), 18'000), CcAction::kNone);
  // Once an ACK covers more than recover, a new loss is a new event.
  cc.OnAck(Ack(20'500, 18'500, 3000));
  EXPECT_EQ(ThreeDupAcks(cc, 20'500, 23'500, 3000), CcAction::kFastRetransmit);
  EXPECT_EQ(cc.ssthresh(), 2000u);  // max(3000/2, 2000)
  EXPECT_EQ(cc.recover(), Seq32(23'499));
}

TEST(TcpCcNewReno, RecoverComparisonIsWrapSafe) {
  NewReno cc(kMss);
  const uint32_t base = 0xffff'f000u;  // sequence numbers wrap inside the window
  EXPECT_EQ(ThreeDupAcks(cc, base, base + 10'000, 10'000), CcAction::kFastRetransmit);
  EXPECT_EQ(cc.recover(), Seq32(base + 9999));
  // base + 5000 wrapped is numerically small but before recover: partial.
  EXPECT_EQ(cc.OnAck(Ack(base + 5000, 5000, 5000)), CcAction::kRetransmitNext);
  EXPECT_EQ(cc.OnAck(Ack(base + 10'000, 5000, 0)), CcAction::kNone);
  EXPECT_FALSE(cc.in_recovery());
}

TEST(TcpCcNewReno, MssChangeKeepsInvariants) {
  NewReno cc(kMss);
  cc.SetMss(0);
  EXPECT_EQ(cc.mss(), 1u);
  cc.SetMss(1'000'000);
  EXPECT_EQ(cc.mss(), kMaxMss);
  EXPECT_GE(cc.cwnd(), kMaxMss);
  cc.OnRetransmitTimeout(Seq32(1), 0);
  EXPECT_EQ(cc.ssthresh(), 2 * kMaxMss);
  EXPECT_EQ(cc.cwnd(), kMaxMss);
}

// Cubic with cwnd = w_max_bytes reduced by a fast retransmit and recovered,
// so that cwnd = ssthresh = 0.7 * w_max_bytes.
Cubic CubicAfterLoss(uint32_t w_max_bytes) {
  Cubic cc(kMss);
  GrowTo(cc, w_max_bytes);
  EXPECT_EQ(ThreeDupAcks(cc, 1000, 1000 + w_max_bytes, w_max_bytes),
            CcAction::kFastRetransmit);
  cc.OnAck(Ack(1000 + w_max_bytes, w_max_bytes, w_max_bytes));
  return cc;
}

TEST(TcpCcCubic, LossReducesToBetaTimesWmax) {
  Cubic cc(kMss);
  GrowTo(cc, 100'000);
  ThreeDupAcks(cc, 1000, 101'000, 100'000);
  // RFC 8312 4.5: W_max = 100 segments, ssthresh = 0.7 * 100000 = 70000,
  // recovery cwnd = 70000 + 3*1000.
  EXPECT_EQ(cc.w_max_bytes(), 100'000u);
  EXPECT_EQ(cc.ssthresh(), 70'000u);
  EXPECT_EQ(cc.cwnd(), 73'000u);
  cc.OnAck(Ack(101'000, 100'000, 100'000));
  EXPECT_EQ(cc.cwnd(), 70'000u);  // min(70000, 100000 + 1000)
}

TEST(TcpCcCubic, KAndWcubicMatchTheFormula) {
  Cubic cc = CubicAfterLoss(100'000);
  ASSERT_EQ(cc.cwnd(), 70'000u);
  const uint64_t t0 = 5'000'000;
  cc.OnAck(Ack(102'000, 1000, 70'000, t0, 100'000));  // first CA ACK: epoch
  ASSERT_TRUE(cc.epoch_started());
  EXPECT_EQ(cc.epoch_start_us(), t0);
  // RFC 8312 eq. 2: K = cbrt(W_max * (1 - beta) / C) = cbrt(100 * 0.3 / 0.4)
  // = cbrt(75) s = 4.2172 s; the integer root is floor(K in us).
  const long double k = std::cbrt(75.0L);
  EXPECT_NEAR(static_cast<long double>(cc.k_us()), k * 1e6L, 1.0L);
  EXPECT_EQ(cc.k_us(), static_cast<uint64_t>(k * 1e6L));
  // RFC 8312 eq. 1: W(t) = 0.4 * (t - K)^3 + 100 segments; W(0) = 70.
  // Error bound: K is floored to 1 us (dW/dK = 3 * 0.4 * (t-K)^2 per s) and W
  // to 2^-16 segment.
  for (const long double t : {0.0L, 1.0L, 2.5L, 4.2L, 5.0L, 8.0L, 30.0L}) {
    const long double want = 0.4L * std::pow(t - k, 3.0L) + 100.0L;
    const long double got =
        static_cast<long double>(cc.WCubicQ16(static_cast<uint64_t>(t * 1e6L))) / 65536.0L;
    const long double tol = 1.2L * (t - k) * (t - k) * 1e-6L + 1.0L / 65536.0L;
    EXPECT_NEAR(got, want, tol) << "t=" << t;
  }
  EXPECT_NEAR(static_cast<long double>(cc.WCubicQ16(0)) / 65536.0L, 70.0L, 1e-4L);
}

TEST(TcpCcCubic, GrowthIsConcaveThenConvexAroundWmax) {
  // W_max = 1000 segments, RTT 100 ms: K = cbrt(1000*0.3/0.4) = 9.086 s; the
  // TCP-friendly W_est = 700 + 9/17 * t/0.1 stays below W_cubic here.
  Cubic cc = CubicAfterLoss(1'000'000);
  ASSERT_EQ(cc.cwnd(), 700'000u);
  const uint64_t rtt = 100'000;
  std::vector<uint32_t> w;  // cwnd at the start of each round trip
  for (int round = 0; round < 200; ++round) {
    w.push_back(cc.cwnd());
    const uint64_t now = 1'000'000 + round * rtt;
    for (uint32_t acked = 0; acked < w.back(); acked += 10 * kMss) {
      cc.OnAck(Ack(0, 10 * kMss, w.back(), now, rtt));
    }
  }
  EXPECT_NEAR(static_cast<double>(cc.k_us()), std::cbrt(750.0) * 1e6, 1.0);
  for (size_t i = 1; i < w.size(); ++i) ASSERT_GE(w[i], w[i - 1]) << i;
  auto growth = [&w](size_t from) { return w[from + 10] - w[from]; };
  // Concave below W_max: growth per 10 rounds shrinks towards K (round 91).
  EXPECT_GT(growth(0), growth(40));
  EXPECT_GT(growth(40), growth(75));
  // Plateau near W_max around K.
  EXPECT_NEAR(w[91], 1'000'000.0, 10'000.0);
  EXPECT_LT(growth(86), growth(0) / 10);
  // Convex above W_max: growth rises again.
  EXPECT_LT(growth(100), growth(140));
  EXPECT_LT(growth(140), growth(180));
  EXPECT_GT(w[189], 1'100'000u);
}

TEST(TcpCcCubic, TcpFriendlyRegionDominatesAtSmallRttTimesWindow) {
  // Loss at the initial window: W_max = 10 segments, cwnd 7000.
  Cubic cc = CubicAfterLoss(10'000);
  ASSERT_EQ(cc.cwnd(), 7000u);
  const uint64_t rtt = 1000;  // 1 ms
  const uint64_t t0 = 2'000'000;
  cc.OnAck(Ack(12'000, 1000, 7000, t0, rtt));  // epoch starts, t = 0
  // K = cbrt(10*0.3/0.4) = cbrt(7.5) = 1.957 s; at t = 100 ms:
  // W_cubic = 10 - 0.4 * (1.957 - 0.1)^3 = 7.44 segments, while
  // W_est = 7 + 9/17 * 100 ms / 1 ms = 59.94 segments (RFC 8312 eq. 4), so
  // cwnd = W_est = 59941.18 bytes, less the fixed-point rounding.
  cc.OnAck(Ack(13'000, 1000, 7000, t0 + 100'000, rtt));
  const long double w_est = 7000.0L + 9.0L / 17.0L * 100.0L * 1000.0L;
  EXPECT_NEAR(static_cast<long double>(cc.cwnd()), w_est, 1.0L);
  const long double w_cubic = 10.0L - 0.4L * std::pow(std::cbrt(7.5L) - 0.1L, 3.0L);
  EXPECT_LT(w_cubic * 1000.0L, static_cast<long double>(cc.cwnd()));
}

TEST(TcpCcCubic, FastConvergenceLowersWmax) {
  Cubic cc = CubicAfterLoss(10'000);  // W_max = W_last_max = 10 segments
  ASSERT_EQ(cc.cwnd(), 7000u);
  // Second loss below the previous W_max (recover was 10999, ACK 11000).
  EXPECT_EQ(ThreeDupAcks(cc, 11'000, 18'000, 7000), CcAction::kFastRetransmit);
  // RFC 8312 4.6: W_max = 7 * (1 + 0.7) / 2 = 5.95 segments (not 7):
  // Q16 7 * 65536 * 17 / 20 = 389939.2, held as 389939.
  EXPECT_EQ(cc.w_max_q16(), 389'939u);
  EXPECT_NEAR(static_cast<double>(cc.w_max_bytes()), 5950.0, 1.0);
  EXPECT_EQ(cc.ssthresh(), 4900u);  // 0.7 * 7000
}

TEST(TcpCcCubic, TimeoutThenEpochWithZeroK) {
  Cubic cc(kMss);
  // RFC 8312 4.7: ssthresh = 0.7 * 10000, cwnd = 1 SMSS.
  cc.OnRetransmitTimeout(Seq32(10'000), 10'000);
  EXPECT_EQ(cc.ssthresh(), 7000u);
  EXPECT_EQ(cc.cwnd(), 1000u);
  for (int i = 0; i < 6; ++i) cc.OnAck(Ack(0, 1000, 1000, 0, 10'000));
  ASSERT_EQ(cc.cwnd(), 7000u);
  cc.OnAck(Ack(0, 1000, 7000, 1'000'000, 10'000));
  // RFC 9438 4.8: K = 0, W_max = cwnd at the start of the epoch.
  EXPECT_EQ(cc.k_us(), 0u);
  EXPECT_EQ(cc.w_max_bytes(), 7000u);
  EXPECT_GE(cc.cwnd(), 7000u);
}

TEST(TcpCc, HolderSelectsAlgorithm) {
  CongestionControl nr(CcAlgorithm::kNewReno, 1460);
  CongestionControl cu(CcAlgorithm::kCubic, 1460);
  EXPECT_EQ(nr.algorithm(), CcAlgorithm::kNewReno);
  EXPECT_EQ(cu.algorithm(), CcAlgorithm::kCubic);
  EXPECT_NE(nr.new_reno(), nullptr);
  EXPECT_EQ(nr.cubic(), nullptr);
  EXPECT_NE(cu.cubic(), nullptr);
  EXPECT_EQ(CcAlgorithmName(CcAlgorithm::kCubic), "cubic");
  EXPECT_EQ(CcActionName(CcAction::kRetransmitNext), "retransmit_next");
  // Same loss, different reductions: flight/2 versus 0.7 * cwnd.
  for (CongestionControl* cc : {&nr, &cu}) {
    EXPECT_EQ(cc->cwnd(), 14'600u);
    cc->OnDupAck(Seq32(1), Seq32(14'601), 14'600);
    cc->OnDupAck(Seq32(1), Seq32(14'601), 14'600);
    EXPECT_EQ(cc->OnDupAck(Seq32(1), Seq32(14'601), 14'600), CcAction::kFastRetransmit);
    EXPECT_TRUE(cc->in_recovery());
  }
  EXPECT_EQ(nr.ssthresh(), 7300u);   // 14600 / 2
  EXPECT_EQ(cu.ssthresh(), 10'220u);  // 14600 * 0.7
  EXPECT_EQ(nr.cwnd(), 7300u + 3 * 1460u);
  nr.ExitRecovery(14'600);
  EXPECT_EQ(nr.cwnd(), 7300u);
}

// Random event sequences with extreme values: cwnd stays within
// [MSS, kMaxCwnd] and ssthresh at or above 2*MSS; UBSan checks the arithmetic.
TEST(TcpCc, RandomEventsKeepInvariants) {
  for (CcAlgorithm alg : {CcAlgorithm::kNewReno, CcAlgorithm::kCubic}) {
    std::mt19937_64 rng(12345);
    CongestionControl cc(alg, 1460);
    uint64_t now = 0;
    uint32_t una = 0;
    auto pick32 = [&rng]() -> uint32_t {
      switch (rng() % 4) {
        case 0: return static_cast<uint32_t>(rng());
        case 1: return UINT32_MAX - static_cast<uint32_t>(rng() % 3);
        case 2: return static_cast<uint32_t>(rng() % 3);
        default: return static_cast<uint32_t>(rng() % 200'000);
      }
    };
    for (int i = 0; i < 200'000; ++i) {
      switch (rng() % 10) {
        case 0: now += rng() % 3 == 0 ? rng() >> 20 : rng() % 1'000'000; break;
        case 1: now = UINT64_MAX - rng() % 1000; break;
        case 2: cc.OnRetransmitTimeout(Seq32(una + pick32()), pick32()); break;
        case 3: case 4: cc.OnDupAck(Seq32(una), Seq32(una + pick32()), pick32()); break;
        case 5: if (rng() % 50 == 0) cc.SetMss(pick32()); break;
        case 6: if (rng() % 10 == 0) cc.ExitRecovery(pick32()); break;
        default: {
          const uint32_t acked = pick32();
          una += acked;
          const uint64_t rtt = rng() % 3 == 0 ? kNoRttSample : rng() >> (rng() % 64);
          cc.OnAck(CcAck{.ack = Seq32(una), .acked_bytes = acked, .flight_size = pick32(),
                         .now_us = now, .rtt_us = rtt});
        }
      }
      ASSERT_GE(cc.cwnd(), cc.mss()) << i;
      ASSERT_LE(cc.cwnd(), kMaxCwnd) << i;
      ASSERT_GE(cc.ssthresh(), 2 * cc.mss()) << i;
      ASSERT_TRUE(cc.ssthresh() <= kMaxCwnd || cc.ssthresh() == kInitialSsthresh) << i;
    }
  }
}

TEST(TcpCcCubic, HugeTimeAndAckSaturateAtMaxWindow) {
  Cubic cc = CubicAfterLoss(100'000);
  cc.OnAck(Ack(0, 1000, 70'000, 0, 1));
  for (int i = 0; i < 100; ++i) cc.OnAck(Ack(0, UINT32_MAX, UINT32_MAX, UINT64_MAX, UINT64_MAX));
  EXPECT_EQ(cc.cwnd(), kMaxCwnd);
  EXPECT_LE(cc.WCubicQ16(UINT64_MAX), uint64_t{kMaxCwnd} << 16);
}

}  // namespace
}  // namespace iwarp::tcp
