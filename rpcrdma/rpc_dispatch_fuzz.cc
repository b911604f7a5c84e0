// Fuzz target `rpc_dispatch`: arbitrary bytes as one call to the ONC RPC
// dispatcher with the test program (and an AUTH_SYS-only program)
// registered, the call split into up to three pieces.
//
// Input: two bytes choosing the piece boundaries, then the call's stream.
// Beyond "does not crash", it traps when:
//  - a call ends in neither exactly one reply nor one drop;
//  - a reply does not decode as a reply header with the call's XID;
//  - an ECHO that succeeded does not return exactly the argument's bytes;
//  - the counters do not add up (calls = replies + drops).
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/rpc_server.h"
#include "rpcrdma/rpc_test_prog.h"
#include "rpcrdma/rpc_xdr.h"

namespace iwarp::rpc {
namespace {

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

class Conn : public ServerConnection {
 public:
  bool Reply(CallToken, const Message& reply) override {
    ++replies;
    bytes.clear();
    for (const Piece& p : reply) {
      bytes.insert(bytes.end(), p.bytes.begin(), p.bytes.end());
      if (p.ddp) bytes.insert(bytes.end(), XdrPadding(p.bytes.size()), 0);
    }
    Check(bytes.size() == reply.stream_length());
    return true;
  }
  void Drop(CallToken) override { ++drops; }
  uint32_t peer_ipv4() const override { return 0x7f000001; }
  uint16_t peer_port() const override { return 1; }

  int replies = 0;
  int drops = 0;
  std::vector<uint8_t> bytes;
};

RpcServer& Server() {
  static RpcServer* s = [] {
    auto* srv = new RpcServer(RpcServerOptions{.reply_buffer_bytes = 256});
    Check(RegisterTestProgram(*srv).ok());
    Check(srv->Register(kTestProg + 1, 3,
                        {[](CallContext& ctx) {
                          ctx.results.U32(ctx.args.U32());
                          return ProcStatus::kSuccess;
                        }},
                        ProgramOptions{.require_auth_sys = true})
              .ok());
    return srv;
  }();
  return *s;
}

void One(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const ByteSpan call(data + 2, size - 2);
  size_t a = data[0] % (call.size() + 1), b = data[1] % (call.size() + 1);
  if (a > b) std::swap(a, b);
  Message m;
  m.Add(Piece{call.first(a)});
  m.Add(Piece{call.subspan(a, b - a)});
  m.Add(Piece{call.subspan(b)});

  RpcServer& server = Server();
  const RpcServerCounters before = server.counters();
  Conn conn;
  server.OnCall(conn, 1, m);
  Check(conn.replies + conn.drops == 1);
  const RpcServerCounters& after = server.counters();
  Check(after.calls == before.calls + 1);
  uint64_t replies_before = before.rpc_mismatch, replies_after = after.rpc_mismatch;
  for (size_t i = 0; i < before.accepted.size(); ++i) {
    replies_before += before.accepted[i];
    replies_after += after.accepted[i];
  }
  for (size_t i = 0; i < before.auth_error.size(); ++i) {
    replies_before += before.auth_error[i];
    replies_after += after.auth_error[i];
  }
  Check(replies_after - replies_before == static_cast<uint64_t>(conn.replies));
  if (conn.replies == 0) return;

  Message rm;
  rm.Add(Piece{conn.bytes});
  XdrDecoder d(rm);
  ReplyHeader h;
  Check(DecodeReplyHeader(d, &h) == ReplyDecode::kOk);
  Check(h.xid == LoadBe32(call.data()));

  // A successful ECHO returns the argument exactly.
  XdrDecoder cd(m);
  CallHeader ch;
  if (DecodeCallHeader(cd, &ch) != CallDecode::kOk || ch.prog != kTestProg || ch.proc != kTestProcEcho) return;
  if (h.stat != ReplyStat::kAccepted || h.accept_stat != AcceptStat::kSuccess) return;
  static std::array<uint8_t, 1 << 16> scratch;
  const ByteSpan arg = cd.Opaque(kTestEchoMax, scratch);
  Check(cd.ok());
  const ByteSpan res = d.Opaque(kTestEchoMax);
  Check(d.ok() && d.remaining() == 0);
  Check(res.size() == arg.size() && std::equal(res.begin(), res.end(), arg.begin()));
}

}  // namespace
}  // namespace iwarp::rpc

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iwarp::rpc::One(data, size);
  return 0;
}
