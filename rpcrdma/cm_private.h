// RDMA-CM connection private data for RPC-over-RDMA version 1 (RFC 8797).
//
// Eight bytes carried in the connect request and accept (for iWARP: in the
// MPA private data), laid out as deployed by Linux xprtrdma / svcrdma:
//   bytes 0..3  Format Identifier, big-endian 0xf6ab0e18
//   byte  4     Version (1)
//   byte  5     Flags: bit 0x01 = Remote Invalidation; other bits reserved
//   byte  6     Send Size: largest RDMA Send the sender of this data will send
//   byte  7     Receive Size: largest RDMA Send the sender of this data can receive
// Sizes are encoded as (size / 1024) - 1, so one byte covers 1 KiB .. 256 KiB.
// A peer whose private data is absent or not in this format uses the RFC 8166
// default inline threshold of 1024 bytes in both directions.
#ifndef IWARPD_RPCRDMA_CM_PRIVATE_H_
#define IWARPD_RPCRDMA_CM_PRIVATE_H_

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"

namespace iwarp::rpcrdma {

inline constexpr uint32_t kCmFormatIdentifier = 0xf6ab0e18;
inline constexpr uint8_t kCmVersion = 1;
inline constexpr size_t kCmPrivateDataSize = 8;
inline constexpr uint8_t kCmFlagRemoteInvalidation = 0x01;
inline constexpr uint32_t kCmSizeUnit = 1024;
inline constexpr uint32_t kCmMinSize = kCmSizeUnit;        // encoded 0
inline constexpr uint32_t kCmMaxSize = 256 * kCmSizeUnit;  // encoded 255
// RFC 8166 3.3.2: inline threshold when nothing was exchanged.
inline constexpr uint32_t kDefaultInlineThreshold = 1024;

struct CmPrivateData {
  // The sender of this data accepts Send With Invalidate for the STags it
  // advertises (RFC 8797 remote invalidation).
  bool remote_invalidation = false;
  uint32_t send_size = kDefaultInlineThreshold;     // bytes, multiple of 1024
  uint32_t receive_size = kDefaultInlineThreshold;  // bytes, multiple of 1024
  bool operator==(const CmPrivateData&) const = default;
};

enum class CmPrivateStatus : uint8_t {
  kOk,
  kTruncated,       // fewer than 8 bytes
  kNotRpcRdma,      // another Format Identifier: treat as absent
  kBadVersion,      // unknown Version: treat as absent
  kSizeOutOfRange,  // encode only: a size below 1 KiB or above 256 KiB
  kBufferTooSmall,  // encode only
};

// Decodes the first 8 bytes of `data`; trailing bytes (transport padding) are
// ignored, as are the reserved flag bits. Decoded sizes are 1 KiB .. 256 KiB.
CmPrivateStatus DecodeCmPrivateData(ByteSpan data, CmPrivateData* out);

// Writes 8 bytes. Sizes are rounded down to a multiple of 1024 (advertising
// less than the buffers hold is always safe); sizes outside 1 KiB .. 256 KiB
// are refused. Reserved flag bits are sent as zero.
CmPrivateStatus EncodeCmPrivateData(const CmPrivateData& pd, MutableByteSpan out);

}  // namespace iwarp::rpcrdma

#endif  // IWARPD_RPCRDMA_CM_PRIVATE_H_
