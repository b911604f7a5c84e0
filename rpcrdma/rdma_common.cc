// RegPool: registered buffers reused for the life of a transport.
#include <algorithm>

#include "rpcrdma/rdma_transport.h"

namespace iwarp::rpcrdma {

RegPool::~RegPool() {
  for (auto& [mem, stag] : slabs_) {
    iwarp_dereg_mr(s_, stag);
    iwarp_mem_free(s_, mem);
  }
}

void RegPool::Init(iwarp_session* s, uint32_t pd, size_t buffer_size, uint64_t max_bytes) {
  s_ = s;
  pd_ = pd;
  size_ = (buffer_size + 63) & ~size_t{63};
  max_bytes_ = max_bytes;
  const size_t most = static_cast<size_t>(max_bytes / std::max<size_t>(size_, 1));
  all_.reserve(most);
  free_.reserve(most);
}

RegPool::Buffer* RegPool::Get() {
  if (free_.empty()) {
    // A slab of about 1 MiB (at least one buffer) registered once.
    size_t n = std::max<size_t>(1, (size_t{1} << 20) / size_);
    n = std::min<uint64_t>(n, (max_bytes_ - bytes_) / size_);
    if (n == 0) return nullptr;
    const size_t len = n * size_;
    void* mem = nullptr;
    if (iwarp_mem_alloc(s_, len, 0, &mem) != 0) return nullptr;
    iwarp_mr mr{};
    const uint32_t access =
        IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE;
    if (iwarp_reg_mr(s_, pd_, mem, len, access, &mr) != 0) {
      iwarp_mem_free(s_, mem);
      return nullptr;
    }
    slabs_.emplace_back(mem, mr.stag);
    bytes_ += len;
    for (size_t i = 0; i < n; ++i) {
      auto b = std::make_unique<Buffer>();
      b->data = static_cast<uint8_t*>(mem) + i * size_;
      b->size = size_;
      b->stag = mr.stag;
      b->index = static_cast<uint32_t>(all_.size());
      free_.push_back(b.get());
      all_.push_back(std::move(b));
    }
  }
  Buffer* b = free_.back();
  free_.pop_back();
  return b;
}

}  // namespace iwarp::rpcrdma
