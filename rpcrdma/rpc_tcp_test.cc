#include "rpcrdma/rpc_tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "gtest/gtest.h"
#include "rpcrdma/rpc_server.h"
#include "rpcrdma/rpc_test_prog.h"

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

std::vector<uint8_t> Fragment(const std::vector<uint8_t>& body, bool last) {
  auto out = Words({(last ? kLastFragmentBit : 0u) | static_cast<uint32_t>(body.size())});
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

TEST(RecordMarkingTest, FragmentsMakeOneRecord) {
  RecordReassembler r(1024);
  std::vector<std::vector<uint8_t>> got;
  auto in = Fragment({1, 2, 3}, false);
  auto f2 = Fragment({}, false);
  auto f3 = Fragment({4, 5}, true);
  auto f4 = Fragment({9}, true);
  in.insert(in.end(), f2.begin(), f2.end());
  in.insert(in.end(), f3.begin(), f3.end());
  in.insert(in.end(), f4.begin(), f4.end());
  EXPECT_EQ(r.Feed(in, [&](std::vector<uint8_t>& rec) { got.push_back(rec); }), RecordError::kOk);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(got[1], (std::vector<uint8_t>{9}));
  EXPECT_EQ(r.fragments(), 4u);
}

TEST(RecordMarkingTest, EverySplitOfTheStreamGivesTheSameRecords) {
  auto in = Fragment({1, 2, 3, 4, 5, 6, 7}, false);
  auto f2 = Fragment({8, 9}, true);
  in.insert(in.end(), f2.begin(), f2.end());
  for (size_t cut = 0; cut <= in.size(); ++cut) {
    RecordReassembler r(64);
    std::vector<std::vector<uint8_t>> got;
    auto sink = [&](std::vector<uint8_t>& rec) { got.push_back(rec); };
    r.Feed(ByteSpan(in).first(cut), sink);
    r.Feed(ByteSpan(in).subspan(cut), sink);
    ASSERT_EQ(got.size(), 1u) << "cut " << cut;
    EXPECT_EQ(got[0], (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }
  // One byte at a time.
  RecordReassembler r(64);
  int records = 0;
  for (uint8_t b : in) r.Feed(ByteSpan(&b, 1), [&](std::vector<uint8_t>& rec) { records += rec.size() == 9; });
  EXPECT_EQ(records, 1);
}

TEST(RecordMarkingTest, OversizeRecordFailsForGood) {
  RecordReassembler r(8);
  int records = 0;
  auto sink = [&](std::vector<uint8_t>&) { ++records; };
  EXPECT_EQ(r.Feed(Fragment({1, 2, 3, 4, 5, 6, 7, 8}, true), sink), RecordError::kOk);  // exactly the max
  auto in = Fragment({1, 2, 3, 4, 5}, false);
  auto f2 = Fragment({6, 7, 8, 9}, true);  // 9 in total
  in.insert(in.end(), f2.begin(), f2.end());
  EXPECT_EQ(r.Feed(in, sink), RecordError::kOversize);
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.Feed(Fragment({1}, true), sink), RecordError::kOversize);
  EXPECT_EQ(records, 1);
  // A header claiming 2^31-1 bytes is refused before anything is reserved.
  RecordReassembler big(1 << 20);
  EXPECT_EQ(big.Feed(Words({0xffffffff}), sink), RecordError::kOversize);
}

TEST(RecordMarkingTest, IovecsCarryPadsAndResume) {
  const std::array<uint8_t, 8> head = {0, 0, 0, 1, 0, 0, 0, 3};
  const std::array<uint8_t, 3> body = {7, 8, 9};
  Message m;
  m.Add(Piece{head});
  m.Add(Piece{body, true});
  uint8_t hdr[4];
  ASSERT_TRUE(RecordHeader(m, hdr));
  EXPECT_EQ(LoadBe32(hdr), kLastFragmentBit | 12u);
  iovec iov[kMaxRecordIov];
  auto flat = [&](size_t n) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i < n; ++i) {
      const auto* p = static_cast<const uint8_t*>(iov[i].iov_base);
      out.insert(out.end(), p, p + iov[i].iov_len);
    }
    return out;
  };
  const auto all = flat(RecordIov(hdr, m, 0, iov));
  EXPECT_EQ(all, (std::vector<uint8_t>{0x80, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 3, 7, 8, 9, 0}));
  for (size_t skip = 0; skip <= all.size(); ++skip) {
    EXPECT_EQ(flat(RecordIov(hdr, m, skip, iov)), std::vector<uint8_t>(all.begin() + static_cast<long>(skip), all.end()));
  }
}

// A server and a client on 127.0.0.1, driven from this thread.
class TcpLoopbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterTestProgram(dispatcher_).ok());
    auto s = TcpServer::Listen(TcpServerOptions{}, dispatcher_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    ASSERT_NE(server_->port(), 0);
  }
  std::unique_ptr<TcpClient> NewClient(int timeout_ms = 10000) {
    TcpClientOptions o;
    o.server_port = server_->port();
    o.call_timeout_ms = timeout_ms;
    auto c = TcpClient::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  // Polls both ends until `done` or 10 s.
  bool RunUntil(TcpClient& c, const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      server_->Poll(1);
      c.Poll(1);
    }
    return true;
  }

  RpcServer dispatcher_;
  std::unique_ptr<TcpServer> server_;
};

TEST_F(TcpLoopbackTest, EchoOfEverySizeWithSeveralOutstanding) {
  auto client = NewClient();
  ASSERT_NE(client, nullptr);
  const size_t sizes[] = {0, 1, 3, 4, 5, 4096, 65537, 1u << 20};
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::array<uint8_t, 1024>> bufs(std::size(sizes));
  std::vector<Message> calls(std::size(sizes));
  int ok = 0;
  for (size_t i = 0; i < std::size(sizes); ++i) {
    data.emplace_back(sizes[i]);
    for (size_t j = 0; j < sizes[i]; ++j) data[i][j] = static_cast<uint8_t>(j * 7 + i);
    ASSERT_TRUE(EncodeTestCall(100 + static_cast<uint32_t>(i), kTestProcEcho, data[i], bufs[i], &calls[i]));
    ASSERT_EQ(client->Call(calls[i], {}, [&, i](const ReplyView& r) {
      EXPECT_EQ(r.status, 0);
      const TestReply t = DecodeTestReply(r, kTestProcEcho);
      EXPECT_TRUE(t.results_ok);
      EXPECT_EQ(t.header.xid, 100 + i);
      EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), data[i].begin(), data[i].end())) << sizes[i];
      ++ok;
    }), 0);
  }
  EXPECT_EQ(client->outstanding(), std::size(sizes));
  EXPECT_EQ(client->Call(calls[0], {}, [](const ReplyView&) {}), -EEXIST);
  ASSERT_TRUE(RunUntil(*client, [&] { return ok == static_cast<int>(std::size(sizes)); }));
  EXPECT_EQ(client->counters().replies, std::size(sizes));
  EXPECT_EQ(server_->counters().replies, std::size(sizes));
  EXPECT_EQ(dispatcher_.counters().accept(AcceptStat::kSuccess), std::size(sizes));
}

TEST_F(TcpLoopbackTest, ReconnectRetransmitsWithSameXid) {
  // A handler that holds the first call so the client loses it mid-flight.
  CallHandle held;
  int seen = 0;
  ASSERT_TRUE(dispatcher_
                  .Register(0x20000600, 1,
                            {[&](CallContext& ctx) {
                              if (++seen == 1) {
                                held = ctx.handle;
                                return ProcStatus::kDeferred;
                              }
                              ctx.results.U32(ctx.header.xid);
                              return ProcStatus::kSuccess;
                            }})
                  .ok());
  auto client = NewClient();
  ASSERT_NE(client, nullptr);
  const auto call = Words({0x4242, 0, 2, 0x20000600, 1, 0, 0, 0, 0, 0});
  Message m;
  m.Add(Piece{call});
  uint32_t got_xid = 0;
  ASSERT_EQ(client->Call(m, {}, [&](const ReplyView& r) {
    ASSERT_EQ(r.status, 0);
    XdrDecoder d(r);
    ReplyHeader h;
    ASSERT_EQ(DecodeReplyHeader(d, &h), ReplyDecode::kOk);
    got_xid = d.U32();
  }), 0);
  ASSERT_TRUE(RunUntil(*client, [&] { return seen == 1; }));
  client->ResetConnection();
  ASSERT_TRUE(RunUntil(*client, [&] { return got_xid != 0; }));
  EXPECT_EQ(got_xid, 0x4242u);
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(client->counters().retransmits, 1u);
  EXPECT_EQ(client->counters().reconnects, 1u);
  // The held call died with its connection.
  ASSERT_TRUE(RunUntil(*client, [&] { return dispatcher_.Results(held) == nullptr; }));
  EXPECT_EQ(server_->counters().close(TcpClose::kPeerClosed), 1u);
}

TEST_F(TcpLoopbackTest, CallTimesOut) {
  ASSERT_TRUE(dispatcher_.Register(0x20000700, 1, {[](CallContext&) { return ProcStatus::kDrop; }}).ok());
  auto client = NewClient(200);
  ASSERT_NE(client, nullptr);
  const auto call = Words({0x99, 0, 2, 0x20000700, 1, 0, 0, 0, 0, 0});
  Message m;
  m.Add(Piece{call});
  int status = 1;
  ASSERT_EQ(client->Call(m, {}, [&](const ReplyView& r) { status = r.status; }), 0);
  ASSERT_TRUE(RunUntil(*client, [&] { return status != 1; }));
  EXPECT_EQ(status, -ETIMEDOUT);
  EXPECT_EQ(client->counters().timeouts, 1u);
  EXPECT_EQ(client->outstanding(), 0u);
}

TEST_F(TcpLoopbackTest, ServerDownFailsCallsAfterRetries) {
  auto client = NewClient();
  ASSERT_NE(client, nullptr);
  server_.reset();  // closes the connection and the listener
  std::array<uint8_t, 1024> buf;
  Message m;
  ASSERT_TRUE(EncodeTestCall(5, kTestProcNull, {}, buf, &m));
  int status = 1;
  ASSERT_EQ(client->Call(m, {}, [&](const ReplyView& r) { status = r.status; }), 0);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (status == 1 && std::chrono::steady_clock::now() < end) client->Poll(10);
  EXPECT_EQ(status, -ECONNRESET);
  EXPECT_EQ(client->counters().failed, 1u);
}

int RawConnect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_F(TcpLoopbackTest, SplitFragmentsAndByteByByteWrites) {
  const int fd = RawConnect(server_->port());
  ASSERT_GE(fd, 0);
  // NULL call in three fragments, written one byte per write.
  const auto call = Words({0x31, 0, 2, kTestProg, 1, 0, 0, 0, 0, 0});
  std::vector<uint8_t> wire = Fragment(std::vector<uint8_t>(call.begin(), call.begin() + 5), false);
  auto f2 = Fragment(std::vector<uint8_t>(call.begin() + 5, call.begin() + 20), false);
  auto f3 = Fragment(std::vector<uint8_t>(call.begin() + 20, call.end()), true);
  wire.insert(wire.end(), f2.begin(), f2.end());
  wire.insert(wire.end(), f3.begin(), f3.end());
  for (uint8_t b : wire) {
    ASSERT_EQ(::write(fd, &b, 1), 1);
    server_->Poll(0);
  }
  for (int i = 0; i < 100 && server_->counters().replies == 0; ++i) server_->Poll(10);
  std::array<uint8_t, 64> in{};
  ssize_t n = ::recv(fd, in.data(), in.size(), 0);
  const auto want = Words({kLastFragmentBit | 24, 0x31, 1, 0, 0, 0, 0});
  ASSERT_EQ(n, static_cast<ssize_t>(want.size()));
  EXPECT_EQ(std::vector<uint8_t>(in.begin(), in.begin() + n), want);
  EXPECT_EQ(server_->counters().fragments, 3u);
  ::close(fd);
}

TEST_F(TcpLoopbackTest, OversizeRecordClosesConnection) {
  TcpServerOptions o;
  o.max_record_bytes = 1000;
  auto small = TcpServer::Listen(o, dispatcher_);
  ASSERT_TRUE(small.ok());
  const int fd = RawConnect((*small)->port());
  ASSERT_GE(fd, 0);
  const auto hdr = Words({kLastFragmentBit | 1001});
  ASSERT_EQ(::write(fd, hdr.data(), hdr.size()), 4);
  for (int i = 0; i < 100 && (*small)->connection_count() + (*small)->counters().accepted != 2; ++i) {
    (*small)->Poll(10);
  }
  for (int i = 0; i < 100 && (*small)->counters().close(TcpClose::kRecordOversize) == 0; ++i) (*small)->Poll(10);
  EXPECT_EQ((*small)->counters().close(TcpClose::kRecordOversize), 1u);
  EXPECT_EQ((*small)->connection_count(), 0u);
  uint8_t b;
  EXPECT_EQ(::recv(fd, &b, 1, 0), 0);  // closed by the server
  ::close(fd);
}

}  // namespace
}  // namespace iwarp::rpc
