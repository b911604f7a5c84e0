// Work request and completion code points, declared once for the engine
// (iwarp/qp.h), the shared-memory rings between applications and the daemon
// (appif/shm_layout.h, one byte each) and libiwarp's C API (iwarp.h's
// IWARP_WR_* / IWARP_WC_* values, checked against these by static_assert in
// libiwarp/iwarp.cc). The values are ABI: append, never renumber.
#ifndef IWARPD_COMMON_VERBS_H_
#define IWARPD_COMMON_VERBS_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace iwarp::verbs {

// X(enumerator, value, "name")
#define IWARP_WR_OPCODES(X)                       \
  X(kSend, 0, "send")                             \
  X(kSendInvalidate, 1, "send_invalidate")        \
  X(kSendSe, 2, "send_se")                        \
  X(kSendSeInvalidate, 3, "send_se_invalidate")   \
  X(kRdmaWrite, 4, "rdma_write")                  \
  X(kRdmaRead, 5, "rdma_read")

#define IWARP_WC_OPCODES(X)   \
  X(kSend, 0, "send")         \
  X(kRdmaWrite, 1, "rdma_write") \
  X(kRdmaRead, 2, "rdma_read") \
  X(kRecv, 3, "recv")

#define IWARP_WC_STATUSES(X)                                                              \
  X(kSuccess, 0, "success")                                                               \
  X(kLocalLength, 1, "local_length")                 /* SG list or message length does not fit */ \
  X(kLocalProtection, 2, "local_protection")         /* lkey invalid, other PD, out of bounds or no local write */ \
  X(kLocalQpOperation, 3, "local_qp_operation")      /* malformed work request (opcode, SGE count) */ \
  X(kFlushed, 4, "flushed")                          /* QP left the connected state before it ran */ \
  X(kRemoteAccess, 5, "remote_access")               /* peer refused STag / bounds / rights (Terminate) */ \
  X(kRemoteInvalidRequest, 6, "remote_invalid_request") /* peer had no receive buffer / message too long */ \
  X(kRemoteOperation, 7, "remote_operation")         /* peer could not invalidate or failed otherwise */ \
  X(kFatal, 8, "fatal")                              /* the daemon failed the QP (daemon or peer gone) */

#define IWARP_VERBS_ENUMERATOR(e, v, n) e = v,
enum class WrOpcode : uint8_t { IWARP_WR_OPCODES(IWARP_VERBS_ENUMERATOR) };
enum class WcOpcode : uint8_t { IWARP_WC_OPCODES(IWARP_VERBS_ENUMERATOR) };
enum class WcStatus : uint8_t { IWARP_WC_STATUSES(IWARP_VERBS_ENUMERATOR) };
#undef IWARP_VERBS_ENUMERATOR

#define IWARP_VERBS_COUNT(e, v, n) +1
inline constexpr uint8_t kNumWrOpcodes = 0 IWARP_WR_OPCODES(IWARP_VERBS_COUNT);
inline constexpr uint8_t kNumWcOpcodes = 0 IWARP_WC_OPCODES(IWARP_VERBS_COUNT);
inline constexpr uint8_t kNumWcStatuses = 0 IWARP_WC_STATUSES(IWARP_VERBS_COUNT);
#undef IWARP_VERBS_COUNT

// Stable snake_case names ("invalid" for a value outside the enum).
#define IWARP_VERBS_NAME_CASE(e, v, n) case T::e: return n;
inline std::string_view WrOpcodeName(WrOpcode op) {
  using T = WrOpcode;
  switch (op) { IWARP_WR_OPCODES(IWARP_VERBS_NAME_CASE) }
  return "invalid";
}
inline std::string_view WcOpcodeName(WcOpcode op) {
  using T = WcOpcode;
  switch (op) { IWARP_WC_OPCODES(IWARP_VERBS_NAME_CASE) }
  return "invalid";
}
inline std::string_view WcStatusName(WcStatus s) {
  using T = WcStatus;
  switch (s) { IWARP_WC_STATUSES(IWARP_VERBS_NAME_CASE) }
  return "invalid";
}
#undef IWARP_VERBS_NAME_CASE

// Checked conversions from a ring byte an application wrote (values are
// dense from 0, so the count bounds them).
inline std::optional<WrOpcode> WrOpcodeFromByte(uint8_t b) {
  if (b >= kNumWrOpcodes) return std::nullopt;
  return static_cast<WrOpcode>(b);
}
inline std::optional<WcStatus> WcStatusFromByte(uint8_t b) {
  if (b >= kNumWcStatuses) return std::nullopt;
  return static_cast<WcStatus>(b);
}

}  // namespace iwarp::verbs

#endif  // IWARPD_COMMON_VERBS_H_
