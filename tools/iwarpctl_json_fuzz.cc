// Fuzz target: iwarpctl's JSON reader (tools/iwarpctl_json.h), which reads
// replies from the daemon's telemetry socket.
//
// Input: any bytes, parsed as one document. Checks, trapping on any
// disagreement:
//  - a refusal is an InvalidArgumentError that says "bad JSON: " and why;
//  - an accepted document written back out (strings escaped by
//    nlohmann-json, numbers as their text) parses to the same tree;
//  - a number that reads as an unsigned integer has that integer as its text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tools/iwarpctl_json.h"

namespace iwarp::tools {
namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void Write(const JsonValue& v, std::string* out) {
  switch (v.type) {
    case JsonValue::Type::kNull: *out += "null"; break;
    case JsonValue::Type::kBool: *out += v.boolean ? "true" : "false"; break;
    case JsonValue::Type::kNumber:
      Check(!v.is_uint || v.number_text == std::to_string(v.uint_value));
      *out += v.number_text;
      break;
    case JsonValue::Type::kString: *out += nlohmann::json(v.string).dump(); break;
    case JsonValue::Type::kArray:
      *out += '[';
      for (size_t i = 0; i < v.array.size(); ++i) {
        if (i != 0) *out += ',';
        Write(v.array[i], out);
      }
      *out += ']';
      break;
    case JsonValue::Type::kObject:
      *out += '{';
      for (size_t i = 0; i < v.object.size(); ++i) {
        if (i != 0) *out += ',';
        *out += nlohmann::json(v.object[i].key).dump();
        *out += ':';
        Write(v.object[i].value, out);
      }
      *out += '}';
      break;
  }
}

bool Same(const JsonValue& a, const JsonValue& b) {
  if (a.type != b.type || a.boolean != b.boolean || a.number_text != b.number_text ||
      a.is_uint != b.is_uint || a.uint_value != b.uint_value || a.string != b.string ||
      a.array.size() != b.array.size() || a.object.size() != b.object.size()) {
    return false;
  }
  for (size_t i = 0; i < a.array.size(); ++i) {
    if (!Same(a.array[i], b.array[i])) return false;
  }
  for (size_t i = 0; i < a.object.size(); ++i) {
    if (a.object[i].key != b.object[i].key || !Same(a.object[i].value, b.object[i].value)) {
      return false;
    }
  }
  return true;
}

}  // namespace
}  // namespace iwarp::tools

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace iwarp::tools;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<JsonValue> doc = ParseJson(text);
  if (!doc.ok()) {
    Check(absl::IsInvalidArgument(doc.status()));
    const std::string_view message(doc.status().message().data(), doc.status().message().size());
    Check(message.starts_with("bad JSON: ") && message.size() > 10);
    return 0;
  }
  (void)doc->Uint("total");
  (void)doc->Text("name");
  std::string again;
  Write(*doc, &again);
  absl::StatusOr<JsonValue> back = ParseJson(again);
  Check(back.ok() && Same(*doc, *back));
  return 0;
}
