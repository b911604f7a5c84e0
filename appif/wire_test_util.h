// Test harness for application QPs on the wire without DPDK: a "daemon" is a
// SessionServer (control thread, TestHost) plus a WireEngine polled on its
// own worker thread over a TcpStack; two daemons' stacks are joined by
// ThreadedTestLink. Test-only.
#ifndef IWARPD_APPIF_WIRE_TEST_UTIL_H_
#define IWARPD_APPIF_WIRE_TEST_UTIL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "appif/test_host.h"
#include "appif/wire_engine.h"
#include "tcp_lite/tcp_isn.h"
#include "tcp_lite/tcp_stack.h"

namespace iwarp::appif::testing {

inline constexpr uint32_t kIpA = 0xC6120001;  // 198.18.0.1
inline constexpr uint32_t kIpB = 0xC6120002;  // 198.18.0.2

inline uint64_t NowUs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Test double for the network between two workers: TCP segments cross
// threads through a mutex-protected queue per direction (the real data
// plane sends them as Ethernet frames through DPDK ports). `cut` drops
// everything in both directions (a peer that disappeared).
class ThreadedTestLink {
 public:
  struct Packet {
    uint32_t src = 0, dst = 0;
    std::vector<uint8_t> bytes;
  };
  class Port final : public tcp::TcpOutput {
   public:
    Port(ThreadedTestLink& l, int to) : link_(l), to_(to) {}
    bool EmitSegment(uint32_t src, uint32_t dst, ByteSpan hdr,
                     std::span<const ByteSpan> payload) override {
      if (link_.cut.load(std::memory_order_relaxed)) return true;  // lost
      Packet p;
      p.src = src;
      p.dst = dst;
      p.bytes.assign(hdr.begin(), hdr.end());
      for (ByteSpan b : payload) p.bytes.insert(p.bytes.end(), b.begin(), b.end());
      std::lock_guard<std::mutex> g(link_.mu_[to_]);
      link_.q_[to_].push_back(std::move(p));
      return true;
    }

   private:
    ThreadedTestLink& link_;
    int to_;
  };

  // Hands what is queued for side `to` to its stack; returns the count.
  // `engine` (optional) takes the posted receives between taking the burst
  // and feeding it to the stack (WireEngine::PostReceives).
  size_t Deliver(int to, tcp::TcpStack& stack, uint64_t now_us, WireEngine* engine = nullptr) {
    {
      std::lock_guard<std::mutex> g(mu_[to]);
      scratch_[to].swap(q_[to]);
    }
    const size_t n = scratch_[to].size();
    if (n == 0) return 0;
    if (engine != nullptr) engine->PostReceives();
    stack.BeginBurst();
    for (const Packet& p : scratch_[to]) {
      if (!cut.load(std::memory_order_relaxed)) stack.Input(p.src, p.dst, ByteSpan(p.bytes), now_us);
    }
    stack.EndBurst(now_us);
    scratch_[to].clear();
    return n;
  }

  Port& port_to(int side) { return side == 0 ? to_a_ : to_b_; }
  std::atomic<bool> cut{false};

 private:
  std::mutex mu_[2];
  std::vector<Packet> q_[2];
  std::vector<Packet> scratch_[2];
  Port to_a_{*this, 0};
  Port to_b_{*this, 1};
};

// Sizes a test may shrink: the worker's command ring and how long the
// control side waits for an acknowledgement.
struct TestDaemonLimits {
  uint32_t command_depth = 256;
  uint32_t wire_ack_timeout_ms = 2000;
};

// One worker: a TcpStack and its WireEngine, polled on a thread of its own.
class TestWorker {
 public:
  TestWorker(ThreadedTestLink& link, int side, uint32_t ip, const TestDaemonLimits& limits = {})
      : link_(link), side_(side), isn_(Key()) {
    tcp::TcpOptions t;
    t.max_connections = 64;
    t.send_buffer_bytes = 1 << 20;
    t.receive_buffer_bytes = 1 << 20;
    const uint32_t ips[] = {ip};
    auto st = tcp::TcpStack::Create(t, ips, link.port_to(1 - side), isn_, NowUs());
    if (!st.ok()) return;
    stack_ = std::move(*st);
    WireEngineOptions o;
    o.local_ip = ip;
    o.max_qps = 64;
    o.event_depth = 512;
    o.command_depth = limits.command_depth;
    auto e = WireEngine::Create(o, *stack_);
    if (!e.ok()) return;
    engine_ = std::move(*e);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TestWorker() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    stack_.reset();  // first: it may still call into the engine's proxies
    engine_.reset();
  }
  bool ok() const { return engine_ != nullptr; }
  WireEngine* engine() const { return engine_.get(); }
  // A stalled worker (it polls nothing until Resume): commands to it time
  // out on the control side.
  void Pause() { paused_ = true; }
  void Resume() { paused_ = false; }
  // Stack counters are written by the worker; read them after Stop only.
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  static tcp::SipKey Key() {
    tcp::SipKey k{};
    for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(i * 13 + 5);
    return k;
  }
  void Loop() {
    uint32_t idle = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      if (paused_.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      const uint64_t now = NowUs();
      size_t work = link_.Deliver(side_, *stack_, now, engine_.get());
      stack_->RunTimers(now);
      work += engine_->Poll(now);
      if (work != 0) {
        idle = 0;
      } else if (++idle > 64) {
        // Two cores shared by everything in this test: back off when idle.
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  ThreadedTestLink& link_;
  int side_;
  tcp::IsnGenerator isn_;
  std::unique_ptr<tcp::TcpStack> stack_;
  std::unique_ptr<WireEngine> engine_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::thread thread_;
};

// A daemon: control thread (SessionServer in a TestHost) + worker.
// Destruction: the server first (it destroys wire QPs through the running
// worker), then the worker.
struct TestDaemon {
  TestDaemon(ThreadedTestLink& link, int side, uint32_t ip, const engine::MpaParams& mpa,
             const TestDaemonLimits& limits = {})
      : worker(link, side, ip, limits), host(Options(worker.engine(), mpa, limits)) {}
  static SessionServerOptions Options(WireEngine* e, const engine::MpaParams& mpa,
                                      const TestDaemonLimits& limits) {
    SessionServerOptions o;
    o.wire_engine = e;
    o.wire_mpa = mpa;
    o.wire_ack_timeout_ms = limits.wire_ack_timeout_ms;
    return o;
  }
  TestWorker worker;
  TestHost host;
};

}  // namespace iwarp::appif::testing

#endif  // IWARPD_APPIF_WIRE_TEST_UTIL_H_
