// Listener: the passive side of MPA over TCP; binds pooled QPs to the
// connections its MpaGate lets through.
#include "iwarp/qp.h"

#include <string_view>

namespace iwarp::engine {

absl::StatusOr<std::unique_ptr<Listener>> Listener::Create(tcp::TcpStack& stack,
                                                          uint32_t pool_capacity,
                                                          const MpaGateOptions& gate) {
  std::unique_ptr<Listener> l(new Listener(stack, pool_capacity));
  absl::StatusOr<std::unique_ptr<MpaGate>> g = MpaGate::Create(gate, stack, *l);
  if (!g.ok()) return g.status();
  l->gate_ = std::move(*g);
  return l;
}

Listener::Listener(tcp::TcpStack& stack, uint32_t pool_capacity)
    : stack_(stack), pool_(new Qp*[pool_capacity == 0 ? 1 : pool_capacity]),
      cap_(pool_capacity == 0 ? 1 : pool_capacity) {}

bool Listener::AddQp(Qp* qp) {
  if (count_ == cap_ || qp == nullptr) return false;
  pool_[(head_ + count_) % cap_] = qp;
  ++count_;
  return true;
}

GateDecision Listener::OnMpaRequest(tcp::ConnId conn, const tcp::FourTuple&,
                                    const mpa::StartupFrame&, ByteSpan frame) {
  while (count_ > 0) {
    Qp* qp = pool_[head_];
    head_ = (head_ + 1) % cap_;
    --count_;
    if (!qp->AttachPassive(conn)) continue;
    stack_.SetUser(conn, *qp);
    // The QP sees the Request as if it had just arrived and answers it.
    qp->OnData(conn, 0, frame);
    return GateDecision{.taken = true};
  }
  static constexpr std::string_view kWhy = "iwarpd: no QP free on this listener";
  return GateDecision{.taken = false,
                      .private_data = ByteSpan(reinterpret_cast<const uint8_t*>(kWhy.data()),
                                               kWhy.size())};
}

}  // namespace iwarp::engine
