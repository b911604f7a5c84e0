// Counts heap allocations, for the tests that prove a fast path allocates
// nothing after start-up (STYLE.md rule 13).
//
// Linking alloc_counter.cc into a test binary (meson: alloc_counter_dep)
// replaces the global operator new/delete of that binary with counting ones
// over malloc/free. Use it only in a binary of its own: every allocation of the
// process, on any thread, is counted.
#ifndef IWARPD_COMMON_TESTING_ALLOC_COUNTER_H_
#define IWARPD_COMMON_TESTING_ALLOC_COUNTER_H_

#include <cstdint>

namespace iwarp::testutil {

// Calls of operator new / new[] so far in this process.
uint64_t AllocationCount();

}  // namespace iwarp::testutil

#endif  // IWARPD_COMMON_TESTING_ALLOC_COUNTER_H_
