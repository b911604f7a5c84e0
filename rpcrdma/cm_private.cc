#include "rpcrdma/cm_private.h"

namespace iwarp::rpcrdma {
namespace {

// Byte offsets of the RFC 8797 fields.
constexpr size_t kFormatIdentifier = 0;
constexpr size_t kVersion = 4;
constexpr size_t kFlags = 5;
constexpr size_t kSendSize = 6;
constexpr size_t kReceiveSize = 7;

uint32_t DecodeSize(uint8_t v) { return (uint32_t{v} + 1) * kCmSizeUnit; }
uint8_t EncodeSize(uint32_t size) { return static_cast<uint8_t>(size / kCmSizeUnit - 1); }
bool SizeInRange(uint32_t size) { return size >= kCmMinSize && size <= kCmMaxSize; }

}  // namespace

CmPrivateStatus DecodeCmPrivateData(ByteSpan data, CmPrivateData* out) {
  if (data.size() < kCmPrivateDataSize) return CmPrivateStatus::kTruncated;
  const uint8_t* p = data.data();
  if (LoadBe32(p + kFormatIdentifier) != kCmFormatIdentifier) return CmPrivateStatus::kNotRpcRdma;
  if (p[kVersion] != kCmVersion) return CmPrivateStatus::kBadVersion;
  out->remote_invalidation = (p[kFlags] & kCmFlagRemoteInvalidation) != 0;
  out->send_size = DecodeSize(p[kSendSize]);
  out->receive_size = DecodeSize(p[kReceiveSize]);
  return CmPrivateStatus::kOk;
}

CmPrivateStatus EncodeCmPrivateData(const CmPrivateData& pd, MutableByteSpan out) {
  if (!SizeInRange(pd.send_size) || !SizeInRange(pd.receive_size)) {
    return CmPrivateStatus::kSizeOutOfRange;
  }
  if (out.size() < kCmPrivateDataSize) return CmPrivateStatus::kBufferTooSmall;
  uint8_t* p = out.data();
  StoreBe32(p + kFormatIdentifier, kCmFormatIdentifier);
  p[kVersion] = kCmVersion;
  p[kFlags] = pd.remote_invalidation ? kCmFlagRemoteInvalidation : 0;
  p[kSendSize] = EncodeSize(pd.send_size);
  p[kReceiveSize] = EncodeSize(pd.receive_size);
  return CmPrivateStatus::kOk;
}

}  // namespace iwarp::rpcrdma
