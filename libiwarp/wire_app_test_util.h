// Test helper shared by the libiwarp wire tests (TCP and SCTP): one
// application on a daemon's session socket, driven through the public C API
// only, and a seeded byte pattern for end-to-end checks.
#ifndef IWARPD_LIBIWARP_WIRE_APP_TEST_UTIL_H_
#define IWARPD_LIBIWARP_WIRE_APP_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "libiwarp/iwarp.h"

namespace iwarp::appif::testing {

inline constexpr uint32_t kAllAccess =
    IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE;

// n bytes of a seeded pattern (one spare byte: data() is never null).
inline std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n + 1);
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; i += 4) {
    const uint32_t x = rng();
    std::memcpy(v.data() + i, &x, std::min<size_t>(4, n - i));
  }
  return v;
}

// The private data of a connection event, as a string.
inline std::string PrivateData(const iwarp_event& ev) {
  return std::string(reinterpret_cast<const char*>(ev.private_data), ev.private_data_len);
}

// One application: a session, a PD, one registered memfd of `bytes`
// (callers split it into source and sink halves), one CQ and one QP.
// Waits give up after `timeout_ms` unless a call says otherwise.
struct WireApp {
  explicit WireApp(int default_timeout_ms = 10000) : timeout_ms(default_timeout_ms) {}
  WireApp(const WireApp&) = delete;
  WireApp& operator=(const WireApp&) = delete;
  ~WireApp() {
    if (s != nullptr) iwarp_close(s);
  }

  iwarp_session* s = nullptr;
  uint32_t pd = 0;
  uint8_t* mem = nullptr;
  size_t bytes = 0;
  iwarp_mr mr{};
  iwarp_cq* cq = nullptr;
  iwarp_qp* qp = nullptr;
  int timeout_ms;

  void Open(const std::string& path, size_t len) {
    bytes = len;
    ASSERT_EQ(iwarp_open(path.c_str(), &s), 0);
    ASSERT_EQ(iwarp_alloc_pd(s, &pd), 0);
    void* m = nullptr;
    ASSERT_EQ(iwarp_mem_alloc(s, len, 0, &m), 0);
    mem = static_cast<uint8_t*>(m);
    ASSERT_EQ(iwarp_reg_mr(s, pd, mem, len, kAllAccess, &mr), 0) << iwarp_last_error(s);
    ASSERT_EQ(iwarp_create_cq(s, 256, &cq), 0);
    iwarp_qp_attr a{pd, cq, cq, 64, 64};
    ASSERT_EQ(iwarp_create_qp(s, &a, &qp), 0);
  }
  void PostRecv(uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey) {
    iwarp_sge sge{addr, len, lkey};
    iwarp_recv_wr wr{wr_id, &sge, 1};
    ASSERT_EQ(iwarp_post_recv(qp, &wr, 1), 1);
  }
  void Post(uint64_t wr_id, uint32_t opcode, uint64_t addr, uint32_t len, uint32_t lkey,
            uint64_t raddr = 0, uint32_t rkey = 0, bool signaled = true) {
    iwarp_sge sge{addr, len, lkey};
    iwarp_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.flags = signaled ? IWARP_SEND_SIGNALED : 0;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = raddr;
    wr.rkey = rkey;
    ASSERT_EQ(iwarp_post_send(qp, &wr, 1), 1);
  }
  // Work requests with an SG list (up to IWARP_MAX_SGE entries).
  void PostRecvSgl(uint64_t wr_id, const std::vector<iwarp_sge>& sgl) {
    iwarp_recv_wr wr{wr_id, sgl.data(), static_cast<uint32_t>(sgl.size())};
    ASSERT_EQ(iwarp_post_recv(qp, &wr, 1), 1);
  }
  void PostSgl(uint64_t wr_id, uint32_t opcode, const std::vector<iwarp_sge>& sgl,
               uint64_t raddr = 0, uint32_t rkey = 0) {
    iwarp_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.flags = IWARP_SEND_SIGNALED;
    wr.sg_list = sgl.data();
    wr.num_sge = static_cast<uint32_t>(sgl.size());
    wr.remote_addr = raddr;
    wr.rkey = rkey;
    ASSERT_EQ(iwarp_post_send(qp, &wr, 1), 1);
  }
  // The next completion, or a failure (status 0xFF) after the timeout.
  iwarp_wc Wc(int wait_ms = -1) {
    const int limit = wait_ms < 0 ? timeout_ms : wait_ms;
    iwarp_wc wc{};
    for (int waited = 0; waited < limit; waited += 50) {
      if (iwarp_poll_cq(cq, &wc, 1) == 1) return wc;
      iwarp_cq_wait(cq, 50);
    }
    ADD_FAILURE() << "no completion within " << limit << " ms";
    wc.status = 0xFF;
    return wc;
  }
  // The next connection event, which must be of `type`.
  iwarp_event Event(uint32_t type, int wait_ms = -1) {
    iwarp_event ev{};
    EXPECT_EQ(iwarp_get_event(s, &ev, wait_ms < 0 ? timeout_ms : wait_ms), 1);
    EXPECT_EQ(ev.type, type) << "reason " << ev.reason;
    return ev;
  }
};

}  // namespace iwarp::appif::testing

#endif  // IWARPD_LIBIWARP_WIRE_APP_TEST_UTIL_H_
