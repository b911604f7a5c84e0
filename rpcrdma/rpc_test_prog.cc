#include "rpcrdma/rpc_test_prog.h"

#include <vector>

namespace iwarp::rpc {

absl::Status RegisterTestProgram(RpcServer& server) {
  std::vector<ProcHandler> procs(2);
  procs[kTestProcNull] = [](CallContext&) { return ProcStatus::kSuccess; };
  procs[kTestProcEcho] = [](CallContext& ctx) {
    const ByteSpan data = ctx.args.Opaque(kTestEchoMax);
    if (!ctx.args.ok()) return ProcStatus::kGarbageArgs;
    // The result is the argument's own bytes: when they came in registered
    // memory (an RPC-over-RDMA Read chunk), the reply writes them from
    // there; the call's buffers stay until the reply is done.
    ctx.results.DdpOpaque(data, ctx.args.last_opaque_stag());
    return ProcStatus::kSuccess;
  };
  return server.Register(kTestProg, kTestVers, std::move(procs));
}

bool EncodeTestCall(uint32_t xid, uint32_t proc, ByteSpan data, MutableByteSpan buf, Message* out,
                    const OpaqueAuth* cred, uint32_t stag) {
  out->Clear();
  CallHeader h;
  h.xid = xid;
  h.prog = kTestProg;
  h.vers = kTestVers;
  h.proc = proc;
  if (cred != nullptr) h.cred = *cred;
  XdrEncoder e(buf);
  EncodeCallHeader(e, h);
  if (proc == kTestProcEcho) e.DdpOpaque(data, stag);
  return e.Finish(out);
}

TestReply DecodeTestReply(const ReplyView& reply, uint32_t proc, MutableByteSpan scratch) {
  TestReply r;
  XdrDecoder d(reply);
  r.decode = DecodeReplyHeader(d, &r.header);
  if (r.decode != ReplyDecode::kOk || r.header.stat != ReplyStat::kAccepted ||
      r.header.accept_stat != AcceptStat::kSuccess) {
    return r;
  }
  if (proc == kTestProcEcho) r.data = d.DdpOpaque(kTestEchoMax, scratch);
  r.results_ok = d.ok() && d.remaining() == 0;
  return r;
}

}  // namespace iwarp::rpc
