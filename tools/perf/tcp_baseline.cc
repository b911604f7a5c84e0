// iwarp-tcp-baseline: the kernel TCP side of tools/iwarp_perf_bench.py, in
// C++ so the baseline measures the kernel, not an interpreter.
//
//   iwarp-tcp-baseline serve PORT
//       bulk sink on PORT (reads each connection to its end into one buffer,
//       then answers with the count of bytes it read, 8 bytes big-endian) and
//       64-byte echo on PORT+1; runs until killed. Prints "ready" once both
//       listen. PORT 1..65534.
//   iwarp-tcp-baseline bulk HOST PORT SIZE COUNT [nodelay]
//       COUNT writes of SIZE bytes on one connection (TCP_NODELAY with
//       "nodelay"), then waits for the sink's count and checks it is
//       SIZE * COUNT: {"secs": S, "bytes": B}.
//   iwarp-tcp-baseline pingpong HOST PORT COUNT
//       64-byte ping-pong with the echo, TCP_NODELAY; every answer must be
//       the message sent (each carries its sequence number):
//       {"median_us": M, "min_us": N, "avg_us": A, "count": C}.
//   iwarp-tcp-baseline stream HOST PORT SIZE COUNT
//       COUNT writes of SIZE bytes, then a half-close, then reads to the
//       peer's FIN (any sink that closes when its peer does: iwarpd's sink
//       service, or serve's, whose count it reads past): {"secs": S}.
//   iwarp-tcp-baseline rr HOST PORT SECONDS
//       64-byte request/response for SECONDS (1..3600), TCP_NODELAY, every
//       answer checked: {"transactions": N, "secs": S}.
//   iwarp-tcp-baseline echo HOST PORT COUNT DEPTH
//       COUNT 64-byte messages to the echo, at most DEPTH unanswered, one
//       write per message, TCP_NODELAY; every answer must be the message
//       sent: {"secs": S, "count": C}.
// Exit: 0 ok, 1 a socket call failed or the peer answered wrongly, 2 usage.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "iwarp-tcp-baseline: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

double NowSec() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void NoDelay(int fd) {
  const int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) Die("TCP_NODELAY");
}

int Listen(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) Die("socket");
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) Die("bind");
  if (listen(fd, 4) != 0) Die("listen");
  return fd;
}

int Connect(const char* host, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) Die("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    std::fprintf(stderr, "iwarp-tcp-baseline: not an IPv4 address: %s\n", host);
    std::exit(2);
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) Die("connect");
  return fd;
}

// Writes all n bytes; false when the connection failed (no SIGPIPE: a
// server outlives a client that went away).
bool WriteAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly n bytes; false at the connection's end or on an error.
bool ReadExact(int fd, uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void Sink(int listener) {
  std::vector<uint8_t> buf(1 << 20);
  for (;;) {
    const int c = accept(listener, nullptr, nullptr);
    if (c < 0) continue;
    uint64_t total = 0;
    for (;;) {
      const ssize_t r = read(c, buf.data(), buf.size());
      if (r > 0) {
        total += static_cast<uint64_t>(r);
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      break;
    }
    uint8_t answer[8];
    for (int i = 0; i < 8; ++i) answer[i] = static_cast<uint8_t>(total >> (56 - 8 * i));
    (void)WriteAll(c, answer, sizeof(answer));  // a client that left gets no answer
    close(c);
  }
}

void Echo(int listener) {
  uint8_t msg[64];
  for (;;) {
    const int c = accept(listener, nullptr, nullptr);
    if (c < 0) continue;
    NoDelay(c);
    while (ReadExact(c, msg, sizeof(msg)) && WriteAll(c, msg, sizeof(msg))) {
    }
    close(c);
  }
}

// COUNT writes of `size` zero bytes, then a half-close; exits 1 if one fails.
void WriteThenHalfClose(int fd, uint64_t size, uint64_t count) {
  std::vector<uint8_t> buf(size);
  for (uint64_t i = 0; i < count; ++i) {
    if (!WriteAll(fd, buf.data(), buf.size())) Die("write");
  }
  if (shutdown(fd, SHUT_WR) != 0) Die("shutdown");
}

// One 64-byte message carrying `seq` to the echo and its answer; false (with
// the reason on stderr) if the echo failed or answered something else.
bool EchoRoundTrip(int fd, uint64_t seq) {
  uint8_t msg[64] = {};
  uint8_t back[64];
  std::memcpy(msg, &seq, sizeof(seq));
  if (!WriteAll(fd, msg, sizeof(msg))) Die("write");
  if (!ReadExact(fd, back, sizeof(back))) {
    std::fprintf(stderr, "iwarp-tcp-baseline: the echo closed or failed\n");
    return false;
  }
  if (std::memcmp(msg, back, sizeof(msg)) != 0) {
    std::fprintf(stderr, "iwarp-tcp-baseline: answer %" PRIu64 " is not the message sent\n", seq);
    return false;
  }
  return true;
}

// A decimal number in [lo, hi]; exits 2 with the reason otherwise.
uint64_t Arg(const char* s, const char* what, uint64_t lo, uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0' || *s == '-' || errno == ERANGE) {
    std::fprintf(stderr, "iwarp-tcp-baseline: %s is not a number: %s\n", what, s);
    std::exit(2);
  }
  if (v < lo || v > hi) {
    std::fprintf(stderr, "iwarp-tcp-baseline: %s %s is out of range %" PRIu64 "..%" PRIu64 "\n",
                 what, s, lo, hi);
    std::exit(2);
  }
  return v;
}

constexpr uint64_t kMaxSize = uint64_t{64} << 20;
constexpr uint64_t kMaxCount = uint64_t{1} << 40;

int Usage() {
  std::fprintf(stderr,
               "usage: iwarp-tcp-baseline serve PORT\n"
               "       iwarp-tcp-baseline bulk HOST PORT SIZE COUNT [nodelay]\n"
               "       iwarp-tcp-baseline pingpong HOST PORT COUNT\n"
               "       iwarp-tcp-baseline echo HOST PORT COUNT DEPTH\n"
               "       iwarp-tcp-baseline stream HOST PORT SIZE COUNT\n"
               "       iwarp-tcp-baseline rr HOST PORT SECONDS\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string mode = argv[1];
  if (mode == "serve" && argc == 3) {
    const auto port = static_cast<uint16_t>(Arg(argv[2], "PORT", 1, 65534));
    const int sink = Listen(port);
    const int echo = Listen(static_cast<uint16_t>(port + 1));
    std::printf("ready\n");
    std::fflush(stdout);
    std::thread t(Echo, echo);
    Sink(sink);
    t.join();
    return 0;
  }
  if (mode == "bulk" && (argc == 6 || (argc == 7 && std::strcmp(argv[6], "nodelay") == 0))) {
    const auto port = static_cast<uint16_t>(Arg(argv[3], "PORT", 1, 65535));
    const uint64_t size = Arg(argv[4], "SIZE", 1, kMaxSize);
    const uint64_t count = Arg(argv[5], "COUNT", 1, kMaxCount);
    const int fd = Connect(argv[2], port);
    if (argc == 7) NoDelay(fd);
    const double t0 = NowSec();
    WriteThenHalfClose(fd, size, count);
    uint8_t answer[8];
    if (!ReadExact(fd, answer, sizeof(answer))) {
      std::fprintf(stderr, "iwarp-tcp-baseline: the sink closed without its answer\n");
      return 1;
    }
    const double secs = NowSec() - t0;
    uint64_t got = 0;
    for (uint8_t b : answer) got = got << 8 | b;
    if (got != size * count) {
      std::fprintf(stderr, "iwarp-tcp-baseline: the sink read %" PRIu64 " bytes, not %" PRIu64 "\n",
                   got, size * count);
      return 1;
    }
    std::printf("{\"secs\": %.9f, \"bytes\": %" PRIu64 "}\n", secs, got);
    close(fd);
    return 0;
  }
  if (mode == "pingpong" && argc == 5) {
    const auto port = static_cast<uint16_t>(Arg(argv[3], "PORT", 1, 65535));
    const uint64_t count = Arg(argv[4], "COUNT", 1, uint64_t{1} << 32);
    const int fd = Connect(argv[2], port);
    NoDelay(fd);
    std::vector<double> rtt;
    rtt.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      const double t0 = NowSec();
      if (!EchoRoundTrip(fd, i)) return 1;
      rtt.push_back((NowSec() - t0) * 1e6);
    }
    double sum = 0;
    for (double v : rtt) sum += v;
    std::sort(rtt.begin(), rtt.end());
    std::printf("{\"median_us\": %.3f, \"min_us\": %.3f, \"avg_us\": %.3f, \"count\": %zu}\n",
                rtt[rtt.size() / 2], rtt[0], sum / static_cast<double>(rtt.size()), rtt.size());
    close(fd);
    return 0;
  }
  if (mode == "stream" && argc == 6) {
    const auto port = static_cast<uint16_t>(Arg(argv[3], "PORT", 1, 65535));
    const uint64_t size = Arg(argv[4], "SIZE", 1, kMaxSize);
    const uint64_t count = Arg(argv[5], "COUNT", 1, kMaxCount);
    const int fd = Connect(argv[2], port);
    const double t0 = NowSec();
    WriteThenHalfClose(fd, size, count);
    for (;;) {
      uint8_t scratch[64];
      const ssize_t r = read(fd, scratch, sizeof(scratch));
      if (r == 0) break;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) Die("read");
    }
    std::printf("{\"secs\": %.9f}\n", NowSec() - t0);
    close(fd);
    return 0;
  }
  if (mode == "rr" && argc == 5) {
    const auto port = static_cast<uint16_t>(Arg(argv[3], "PORT", 1, 65535));
    const uint64_t seconds = Arg(argv[4], "SECONDS", 1, 3600);
    const int fd = Connect(argv[2], port);
    NoDelay(fd);
    uint64_t n = 0;
    const double t0 = NowSec();
    const double end = t0 + static_cast<double>(seconds);
    double now = t0;
    while (now < end) {
      if (!EchoRoundTrip(fd, n)) return 1;
      ++n;
      now = NowSec();
    }
    std::printf("{\"transactions\": %" PRIu64 ", \"secs\": %.9f}\n", n, now - t0);
    close(fd);
    return 0;
  }
  if (mode == "echo" && argc == 6) {
    const auto port = static_cast<uint16_t>(Arg(argv[3], "PORT", 1, 65535));
    const uint64_t count = Arg(argv[4], "COUNT", 1, kMaxCount);
    const uint64_t depth = Arg(argv[5], "DEPTH", 1, 4096);
    const int fd = Connect(argv[2], port);
    NoDelay(fd);
    std::vector<uint8_t> in(size_t{64} << 10);
    size_t have = 0;  // bytes of an answer not yet complete, at in[0]
    uint64_t sent = 0;
    uint64_t got = 0;
    const double t0 = NowSec();
    while (got < count) {
      while (sent < count && sent - got < depth) {
        uint8_t msg[64] = {};
        std::memcpy(msg, &sent, sizeof(sent));
        if (!WriteAll(fd, msg, sizeof(msg))) Die("write");
        ++sent;
      }
      const ssize_t r = read(fd, in.data() + have, in.size() - have);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        std::fprintf(stderr, "iwarp-tcp-baseline: the echo closed or failed\n");
        return 1;
      }
      have += static_cast<size_t>(r);
      size_t off = 0;
      for (; have - off >= 64; off += 64, ++got) {
        uint8_t want[64] = {};
        std::memcpy(want, &got, sizeof(got));
        if (got >= sent || std::memcmp(in.data() + off, want, sizeof(want)) != 0) {
          std::fprintf(stderr, "iwarp-tcp-baseline: answer %" PRIu64 " is not the message sent\n",
                       got);
          return 1;
        }
      }
      std::memmove(in.data(), in.data() + off, have - off);
      have -= off;
    }
    std::printf("{\"secs\": %.9f, \"count\": %" PRIu64 "}\n", NowSec() - t0, got);
    close(fd);
    return 0;
  }
  return Usage();
}
