#include "tcp_lite/tcp_isn.h"

#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::tcp {
namespace {

SipKey CountingKey() {
  SipKey k;
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(i);
  return k;
}

constexpr FourTuple kTuple{0xC0A8010A, 20049, 0xC0A80114, 49152};
constexpr uint64_t kPeriod = kSynCookiePeriodMicros;

TEST(SipHash, PaperTestVector) {
  // SipHash paper, Appendix A: key 00..0f, message 00..0e (15 octets).
  std::vector<uint8_t> msg(15);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(SipHash24(CountingKey(), msg), 0xa129ca6149be45e5ULL);
}

TEST(SipHash, EmptyMessageAndBlockBoundaries) {
  // Reference vector for the empty message under the same key.
  EXPECT_EQ(SipHash24(CountingKey(), ByteSpan{}), 0x726fdb47dd0e0e31ULL);
  // Lengths 0..24 all differ (the length octet and every block are mixed in).
  std::vector<uint8_t> msg(24, 0);
  std::set<uint64_t> seen;
  for (size_t n = 0; n <= msg.size(); ++n) seen.insert(SipHash24(CountingKey(), ByteSpan(msg).first(n)));
  EXPECT_EQ(seen.size(), msg.size() + 1);
}

TEST(Isn, AdvancesWithTheFourMicrosecondClock) {
  const IsnGenerator g(CountingKey());
  const uint64_t t0 = 123'456'788;  // a multiple of 4
  const Seq32 a = g.Isn(kTuple, t0);
  EXPECT_EQ(g.Isn(kTuple, t0), a);           // pure
  EXPECT_EQ(g.Isn(kTuple, t0 + 3), a);       // same 4 us tick
  EXPECT_EQ(g.Isn(kTuple, t0 + 4), a + 1);   // RFC 6528 3: M ticks every 4 us
  EXPECT_EQ(g.Isn(kTuple, t0 + 4000), a + 1000);
  Seq32 prev = a;
  for (uint64_t t = t0; t < t0 + 1'000'000'000; t += 9'999'991) {
    const Seq32 s = g.Isn(kTuple, t + 10'000);
    EXPECT_GT(s, prev);
    prev = s;
  }
}

TEST(Isn, DiffersPerFourTupleAndKey) {
  const IsnGenerator g(CountingKey());
  const uint64_t now = 5'000'000;
  std::set<uint32_t> seen = {g.Isn(kTuple, now).value()};
  FourTuple t = kTuple;
  t.local_addr ^= 1;
  seen.insert(g.Isn(t, now).value());
  t = kTuple;
  t.local_port ^= 1;
  seen.insert(g.Isn(t, now).value());
  t = kTuple;
  t.remote_addr ^= 1;
  seen.insert(g.Isn(t, now).value());
  t = kTuple;
  t.remote_port ^= 1;
  seen.insert(g.Isn(t, now).value());
  // Swapping our side and theirs is another connection.
  seen.insert(g.Isn(FourTuple{kTuple.remote_addr, kTuple.remote_port, kTuple.local_addr,
                              kTuple.local_port},
                    now)
                  .value());
  SipKey other = CountingKey();
  other[15] ^= 0x80;
  seen.insert(IsnGenerator(other).Isn(kTuple, now).value());
  EXPECT_EQ(seen.size(), 7u);
}

TEST(Isn, CreateDrawsARandomKey) {
  absl::StatusOr<IsnGenerator> a = IsnGenerator::Create();
  absl::StatusOr<IsnGenerator> b = IsnGenerator::Create();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  // Two 128-bit keys collide with probability 2^-128.
  EXPECT_NE(a->Isn(kTuple, 0), b->Isn(kTuple, 0));
  EXPECT_NE(a->Isn(kTuple, 0), IsnGenerator(CountingKey()).Isn(kTuple, 0));
}

TEST(Isn, NowMicrosIsMonotonic) {
  const uint64_t a = NowMicros();
  const uint64_t b = NowMicros();
  EXPECT_GT(a, 0u);
  EXPECT_GE(b, a);
}

TEST(SynCookie, RoundTripCarriesRoundedMss) {
  const IsnGenerator g(CountingKey());
  const Seq32 client_isn(0xFFFFFFF0);
  const uint64_t now = 1000 * kPeriod + 17;
  struct Case {
    uint16_t peer_mss;
    uint16_t want;
  };
  for (const Case c : {Case{0, 536}, Case{535, 536}, Case{536, 536}, Case{1199, 536},
                       Case{1200, 1200}, Case{1460, 1460}, Case{1500, 1460}, Case{8960, 8960},
                       Case{65535, 8960}}) {
    const Seq32 cookie = g.SynCookie(kTuple, client_isn, c.peer_mss, now);
    const SynCookieResult r = g.CheckSynCookie(kTuple, client_isn, cookie, now + kPeriod / 2);
    EXPECT_EQ(r.status, SynCookieStatus::kValid) << c.peer_mss;
    EXPECT_EQ(r.mss, c.want) << c.peer_mss;
  }
}

TEST(SynCookie, ExpiresAfterMaxAge) {
  const IsnGenerator g(CountingKey());
  const Seq32 client_isn(77);
  const uint64_t now = 40 * kPeriod + 5;
  const Seq32 cookie = g.SynCookie(kTuple, client_isn, 1460, now);
  for (uint64_t age = 0; age <= kSynCookieMaxAge; ++age) {
    EXPECT_EQ(g.CheckSynCookie(kTuple, client_isn, cookie, now + age * kPeriod).status,
              SynCookieStatus::kValid)
        << age;
  }
  for (uint64_t age = kSynCookieMaxAge + 1; age < 32; ++age) {
    const SynCookieResult r = g.CheckSynCookie(kTuple, client_isn, cookie, now + age * kPeriod);
    EXPECT_EQ(r.status, SynCookieStatus::kExpired) << age;
    EXPECT_EQ(r.mss, 0);
  }
  // After 32 periods the 5-bit counter wraps: no longer recognisable as ours.
  EXPECT_EQ(g.CheckSynCookie(kTuple, client_isn, cookie, now + 32 * kPeriod).status,
            SynCookieStatus::kInvalid);
  // A cookie from the future is not accepted either.
  EXPECT_NE(g.CheckSynCookie(kTuple, client_isn, cookie, now - kPeriod).status,
            SynCookieStatus::kValid);
}

TEST(SynCookie, RejectsOtherConnectionsAndEveryBitFlip) {
  const IsnGenerator g(CountingKey());
  const Seq32 client_isn(0x12345678);
  const uint64_t now = 3 * kPeriod;
  const Seq32 cookie = g.SynCookie(kTuple, client_isn, 1460, now);
  FourTuple t = kTuple;
  t.remote_port ^= 1;
  EXPECT_EQ(g.CheckSynCookie(t, client_isn, cookie, now).status, SynCookieStatus::kInvalid);
  EXPECT_EQ(g.CheckSynCookie(kTuple, client_isn + 1, cookie, now).status,
            SynCookieStatus::kInvalid);
  SipKey other = CountingKey();
  other[0] ^= 1;
  EXPECT_EQ(IsnGenerator(other).CheckSynCookie(kTuple, client_isn, cookie, now).status,
            SynCookieStatus::kInvalid);
  for (int bit = 0; bit < 32; ++bit) {
    const Seq32 flipped(cookie.value() ^ (1u << bit));
    EXPECT_EQ(g.CheckSynCookie(kTuple, client_isn, flipped, now).status,
              SynCookieStatus::kInvalid)
        << bit;
  }
  // Early after boot the counter cannot be older than the clock.
  const Seq32 young = g.SynCookie(kTuple, client_isn, 1460, 0);
  EXPECT_EQ(g.CheckSynCookie(kTuple, client_isn, young, 0).status, SynCookieStatus::kValid);
  EXPECT_EQ(g.CheckSynCookie(kTuple, client_isn, Seq32(young.value() ^ (1u << 27)), 0).status,
            SynCookieStatus::kInvalid);
}

TEST(SynCookieStatus, Names) {
  EXPECT_EQ(SynCookieStatusName(SynCookieStatus::kValid), "valid");
  EXPECT_EQ(SynCookieStatusName(SynCookieStatus::kExpired), "syn_cookie_expired");
  EXPECT_EQ(SynCookieStatusName(SynCookieStatus::kInvalid), "syn_cookie_invalid");
}

}  // namespace
}  // namespace iwarp::tcp
