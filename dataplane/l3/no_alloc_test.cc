// Proves that the steady-state L3 fast path does not allocate: every heap
// allocation in this binary goes through the counting malloc below, and the
// count must not move while a worker-sized burst of ARP, ICMP, malformed
// frames and resolutions is handled.
//
// Sanitizer builds replace malloc themselves, so there the hook is not
// installed and the test skips with that reason; the gcc build runs it.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "dataplane/l3/stack.h"
#include "dataplane/l3/test_frames.h"
#include "gtest/gtest.h"

#if defined(__SANITIZE_ADDRESS__)
#define IWARP_NO_MALLOC_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(thread_sanitizer)
#define IWARP_NO_MALLOC_HOOK 1
#endif
#endif

#ifndef IWARP_NO_MALLOC_HOOK
namespace {
thread_local bool g_counting = false;
thread_local uint64_t g_allocations = 0;
}  // namespace

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);

void* malloc(size_t n) {
  if (g_counting) ++g_allocations;
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  if (g_counting) ++g_allocations;
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  if (g_counting) ++g_allocations;
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  if (g_counting) ++g_allocations;
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  if (g_counting) ++g_allocations;
  *out = __libc_memalign(a, n);
  return *out == nullptr ? 12 /* ENOMEM */ : 0;
}
void* aligned_alloc(size_t a, size_t n) {
  if (g_counting) ++g_allocations;
  return __libc_memalign(a, n);
}
}  // extern "C"
#endif

namespace iwarp::dataplane {
namespace {

using testing::ArpFrame;
using testing::IcmpEcho;
using testing::Ipv4Fields;
using testing::Ipv4Frame;
using testing::kOurIp;
using testing::kOurMac;
using testing::kPeerIp;
using testing::kPeerMac;

class CountingSink : public L3Sink {
 public:
  void SendFrame(uint16_t, ByteSpan) override { ++sent; }
  void TransmitResolved(PacketHandle, uint16_t, const MacAddr&, const MacAddr&) override {
    ++resolved;
  }
  void FreePacket(PacketHandle) override { ++freed; }
  void NeighborLearned(uint32_t, uint16_t, const MacAddr&) override { ++learned; }
  uint64_t sent = 0, resolved = 0, freed = 0, learned = 0;
};

TEST(NoAlloc, HookCountsAllocations) {
#ifdef IWARP_NO_MALLOC_HOOK
  GTEST_SKIP() << "sanitizer build: the sanitizer owns malloc, so allocations cannot be counted";
#else
  g_allocations = 0;
  g_counting = true;
  // volatile: keeps the compiler from eliding the allocations.
  void* volatile p = std::malloc(64);
  std::vector<int>* volatile v = new std::vector<int>(100);
  g_counting = false;
  delete v;
  std::free(p);
  EXPECT_GE(g_allocations, 3u);  // malloc, new, the vector's buffer
#endif
}

TEST(NoAlloc, SteadyStateL3FastPathDoesNotAllocate) {
#ifdef IWARP_NO_MALLOC_HOOK
  GTEST_SKIP() << "sanitizer build: the sanitizer owns malloc, so allocations cannot be counted";
#else
  L3Port port;
  port.port_id = 0;
  port.mac = kOurMac;
  port.addrs = {{kOurIp, 24}};
  LcoreStats stats;
  CountingSink sink;
  L3Stack stack(std::span<const L3Port>(&port, 1), L3Options{64, 300, 8, 10}, &stats, &sink);

  // Prepared frames (allocated before counting starts).
  const auto arp_req = ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  const auto arp_rep = ArpFrame(2, kOurMac, kPeerMac, 0xc6120003, kOurMac, kOurIp);
  const auto echo = Ipv4Frame({}, IcmpEcho(8, 1, 1, 1000));
  Ipv4Fields bad;
  bad.fix_checksum = false;
  bad.checksum = 1;
  const auto bad_sum = Ipv4Frame(bad, IcmpEcho(8, 1, 1, 8));
  const std::vector<std::vector<uint8_t>> templates = {arp_req, arp_rep, echo, bad_sum};
  std::vector<uint8_t> work(2048);

  g_allocations = 0;
  g_counting = true;
  uint64_t now = 0;
  for (int round = 0; round < 1000; ++round) {
    for (const auto& t : templates) {
      std::copy(t.begin(), t.end(), work.begin());
      stack.HandleFrame(0, MutableByteSpan(work.data(), t.size()), now);
    }
    NextHop nh;
    stack.Resolve(kPeerIp, nullptr, now, &nh);                              // cached
    stack.Resolve(0xc6120050 + static_cast<uint32_t>(round % 8), nullptr, now, &nh);  // queued
    stack.Tick(now);
    now += 7;
  }
  g_counting = false;
  EXPECT_EQ(g_allocations, 0u);
  // The burst really exercised every path.
  EXPECT_EQ(stats.arp_replies_out.Get(), 1000u);
  EXPECT_EQ(stats.icmp_echo_replies_out.Get(), 1000u);
  EXPECT_EQ(stats.Dropped(DropReason::kIpv4BadChecksum), 1000u);
  EXPECT_GT(sink.sent, 8u);
  EXPECT_GT(stats.Dropped(DropReason::kArpUnresolved), 0u);
#endif
}

}  // namespace
}  // namespace iwarp::dataplane
