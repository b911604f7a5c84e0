// Worker: blocking when idle (workers.idle_block_after_us). Receive
// interrupts and the wake eventfd in the thread's epoll, the handshake with
// whoever hands the worker work, and the wake-ups a poll owes its peers.
// See the top of worker.h.
#include <rte_epoll.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dataplane/log.h"
#include "dataplane/worker.h"

namespace iwarp::dataplane {

void Worker::Wake() {
  if (wake_fd_ < 0) return;
  // Pairs with the fence in BlockIdle: either the worker sees the work this
  // thread published, or this thread sees that it sleeps.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed) == 0 ||
      sleeping_.exchange(0, std::memory_order_acq_rel) == 0) {
    return;
  }
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void Worker::WakeMarkedPeers() {
  any_peer_to_wake_ = false;
  for (size_t i = 0; i < wake_peer_.size(); ++i) {
    if (wake_peer_[i] == 0) continue;
    wake_peer_[i] = 0;
    peers_[i]->Wake();
  }
}

namespace {
// Empties the wake eventfd when epoll reports it (rte_epoll_wait's callback).
void DrainWakeFd(int fd, void*) {
  uint64_t v;
  [[maybe_unused]] const ssize_t n = read(fd, &v, sizeof(v));
}
}  // namespace

bool Worker::SetUpIdleBlock() {
  for (const RxQueue& q : rx_queues_) {
    const int rc = rte_eth_dev_rx_intr_ctl_q(q.port_id, q.queue_id, RTE_EPOLL_PER_THREAD,
                                             RTE_INTR_EVENT_ADD, nullptr);
    if (rc != 0) {
      LogError("worker on lcore ", lcore_, ": receive interrupt of port ", q.port_id, " queue ",
               q.queue_id, ": ", rte_strerror(-rc), "; this worker busy-polls instead of blocking");
      return false;
    }
    // net_tap's interrupt is its queue descriptor, watched edge-triggered,
    // and its rx_burst reads only once a SIGIO handler has counted the frame.
    // The kernel sends SIGIO to any thread that takes it: to another worker,
    // whose handler may run after this one woke, read nothing, and blocked
    // again with the frame still queued and no new edge to come. Directed
    // at this thread, the handler runs before its epoll_wait returns.
    if (q.tap) {
      const int fd = rte_eth_dev_rx_intr_ctl_q_get_fd(q.port_id, q.queue_id);
      const f_owner_ex owner{F_OWNER_TID, static_cast<pid_t>(syscall(SYS_gettid))};
      if (fd < 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0) {
        LogError("worker on lcore ", lcore_, ": net_tap port ", q.port_id, " queue ", q.queue_id,
                 ": cannot direct its SIGIO to this worker (", strerror(errno),
                 "); this worker busy-polls instead of blocking");
        return false;
      }
    }
  }
  wake_event_ = std::make_unique<rte_epoll_event>();
  std::memset(wake_event_.get(), 0, sizeof(rte_epoll_event));
  wake_event_->epdata.event = EPOLLIN;
  wake_event_->epdata.cb_fun = DrainWakeFd;
  const int rc = rte_epoll_ctl(RTE_EPOLL_PER_THREAD, EPOLL_CTL_ADD, wake_fd_, wake_event_.get());
  if (rc != 0) {
    LogError("worker on lcore ", lcore_, ": epoll of the wake eventfd failed (", rc,
             "); this worker busy-polls instead of blocking");
    return false;
  }
  return true;
}

void Worker::SetRxInterrupts(bool on) {
  // net_tap has no switch (its queue descriptor is always watched): -ENOTSUP.
  for (const RxQueue& q : rx_queues_) {
    if (on) {
      rte_eth_dev_rx_intr_enable(q.port_id, q.queue_id);
    } else {
      rte_eth_dev_rx_intr_disable(q.port_id, q.queue_id);
    }
  }
}

void Worker::BlockIdle(uint64_t now_us) {
  // Nothing waits on the device or a delay stage, and the next TCP timer
  // (delayed ACKs, retransmissions) is further away than an epoll tick.
  for (const TxBuffer& tx : tx_) {
    if (tx.count != 0) return;
  }
  if (impair_held() != 0) return;
  uint64_t timeout_us = uint64_t{idle_block_max_ms_} * 1000;
  if (tcp_ != nullptr) {
    if (const std::optional<uint64_t> t = tcp_->NextTimerUs(); t.has_value()) {
      if (*t <= now_us + 1000) return;
      timeout_us = std::min(timeout_us, *t - now_us);
    }
  }
  sleeping_.store(1, std::memory_order_relaxed);
  if (wire_ != nullptr && !wire_->PrepareToSleep()) {
    sleeping_.store(0, std::memory_order_relaxed);
    return;
  }
  // Pairs with the fence in Wake.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool work = stop_->load(std::memory_order_acquire) || rte_ring_count(steer_ring_) != 0 ||
              rte_ring_count(neighbor_ring_) != 0 ||
              snapshot_request_.load(std::memory_order_acquire) != snapshot_served_;
  if (!work) {
    SetRxInterrupts(true);
    // A frame that arrived before its queue's interrupt was armed raises
    // none: one more poll sees it.
    const Now n = NowBoth();
    work = PollAt(n.ms, n.us) != 0;
  }
  if (!work) {
    rte_epoll_event events[8];
    const uint64_t start = NowUs();
    rte_epoll_wait(RTE_EPOLL_PER_THREAD, events, 8, static_cast<int>(timeout_us / 1000));
    stats_->idle_blocks.Add();
    stats_->idle_blocked_us.Add(NowUs() - start);
  }
  SetRxInterrupts(false);
  sleeping_.store(0, std::memory_order_relaxed);
  if (wire_ != nullptr) wire_->EndSleep();
}

}  // namespace iwarp::dataplane
