#include "dataplane/services/tcp_services.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace iwarp::dataplane {
namespace {

using tcp::CloseReason;
using tcp::ConnId;
using tcp::FourTuple;

// A service that listens on cfg_.port and owns every connection it accepts.
class ListeningService : public TcpService {
 public:
  using TcpService::TcpService;

  absl::Status Start() override { return stack_->Listen(cfg_.port, *this); }

  TcpUser* OnAccept(ConnId conn, const FourTuple& tuple) override {
    Open(conn, tuple);
    ++counters_.accepted;
    return this;
  }
};

// Echo: every byte received is sent back; after the peer's FIN and once all
// of it was echoed, our FIN follows (the peer sees an orderly close).
class EchoService final : public ListeningService {
 public:
  using ListeningService::ListeningService;

  size_t OnData(ConnId conn, uint64_t, ByteSpan data) override {
    Conn* c = Find(conn);
    if (c == nullptr) return data.size();
    const size_t n = stack_->Send(conn, data, clock_->now_us);
    c->bytes_in += n;
    c->bytes_out += n;
    counters_.bytes_in += n;
    counters_.bytes_out += n;
    // What did not fit stays in the receive buffer (its window closes) and
    // is offered again once send space opens (OnSendSpace -> Poll). No FIN
    // here: `data` may be the first of two pieces; Poll sends it once the
    // redelivery consumed everything.
    c->unconsumed = n < data.size();
    return n;
  }

  void OnSendSpace(ConnId conn, size_t) override {
    Conn* c = Find(conn);
    if (c != nullptr && c->unconsumed) QueueDeliver(conn, *c);
  }

  void OnPeerFin(ConnId conn) override {
    Conn* c = Find(conn);
    if (c == nullptr) return;
    c->peer_fin = true;
    if (!c->unconsumed && !c->shut) {
      c->shut = true;
      stack_->Shutdown(conn, clock_->now_us);
    }
  }

 private:
  bool Complete(const Conn& c, CloseReason reason) const override {
    return c.peer_fin && reason == CloseReason::kNormal;
  }
};

// Sink: counts (and hashes) everything; answers the peer's FIN with its own.
class SinkService final : public ListeningService {
 public:
  using ListeningService::ListeningService;

  size_t OnData(ConnId conn, uint64_t, ByteSpan data) override {
    Conn* c = Find(conn);
    if (c == nullptr) return data.size();
    c->bytes_in += data.size();
    counters_.bytes_in += data.size();
    if (cfg_.sha256) c->sha.Update(data);
    return data.size();
  }

  void OnPeerFin(ConnId conn) override {
    Conn* c = Find(conn);
    if (c == nullptr) return;
    c->peer_fin = true;
    if (!c->shut) {
      c->shut = true;
      stack_->Shutdown(conn, clock_->now_us);
    }
  }

 private:
  bool Complete(const Conn& c, CloseReason) const override {
    // Every byte up to the FIN was delivered, whatever happened after it.
    return c.peer_fin;
  }
};

// Source: the active open. Sends `bytes` of the pattern per connection, then
// FIN; reads and counts whatever the peer sends until its FIN.
class SourceService final : public TcpService {
 public:
  SourceService(const config::ServiceConfig& cfg, tcp::TcpStack* stack, const ServiceClock* clock,
                uint32_t max_connections, uint32_t local_ip)
      : TcpService(cfg, stack, clock, max_connections), local_ip_(local_ip) {
    FillPattern(0, pattern_);
  }

  absl::Status Start() override {
    if (local_ip_ == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("service ", cfg_.name, ": no interface address to connect from"));
    }
    return absl::OkStatus();
  }

  void Poll(uint64_t now_ms) override {
    TcpService::Poll(now_ms);
    if (started_) return;
    if (first_poll_ms_ == UINT64_MAX) first_poll_ms_ = now_ms;
    if (now_ms - first_poll_ms_ < cfg_.start_delay_ms) return;
    started_ = true;
    for (uint32_t i = 0; i < cfg_.connections; ++i) {
      absl::StatusOr<ConnId> id =
          stack_->Connect(local_ip_, cfg_.remote, cfg_.remote_port, *this, 0, clock_->now_us);
      if (!id.ok()) {
        ++counters_.connect_failed;
        continue;
      }
      FourTuple t;
      t.local_addr = local_ip_;
      t.remote_addr = cfg_.remote;
      t.remote_port = cfg_.remote_port;
      Open(*id, t);
    }
  }

  void OnConnected(ConnId conn) override {
    Conn* c = Find(conn);
    if (c == nullptr) return;
    ++counters_.connected;
    tcp::TcpConnInfo info;
    if (stack_->GetConnection(conn, &info)) c->tuple = info.tuple;
    Pump(conn, *c);
  }

  void OnSendSpace(ConnId conn, size_t) override {
    Conn* c = Find(conn);
    if (c != nullptr) Pump(conn, *c);
  }

  size_t OnData(ConnId conn, uint64_t, ByteSpan data) override {
    Conn* c = Find(conn);
    if (c != nullptr) c->bytes_in += data.size();
    counters_.bytes_in += data.size();
    return data.size();
  }

  void OnPeerFin(ConnId conn) override {
    Conn* c = Find(conn);
    if (c != nullptr) c->peer_fin = true;
  }

 private:
  static constexpr size_t kChunk = 64 * 1024;

  void Pump(ConnId conn, Conn& c) {
    while (c.bytes_out < cfg_.bytes) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(cfg_.bytes - c.bytes_out, kChunk));
      const ByteSpan chunk(pattern_.data() + c.bytes_out % kPatternPeriod, len);
      const size_t n = stack_->Send(conn, chunk, clock_->now_us);
      if (cfg_.sha256) c.sha.Update(chunk.first(n));
      c.bytes_out += n;
      counters_.bytes_out += n;
      if (n < len) return;  // OnSendSpace resumes
    }
    if (!c.shut) {
      c.shut = true;
      stack_->Shutdown(conn, clock_->now_us);
    }
  }

  bool Complete(const Conn& c, CloseReason reason) const override {
    return c.bytes_out == cfg_.bytes && reason == CloseReason::kNormal;
  }

  const uint32_t local_ip_;
  bool started_ = false;
  uint64_t first_poll_ms_ = UINT64_MAX;
  std::array<uint8_t, kChunk + kPatternPeriod> pattern_{};
};

}  // namespace

void FillPattern(uint64_t offset, MutableByteSpan out) {
  uint32_t v = static_cast<uint32_t>(offset % kPatternPeriod);
  for (uint8_t& b : out) {
    b = static_cast<uint8_t>(v);
    if (++v == kPatternPeriod) v = 0;
  }
}

std::unique_ptr<TcpService> TcpService::Create(const config::ServiceConfig& cfg,
                                               tcp::TcpStack* stack, const ServiceClock* clock,
                                               uint32_t max_connections, uint32_t local_ip) {
  switch (cfg.type) {
    case config::ServiceType::kEcho:
      return std::unique_ptr<TcpService>(new EchoService(cfg, stack, clock, max_connections));
    case config::ServiceType::kSink:
      return std::unique_ptr<TcpService>(new SinkService(cfg, stack, clock, max_connections));
    case config::ServiceType::kSource:
      return std::make_unique<SourceService>(cfg, stack, clock, max_connections, local_ip);
    case config::ServiceType::kIwarpResponder:
    case config::ServiceType::kIwarpClient:
    case config::ServiceType::kIwarpFpduTest:
      return nullptr;  // IwarpService::Create (iwarp_services.h)
  }
  return nullptr;
}

TcpService::TcpService(const config::ServiceConfig& cfg, tcp::TcpStack* stack,
                       const ServiceClock* clock, uint32_t max_connections)
    : cfg_(cfg), stack_(stack), clock_(clock), conns_(max_connections) {
  deliver_.reserve(max_connections);
}

TcpService::Conn* TcpService::Find(ConnId conn) {
  if (conn.slot >= conns_.size()) return nullptr;
  Conn& c = conns_[conn.slot];
  return c.active && c.generation == conn.generation ? &c : nullptr;
}

bool TcpService::Owns(ConnId conn) const {
  if (conn.slot >= conns_.size()) return false;
  const Conn& c = conns_[conn.slot];
  return c.active && c.generation == conn.generation;
}

TcpService::Conn& TcpService::Open(ConnId conn, const FourTuple& tuple) {
  Conn& c = conns_[conn.slot];
  c.generation = conn.generation;
  c.active = true;
  c.peer_fin = false;
  c.shut = false;
  c.unconsumed = false;
  c.deliver_queued = false;
  c.bytes_in = 0;
  c.bytes_out = 0;
  c.sha.Reset();
  c.tuple = tuple;
  ++counters_.active;
  return c;
}

void TcpService::QueueDeliver(ConnId conn, Conn& c) {
  if (c.deliver_queued || deliver_.size() == deliver_.capacity()) return;
  c.deliver_queued = true;
  deliver_.push_back(conn);  // within the reserved capacity: no allocation
}

void TcpService::Poll(uint64_t) {
  // DeliverPending may queue again (OnSendSpace inside it): swap out first.
  size_t n = deliver_.size();
  for (size_t i = 0; i < n; ++i) {
    const ConnId id = deliver_[i];
    Conn* c = Find(id);
    if (c == nullptr) continue;
    c->deliver_queued = false;
    stack_->DeliverPending(id, clock_->now_us);
    // Echo: the peer's FIN came while bytes waited; now they are all echoed.
    if (c->active && c->peer_fin && !c->unconsumed && !c->shut) {
      c->shut = true;
      stack_->Shutdown(id, clock_->now_us);
    }
  }
  deliver_.erase(deliver_.begin(), deliver_.begin() + static_cast<std::ptrdiff_t>(n));
}

void TcpService::Record(const Conn& c, bool complete, CloseReason reason) {
  TransferRecord& r = recent_[recent_next_];
  r.tuple = c.tuple;
  r.bytes = cfg_.type == config::ServiceType::kSource ? c.bytes_out : c.bytes_in;
  r.has_sha256 = cfg_.sha256;
  if (cfg_.sha256) {
    Sha256 copy = c.sha;
    r.sha256 = copy.Finish();
  }
  r.complete = complete;
  r.reason = reason;
  recent_next_ = (recent_next_ + 1) % kRecent;
  recent_count_ = std::min(recent_count_ + 1, kRecent);
}

const TransferRecord& TcpService::recent(size_t i) const {
  const size_t oldest = recent_count_ < kRecent ? 0 : recent_next_;
  return recent_[(oldest + i) % kRecent];
}

void TcpService::OnClosed(ConnId conn, CloseReason reason) {
  Conn* c = Find(conn);
  if (c == nullptr) return;
  ++counters_.closed;
  if (reason != CloseReason::kNormal) ++counters_.closed_abnormal;
  if (cfg_.type != config::ServiceType::kEcho) Record(*c, Complete(*c, reason), reason);
  c->active = false;
  --counters_.active;
}

}  // namespace iwarp::dataplane
