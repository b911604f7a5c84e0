// Initial sequence numbers (RFC 6528) and SYN cookies (RFC 4987 3.6).
//
// ISN = M + F(localip, localport, remoteip, remoteport, secretkey) (RFC 6528
// 3), with M a timer ticking every 4 microseconds and F the low 32 bits of
// SipHash-2-4 (libsodium's crypto_shorthash_siphash24) keyed with a 128-bit
// secret drawn from getrandom() when the generator is created.
//
// SYN cookie layout (the ISN of a SYN-ACK sent without keeping state):
//   bits 31..27  t mod 32, t = time counter in 64-second periods
//   bits 26..24  index into kSynCookieMss
//   bits 23..0   low 24 bits of SipHash(4-tuple, client ISN, t, MSS index)
// A cookie is accepted while t is at most kSynCookieMaxAge periods old.
//
// Times are passed in (microseconds of a monotonic clock, see NowMicros) so
// that callers and tests control them. Generate/Check are pure and may run on
// any core; the object is immutable after creation.
#ifndef IWARPD_TCP_LITE_TCP_ISN_H_
#define IWARPD_TCP_LITE_TCP_ISN_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/bytes.h"
#include "common/enum_names.h"
#include "common/seq.h"

namespace iwarp::tcp {

using SipKey = std::array<uint8_t, 16>;

// SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF"):
// key k0 = key[0..7], k1 = key[8..15] little endian; 64-bit result. Computed
// by libsodium (crypto_shorthash_siphash24), which measured faster than the
// hand-written version it replaced on these messages (tools/bench.sh siphash).
uint64_t SipHash24(const SipKey& key, ByteSpan message);

// Connection identity from our side, host byte order.
struct FourTuple {
  uint32_t local_addr = 0;
  uint16_t local_port = 0;
  uint32_t remote_addr = 0;
  uint16_t remote_port = 0;
};

// MSS values a SYN cookie can carry (3 bits); a peer MSS is rounded down to
// the largest entry not above it (536 if it is below every entry).
inline constexpr std::array<uint16_t, 8> kSynCookieMss = {536,  1200, 1440, 1452,
                                                          1460, 4036, 8940, 8960};
inline constexpr uint64_t kSynCookiePeriodMicros = 64'000'000;
inline constexpr uint32_t kSynCookieMaxAge = 2;  // periods

// X(enumerator, "name")
#define IWARP_TCP_SYN_COOKIE_STATUSES(X)                                                        \
  X(kValid, "valid")                                                                            \
  X(kInvalid, "syn_cookie_invalid")  /* not a cookie of ours for this 4-tuple and client ISN */ \
  X(kExpired, "syn_cookie_expired")  /* ours, but older than kSynCookieMaxAge periods */
enum class SynCookieStatus : uint8_t { IWARP_TCP_SYN_COOKIE_STATUSES(IWARP_ENUMERATOR) };

std::string_view SynCookieStatusName(SynCookieStatus s);

struct SynCookieResult {
  SynCookieStatus status = SynCookieStatus::kInvalid;
  uint16_t mss = 0;  // kValid only
};

// Microseconds of CLOCK_MONOTONIC.
uint64_t NowMicros();

class IsnGenerator {
 public:
  // Control path: draws the secret key from getrandom().
  static absl::StatusOr<IsnGenerator> Create();
  // A fixed key, for tests and for restarts that must keep their ISN space.
  // Control path (initialises libsodium once per process).
  explicit IsnGenerator(const SipKey& key);

  // RFC 6528 3: M + F(tuple, key), M = now_micros / 4 (mod 2^32).
  Seq32 Isn(const FourTuple& t, uint64_t now_micros) const;

  // The ISN of a stateless SYN-ACK answering a SYN with sequence number
  // `client_isn` and MSS option `peer_mss` (536 if the SYN had none).
  Seq32 SynCookie(const FourTuple& t, Seq32 client_isn, uint16_t peer_mss,
                  uint64_t now_micros) const;

  // Checks the ACK completing the handshake: `cookie` is its acknowledgment
  // number minus 1, `client_isn` its sequence number minus 1.
  SynCookieResult CheckSynCookie(const FourTuple& t, Seq32 client_isn, Seq32 cookie,
                                 uint64_t now_micros) const;

 private:
  uint32_t CookieHash(const FourTuple& t, Seq32 client_isn, uint64_t period,
                      uint32_t mss_index) const;

  SipKey key_;
};

}  // namespace iwarp::tcp

#endif  // IWARPD_TCP_LITE_TCP_ISN_H_
