// Thin C++ wrapper over libiwarp's C API: owning handles (move-only) that
// release their object on destruction, and absl-free error reporting through
// return codes (negative errno, as in the C API). Nothing here adds state to
// the data path: PostSend/PostRecv/Poll call the C functions directly.
#ifndef IWARPD_LIBIWARP_IWARP_HPP_
#define IWARPD_LIBIWARP_IWARP_HPP_

#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "libiwarp/iwarp.h"

namespace iwarp {

class Cq {
 public:
  Cq() = default;
  explicit Cq(iwarp_cq* cq) : cq_(cq) {}
  ~Cq() { Reset(); }
  Cq(Cq&& o) noexcept : cq_(std::exchange(o.cq_, nullptr)) {}
  Cq& operator=(Cq&& o) noexcept {
    if (this != &o) {
      Reset();
      cq_ = std::exchange(o.cq_, nullptr);
    }
    return *this;
  }
  Cq(const Cq&) = delete;
  Cq& operator=(const Cq&) = delete;

  int Poll(std::span<iwarp_wc> out) { return iwarp_poll_cq(cq_, out.data(), static_cast<int>(out.size())); }
  int Wait(int timeout_ms) { return iwarp_cq_wait(cq_, timeout_ms); }
  iwarp_cq* get() const { return cq_; }
  void Reset() {
    if (cq_ != nullptr) iwarp_destroy_cq(cq_);
    cq_ = nullptr;
  }

 private:
  iwarp_cq* cq_ = nullptr;
};

class Qp {
 public:
  Qp() = default;
  explicit Qp(iwarp_qp* qp) : qp_(qp) {}
  ~Qp() { Reset(); }
  Qp(Qp&& o) noexcept : qp_(std::exchange(o.qp_, nullptr)) {}
  Qp& operator=(Qp&& o) noexcept {
    if (this != &o) {
      Reset();
      qp_ = std::exchange(o.qp_, nullptr);
    }
    return *this;
  }
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;

  int PostSend(std::span<const iwarp_send_wr> wrs) {
    return iwarp_post_send(qp_, wrs.data(), static_cast<uint32_t>(wrs.size()));
  }
  int PostRecv(std::span<const iwarp_recv_wr> wrs) {
    return iwarp_post_recv(qp_, wrs.data(), static_cast<uint32_t>(wrs.size()));
  }
  int Connect(const iwarp_addr& addr, std::span<const uint8_t> private_data = {}) {
    return iwarp_connect(qp_, &addr, private_data.data(), static_cast<uint32_t>(private_data.size()));
  }
  // With options (transport: IWARP_TRANSPORT_TCP or IWARP_TRANSPORT_SCTP).
  int Connect(const iwarp_addr& addr, const iwarp_conn_opts& opts,
              std::span<const uint8_t> private_data = {}) {
    return iwarp_connect_opts(qp_, &addr, private_data.data(),
                              static_cast<uint32_t>(private_data.size()), &opts);
  }
  int Disconnect() { return iwarp_disconnect(qp_); }
  // RDMA Writes the peer placed here (see iwarp_qp_writes_placed).
  uint64_t WritesPlaced() const { return iwarp_qp_writes_placed(qp_); }
  int WaitWrites(uint64_t seen, int timeout_ms) {
    return iwarp_qp_wait_writes(qp_, seen, timeout_ms);
  }
  uint32_t id() const { return iwarp_qp_id(qp_); }
  iwarp_qp* get() const { return qp_; }
  void Reset() {
    if (qp_ != nullptr) iwarp_destroy_qp(qp_);
    qp_ = nullptr;
  }

 private:
  iwarp_qp* qp_ = nullptr;
};

// A session; objects created from it must be released before it (members
// declared after the Session in the same scope are).
class Session {
 public:
  Session() = default;
  ~Session() { Close(); }
  Session(Session&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Session& operator=(Session&& o) noexcept {
    if (this != &o) {
      Close();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // `path` empty: $IWARPD_SOCKET or /run/iwarpd/iwarpd.sock.
  int Open(const std::string& path = {}) {
    Close();
    return iwarp_open(path.empty() ? nullptr : path.c_str(), &s_);
  }
  void Close() {
    if (s_ != nullptr) iwarp_close(s_);
    s_ = nullptr;
  }
  std::string LastError() const { return s_ != nullptr ? iwarp_last_error(s_) : ""; }

  int AllocPd(uint32_t* pd) { return iwarp_alloc_pd(s_, pd); }
  int MemAlloc(size_t length, uint32_t flags, void** addr) {
    return iwarp_mem_alloc(s_, length, flags, addr);
  }
  int RegMr(uint32_t pd, void* addr, size_t length, uint32_t access, iwarp_mr* out) {
    return iwarp_reg_mr(s_, pd, addr, length, access, out);
  }
  int DeregMr(uint32_t stag) { return iwarp_dereg_mr(s_, stag); }
  int CreateCq(uint32_t depth, Cq* out) {
    iwarp_cq* cq = nullptr;
    const int rc = iwarp_create_cq(s_, depth, &cq);
    if (rc == 0) *out = Cq(cq);
    return rc;
  }
  int CreateQp(uint32_t pd, Cq& send_cq, Cq& recv_cq, uint32_t sq_depth, uint32_t rq_depth,
               Qp* out) {
    iwarp_qp_attr attr{pd, send_cq.get(), recv_cq.get(), sq_depth, rq_depth};
    iwarp_qp* qp = nullptr;
    const int rc = iwarp_create_qp(s_, &attr, &qp);
    if (rc == 0) *out = Qp(qp);
    return rc;
  }
  int Listen(const iwarp_addr& addr, uint32_t* listener_id) {
    return iwarp_listen(s_, &addr, listener_id);
  }
  int Listen(const iwarp_addr& addr, const iwarp_conn_opts& opts, uint32_t* listener_id) {
    return iwarp_listen_opts(s_, &addr, &opts, listener_id);
  }
  int Accept(uint32_t request_id, Qp& qp, std::span<const uint8_t> private_data = {}) {
    return iwarp_accept(s_, request_id, qp.get(), private_data.data(),
                        static_cast<uint32_t>(private_data.size()));
  }
  int Reject(uint32_t request_id, std::span<const uint8_t> private_data = {}) {
    return iwarp_reject(s_, request_id, private_data.data(),
                        static_cast<uint32_t>(private_data.size()));
  }
  int GetEvent(iwarp_event* ev, int timeout_ms) { return iwarp_get_event(s_, ev, timeout_ms); }
  iwarp_session* get() const { return s_; }

 private:
  iwarp_session* s_ = nullptr;
};

}  // namespace iwarp

#endif  // IWARPD_LIBIWARP_IWARP_HPP_
