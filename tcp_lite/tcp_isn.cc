#include "tcp_lite/tcp_isn.h"

#include <sys/random.h>
#include <time.h>

#include <bit>
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

struct SipState {
  uint64_t v0, v1, v2, v3;

  void Round() {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }
  void Compress(uint64_t m) {
    v3 ^= m;
    Round();
    Round();
    v0 ^= m;
  }
};

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
  const uint64_t k0 = LoadLe64(key.data());
  const uint64_t k1 = LoadLe64(key.data() + 8);
  // Initialisation constants: "somepseudorandomlygeneratedbytes".
  SipState s{k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
             k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
  const size_t n = message.size();
  const uint8_t* p = message.data();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) s.Compress(LoadLe64(p + i));
  // Last block: remaining octets little endian, message length mod 256 on top.
  uint64_t last = uint64_t{static_cast<uint8_t>(n)} << 56;
  for (size_t j = 0; i + j < n; ++j) last |= uint64_t{p[i + j]} << (8 * j);
  s.Compress(last);
  s.v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) s.Round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

std::string_view SynCookieStatusName(SynCookieStatus s) {
  switch (s) {
    case SynCookieStatus::kValid: return "valid";
    case SynCookieStatus::kInvalid: return "syn_cookie_invalid";
    case SynCookieStatus::kExpired: return "syn_cookie_expired";
  }
  return "invalid";
}

uint64_t NowMicros() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

absl::StatusOr<IsnGenerator> IsnGenerator::Create() {
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
