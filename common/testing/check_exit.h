// CHECK for the stand-alone test programs that other tests drive (their
// stdout is read by a harness): on failure it prints "FAIL: <message>
// (file:line)" on stdout and exits with status 1.
#ifndef IWARPD_COMMON_TESTING_CHECK_EXIT_H_
#define IWARPD_COMMON_TESTING_CHECK_EXIT_H_

#include <cstdio>
#include <cstdlib>

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      fprintf(stdout, "FAIL: " __VA_ARGS__);             \
      fprintf(stdout, " (%s:%d)\n", __FILE__, __LINE__); \
      fflush(stdout);                                    \
      exit(1);                                           \
    }                                                    \
  } while (0)

#endif  // IWARPD_COMMON_TESTING_CHECK_EXIT_H_
