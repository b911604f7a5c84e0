#include "sctp/sctp_test_link.h"

#include <time.h>

#include <cstring>

namespace iwarp::sctp::testing {

namespace {
uint64_t MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}
}  // namespace

MemLink::MemLink(UsrsctpHost& host) : host_(host), origin_ms_(MonotonicMs()) {}

uint64_t MemLink::now_ms() const { return MonotonicMs() - origin_ms_; }

void MemLink::Join(void* a, void* b) {
  peer_[a] = b;
  peer_[b] = a;
}

void MemLink::set_impairment(const Impairment& i) {
  imp_ = i;
  rng_.seed(i.seed);
}

bool MemLink::Chance(double p) {
  if (p <= 0) return false;
  return std::uniform_real_distribution<double>(0, 1)(rng_) < p;
}

void MemLink::Transmit(void* conn, ByteSpan packet) {
  if (tap_) tap_(conn, packet);
  auto it = peer_.find(conn);
  if (it == peer_.end()) {
    ++dropped_;
    return;
  }
  if (Chance(imp_.loss)) {
    ++dropped_;
    return;
  }
  Packet p{it->second, std::vector<uint8_t>(packet.begin(), packet.end())};
  if (Chance(imp_.corrupt) && !p.bytes.empty()) {
    const size_t at = std::uniform_int_distribution<size_t>(0, p.bytes.size() - 1)(rng_);
    p.bytes[at] ^= static_cast<uint8_t>(1u << std::uniform_int_distribution<int>(0, 7)(rng_));
    ++corrupted_;
  }
  if (Chance(imp_.duplicate)) {
    wire_.push_back(p);
    ++duplicated_;
  }
  if (Chance(imp_.reorder)) {
    held_.push_back(std::move(p));
    ++reordered_;
    return;
  }
  wire_.push_back(std::move(p));
}

void MemLink::Step() {
  host_.Poll(MonotonicMs());
  host_.DrainOutbound(*this);
  std::vector<Packet> batch;
  batch.swap(wire_);
  // Held-back packets go after this step's packets: they overtake nothing.
  for (Packet& p : held_) batch.push_back(std::move(p));
  held_.clear();
  for (Packet& p : batch) {
    ++delivered_;
    if (delivery_tap_) delivery_tap_(p.to, ByteSpan(p.bytes));
    host_.Input(p.to, ByteSpan(p.bytes));
  }
  if (batch.empty()) {
    const timespec pause{0, 100 * 1000};  // 100 us: idle, waiting for a timer
    nanosleep(&pause, nullptr);
  }
}

RingLink::RingLink(UsrsctpHost& host, void* a, void* b)
    : host_(host), a_(a), b_(b), slots_(kSlots) {}

void RingLink::Transmit(void* conn, ByteSpan packet) {
  if (count_ == kSlots || packet.size() > kSlotBytes) return;  // lost: SCTP recovers
  Slot& s = slots_[(head_ + count_++) % kSlots];
  s.to = conn == a_ ? b_ : a_;
  s.len = packet.size();
  std::memcpy(s.bytes, packet.data(), packet.size());
}

void RingLink::Step() {
  host_.Poll(MonotonicMs());
  host_.DrainOutbound(*this);
  for (size_t n = count_; n > 0; --n) {
    Slot& s = slots_[head_];
    head_ = (head_ + 1) % kSlots;
    --count_;
    host_.Input(s.to, ByteSpan(s.bytes, s.len));
  }
}

}  // namespace iwarp::sctp::testing
