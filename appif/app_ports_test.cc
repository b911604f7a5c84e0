// AppPortTable: holds per port, the published bit readers see, reserved
// ports of built-in services, and a reader thread that never sees a port a
// writer did not publish.
#include "appif/app_ports.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace iwarp::appif {
namespace {

TEST(AppPortTableTest, StartsEmpty) {
  AppPortTable t;
  for (uint32_t p = 0; p < AppPortTable::kPorts; ++p) {
    ASSERT_FALSE(t.Held(static_cast<uint16_t>(p))) << p;
    ASSERT_FALSE(t.Reserved(static_cast<uint16_t>(p))) << p;
  }
  EXPECT_EQ(t.held_ports(), 0u);
}

TEST(AppPortTableTest, PortIsHeldUntilTheLastHoldIsGivenBack) {
  AppPortTable t;
  // A listener and two connections accepted on it share port 18515.
  EXPECT_TRUE(t.Acquire(18515));
  EXPECT_TRUE(t.Acquire(18515));
  EXPECT_TRUE(t.Acquire(18515));
  EXPECT_TRUE(t.Held(18515));
  EXPECT_EQ(t.holds(18515), 3u);
  EXPECT_EQ(t.held_ports(), 1u);
  // Neighbours in the same 64-bit word and the next word are untouched.
  EXPECT_FALSE(t.Held(18514));
  EXPECT_FALSE(t.Held(18516));
  EXPECT_FALSE(t.Held(18515 + 64));
  EXPECT_TRUE(t.Release(18515));
  EXPECT_TRUE(t.Release(18515));
  EXPECT_TRUE(t.Held(18515));  // one connection still open
  EXPECT_TRUE(t.Release(18515));
  EXPECT_FALSE(t.Held(18515));
  EXPECT_EQ(t.held_ports(), 0u);
  // A release without a hold changes nothing and says so.
  EXPECT_FALSE(t.Release(18515));
  EXPECT_EQ(t.holds(18515), 0u);
}

TEST(AppPortTableTest, EdgesOfThePortSpace) {
  AppPortTable t;
  EXPECT_FALSE(t.Acquire(0));  // no TCP port 0 (RFC 9293 3.1)
  EXPECT_FALSE(t.Held(0));
  EXPECT_TRUE(t.Acquire(1));
  EXPECT_TRUE(t.Acquire(63));
  EXPECT_TRUE(t.Acquire(64));
  EXPECT_TRUE(t.Acquire(65535));
  EXPECT_TRUE(t.Held(1) && t.Held(63) && t.Held(64) && t.Held(65535));
  EXPECT_FALSE(t.Held(2) || t.Held(62) || t.Held(65) || t.Held(65534));
  EXPECT_EQ(t.held_ports(), 4u);
}

TEST(AppPortTableTest, ReservedPortsOfBuiltInServicesAreRefused) {
  AppPortTable t;
  t.Reserve(9999);  // an iwarp_responder's port
  EXPECT_TRUE(t.Reserved(9999));
  EXPECT_FALSE(t.Reserved(9998));
  EXPECT_FALSE(t.Acquire(9999));
  EXPECT_FALSE(t.Held(9999));
  EXPECT_EQ(t.holds(9999), 0u);
  EXPECT_TRUE(t.Acquire(9998));
}

TEST(AppPortTableTest, HoldsSaturateWithoutWrapping) {
  AppPortTable t;
  for (uint32_t i = 0; i < AppPortTable::kMaxHolds; ++i) ASSERT_TRUE(t.Acquire(40000)) << i;
  EXPECT_FALSE(t.Acquire(40000));
  EXPECT_EQ(t.holds(40000), AppPortTable::kMaxHolds);
  for (uint32_t i = 0; i < AppPortTable::kMaxHolds; ++i) ASSERT_TRUE(t.Release(40000)) << i;
  EXPECT_FALSE(t.Held(40000));
}

// One writer toggles a set of ports while a reader polls them: the reader
// only ever sees ports of that set, and sees the final state once the
// writer is done (run under TSan in CI to check the ordering claims).
TEST(AppPortTableTest, ReaderOnAnotherThreadSeesOnlyPublishedPorts) {
  AppPortTable t;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> wrong{0};
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      for (uint32_t p = 30000; p < 30256; ++p) {
        const bool h = t.Held(static_cast<uint16_t>(p));
        if (h && p % 2 == 1) wrong.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  for (int round = 0; round < 2000; ++round) {
    for (uint32_t p = 30000; p < 30256; p += 2) t.Acquire(static_cast<uint16_t>(p));
    for (uint32_t p = 30000; p < 30256; p += 2) t.Release(static_cast<uint16_t>(p));
  }
  for (uint32_t p = 30000; p < 30256; p += 4) t.Acquire(static_cast<uint16_t>(p));
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(wrong.load(), 0u);
  for (uint32_t p = 30000; p < 30256; ++p) {
    EXPECT_EQ(t.Held(static_cast<uint16_t>(p)), p % 4 == 0) << p;
  }
}

}  // namespace
}  // namespace iwarp::appif
