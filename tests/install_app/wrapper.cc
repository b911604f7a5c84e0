// The C++ wrapper as an application outside the tree uses it: installed
// headers and libiwarp.so only (tests/install_check.py builds and runs this).
//   wrapper SOCKET   opens a session and allocates a PD; prints WRAPPER_OK.
#include <libiwarp/iwarp.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  iwarp::Session s;
  uint32_t pd = 0;
  if (const int rc = s.Open(argv[1]); rc != 0) {
    std::printf("FAIL: open %d\n", rc);
    return 1;
  }
  if (const int rc = s.AllocPd(&pd); rc != 0) {
    std::printf("FAIL: alloc_pd %d: %s\n", rc, s.LastError().c_str());
    return 1;
  }
  std::printf("WRAPPER_OK\n");
  return 0;
}
