// SipHash-2-4 on the path that uses it: the RFC 6528 ISN of a SYN and the
// SYN cookie of a SYN-ACK (RFC 4987 3.6), i.e. 13- and 26-octet messages
// (tag, 4-tuple; plus client ISN, period and MSS index for a cookie).
// Columns, same messages, same run, interleaved repetitions (median of
// kReps), in nanoseconds per hash:
//   ours     the hand-written SipHash24
//   sodium   libsodium's crypto_shorthash_siphash24
// and the whole IsnGenerator::Isn / SynCookie / CheckSynCookie calls as
// built. Ratio sodium/ours: above 1 means the library is slower.
#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tcp_lite/tcp_isn.h"

namespace {

using namespace iwarp;
using namespace iwarp::tcp;
using Clock = std::chrono::steady_clock;

constexpr int kReps = 9;
constexpr uint64_t kIters = 4'000'000;
volatile uint64_t g_sink;

// Nanoseconds per call of fn(i) over kIters calls.
template <typename Fn>
double NsPerCall(Fn&& fn) {
  uint64_t acc = 0;
  const auto t0 = Clock::now();
  for (uint64_t i = 0; i < kIters; ++i) acc += fn(i);
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  g_sink = acc;
  return ns / static_cast<double>(kIters);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

uint64_t Sodium(const SipKey& key, const uint8_t* msg, size_t n) {
  uint8_t out[crypto_shorthash_siphash24_BYTES];
  crypto_shorthash_siphash24(out, msg, n, key.data());
  uint64_t v;
  std::memcpy(&v, out, sizeof v);  // little endian on x86
  return v;
}

}  // namespace

int main() {
  if (sodium_init() < 0) {
    std::fprintf(stderr, "tcp_isn_bench: sodium_init failed\n");
    return 1;
  }
  SipKey key;
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 29 + 3);
  // Same layout as tcp_isn.cc: tag, 4-tuple big endian; the cookie adds the
  // client ISN, the period and the MSS index.
  uint8_t msg[26];
  for (size_t i = 0; i < sizeof msg; ++i) msg[i] = static_cast<uint8_t>(i * 7 + 1);
  std::printf("SipHash-2-4, ns per hash, median of %d interleaved runs of %llu\n", kReps,
              static_cast<unsigned long long>(kIters));
  std::printf("%-22s %8s %8s %14s\n", "message", "ours", "sodium", "sodium/ours");
  for (size_t n : {size_t{13}, size_t{26}}) {
    std::vector<double> o, s;
    for (int rep = 0; rep < kReps; ++rep) {
      // The remote port changes per call, as it does from SYN to SYN.
      o.push_back(NsPerCall([&](uint64_t i) {
        StoreBe16(msg + 11, static_cast<uint16_t>(i));
        return SipHash24(key, ByteSpan(msg, n));
      }));
      s.push_back(NsPerCall([&](uint64_t i) {
        StoreBe16(msg + 11, static_cast<uint16_t>(i));
        return Sodium(key, msg, n);
      }));
    }
    const double mo = Median(o), ms = Median(s);
    std::printf("%-22s %8.2f %8.2f %14.2f\n", n == 13 ? "13 B (ISN)" : "26 B (SYN cookie)", mo,
                ms, ms / mo);
  }
  const IsnGenerator g(key);
  FourTuple t{0xC0A8010A, 20049, 0xC0A80114, 0};
  std::vector<double> isn, cookie, check;
  for (int rep = 0; rep < kReps; ++rep) {
    isn.push_back(NsPerCall([&](uint64_t i) {
      t.remote_port = static_cast<uint16_t>(i);
      return uint64_t{g.Isn(t, i * 3).value()};
    }));
    cookie.push_back(NsPerCall([&](uint64_t i) {
      t.remote_port = static_cast<uint16_t>(i);
      return uint64_t{g.SynCookie(t, Seq32(static_cast<uint32_t>(i)), 1460, i * 3).value()};
    }));
    check.push_back(NsPerCall([&](uint64_t i) {
      t.remote_port = static_cast<uint16_t>(i);
      return uint64_t{g.CheckSynCookie(t, Seq32(static_cast<uint32_t>(i)),
                                       Seq32(static_cast<uint32_t>(i * 5)), i * 3)
                          .mss};
    }));
  }
  std::printf("IsnGenerator as built: Isn %.2f ns, SynCookie %.2f ns, CheckSynCookie %.2f ns\n",
              Median(isn), Median(cookie), Median(check));
  return 0;
}
