// Replay driver for fuzz targets in builds without libFuzzer: runs every file
// of the given corpus directories (or single files) through
// LLVMFuzzerTestOneInput once. A crash or sanitizer report fails the test.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool RunFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", p.c_str());
    return false;
  }
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(buf.data(), buf.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t files = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg)) {
        if (!e.is_regular_file()) continue;
        if (!RunFile(e.path())) return 1;
        ++files;
      }
    } else if (!RunFile(arg)) {
      return 1;
    } else {
      ++files;
    }
  }
  // Also the empty input, which every parser must survive.
  LLVMFuzzerTestOneInput(nullptr, 0);
  std::printf("replayed %zu corpus files\n", files);
  if (files == 0) {
    std::fprintf(stderr, "no corpus files found: the seed corpus is missing\n");
    return 1;
  }
  return 0;
}
