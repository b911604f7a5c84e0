// MPA error codes (RFC 5044 section 8, extended by RFC 6581).
//
// These are the values MPA reports to DDP and the Consumer, and the Error Code
// a TERMINATE carries when the error is in the LLP (MPA) layer. They go on the
// wire: never renumber.
#ifndef IWARPD_MPA_MPA_ERROR_H_
#define IWARPD_MPA_MPA_ERROR_H_

#include <cstdint>
#include <string_view>

namespace iwarp::mpa {

enum class MpaError : uint8_t {
  kNone = 0x00,
  // RFC 5044 8 code 1: TCP connection closed, terminated or lost.
  kTcpConnectionLost = 0x01,
  // RFC 5044 8 code 2: received CRC does not match the FPDU.
  kCrcError = 0x02,
  // RFC 5044 8 code 3: CRC valid, but a Marker and the ULPDU_Length fields
  // disagree on the start of an FPDU.
  kMarkerLengthMismatch = 0x03,
  // RFC 5044 8 code 4: invalid MPA Request or Reply Frame.
  kInvalidStartupFrame = 0x04,
  // RFC 6581 enhanced connection establishment.
  kLocalCatastrophic = 0x05,
  kInsufficientIrd = 0x06,
  kNoMatchingRtr = 0x07,
};

inline std::string_view MpaErrorName(MpaError e) {
  switch (e) {
    case MpaError::kNone: return "none";
    case MpaError::kTcpConnectionLost: return "tcp_connection_lost";
    case MpaError::kCrcError: return "crc_error";
    case MpaError::kMarkerLengthMismatch: return "marker_ulpdu_length_mismatch";
    case MpaError::kInvalidStartupFrame: return "invalid_request_reply_frame";
    case MpaError::kLocalCatastrophic: return "local_catastrophic";
    case MpaError::kInsufficientIrd: return "insufficient_ird";
    case MpaError::kNoMatchingRtr: return "no_matching_rtr";
  }
  return "invalid";
}

}  // namespace iwarp::mpa

#endif  // IWARPD_MPA_MPA_ERROR_H_
