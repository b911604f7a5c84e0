#include "tools/iwarpctl_json.h"

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace iwarp::tools {

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const auto& [k, v] : object) {
    if (k == key) return &v;
  }
  return nullptr;
}

uint64_t JsonValue::Uint(std::string_view key, uint64_t fallback) const {
  const JsonValue* v = Find(key);
  return v != nullptr && v->is_uint ? v->uint_value : fallback;
}

std::string JsonValue::Text(std::string_view key) const {
  const JsonValue* v = Find(key);
  if (v == nullptr) return "";
  if (v->type == Type::kString) return v->string;
  if (v->type == Type::kNumber) return v->number_text;
  if (v->type == Type::kBool) return v->boolean ? "true" : "false";
  return "";
}

namespace {

// nlohmann-json's SAX events (its lexer and grammar, RFC 8259, strict:
// trailing characters and ill-formed UTF-8 are errors) building a JsonValue
// tree. Errors are reported through parse_error, never thrown. The member
// names are the ones nlohmann::json::sax_parse requires.
class Builder {
 public:
  using Json = nlohmann::json;
  static constexpr size_t kMaxDepth = 64;

  bool null() { return Put(JsonValue{}); }
  bool boolean(bool b) {
    JsonValue v;
    v.type = JsonValue::Type::kBool;
    v.boolean = b;
    return Put(std::move(v));
  }
  // The lexer hands non-negative integers that fit 64 bits here, other
  // integers to number_integer, and everything else (fractions, exponents,
  // integers beyond 64 bits) to number_float with the text as sent.
  bool number_unsigned(Json::number_unsigned_t x) {
    JsonValue v = Number(std::to_string(x));
    v.is_uint = true;
    v.uint_value = x;
    return Put(std::move(v));
  }
  // Only integers written with a minus sign come here: "-0" is one of them.
  bool number_integer(Json::number_integer_t x) {
    return Put(Number(x == 0 ? "-0" : std::to_string(x)));
  }
  bool number_float(Json::number_float_t, const Json::string_t& text) {
    return Put(Number(text));
  }
  bool string(Json::string_t& s) {
    JsonValue v;
    v.type = JsonValue::Type::kString;
    v.string = std::move(s);
    return Put(std::move(v));
  }
  bool binary(Json::binary_t&) { return Fail("binary value"); }  // not in JSON text
  bool start_object(size_t) { return Open(JsonValue::Type::kObject); }
  bool key(Json::string_t& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(size_t) { return Open(JsonValue::Type::kArray); }
  bool end_array() { return Close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 4: ..."
    std::string_view what = e.what();
    if (const size_t p = what.find("] "); what.starts_with("[json.") && p != what.npos) {
      what.remove_prefix(p + 2);
    }
    return Fail(what);
  }

  absl::StatusOr<JsonValue> Result(bool ok) {
    if (!ok || !done_) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad JSON: ", error_.empty() ? "incomplete document" : error_));
    }
    return std::move(root_);
  }

 private:
  static JsonValue Number(std::string text) {
    JsonValue v;
    v.type = JsonValue::Type::kNumber;
    v.number_text = std::move(text);
    return v;
  }
  bool Fail(std::string_view what) {
    if (error_.empty()) error_ = std::string(what);
    return false;
  }
  // Where the next value goes: the root, the next array element, or the
  // member named by the last key. A container's own vector grows only while
  // it is the innermost open one, so the pointers in open_ stay valid.
  JsonValue* Slot() {
    if (open_.empty()) return &root_;
    JsonValue* top = open_.back();
    if (top->type == JsonValue::Type::kArray) return &top->array.emplace_back();
    return &top->object.emplace_back(JsonMember{std::move(key_), JsonValue{}}).value;
  }
  bool Put(JsonValue v) {
    *Slot() = std::move(v);
    if (open_.empty()) done_ = true;
    return true;
  }
  bool Open(JsonValue::Type type) {
    if (open_.size() >= kMaxDepth) {
      return Fail(absl::StrCat("nested deeper than ", kMaxDepth, " levels"));
    }
    JsonValue* v = Slot();
    v->type = type;
    open_.push_back(v);
    return true;
  }
  bool Close() {
    open_.pop_back();
    if (open_.empty()) done_ = true;
    return true;
  }

  JsonValue root_;
  std::vector<JsonValue*> open_;
  std::string key_;
  bool done_ = false;
  std::string error_;
};

}  // namespace

absl::StatusOr<JsonValue> ParseJson(std::string_view text) {
  // nlohmann-json's lexer takes a NUL for the end of input; in JSON text it
  // can only be an error (RFC 8259 7: control characters are escaped).
  if (const size_t nul = text.find('\0'); nul != text.npos) {
    return absl::InvalidArgumentError(absl::StrCat("bad JSON: NUL byte at offset ", nul));
  }
  Builder b;
  const bool ok = nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &b);
  return b.Result(ok);
}

}  // namespace iwarp::tools
