// Test harness for application QPs over RDMA over SCTP without DPDK.
// usrsctp is one stack per process, so "two daemons" in one process share
// the process's one sctp::SctpEndpoint and their wire engines are polled on
// ONE worker thread (SharedWorker): the endpoint's outbound packets for
// address X are fed back to it as coming from X, so daemon A's association to
// daemon B's address is accepted by daemon B's listener on the same stack.
// TCP segments cross between the two daemons' TcpStacks through the
// threaded test link as in wire_test_util.h. Test-only.
#ifndef IWARPD_APPIF_WIRE_SCTP_TEST_UTIL_H_
#define IWARPD_APPIF_WIRE_SCTP_TEST_UTIL_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "appif/wire_test_util.h"
#include "gtest/gtest.h"
#include "sctp/endpoint.h"

namespace iwarp::appif::testing {

inline sctp::SctpEndpoint* g_ep = nullptr;

// The process's one SCTP endpoint, for the whole binary (as in the sctp
// tests: left alive until exit).
// Register once per test binary:
//   ::testing::AddGlobalTestEnvironment(new EndpointEnvironment);
class EndpointEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    sctp::EndpointConfig c;
    c.local_ip = kIpA;
    c.max_associations = 64;
    c.association.rto_initial_ms = 100;
    c.association.rto_min_ms = 20;
    c.association.rto_max_ms = 400;
    auto ep = sctp::SctpEndpoint::Create(c);
    ASSERT_TRUE(ep.ok()) << ep.status();
    ep_ = std::move(*ep);
    g_ep = ep_.get();
  }

 private:
  std::unique_ptr<sctp::SctpEndpoint> ep_;
};

// Both daemons' workers on one thread: two TcpStacks + two WireEngines (each
// with the shared endpoint), the endpoint's Poll and its reflected packets.
class SharedWorker {
 public:
  // `pending_timeout_us`: WireEngineOptions::pending_timeout_us of both.
  SharedWorker(ThreadedTestLink& link, bool sctp_on_b = true,
               uint64_t pending_timeout_us = 10'000'000)
      : link_(link) {
    for (int side = 0; side < 2; ++side) {
      tcp::TcpOptions t;
      t.max_connections = 64;
      t.send_buffer_bytes = 1 << 20;
      t.receive_buffer_bytes = 1 << 20;
      const uint32_t ips[] = {side == 0 ? kIpA : kIpB};
      auto st = tcp::TcpStack::Create(t, ips, link.port_to(1 - side), isn_[side], NowUs());
      if (!st.ok()) return;
      stack_[side] = std::move(*st);
      WireEngineOptions o;
      o.local_ip = ips[0];
      o.max_qps = 64;
      o.event_depth = 512;
      o.max_sctp_associations = 16;
      o.pending_timeout_us = pending_timeout_us;
      o.sctp = side == 1 && !sctp_on_b ? nullptr : g_ep;
      auto e = WireEngine::Create(o, *stack_[side]);
      if (!e.ok()) return;
      engine_[side] = std::move(*e);
    }
    thread_ = std::thread([this] { Loop(); });
  }
  ~SharedWorker() {
    Stop();
    for (auto& s : stack_) s.reset();
    for (auto& e : engine_) e.reset();  // their association handles go here
  }
  bool ok() const { return engine_[0] != nullptr && engine_[1] != nullptr; }
  WireEngine* engine(int side) const { return engine_[side].get(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Reflector final : sctp::DatagramSink {
    std::vector<std::pair<uint32_t, std::vector<uint8_t>>> q;
    void Transmit(uint32_t dst_ip, ByteSpan p) override {
      q.emplace_back(dst_ip, std::vector<uint8_t>(p.begin(), p.end()));
    }
  };
  void Loop() {
    uint32_t idle = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      const uint64_t now = NowUs();
      size_t work = 0;
      for (int side = 0; side < 2; ++side) {
        work += link_.Deliver(side, *stack_[side], now, engine_[side].get());
        stack_[side]->RunTimers(now);
      }
      if (!refl_.q.empty()) {
        for (auto& e : engine_) e->PostReceives();
        for (auto& [ip, bytes] : refl_.q) g_ep->Input(ip, ByteSpan(bytes));
        work += refl_.q.size();
        refl_.q.clear();
      }
      g_ep->Poll(now / 1000);
      for (auto& e : engine_) work += e->Poll(now);
      work += g_ep->Drain(refl_);
      if (work != 0) {
        idle = 0;
      } else if (++idle > 64) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  ThreadedTestLink& link_;
  tcp::IsnGenerator isn_[2] = {tcp::IsnGenerator(tcp::SipKey{1}), tcp::IsnGenerator(tcp::SipKey{2})};
  std::unique_ptr<tcp::TcpStack> stack_[2];
  std::unique_ptr<WireEngine> engine_[2];
  Reflector refl_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

inline SessionServerOptions SctpDaemonOptions(WireEngine* e) {
  SessionServerOptions o;
  o.wire_engine = e;
  o.wire_mpa.crc = true;
  return o;
}

}  // namespace iwarp::appif::testing

#endif  // IWARPD_APPIF_WIRE_SCTP_TEST_UTIL_H_
