// Proves Sha256 allocates nothing once made (house style rule 13): the sink
// service restarts, feeds, copies and finishes one per connection on a
// worker lcore. Counting operator new is not enough here, libcrypto takes
// its memory from malloc: this binary routes libcrypto's heap through
// CRYPTO_set_mem_functions and counts it too, and checks that the counter
// sees an allocation libcrypto is known to make.
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/sha256.h"
#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"

namespace iwarp {
namespace {

std::atomic<uint64_t> g_crypto_allocations{0};

void* CountedMalloc(size_t n, const char*, int) {
  g_crypto_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n);
}
void* CountedRealloc(void* p, size_t n, const char*, int) {
  g_crypto_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::realloc(p, n);
}
void CountedFree(void* p, const char*, int) { std::free(p); }

// libcrypto accepts the hooks only before its first allocation: install them
// during static initialisation, before any test runs.
const bool g_hooked = CRYPTO_set_mem_functions(CountedMalloc, CountedRealloc, CountedFree) == 1;

uint64_t Allocations() {
  return testutil::AllocationCount() + g_crypto_allocations.load(std::memory_order_relaxed);
}

TEST(Sha256Alloc, CounterSeesLibcryptoAllocations) {
  ASSERT_TRUE(g_hooked) << "libcrypto allocated before the hooks were installed";
  const uint64_t before = Allocations();
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();  // one OPENSSL_zalloc
  EXPECT_GT(Allocations(), before);
  EVP_MD_CTX_free(ctx);
}

TEST(Sha256Alloc, ResetUpdateCopyFinishAllocateNothing) {
  ASSERT_TRUE(g_hooked);
  std::vector<uint8_t> data(70000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  std::vector<Sha256> conns(4);  // made at start-up, as the services do
  Sha256::Digest last{};
  const uint64_t before = Allocations();
  for (int connection = 0; connection < 100; ++connection) {
    Sha256& s = conns[static_cast<size_t>(connection) % conns.size()];
    s.Reset();
    for (size_t off = 0, n = 1; off < data.size(); off += n, n = n * 3 % 9001 + 1) {
      s.Update(ByteSpan(data).subspan(off, std::min(n, data.size() - off)));
    }
    Sha256 copy = s;  // how the services read a digest
    last = copy.Finish();
    s = copy;  // assignment, too
  }
  const uint64_t after = Allocations();
  EXPECT_EQ(after, before) << "allocations while hashing";
  EXPECT_EQ(last, Sha256::Hash(data));
}

}  // namespace
}  // namespace iwarp
