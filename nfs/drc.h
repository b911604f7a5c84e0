// Duplicate request cache (RFC 1813 4.4 on non-idempotent procedures; the
// scheme of Juszczak, "Improving the Performance and Correctness of an NFS
// Server", USENIX 1989): a retransmitted CREATE, REMOVE, RENAME, ... must get
// the reply of the first execution, not a second execution's error.
//
// An entry is keyed by client address, XID, procedure and a checksum of the
// argument bytes (a client reusing an XID for another call is not a
// duplicate). It is kInProgress from dispatch until the reply is encoded,
// then holds the reply's result bytes. Least recently inserted entries are
// evicted beyond the capacity. One thread (the RPC loop) owns it.
#ifndef IWARPD_NFS_DRC_H_
#define IWARPD_NFS_DRC_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <tuple>
#include <vector>

#include "common/bytes.h"

namespace iwarp::nfs {

struct DrcKey {
  uint32_t client_ipv4 = 0;
  uint32_t xid = 0;
  uint32_t proc = 0;
  uint64_t args_checksum = 0;
  friend auto operator<=>(const DrcKey&, const DrcKey&) = default;
};

enum class DrcLookup : uint8_t {
  kNew,         // not seen: execute it (an in-progress entry now exists)
  kInProgress,  // the first copy is still executing: drop this one
  kReplay,      // answered before: `reply` holds the result bytes
};

class DuplicateRequestCache {
 public:
  explicit DuplicateRequestCache(size_t capacity = 4096) : capacity_(capacity) {}

  DrcLookup Begin(const DrcKey& key, ByteSpan* reply);
  // Stores the result bytes of a call Begin returned kNew for.
  void Complete(const DrcKey& key, ByteSpan reply);
  // Forgets an in-progress call that got no reply (e.g. its connection ended).
  void Abandon(const DrcKey& key);

  size_t size() const { return entries_.size(); }
  uint64_t hits() const { return hits_; }
  uint64_t in_progress_drops() const { return in_progress_drops_; }

 private:
  struct Entry {
    bool done = false;
    std::vector<uint8_t> reply;
    std::list<DrcKey>::iterator age;
  };
  void Evict();

  size_t capacity_;
  std::map<DrcKey, Entry> entries_;
  std::list<DrcKey> order_;  // oldest first
  uint64_t hits_ = 0;
  uint64_t in_progress_drops_ = 0;
};

// FNV-1a 64 over the bytes; cheap and good enough to tell two calls with one
// XID apart (not a security boundary: the XID and address already match).
uint64_t ArgsChecksum(ByteSpan bytes, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace iwarp::nfs

#endif  // IWARPD_NFS_DRC_H_
