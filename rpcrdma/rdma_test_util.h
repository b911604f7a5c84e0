// Test helpers for RdmaServer / RdmaClient on in-process daemons: an echo
// CallHandler (reply = the call's argument bytes back, as a DDP piece), a
// server polled on its own thread, and a client application with registered
// memory. Test-only.
#ifndef IWARPD_RPCRDMA_RDMA_TEST_UTIL_H_
#define IWARPD_RPCRDMA_RDMA_TEST_UTIL_H_

#include <errno.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/bytes.h"
#include "gtest/gtest.h"
#include "libiwarp/iwarp.h"
#include "rpcrdma/rdma_transport.h"
#include "rpcrdma/xdr.h"

namespace iwarp::rpcrdma::testing {

// The test RPC message: [xid][len][arg (DDP-eligible, padded)]. The echo
// reply has the same shape.
inline std::vector<uint8_t> Flatten(const rpc::Message& m) {
  std::vector<uint8_t> v;
  for (const rpc::Piece& p : m) {
    v.insert(v.end(), p.bytes.begin(), p.bytes.end());
    if (p.ddp) v.resize(v.size() + XdrPadding(p.bytes.size()), 0);
  }
  return v;
}

inline std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n + 1);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    v[i] = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

// Runs on the server thread.
class EchoHandler : public rpc::CallHandler {
 public:
  void OnCall(rpc::ServerConnection& conn, rpc::CallToken token, const rpc::Message& call) override {
    std::vector<uint8_t> s = Flatten(call);
    uint32_t xid = s.size() >= 4 ? LoadBe32(s.data()) : 0;
    {
      std::lock_guard<std::mutex> g(mu);
      xids.push_back(xid);
      ++calls;
      if (hold) {
        held.push_back(Held{&conn, token, call});
        max_held = std::max(max_held, held.size());
        return;
      }
    }
    Answer(conn, token, call);
  }
  void OnDisconnect(rpc::ServerConnection& conn) override {
    std::lock_guard<std::mutex> g(mu);
    std::erase_if(held, [&](const Held& h) { return h.conn == &conn; });
    ++disconnects;
  }
  // Echo: the argument comes back as a DDP piece; zero copy from the call
  // when the argument was one registered piece, else copied (stag 0).
  void Answer(rpc::ServerConnection& conn, rpc::CallToken token, const rpc::Message& call) {
    std::vector<uint8_t> s = Flatten(call);
    uint8_t head[8] = {};
    if (s.size() >= 8) std::memcpy(head, s.data(), 8);
    const uint32_t len = LoadBe32(head + 4);
    rpc::Message r;
    r.Add(rpc::Piece{ByteSpan(head, 8), false, 0});
    const rpc::Piece* ddp = nullptr;
    for (const rpc::Piece& p : call) {
      if (p.ddp) ddp = &p;
    }
    if (ddp != nullptr && ddp->bytes.size() == len) {
      r.Add(rpc::Piece{ddp->bytes, true, ddp->stag});
    } else {
      const size_t n = s.size() >= 8 ? std::min<size_t>(len, s.size() - 8) : 0;
      r.Add(rpc::Piece{ByteSpan(s.data() + 8, n), true, 0});
    }
    if (big_reply > 0) {
      filler.assign(big_reply, 0x5A);
      r.Add(rpc::Piece{ByteSpan(filler), false, 0});
    }
    conn.Reply(token, r);
  }
  // Answers every held call (server thread only): the pieces of a call stay
  // valid until it is answered (rpc_transport.h).
  void ReleaseHeld() {
    std::vector<Held> h;
    {
      std::lock_guard<std::mutex> g(mu);
      h.swap(held);
    }
    for (Held& x : h) Answer(*x.conn, x.token, x.call);
  }
  size_t held_count() {
    std::lock_guard<std::mutex> g(mu);
    return held.size();
  }

  struct Held {
    rpc::ServerConnection* conn;
    rpc::CallToken token;
    rpc::Message call;
  };
  std::mutex mu;
  std::vector<uint32_t> xids;
  size_t calls = 0;
  bool hold = false;
  std::vector<Held> held;
  size_t max_held = 0;
  size_t disconnects = 0;
  size_t big_reply = 0;  // extra inline bytes appended to each reply
  std::vector<uint8_t> filler;
};

// An RdmaServer with its own session, polled on its own thread.
class ServerThread {
 public:
  ServerThread(const std::string& socket, const RdmaServerOptions& o, rpc::CallHandler& h) {
    EXPECT_EQ(iwarp_open(socket.c_str(), &s_), 0);
    EXPECT_EQ(iwarp_alloc_pd(s_, &pd_), 0);
    server_ = std::make_unique<RdmaServer>(s_, pd_, o, h);
    start_rc_ = server_->Start();
    thread_ = std::thread([this] { Loop(); });
  }
  ~ServerThread() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    server_.reset();
    if (s_ != nullptr) iwarp_close(s_);
  }
  int start_rc() const { return start_rc_; }
  // Runs `f` on the server thread and waits for it.
  void Run(std::function<void(RdmaServer&)> f) {
    std::atomic<bool> done{false};
    {
      std::lock_guard<std::mutex> g(mu_);
      tasks_.push_back([&] {
        f(*server_);
        done = true;
      });
    }
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  RdmaCounters counters() {
    RdmaCounters c;
    Run([&](RdmaServer& s) { c = s.counters(); });
    return c;
  }

 private:
  void Loop() {
    while (!stop_) {
      std::vector<std::function<void()>> t;
      {
        std::lock_guard<std::mutex> g(mu_);
        t.swap(tasks_);
      }
      for (auto& f : t) f();
      server_->Poll(5);
    }
  }
  iwarp_session* s_ = nullptr;
  uint32_t pd_ = 0;
  int start_rc_ = -1;
  std::unique_ptr<RdmaServer> server_;
  std::mutex mu_;
  std::vector<std::function<void()>> tasks_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A client application: session, PD, `bytes` of registered memory.
struct ClientApp {
  ClientApp(const std::string& socket, size_t bytes) {
    EXPECT_EQ(iwarp_open(socket.c_str(), &s), 0);
    EXPECT_EQ(iwarp_alloc_pd(s, &pd), 0);
    void* m = nullptr;
    EXPECT_EQ(iwarp_mem_alloc(s, bytes, 0, &m), 0);
    mem = static_cast<uint8_t*>(m);
    len = bytes;
    EXPECT_EQ(iwarp_reg_mr(s, pd, mem, bytes,
                           IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ |
                               IWARP_ACCESS_REMOTE_WRITE,
                           &mr),
              0);
  }
  ~ClientApp() {
    client.reset();
    if (s != nullptr) iwarp_close(s);
  }
  int Connect(const RdmaClientOptions& o) {
    client = std::make_unique<RdmaClient>(s, pd, o);
    return client->Connect();
  }
  // Polls until `done` holds or `ms` passed.
  bool PollUntil(const std::function<bool()>& done, int ms = 20000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      client->Poll(5);
    }
    return true;
  }
  iwarp_session* s = nullptr;
  uint32_t pd = 0;
  uint8_t* mem = nullptr;
  size_t len = 0;
  iwarp_mr mr{};
  std::unique_ptr<RdmaClient> client;
};

// The outcome of one echo call.
struct EchoResult {
  bool done = false;
  int status = 1;
  uint32_t transport_error = 0;
  uint32_t xid = 0;
  std::vector<uint8_t> arg;  // the echoed argument as the client got it
};

inline void StoreHead(uint8_t* head, uint32_t xid, uint32_t len) {
  StoreBe32(head, xid);
  StoreBe32(head + 4, len);
}

// Takes the echoed argument from a reply: the DDP result when there is one,
// else the inline stream after the 8-byte head.
inline void Collect(const rpc::ReplyView& v, EchoResult* r) {
  r->done = true;
  r->status = v.status;
  r->transport_error = v.transport_error;
  if (v.status != 0) return;
  std::vector<uint8_t> s = Flatten(v.stream);
  if (s.size() < 8) return;
  r->xid = LoadBe32(s.data());
  const uint32_t len = LoadBe32(s.data() + 4);
  if (v.ddp_result_count > 0) {
    r->arg.assign(v.ddp_results[0].begin(), v.ddp_results[0].end());
  } else if (s.size() >= 8 + size_t{len}) {
    r->arg.assign(s.begin() + 8, s.begin() + 8 + len);
  }
}

enum class Mode { kDefault, kWriteList, kReadList, kReplyChunk, kNomsg, kUnregistered };

inline std::string ModeName(Mode m) {
  switch (m) {
    case Mode::kDefault: return "Default";
    case Mode::kWriteList: return "WriteList";
    case Mode::kReadList: return "ReadList";
    case Mode::kReplyChunk: return "ReplyChunk";
    case Mode::kNomsg: return "Nomsg";
    case Mode::kUnregistered: return "Unregistered";
  }
  return "?";
}

// One echo call of `n` bytes in `mode`, every byte compared.
inline void EchoCall(ClientApp& app, Mode mode, size_t n, uint32_t xid) {
  SCOPED_TRACE(ModeName(mode) + " size " + std::to_string(n));
  const std::vector<uint8_t> arg = Pattern(n, xid);
  // Argument at the start of the region, sink at 4 MiB.
  uint8_t* src = app.mem;
  uint8_t* sink = app.mem + (4 << 20);
  std::memcpy(src, arg.data(), n);
  std::memset(sink, 0xEE, n + 8);
  uint8_t head[8];
  StoreHead(head, xid, static_cast<uint32_t>(n));
  rpc::Message call;
  ASSERT_TRUE(call.Add(rpc::Piece{ByteSpan(head, 8), false, 0}));
  const bool registered = mode != Mode::kUnregistered;
  ASSERT_TRUE(call.Add(rpc::Piece{ByteSpan(src, n), mode != Mode::kNomsg,
                                  registered ? app.mr.stag : 0}));
  rpc::CallOptions co;
  if (mode == Mode::kWriteList || mode == Mode::kReadList || mode == Mode::kUnregistered ||
      mode == Mode::kNomsg) {
    co.ddp_sinks[0] = rpc::ReplySink{MutableByteSpan(sink, n), registered ? app.mr.stag : 0};
    co.ddp_sink_count = 1;
  }
  co.max_reply_bytes = static_cast<uint32_t>(n + 64);
  EchoResult r;
  ASSERT_EQ(app.client->Call(call, co, [&](const rpc::ReplyView& v) { Collect(v, &r); }), 0);
  ASSERT_TRUE(app.PollUntil([&] { return r.done; }));
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(r.xid, xid);
  ASSERT_EQ(r.arg.size(), n);
  if (n > 0) {
    EXPECT_EQ(std::memcmp(r.arg.data(), arg.data(), n), 0);
  }
  if (co.ddp_sink_count == 1 && registered && n > 0) {
    // Placed straight into the caller's sink by RDMA Write, nothing past it.
    EXPECT_EQ(std::memcmp(sink, arg.data(), n), 0);
    EXPECT_EQ(sink[n], 0xEE);
  }
}

}  // namespace iwarp::rpcrdma::testing

#endif  // IWARPD_RPCRDMA_RDMA_TEST_UTIL_H_
