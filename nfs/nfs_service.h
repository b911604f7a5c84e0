// The NFSv3 and MOUNT v3 programs of iwarp-nfsd on an rpc::RpcServer, and
// the I/O model behind them.
//
// The RPC loop (one thread: the transports' Poll) decodes arguments, answers
// MOUNT, NULL and duplicate requests itself, and hands every other NFS call
// to a pool of I/O threads as a job, returning kDeferred. A worker runs the
// procedure (fs.h: blocking system calls under the caller's identity), then
// queues the job as done and signals an eventfd; the RPC loop, woken by that
// fd, encodes the result into the deferred call's reply and Finishes it. The
// loop itself never makes a file system call.
//
// Why a thread pool and not io_uring: every operation must run with the
// caller's fsuid / fsgid / groups (set per thread) and most NFS procedures
// are metadata calls (openat2, open_by_handle_at, name_to_handle_at,
// getdents64, fchownat) that io_uring does not offer or would run with the
// submitter's credentials. A pool gives one model for all 21 procedures.
//
// Zero copy: WRITE data is a span of the call's receive pieces, written by
// pwrite straight from there; the call's pieces stay valid until its reply,
// and if the connection ends first the RPC loop waits for a running job to
// leave them before the transport frees them (reply-done hook). READ data is
// pread into a pooled buffer the reply references as a DDP-eligible piece
// (XdrEncoder::DdpOpaque), returned to the pool when the transport reports
// the reply's pieces no longer read (RpcServer reply cookie), so an RDMA
// transport can RDMA-Write it into the client's Write chunk as it is.
#ifndef IWARPD_NFS_NFS_SERVICE_H_
#define IWARPD_NFS_NFS_SERVICE_H_

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "nfs/drc.h"
#include "nfs/exports.h"
#include "nfs/fs.h"
#include "nfs/nfs_xdr.h"
#include "rpcrdma/rpc_server.h"

namespace iwarp::nfs {

struct NfsCounters {
  std::array<uint64_t, kProc3Count> calls{};           // NFS calls by procedure
  std::array<uint64_t, kNfsStat3Count> status{};       // NFS replies by nfsstat3
  std::array<uint64_t, kMountProcCount> mount_calls{};  // MOUNT calls by procedure
  uint64_t mount_refused = 0;   // MNT answered MNT3ERR_ACCES / NOENT
  uint64_t garbage_args = 0;    // calls whose arguments did not decode
  uint64_t bytes_read = 0;      // READ data returned
  uint64_t bytes_written = 0;   // WRITE data written
  uint64_t drc_hits = 0;        // retransmissions answered from the cache
  uint64_t drc_in_progress = 0; // retransmissions dropped while the first copy ran
  uint64_t io_jobs = 0;         // jobs run by the I/O threads
  uint64_t io_queue_depth = 0;  // jobs queued or running now
  uint64_t io_queue_depth_max = 0;
  uint64_t jobs_voided = 0;     // jobs whose connection ended before the reply
};

// Text dump of the counters, one "name value" per line (nonzero rows only
// for the per-procedure and per-status tables).
std::string FormatCounters(const NfsCounters& c);

// Memory READ data is read into: kMaxIo bytes, with the STag of its
// registration when an RDMA transport can write it as it is (0: none).
struct IoBuffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  uint32_t stag = 0;
};
// Hands out a new IoBuffer (false: none available). Buffers are reused by
// the service and live as long as the allocator's owner.
using IoBufferAlloc = std::function<bool(IoBuffer*)>;

class NfsService {
 public:
  // Registers NFS v3 and MOUNT v3 on `rpc` and starts config.io_threads
  // workers. `fs` and `rpc` outlive the service.
  static absl::StatusOr<std::unique_ptr<NfsService>> Create(const NfsdConfig& config, FileSystem& fs,
                                                            rpc::RpcServer& rpc);
  // Stops the workers (jobs still queued are dropped).
  ~NfsService();
  NfsService(const NfsService&) = delete;
  NfsService& operator=(const NfsService&) = delete;

  // Readable when jobs completed: the RPC loop then calls DrainCompletions.
  int completion_fd() const { return event_fd_; }
  // Finishes every completed job's call. RPC-loop thread.
  void DrainCompletions();

  // Replaces the heap as the source of READ buffers (before any call).
  void set_io_buffer_alloc(IoBufferAlloc alloc) { alloc_ = std::move(alloc); }

  const NfsCounters& counters() const { return counters_; }
  const DuplicateRequestCache& drc() const { return drc_; }
  size_t jobs_pending() const { return jobs_.size(); }

 private:
  struct Job;
  NfsService(const NfsdConfig& config, FileSystem& fs, rpc::RpcServer& rpc);

  rpc::ProcStatus HandleNfs(rpc::CallContext& ctx, uint32_t proc);
  rpc::ProcStatus HandleMount(rpc::CallContext& ctx, uint32_t proc);
  void OnReplyDone(uint64_t cookie);
  void Worker();
  void Release(uint64_t id);
  IoBuffer TakeReadBuffer();

  const NfsdConfig& config_;
  FileSystem& fs_;
  rpc::RpcServer& rpc_;
  NfsCounters counters_;
  DuplicateRequestCache drc_;
  uint64_t next_job_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Job>> jobs_;  // RPC-loop thread only
  std::vector<IoBuffer> read_buffers_;                       // free READ buffers
  std::vector<std::unique_ptr<uint8_t[]>> heap_buffers_;      // default allocator's memory
  IoBufferAlloc alloc_;
  struct Mount {
    uint32_t ipv4;
    std::string path;
  };
  std::vector<Mount> mounts_;  // MOUNT DUMP list

  // Shared with the workers.
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Job*> queue_;
  std::vector<Job*> completed_;
  bool stopping_ = false;
  int event_fd_ = -1;
  std::vector<std::thread> workers_;
};

// The daemon: configuration, file system, RPC server, NFS and MOUNT on TCP,
// rpcbind registration, and the event loop. Used by iwarp-nfsd's main and
// by the tests (in a thread).
class Nfsd {
 public:
  static absl::StatusOr<std::unique_ptr<Nfsd>> Start(const NfsdConfig& config);
  ~Nfsd();
  uint16_t nfs_port() const;
  uint16_t mount_port() const;
  // One round of the event loop: waits up to timeout_ms for sockets, RDMA
  // events or completions and handles them. An error: the service cannot
  // go on (the iwarpd instance it serves RDMA through went away).
  absl::Status Poll(int timeout_ms);
  // NFS over RPC-over-RDMA (config.rdma): its counters, if enabled.
  bool rdma_enabled() const;
  const NfsCounters& counters() const { return service_->counters(); }
  std::string Stats() const;

 private:
  Nfsd() = default;
  struct Impl;
  static absl::Status StartRdma(Impl& m);
  std::unique_ptr<Impl> impl_;
  NfsService* service_ = nullptr;
};

}  // namespace iwarp::nfs

#endif  // IWARPD_NFS_NFS_SERVICE_H_
