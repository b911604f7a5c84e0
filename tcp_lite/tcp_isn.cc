#include "tcp_lite/tcp_isn.h"

#include <sodium.h>
#include <sys/random.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace iwarp::tcp {
namespace {

// Domain separation of the two uses of the one key.
constexpr uint8_t kTagIsn = 1;
constexpr uint8_t kTagCookie = 2;

constexpr int kCookieAgeShift = 27;
constexpr int kCookieMssShift = 24;
constexpr uint32_t kCookieHashMask = 0x00FFFFFF;
constexpr uint32_t kCookieAgeMask = 0x1F;
constexpr uint32_t kCookieMssMask = 0x07;

uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// 12 octets of 4-tuple, big endian, behind a one-octet tag.
void PutTuple(uint8_t* p, uint8_t tag, const FourTuple& t) {
  p[0] = tag;
  StoreBe32(p + 1, t.local_addr);
  StoreBe16(p + 5, t.local_port);
  StoreBe32(p + 7, t.remote_addr);
  StoreBe16(p + 11, t.remote_port);
}

}  // namespace

uint64_t SipHash24(const SipKey& key, ByteSpan message) {
  // libsodium's output is the 64-bit result, little endian.
  uint8_t out[crypto_shorthash_siphash24_BYTES];
  crypto_shorthash_siphash24(out, message.data(), message.size(), key.data());
  return LoadLe64(out);
}

std::string_view SynCookieStatusName(SynCookieStatus s) {
  using Enum = SynCookieStatus;
  switch (s) { IWARP_TCP_SYN_COOKIE_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

uint64_t NowMicros() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

IsnGenerator::IsnGenerator(const SipKey& key) : key_(key) {
  // Once per process is enough, later calls return at once. SipHash itself
  // needs nothing from it, so a failure (reported by Create) is ignored here.
  [[maybe_unused]] const int ignored = sodium_init();
}

absl::StatusOr<IsnGenerator> IsnGenerator::Create() {
  if (sodium_init() < 0) return absl::InternalError("sodium_init failed");
  SipKey key{};
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t r = getrandom(key.data() + got, key.size() - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("getrandom: ", std::string(std::strerror(errno))));
    }
    got += static_cast<size_t>(r);
  }
  return IsnGenerator(key);
}

Seq32 IsnGenerator::Isn(const FourTuple& t, uint64_t now_micros) const {
  uint8_t msg[13];
  PutTuple(msg, kTagIsn, t);
  const auto f = static_cast<uint32_t>(SipHash24(key_, msg));
  const auto m = static_cast<uint32_t>(now_micros / 4);  // RFC 6528 3: 4 us timer
  return Seq32(m + f);
}

uint32_t IsnGenerator::CookieHash(const FourTuple& t, Seq32 client_isn, uint64_t period,
                                  uint32_t mss_index) const {
  uint8_t msg[13 + 4 + 8 + 1];
  PutTuple(msg, kTagCookie, t);
  StoreBe32(msg + 13, client_isn.value());
  StoreBe64(msg + 17, period);
  msg[25] = static_cast<uint8_t>(mss_index);
  return static_cast<uint32_t>(SipHash24(key_, msg)) & kCookieHashMask;
}

Seq32 IsnGenerator::SynCookie(const FourTuple& t, Seq32 client_isn, uint16_t peer_mss,
                              uint64_t now_micros) const {
  uint32_t index = 0;
  for (uint32_t i = 0; i < kSynCookieMss.size(); ++i) {
    if (kSynCookieMss[i] <= peer_mss) index = i;
  }
  const uint64_t period = now_micros / kSynCookiePeriodMicros;
  const uint32_t cookie = ((static_cast<uint32_t>(period) & kCookieAgeMask) << kCookieAgeShift) |
                          (index << kCookieMssShift) | CookieHash(t, client_isn, period, index);
  return Seq32(cookie);
}

SynCookieResult IsnGenerator::CheckSynCookie(const FourTuple& t, Seq32 client_isn, Seq32 cookie,
                                             uint64_t now_micros) const {
  const uint32_t c = cookie.value();
  const uint64_t now_period = now_micros / kSynCookiePeriodMicros;
  const uint32_t age =
      (static_cast<uint32_t>(now_period) - (c >> kCookieAgeShift)) & kCookieAgeMask;
  if (age > now_period) return {SynCookieStatus::kInvalid};
  const uint32_t index = (c >> kCookieMssShift) & kCookieMssMask;
  if (CookieHash(t, client_isn, now_period - age, index) != (c & kCookieHashMask)) {
    return {SynCookieStatus::kInvalid};
  }
  if (age > kSynCookieMaxAge) return {SynCookieStatus::kExpired};
  return {SynCookieStatus::kValid, kSynCookieMss[index]};
}

}  // namespace iwarp::tcp
