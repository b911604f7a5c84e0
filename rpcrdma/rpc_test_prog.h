// The RPC test program: what iwarp-rpc-perf and the interop tests run over
// either transport (TCP record marking, RPC-over-RDMA).
//
//   program IWARP_RPC_TEST_PROG {            /* 0x20494950, user range */
//     version IWARP_RPC_TEST_VERS {          /* 1 */
//       void   NULL(void) = 0;
//       opaque ECHO(opaque data<1048576>) = 1;   /* argument and result DDP-eligible */
//     } = 1;
//   } = 0x20494950;
#ifndef IWARPD_RPCRDMA_RPC_TEST_PROG_H_
#define IWARPD_RPCRDMA_RPC_TEST_PROG_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "common/bytes.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/rpc_server.h"
#include "rpcrdma/rpc_transport.h"
#include "rpcrdma/rpc_xdr.h"

namespace iwarp::rpc {

inline constexpr uint32_t kTestProg = 0x20494950;
inline constexpr uint32_t kTestVers = 1;
inline constexpr uint32_t kTestProcNull = 0;
inline constexpr uint32_t kTestProcEcho = 1;
inline constexpr uint32_t kTestEchoMax = 1u << 20;

// Registers NULL and ECHO. ECHO answers with the argument's bytes as a DDP
// piece referencing the call (no copy; the transport writes or moves it).
absl::Status RegisterTestProgram(RpcServer& server);

// Encodes a call of the test program: header (AUTH_NONE unless `cred`) into
// `buf`, then for ECHO the length word and `data` as a DDP piece. `out` is
// cleared first. `buf` needs kMaxCallHeaderBytes + 4.
bool EncodeTestCall(uint32_t xid, uint32_t proc, ByteSpan data, MutableByteSpan buf, Message* out,
                    const OpaqueAuth* cred = nullptr, uint32_t stag = 0);

struct TestReply {
  ReplyDecode decode = ReplyDecode::kTruncated;
  ReplyHeader header;
  bool results_ok = false;  // SUCCESS and the results decoded
  ByteSpan data;            // ECHO's result
};

// Decodes a reply of the test program's `proc`. ECHO's result is a span of
// the reply (or of its DDP result, or of `scratch` when it spans pieces).
TestReply DecodeTestReply(const ReplyView& reply, uint32_t proc, MutableByteSpan scratch = {});

}  // namespace iwarp::rpc

#endif  // IWARPD_RPCRDMA_RPC_TEST_PROG_H_
