#include "appif/spsc_ring.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

#include "appif/shm.h"
#include "appif/shm_layout.h"
#include "gtest/gtest.h"

namespace iwarp::appif {
namespace {

struct Item {
  uint64_t seq;
  uint64_t check;
};

TEST(SpscRing, PushPopInOrderAndFull) {
  auto m = Mapping::CreateMemfd("ring", RingBytes<Item>(4));
  ASSERT_TRUE(m.ok()) << m.status();
  SpscRing<Item> p(m->data(), 4), c(m->data(), 4);
  p.Init();
  c.AttachAsConsumer();
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(p.Push({i, ~i}));
  EXPECT_FALSE(p.Push({9, 9}));  // full
  EXPECT_EQ(c.Available(), 4);
  Item it;
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(c.Pop(&it));
    EXPECT_EQ(it.seq, i);
  }
  EXPECT_FALSE(c.Pop(&it));
  EXPECT_EQ(p.FreeSlots(), 4);
}

TEST(SpscRing, CorruptPeerIndexIsDetectedNotUsed) {
  auto m = Mapping::CreateMemfd("ring", RingBytes<Item>(8));
  ASSERT_TRUE(m.ok());
  SpscRing<Item> p(m->data(), 8), c(m->data(), 8);
  p.Init();
  c.AttachAsConsumer();
  // A hostile producer claims 1000 entries.
  p.header()->producer.store(1000);
  EXPECT_EQ(c.Available(), -1);
  Item it;
  EXPECT_FALSE(c.Pop(&it));
  // A hostile consumer runs ahead of the producer.
  p.header()->producer.store(0);
  p.header()->consumer.store(500);
  EXPECT_EQ(p.FreeSlots(), -1);
  EXPECT_FALSE(p.Push({1, 1}));
}

TEST(SpscRing, WakeRequestOnlyWhenConsumerWaits) {
  auto m = Mapping::CreateMemfd("ring", RingBytes<Item>(8));
  ASSERT_TRUE(m.ok());
  SpscRing<Item> p(m->data(), 8), c(m->data(), 8);
  p.Init();
  c.AttachAsConsumer();
  ASSERT_TRUE(p.Push({1, 1}));
  EXPECT_FALSE(p.TakeWakeRequest());
  Item it;
  ASSERT_TRUE(c.Pop(&it));
  EXPECT_FALSE(c.PrepareToWait());  // empty: may block
  ASSERT_TRUE(p.Push({2, 2}));
  EXPECT_TRUE(p.TakeWakeRequest());
  EXPECT_FALSE(p.TakeWakeRequest());  // taken once
}

// Producer in a child process, consumer here, through a memfd mapped by both;
// wraps the 64-entry ring many times.
TEST(SpscRing, CrossProcessStreamArrivesInOrder) {
  constexpr uint32_t kEntries = 64;
  constexpr uint64_t kCount = 200000;
  auto m = Mapping::CreateMemfd("ring", RingBytes<Item>(kEntries));
  ASSERT_TRUE(m.ok());
  SpscRing<Item> init(m->data(), kEntries);
  init.Init();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: its own mapping of the same memfd.
    auto mine = Mapping::MapForeign(m->fd(), 0, RingBytes<Item>(kEntries));
    if (!mine.ok()) _exit(2);
    SpscRing<Item> p(mine->data(), kEntries);
    p.AttachAsProducer();
    for (uint64_t i = 0; i < kCount;) {
      if (p.Push({i, i * 0x9E3779B97F4A7C15ull})) ++i;
    }
    _exit(0);
  }
  SpscRing<Item> c(m->data(), kEntries);
  c.AttachAsConsumer();
  uint64_t next = 0, bad = 0;
  while (next < kCount) {
    Item it;
    const int64_t avail = c.Available();
    ASSERT_GE(avail, 0);
    if (!c.Pop(&it)) continue;
    if (it.seq != next || it.check != next * 0x9E3779B97F4A7C15ull) ++bad;
    ++next;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(next, kCount);
}

TEST(Shm, ForeignMappingNeedsShrinkSeal) {
  const int fd = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  auto r = Mapping::MapForeign(fd, 0, 4096);
  EXPECT_FALSE(r.ok());
  close(fd);
  auto m = Mapping::CreateMemfd("sealed", 8192);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(Mapping::MapForeign(m->fd(), 4096, 8192).ok());  // beyond size
  auto ok = Mapping::MapForeign(m->fd(), 100, 200);
  ASSERT_TRUE(ok.ok()) << ok.status();
  m->data()[150] = 0xAB;
  EXPECT_EQ(ok->data()[50], 0xAB);
  EXPECT_NE(ftruncate(m->fd(), 0), 0);  // sealed
}

}  // namespace
}  // namespace iwarp::appif
