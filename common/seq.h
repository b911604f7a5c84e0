// Wrap-safe sequence numbers (house style rule 7).
//
// TCP sequence numbers, SCTP TSNs, DDP MSNs and DDP-SSNs live in modular
// spaces; comparing them with < is a bug. SeqNum<T> compares by the sign of
// the modular difference (RFC 1982 serial number arithmetic).
#ifndef IWARPD_COMMON_SEQ_H_
#define IWARPD_COMMON_SEQ_H_

#include <compare>
#include <cstdint>
#include <type_traits>

namespace iwarp {

template <typename T>
class SeqNum {
  static_assert(std::is_unsigned_v<T>);
  using Signed = std::make_signed_t<T>;

 public:
  constexpr SeqNum() = default;
  constexpr explicit SeqNum(T v) : v_(v) {}

  constexpr T value() const { return v_; }

  // Modular distance from `from` to this (may be negative).
  constexpr Signed operator-(SeqNum from) const {
    return static_cast<Signed>(static_cast<T>(v_ - from.v_));
  }
  constexpr SeqNum operator+(T n) const { return SeqNum(static_cast<T>(v_ + n)); }
  constexpr SeqNum operator-(T n) const { return SeqNum(static_cast<T>(v_ - n)); }
  constexpr SeqNum& operator+=(T n) {
    v_ = static_cast<T>(v_ + n);
    return *this;
  }

  constexpr bool operator==(const SeqNum&) const = default;
  constexpr bool operator<(SeqNum o) const { return (*this - o) < 0; }
  constexpr bool operator<=(SeqNum o) const { return (*this - o) <= 0; }
  constexpr bool operator>(SeqNum o) const { return (*this - o) > 0; }
  constexpr bool operator>=(SeqNum o) const { return (*this - o) >= 0; }

  // True if lo <= this < hi in sequence space.
  constexpr bool InWindow(SeqNum lo, SeqNum hi) const {
    return static_cast<T>(v_ - lo.v_) < static_cast<T>(hi.v_ - lo.v_);
  }

 private:
  T v_ = 0;
};

using Seq32 = SeqNum<uint32_t>;  // TCP sequence, SCTP TSN, DDP MSN
using Seq16 = SeqNum<uint16_t>;  // DDP-SSN (RFC 5043)

}  // namespace iwarp

#endif  // IWARPD_COMMON_SEQ_H_
