#include "tools/iwarpctl_json.h"

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

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  absl::StatusOr<JsonValue> Document() {
    JsonValue v;
    if (!Value(&v, 0)) return Error();
    SkipSpace();
    if (pos_ != s_.size()) {
      error_ = "trailing characters";
      return Error();
    }
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  absl::Status Error() const {
    return absl::InvalidArgumentError(absl::StrCat("bad JSON at offset ", pos_, ": ", error_));
  }
  bool Fail(const char* what) {
    error_ = what;
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Fail("unknown literal");
    pos_ += word.size();
    return true;
  }

  bool Value(JsonValue* v, int depth) {
    if (depth > kMaxDepth) return Fail("nested too deeply");
    SkipSpace();
    if (pos_ >= s_.size()) return Fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v->type = JsonValue::Type::kString;
      return String(&v->string);
    }
    if (c == 't' || c == 'f') {
      v->type = JsonValue::Type::kBool;
      v->boolean = c == 't';
      return Literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      v->type = JsonValue::Type::kNull;
      return Literal("null");
    }
    return Number(v);
  }

  bool Object(JsonValue* v, int depth) {
    v->type = JsonValue::Type::kObject;
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a key");
      if (!String(&key)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("expected ':'");
      ++pos_;
      JsonValue member;
      if (!Value(&member, depth + 1)) return false;
      v->object.push_back(JsonMember{std::move(key), std::move(member)});
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or '}'");
    }
  }

  bool Array(JsonValue* v, int depth) {
    v->type = JsonValue::Type::kArray;
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      JsonValue item;
      if (!Value(&item, depth + 1)) return false;
      v->array.push_back(std::move(item));
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or ']'");
    }
  }

  static void AppendUtf8(std::string* out, uint32_t cp) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  bool String(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) break;
      const char e = s_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          if (s_.size() - pos_ < 4) return Fail("short \\u escape");
          uint32_t cp = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = s_[pos_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') cp |= static_cast<uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f') cp |= static_cast<uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') cp |= static_cast<uint32_t>(h - 'A' + 10);
            else return Fail("bad \\u escape");
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          return Fail("bad escape");
      }
    }
    return Fail("unterminated string");
  }

  bool Number(JsonValue* v) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    bool digits = false;
    bool integral = true;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c >= '0' && c <= '9') {
        digits = true;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        integral = false;
      } else {
        break;
      }
      ++pos_;
    }
    if (!digits) return Fail("expected a value");
    v->type = JsonValue::Type::kNumber;
    v->number_text = std::string(s_.substr(start, pos_ - start));
    if (integral && v->number_text[0] != '-') {
      uint64_t x = 0;
      bool overflow = false;
      for (char c : v->number_text) {
        const uint64_t d = static_cast<uint64_t>(c - '0');
        if (x > (UINT64_MAX - d) / 10) overflow = true;
        x = x * 10 + d;
      }
      v->is_uint = !overflow;
      v->uint_value = overflow ? 0 : x;
    }
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  const char* error_ = "";
};

}  // namespace

absl::StatusOr<JsonValue> ParseJson(std::string_view text) { return Parser(text).Document(); }

}  // namespace iwarp::tools
