#include "plan/load_context.hpp"

#include <cstdarg>

#include "core/enforce.hpp"
#include "core/format.hpp"

namespace mscclpp::plan::detail {

std::string Path::str() const {
  const Path* frames[json::kMaxDepth + 8];
  size_t n = 0;
  for (const Path* p = this; p != nullptr && p->parent_ != nullptr && n < sizeof(frames) / sizeof(frames[0]);
       p = p->parent_) {
    frames[n++] = p;
  }
  std::string out;
  for (size_t i = n; i-- > 0;) {
    const Path* f = frames[i];
    if (f->name_ != nullptr) {
      if (!out.empty()) out += '.';
      out += f->name_;
    } else {
      out += '[';
      out += std::to_string(f->index_);
      out += ']';
    }
  }
  return out;
}

std::string literal(const json::Value& v) {
  constexpr size_t kMax = 48;
  switch (v.type) {
    case json::Type::Null:
    case json::Type::Bool:
    case json::Type::Number: {
      std::string s(v.text, v.textLen);
      if (s.size() > kMax) s = s.substr(0, kMax) + "...";
      return s;
    }
    case json::Type::String: {
      std::string s = "\"";
      for (size_t i = 0; i < v.textLen && i < kMax; ++i) {
        const unsigned char c = static_cast<unsigned char>(v.text[i]);
        if (c == '"' || c == '\\') {
          s += '\\';
          s += static_cast<char>(c);
        } else if (c < 0x20 || c >= 0x7F) {
          s += strFormat("\\x%02x", c);
        } else {
          s += static_cast<char>(c);
        }
      }
      if (v.textLen > kMax) s += "...";
      s += '"';
      return s;
    }
    case json::Type::Array:
      return "[...]";
    case json::Type::Object:
      return "{...}";
  }
  return "?";
}

void Checker::fail(const Path& at, const char* fmt, ...) const {
  va_list args;
  va_start(args, fmt);
  std::string what = strFormatV(fmt, args);
  va_end(args);
  if (at.isRoot()) throw Error(ErrorCode::InvalidPlan, source_ + ": " + what);
  throw Error(ErrorCode::InvalidPlan, source_ + ": " + at.str() + ": " + what);
}

void Checker::failPath(const Path& at, const char* fmt, ...) const {
  va_list args;
  va_start(args, fmt);
  std::string what = strFormatV(fmt, args);
  va_end(args);
  throw Error(ErrorCode::InvalidPlan, source_ + ": " + at.str() + " " + what);
}

void Checker::failValue(const Path& at, const json::Value& v, const char* fmt, ...) const {
  va_list args;
  va_start(args, fmt);
  std::string what = strFormatV(fmt, args);
  va_end(args);
  throw Error(ErrorCode::InvalidPlan, source_ + ": " + at.str() + "=" + literal(v) + " " + what);
}

const json::Value& Checker::require(const json::Document& doc, const json::Value& object, const Path& objectPath,
                                    const char* key) const {
  const json::Value* v = doc.member(object, key);
  if (v == nullptr) fail(objectPath, "missing required key \"%s\"", key);
  return *v;
}

void Checker::expectType(const json::Value& v, const Path& at, json::Type type) const {
  if (v.type == type) return;
  const std::string where = at.str();
  if (v.type == json::Type::Array || v.type == json::Type::Object) {
    MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: %s is %s, expected %s", source_.c_str(), where.c_str(),
                  json::typeName(v.type), json::typeName(type));
  }
  failValue(at, v, "is %s, expected %s", json::typeName(v.type), json::typeName(type));
}

uint64_t Checker::integer(const json::Value& v, const Path& at, uint64_t max, const char* limitText) const {
  if (v.type != json::Type::Number) {
    if (v.type == json::Type::Array || v.type == json::Type::Object) {
      MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: %s is %s, expected an integer", source_.c_str(), at.str().c_str(),
                    json::typeName(v.type));
    }
    failValue(at, v, "is %s, expected an integer", json::typeName(v.type));
  }
  // The literal decides: 4.0 is not an integer, though its value is whole.
  bool digitsOnly = true;
  for (uint32_t i = v.negative ? 1 : 0; i < v.textLen; ++i) {
    if (v.text[i] < '0' || v.text[i] > '9') digitsOnly = false;
  }
  if (!digitsOnly) failValue(at, v, "is not an integer");
  if (v.negative && !(v.integer && v.magnitude == 0)) failValue(at, v, "is negative");
  if (!v.integer || v.magnitude > max) {
    failValue(at, v, "does not fit in %s (max %llu)", limitText, static_cast<unsigned long long>(max));
  }
  return v.magnitude;
}

bool Checker::boolean(const json::Value& v, const Path& at) const {
  expectType(v, at, json::Type::Bool);
  return v.boolean;
}

std::string_view Checker::string(const json::Value& v, const Path& at) const {
  expectType(v, at, json::Type::String);
  return v.str();
}

}  // namespace mscclpp::plan::detail
