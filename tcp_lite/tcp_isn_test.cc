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

// The reference implementation's vectors (vectors.h: key 00..0f, message
// 00..n-1 for n = 0..63, each digest read as a little-endian 64-bit value):
// every tail length and block boundary. The hand-written SipHash-2-4 that
// libsodium replaced gave the same 64 values.
TEST(SipHash, ReferenceVectorsEveryLength) {
  constexpr uint64_t kWant[64] = {
      0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL,
      0x85676696d7fb7e2dULL, 0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL,
      0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL, 0x93f5f5799a932462ULL,
      0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
      0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL,
      0xa129ca6149be45e5ULL, 0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL,
      0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL, 0xbed65cf21aa2ee98ULL,
      0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
      0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL,
      0x2f2e6163076bcfadULL, 0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL,
      0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL, 0x7127512f72f27cceULL,
      0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
      0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL,
      0x9abfd8766a33735cULL, 0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL,
      0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL, 0xf935451de4f21df2ULL,
      0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
      0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL,
      0xa192d576b245165aULL, 0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL,
      0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL, 0xb78dbfaf3a8d83bdULL,
      0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
      0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL,
      0x958a324ceb064572ULL,
  };
  std::vector<uint8_t> msg(64);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i);
  for (size_t n = 0; n < 64; ++n) {
    EXPECT_EQ(SipHash24(CountingKey(), ByteSpan(msg).first(n)), kWant[n]) << "length " << n;
  }
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
