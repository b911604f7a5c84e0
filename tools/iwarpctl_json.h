// iwarpctl's view of a JSON document (telemetry replies): a small tree of
// objects, arrays, strings, numbers, true/false/null. Objects keep their key
// order. Parsing is nlohmann-json's (RFC 8259, strict); this header does not
// expose it. Control path only.
#ifndef IWARPD_TOOLS_IWARPCTL_JSON_H_
#define IWARPD_TOOLS_IWARPCTL_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace iwarp::tools {

struct JsonMember;

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  // Numbers: the text as sent, and its value when it is a non-negative
  // integer that fits 64 bits (is_uint).
  std::string number_text;
  bool is_uint = false;
  uint64_t uint_value = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<JsonMember> object;  // in document order

  // Member `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;
  // Member `key` as an unsigned integer, or `fallback`.
  uint64_t Uint(std::string_view key, uint64_t fallback = 0) const;
  // Member `key` as a string (numbers as their text), or "".
  std::string Text(std::string_view key) const;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

// Parses one JSON document (trailing whitespace allowed). Nesting deeper than
// 64 levels is refused. Malformed input is an InvalidArgumentError whose
// message names the line, column and what was wrong; nothing is thrown.
absl::StatusOr<JsonValue> ParseJson(std::string_view text);

}  // namespace iwarp::tools

#endif  // IWARPD_TOOLS_IWARPCTL_JSON_H_
