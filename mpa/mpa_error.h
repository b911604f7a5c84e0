// MPA error codes (RFC 5044 section 8, extended by RFC 6581).
//
// These are the values MPA reports to DDP and the Consumer, and the Error Code
// a TERMINATE carries when the error is in the LLP (MPA) layer. They go on the
// wire: never renumber.
#ifndef IWARPD_MPA_MPA_ERROR_H_
#define IWARPD_MPA_MPA_ERROR_H_

#include <cstdint>
#include <string_view>

#include "common/enum_names.h"

namespace iwarp::mpa {

// X(enumerator, value, "name")
#define IWARP_MPA_ERRORS(X)                                                     \
  X(kNone, 0x00, "none")                                                        \
  /* RFC 5044 8 code 1: TCP connection closed, terminated or lost. */           \
  X(kTcpConnectionLost, 0x01, "tcp_connection_lost")                            \
  /* RFC 5044 8 code 2: received CRC does not match the FPDU. */                \
  X(kCrcError, 0x02, "crc_error")                                               \
  /* RFC 5044 8 code 3: CRC valid, but a Marker and the ULPDU_Length fields */  \
  /* disagree on the start of an FPDU. */                                       \
  X(kMarkerLengthMismatch, 0x03, "marker_ulpdu_length_mismatch")                \
  /* RFC 5044 8 code 4: invalid MPA Request or Reply Frame. */                  \
  X(kInvalidStartupFrame, 0x04, "invalid_request_reply_frame")                  \
  /* RFC 6581 enhanced connection establishment. */                             \
  X(kLocalCatastrophic, 0x05, "local_catastrophic")                             \
  X(kInsufficientIrd, 0x06, "insufficient_ird")                                 \
  X(kNoMatchingRtr, 0x07, "no_matching_rtr")
enum class MpaError : uint8_t { IWARP_MPA_ERRORS(IWARP_ENUMERATOR_VALUE) };

inline std::string_view MpaErrorName(MpaError e) {
  using Enum = MpaError;
  switch (e) { IWARP_MPA_ERRORS(IWARP_ENUM_NAME_CASE_VALUE) }
  return "invalid";
}

}  // namespace iwarp::mpa

#endif  // IWARPD_MPA_MPA_ERROR_H_
