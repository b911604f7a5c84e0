// Arbitrary bytes as a config file. The loader must return (never crash or
// throw); a config that loads must describe itself, and its YAML rendering
// must load back to an equal config that renders to the same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using iwarp::config::Config;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Config> first = iwarp::config::LoadConfigString(text, "fuzz.yaml");
  if (!first.ok()) {
    // Every error is one line naming the source.
    std::string msg(first.status().message());
    if (msg.substr(0, 10) != "fuzz.yaml:" || msg.find('\n') != std::string::npos) {
      __builtin_trap();
    }
    return 0;
  }
  std::string summary = iwarp::config::DescribeConfig(*first);
  if (summary.empty() || summary.back() != '\n') __builtin_trap();
  std::string yaml = iwarp::config::FormatConfigYaml(*first);
  absl::StatusOr<Config> second = iwarp::config::LoadConfigString(yaml, "fuzz.yaml");
  if (!second.ok() || !(*second == *first)) __builtin_trap();
  if (iwarp::config::FormatConfigYaml(*second) != yaml) __builtin_trap();
  return 0;
}
