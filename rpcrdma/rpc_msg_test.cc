#include "rpcrdma/rpc_msg.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::rpc {
namespace {

std::vector<uint8_t> Words(std::initializer_list<uint32_t> ws) {
  std::vector<uint8_t> out;
  for (uint32_t w : ws) {
    uint8_t b[4];
    StoreBe32(b, w);
    out.insert(out.end(), b, b + 4);
  }
  return out;
}

std::vector<uint8_t> Encoded(const std::function<void(XdrEncoder&)>& f) {
  std::array<uint8_t, 2048> buf{};
  XdrEncoder e(buf);
  f(e);
  EXPECT_TRUE(e.ok());
  return std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(e.buffer_used()));
}

Message One(const std::vector<uint8_t>& b) {
  Message m;
  m.Add(Piece{b});
  return m;
}

// RFC 5531 9: struct rpc_msg { xid; union { call_body } } with
// call_body { rpcvers; prog; vers; proc; opaque_auth cred; opaque_auth verf }.
TEST(RpcMsgTest, CallHeaderAuthNoneBytes) {
  CallHeader h;
  h.xid = 0x11223344;
  h.prog = 100003;
  h.vers = 3;
  h.proc = 6;
  const auto got = Encoded([&](XdrEncoder& e) { EncodeCallHeader(e, h); });
  EXPECT_EQ(got, Words({0x11223344, 0, 2, 100003, 3, 6, 0, 0, 0, 0}));
  const Message m = One(got);
  XdrDecoder d(m);
  CallHeader back;
  ASSERT_EQ(DecodeCallHeader(d, &back), CallDecode::kOk);
  EXPECT_EQ(back.xid, h.xid);
  EXPECT_EQ(back.prog, 100003u);
  EXPECT_EQ(back.vers, 3u);
  EXPECT_EQ(back.proc, 6u);
  EXPECT_EQ(back.cred.flavor, 0u);
  EXPECT_EQ(back.cred.length, 0u);
  EXPECT_EQ(d.remaining(), 0u);
}

// RFC 5531 A.1: authsys_parms { stamp; string machinename<255>; uid; gid; gids<16> }.
TEST(RpcMsgTest, AuthSysCredentialBytes) {
  AuthSys a;
  a.stamp = 0x01020304;
  ASSERT_TRUE(a.SetName("host5"));
  a.uid = 1000;
  a.gid = 100;
  a.gid_count = 2;
  a.gids[0] = 100;
  a.gids[1] = 200;
  OpaqueAuth cred;
  ASSERT_TRUE(EncodeAuthSys(a, &cred));
  EXPECT_EQ(cred.flavor, 1u);
  std::vector<uint8_t> want = Words({0x01020304, 5});
  for (char c : std::string("host5")) want.push_back(static_cast<uint8_t>(c));
  want.insert(want.end(), 3, 0);
  const auto rest = Words({1000, 100, 2, 100, 200});
  want.insert(want.end(), rest.begin(), rest.end());
  EXPECT_EQ(std::vector<uint8_t>(cred.bytes().begin(), cred.bytes().end()), want);

  CallHeader h;
  h.xid = 9;
  h.prog = 0x20494950;
  h.vers = 1;
  h.proc = 1;
  h.cred = cred;
  const auto got = Encoded([&](XdrEncoder& e) { EncodeCallHeader(e, h); });
  std::vector<uint8_t> call = Words({9, 0, 2, 0x20494950, 1, 1, 1, static_cast<uint32_t>(want.size())});
  call.insert(call.end(), want.begin(), want.end());
  const auto verf = Words({0, 0});
  call.insert(call.end(), verf.begin(), verf.end());
  EXPECT_EQ(got, call);

  AuthSys back;
  ASSERT_TRUE(DecodeAuthSys(cred.bytes(), &back));
  EXPECT_EQ(back.stamp, a.stamp);
  EXPECT_EQ(back.name(), "host5");
  EXPECT_EQ(back.uid, 1000u);
  EXPECT_EQ(back.gid_count, 2u);
  EXPECT_EQ(back.gids[1], 200u);
}

TEST(RpcMsgTest, AuthSysBoundsChecked) {
  // machinename of 256
  std::vector<uint8_t> b = Words({1, 256});
  b.insert(b.end(), 256, 'a');
  auto tail = Words({0, 0, 0});
  b.insert(b.end(), tail.begin(), tail.end());
  AuthSys a;
  EXPECT_FALSE(DecodeAuthSys(b, &a));
  // 17 gids
  b = Words({1, 0, 0, 0, 17});
  for (int i = 0; i < 17; ++i) {
    auto g = Words({static_cast<uint32_t>(i)});
    b.insert(b.end(), g.begin(), g.end());
  }
  EXPECT_FALSE(DecodeAuthSys(b, &a));
  // 16 gids is fine
  b = Words({1, 0, 0, 0, 16});
  for (int i = 0; i < 16; ++i) {
    auto g = Words({static_cast<uint32_t>(i)});
    b.insert(b.end(), g.begin(), g.end());
  }
  EXPECT_TRUE(DecodeAuthSys(b, &a));
  EXPECT_EQ(a.gids[15], 15u);
  // trailing bytes after the gids
  auto extra = Words({0});
  b.insert(b.end(), extra.begin(), extra.end());
  EXPECT_FALSE(DecodeAuthSys(b, &a));
  // truncated
  b = Words({1, 0, 0});
  EXPECT_FALSE(DecodeAuthSys(b, &a));
}

TEST(RpcMsgTest, CallHeaderErrors) {
  CallHeader h;
  {
    const auto b = Words({1, 0});
    const Message m = One(b);
    XdrDecoder d(m);
    EXPECT_EQ(DecodeCallHeader(d, &h), CallDecode::kUndecodable);
  }
  {
    const auto b = Words({1, 1, 2, 3, 4, 5, 0, 0, 0, 0});
    const Message m = One(b);
    XdrDecoder d(m);
    EXPECT_EQ(DecodeCallHeader(d, &h), CallDecode::kNotCall);
  }
  {
    const auto b = Words({7, 0, 3});
    const Message m = One(b);
    XdrDecoder d(m);
    EXPECT_EQ(DecodeCallHeader(d, &h), CallDecode::kRpcMismatch);
    EXPECT_EQ(h.xid, 7u);
  }
  {
    auto b = Words({7, 0, 2, 1, 1, 1, 1, 401});
    b.insert(b.end(), 404, 0);
    const Message m = One(b);
    XdrDecoder d(m);
    EXPECT_EQ(DecodeCallHeader(d, &h), CallDecode::kBadCred);
  }
  {
    auto b = Words({7, 0, 2, 1, 1, 1, 0, 0, 0, 401});
    b.insert(b.end(), 404, 0);
    const Message m = One(b);
    XdrDecoder d(m);
    EXPECT_EQ(DecodeCallHeader(d, &h), CallDecode::kBadVerf);
  }
  {
    // a 400-byte credential is the largest allowed
    auto b = Words({7, 0, 2, 1, 1, 1, 6, 400});
    b.insert(b.end(), 400, 0x5a);
    auto v = Words({0, 0});
    b.insert(b.end(), v.begin(), v.end());
    const Message m = One(b);
    XdrDecoder d(m);
    EXPECT_EQ(DecodeCallHeader(d, &h), CallDecode::kOk);
    EXPECT_EQ(h.cred.flavor, 6u);
    EXPECT_EQ(h.cred.length, 400u);
    EXPECT_EQ(h.cred.body[399], 0x5a);
  }
  {
    // cut inside the verifier
    const auto b = Words({7, 0, 2, 1, 1, 1, 0, 0, 0});
    const Message m = One(b);
    XdrDecoder d(m);
    EXPECT_EQ(DecodeCallHeader(d, &h), CallDecode::kUndecodable);
  }
}

// RFC 5531 9: reply_body / accepted_reply / rejected_reply.
TEST(RpcMsgTest, ReplyHeaderBytesEveryForm) {
  struct Case {
    ReplyHeader h;
    std::vector<uint8_t> want;
  };
  const Case cases[] = {
      {AcceptedReply(5, AcceptStat::kSuccess), Words({5, 1, 0, 0, 0, 0})},
      {AcceptedReply(5, AcceptStat::kProgUnavail), Words({5, 1, 0, 0, 0, 1})},
      {ProgMismatchReply(5, 2, 4), Words({5, 1, 0, 0, 0, 2, 2, 4})},
      {AcceptedReply(5, AcceptStat::kProcUnavail), Words({5, 1, 0, 0, 0, 3})},
      {AcceptedReply(5, AcceptStat::kGarbageArgs), Words({5, 1, 0, 0, 0, 4})},
      {AcceptedReply(5, AcceptStat::kSystemErr), Words({5, 1, 0, 0, 0, 5})},
      {RpcMismatchReply(5, 2, 2), Words({5, 1, 1, 0, 2, 2})},
      {AuthErrorReply(5, AuthStat::kBadCred), Words({5, 1, 1, 1, 1})},
      {AuthErrorReply(5, AuthStat::kTooWeak), Words({5, 1, 1, 1, 5})},
  };
  for (const Case& c : cases) {
    const auto got = Encoded([&](XdrEncoder& e) { EncodeReplyHeader(e, c.h); });
    EXPECT_EQ(got, c.want);
    const Message m = One(got);
    XdrDecoder d(m);
    ReplyHeader back;
    ASSERT_EQ(DecodeReplyHeader(d, &back), ReplyDecode::kOk);
    EXPECT_EQ(d.remaining(), 0u);
    const auto again = Encoded([&](XdrEncoder& e) { EncodeReplyHeader(e, back); });
    EXPECT_EQ(again, c.want);
  }
}

TEST(RpcMsgTest, ReplyHeaderErrors) {
  ReplyHeader h;
  auto decode = [&](std::vector<uint8_t> b) {
    const Message m = One(b);
    XdrDecoder d(m);
    return DecodeReplyHeader(d, &h);
  };
  EXPECT_EQ(decode(Words({5, 0, 0})), ReplyDecode::kNotReply);
  EXPECT_EQ(decode(Words({5, 1, 2})), ReplyDecode::kBadStat);
  EXPECT_EQ(decode(Words({5, 1, 0, 0, 0, 6})), ReplyDecode::kBadStat);
  EXPECT_EQ(decode(Words({5, 1, 1, 2})), ReplyDecode::kBadStat);
  EXPECT_EQ(decode(Words({5, 1, 1, 1, 8})), ReplyDecode::kBadStat);
  EXPECT_EQ(decode(Words({5, 1, 0, 0, 401})), ReplyDecode::kBadVerf);
  EXPECT_EQ(decode(Words({5, 1, 0, 0, 0, 2, 1})), ReplyDecode::kTruncated);
  EXPECT_EQ(decode(Words({5, 1, 1, 0, 2})), ReplyDecode::kTruncated);
  EXPECT_EQ(decode(Words({5})), ReplyDecode::kTruncated);
}

}  // namespace
}  // namespace iwarp::rpc
