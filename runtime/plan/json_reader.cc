#include "plan/json_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/enforce.hpp"
#include "core/format.hpp"

namespace mscclpp::plan::json {

const char* typeName(Type type) {
  switch (type) {
    case Type::Null:
      return "null";
    case Type::Bool:
      return "a boolean";
    case Type::Number:
      return "a number";
    case Type::String:
      return "a string";
    case Type::Array:
      return "an array";
    case Type::Object:
      return "an object";
  }
  return "a value";
}

const Value* Document::member(const Value& object, std::string_view key) const {
  if (object.type != Type::Object) return nullptr;
  const Value* m = values_.data() + object.begin;
  for (uint32_t i = 0; i < object.count; ++i) {
    if (m[i].keyLen == key.size() && std::memcmp(m[i].key, key.data(), key.size()) == 0) return &m[i];
  }
  return nullptr;
}

void Document::clear() {
  values_.clear();
  stack_.clear();
  spans_.clear();
  unescaped_.clear();
  rootIndex_ = 0;
}

std::string Parser::position(size_t offset) const {
  offset = std::min(offset, text_.size());
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text_[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  }
  return strFormat("line %zu, column %zu", line, offset - lineStart + 1);
}

void Parser::fail(const char* p, const std::string& what) const {
  size_t offset = static_cast<size_t>(p - text_.data());
  MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: invalid JSON at %s: %s", source_.c_str(), position(offset).c_str(),
                what.c_str());
}

void Parser::skipWhitespace() {
  for (;;) {
    // Indentation is two thirds of a pretty-printed plan:
    // skip spaces eight at a time.
    uint64_t word;
    while (end_ - p_ >= 8 && (std::memcpy(&word, p_, 8), word == 0x2020202020202020ull)) p_ += 8;
    if (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
      ++p_;
      continue;
    }
    return;
  }
}

void Parser::parseDocument(Document* doc, const SkipRule* rule, SkipObserver* observer) {
  if (text_.size() >= (1ull << 32)) {
    MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: %zu bytes of JSON is more than this reader handles (4 GiB)",
                  source_.c_str(), text_.size());
  }
  p_ = text_.data();
  end_ = p_ + text_.size();
  if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;  // UTF-8 byte order mark
  parseRoot(doc, rule, observer, "no JSON value (the input is empty)");
}

void Parser::parseSpan(const Span& span, Document* doc) {
  MSCCLPP_ENFORCE(span.begin <= span.end && span.end <= text_.size(), ErrorCode::InternalError,
                  "span [%zu, %zu) outside the %zu-byte text", span.begin, span.end, text_.size());
  p_ = text_.data() + span.begin;
  end_ = text_.data() + span.end;
  parseRoot(doc, nullptr, nullptr, "no JSON value");
}

void Parser::parseRoot(Document* doc, const SkipRule* rule, SkipObserver* observer, const char* emptyMessage) {
  doc->clear();
  rule_ = rule;
  observer_ = observer;
  skipWhitespace();
  if (p_ == end_) fail(p_, emptyMessage);
  walkValue(doc, Walk::Build, 0, 0, nullptr, 0);
  skipWhitespace();
  if (p_ != end_) fail(p_, "unexpected text after the JSON value");
  doc->values_.push_back(doc->stack_.back());
  doc->stack_.pop_back();
  doc->rootIndex_ = static_cast<uint32_t>(doc->values_.size() - 1);
}

void Parser::walkValue(Document* doc, Walk walk, int depth, int relDepth, const char* key, uint32_t keyLen) {
  if (p_ >= end_) fail(p_, "unexpected end of input, expected a value");
  const char c = *p_;
  if (c == '{' || c == '[') {
    walkContainer(doc, walk, depth, relDepth, key, keyLen);
    return;
  }
  Value v;
  if (walk == Walk::Skip) {
    if (c == '"') {
      bool escapes = false;
      p_ = scanString(&escapes) + 1;
    } else if (c == 't' || c == 'f' || c == 'n') {
      parseLiteral(&v);
    } else {
      p_ = scanNumber(p_);
    }
    return;
  }
  v.key = key;
  v.keyLen = keyLen;
  v.offset = static_cast<size_t>(p_ - text_.data());
  if (c == '"') {
    v.type = Type::String;
    parseString(doc, &v.text, &v.textLen);
  } else if (c == 't' || c == 'f' || c == 'n') {
    parseLiteral(&v);
  } else {
    parseNumber(&v);
  }
  doc->stack_.push_back(v);
}

// The one loop over a container's text,
// whatever the walk does with its elements.
void Parser::walkContainer(Document* doc, Walk walk, int depth, int relDepth, const char* key, uint32_t keyLen) {
  if (depth >= kMaxDepth) fail(p_, strFormat("nesting deeper than %d levels", kMaxDepth));
  const char* open = p_++;
  const bool isObject = *open == '{';
  const char close = isObject ? '}' : ']';
  const size_t mark = walk == Walk::Build ? doc->stack_.size() : walk == Walk::Spans ? doc->spans_.size() : 0;
  skipWhitespace();
  if (p_ < end_ && *p_ == close) {
    ++p_;
  } else {
    for (;;) {
      if (isObject) {
        walkMember(doc, walk, depth, relDepth);
      } else if (walk == Walk::Spans) {
        Span span;
        span.begin = static_cast<size_t>(p_ - text_.data());
        walkValue(nullptr, Walk::Skip, depth + 1, 0, nullptr, 0);
        span.end = static_cast<size_t>(p_ - text_.data());
        doc->spans_.push_back(span);
      } else {
        walkValue(doc, walk, depth + 1, relDepth + 1, nullptr, 0);
      }
      skipWhitespace();
      if (p_ >= end_)
        fail(p_, isObject ? "unexpected end of input inside an object" : "unexpected end of input inside an array");
      if (*p_ == ',') {
        ++p_;
        skipWhitespace();
        continue;
      }
      if (*p_ == close) {
        ++p_;
        break;
      }
      fail(p_, isObject ? "expected ',' or '}' after an object member" : "expected ',' or ']' after an array element");
    }
  }
  if (walk == Walk::Skip) {
    if (isObject && observer_ != nullptr) observer_->onObjectEnd(relDepth);
    return;
  }
  Value v;
  v.key = key;
  v.keyLen = keyLen;
  v.type = isObject ? Type::Object : Type::Array;
  v.offset = static_cast<size_t>(open - text_.data());
  if (walk == Walk::Spans) {
    v.skipped = true;
    v.begin = static_cast<uint32_t>(mark);
    v.count = static_cast<uint32_t>(doc->spans_.size() - mark);
    doc->stack_.push_back(v);
    return;
  }
  const size_t n = doc->stack_.size() - mark;
  if (n >= UINT32_MAX) fail(open, "too many elements");
  if (isObject) checkDuplicateKeys(doc->stack_.data() + mark, n);
  v.begin = static_cast<uint32_t>(doc->values_.size());
  v.count = static_cast<uint32_t>(n);
  doc->values_.insert(doc->values_.end(), doc->stack_.begin() + static_cast<std::ptrdiff_t>(mark), doc->stack_.end());
  doc->stack_.resize(mark);
  doc->stack_.push_back(v);
}

// One "name": value member of an object; walk is Build or Skip,
// as only arrays hold spans.
void Parser::walkMember(Document* doc, Walk walk, int depth, int relDepth) {
  if (p_ >= end_) fail(p_, "unexpected end of input inside an object");
  if (*p_ != '"') fail(p_, "expected a member name (a string)");
  const char* key = nullptr;
  uint32_t keyLen = 0;
  bool escapes = false;
  if (walk == Walk::Build) {
    parseString(doc, &key, &keyLen);
  } else {
    // A skipped name stays raw: escapes are checked but not decoded.
    const char* q = scanString(&escapes);
    key = p_ + 1;
    keyLen = static_cast<uint32_t>(q - key);
    p_ = q + 1;
  }
  skipWhitespace();
  if (p_ >= end_ || *p_ != ':') fail(p_, "expected ':' after a member name");
  ++p_;
  skipWhitespace();
  if (walk == Walk::Build) {
    const bool skipArray = rule_ != nullptr && depth == rule_->objectDepth && p_ < end_ && *p_ == '[' &&
                           std::strlen(rule_->key) == keyLen && std::memcmp(rule_->key, key, keyLen) == 0;
    walkValue(doc, skipArray ? Walk::Spans : Walk::Build, depth + 1, 0, key, keyLen);
  } else if (observer_ != nullptr && p_ < end_ && *p_ == '"') {
    const char* q = scanString(&escapes);
    observer_->onStringMember(relDepth, std::string_view(key, keyLen),
                              std::string_view(p_ + 1, static_cast<size_t>(q - p_ - 1)));
    p_ = q + 1;
  } else {
    walkValue(nullptr, Walk::Skip, depth + 1, relDepth + 1, nullptr, 0);
  }
}

const char* Parser::scanString(bool* hasEscapes) {
  const char* p = p_ + 1;
  for (;;) {
    if (p >= end_) fail(p_, "unterminated string");
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"') return p;
    if (c == '\\') {
      *hasEscapes = true;
      if (p + 1 >= end_) fail(p_, "unterminated string");
      switch (p[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          p += 2;
          break;
        case 'u':
          for (int i = 2; i < 6; ++i) {
            if (p + i >= end_ || !std::isxdigit(static_cast<unsigned char>(p[i])))
              fail(p, "invalid \\u escape (needs 4 hex digits)");
          }
          p += 6;
          break;
        default:
          fail(p, strFormat("invalid escape '\\%c'", p[1]));
      }
      continue;
    }
    if (c < 0x20) fail(p, "control character inside a string (it must be escaped)");
    ++p;
  }
}

namespace {
unsigned hexValue(char c) {
  if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
  return static_cast<unsigned>(c - 'A' + 10);
}
unsigned hex4(const char* p) {
  return (hexValue(p[0]) << 12) | (hexValue(p[1]) << 8) | (hexValue(p[2]) << 4) | hexValue(p[3]);
}
void appendUtf8(std::string* out, unsigned cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}
}  // namespace

void Parser::parseString(Document* doc, const char** text, uint32_t* len) {
  bool escapes = false;
  const char* q = scanString(&escapes);
  const char* s = p_ + 1;
  if (!escapes) {
    *text = s;
    *len = static_cast<uint32_t>(q - s);
    p_ = q + 1;
    return;
  }
  std::string& out = doc->unescaped_.emplace_back();
  out.reserve(static_cast<size_t>(q - s));
  for (const char* p = s; p < q;) {
    if (*p != '\\') {
      out.push_back(*p++);
      continue;
    }
    const char e = p[1];
    if (e != 'u') {
      static const char from[] = "\"\\/bfnrt";
      static const char to[] = "\"\\/\b\f\n\r\t";
      out.push_back(to[std::strchr(from, e) - from]);
      p += 2;
      continue;
    }
    unsigned cp = hex4(p + 2);
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (p + 6 > q || p[0] != '\\' || p[1] != 'u') fail(p - 6, "unpaired UTF-16 surrogate in \\u escape");
      const unsigned lo = hex4(p + 2);
      if (lo < 0xDC00 || lo > 0xDFFF) fail(p - 6, "unpaired UTF-16 surrogate in \\u escape");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      p += 6;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      fail(p - 6, "unpaired UTF-16 surrogate in \\u escape");
    }
    appendUtf8(&out, cp);
  }
  *text = out.data();
  *len = static_cast<uint32_t>(out.size());
  p_ = q + 1;
}

const char* Parser::scanNumber(const char* p) const {
  const char* start = p;
  if (p < end_ && *p == '-') ++p;
  if (p >= end_ || !(*p >= '0' && *p <= '9'))
    fail(start, "invalid value (expected a number, string, object, array, true, false or null)");
  if (*p == '0') {
    ++p;
  } else {
    while (p < end_ && *p >= '0' && *p <= '9') ++p;
  }
  if (p < end_ && *p == '.') {
    ++p;
    if (p >= end_ || !(*p >= '0' && *p <= '9')) fail(start, "invalid number (digits must follow '.')");
    while (p < end_ && *p >= '0' && *p <= '9') ++p;
  }
  if (p < end_ && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end_ && (*p == '+' || *p == '-')) ++p;
    if (p >= end_ || !(*p >= '0' && *p <= '9')) fail(start, "invalid number (digits must follow the exponent)");
    while (p < end_ && *p >= '0' && *p <= '9') ++p;
  }
  return p;
}

void Parser::parseNumber(Value* v) {
  const char* start = p_;
  const char* q = scanNumber(p_);
  v->type = Type::Number;
  v->text = start;
  v->textLen = static_cast<uint32_t>(q - start);
  const char* digits = start;
  v->negative = *digits == '-';
  if (v->negative) ++digits;
  bool integer = true;
  uint64_t m = 0;
  for (const char* d = digits; d < q; ++d) {
    if (*d < '0' || *d > '9') {
      integer = false;  // a fraction or exponent: the loader refuses it
      break;
    }
    const uint64_t digit = static_cast<uint64_t>(*d - '0');
    if (m > (UINT64_MAX - digit) / 10) {
      integer = false;  // magnitude beyond 64 bits
      break;
    }
    m = m * 10 + digit;
  }
  v->integer = integer;
  v->magnitude = integer ? m : 0;
  p_ = q;
}

void Parser::parseLiteral(Value* v) {
  static const struct {
    const char* text;
    size_t len;
    Type type;
    bool value;
  } literals[] = {{"true", 4, Type::Bool, true}, {"false", 5, Type::Bool, false}, {"null", 4, Type::Null, false}};
  for (const auto& l : literals) {
    if (static_cast<size_t>(end_ - p_) >= l.len && std::memcmp(p_, l.text, l.len) == 0) {
      v->type = l.type;
      v->boolean = l.value;
      v->text = p_;
      v->textLen = static_cast<uint32_t>(l.len);
      p_ += l.len;
      return;
    }
  }
  fail(p_, "invalid value (expected a number, string, object, array, true, false or null)");
}

void Parser::checkDuplicateKeys(const Value* members, size_t n) const {
  auto report = [&](const Value& dup) {
    MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: duplicate member \"%.*s\" at %s", source_.c_str(),
                  static_cast<int>(std::min<uint32_t>(dup.keyLen, 64)), dup.key, position(dup.offset).c_str());
  };
  if (n <= 16) {
    for (size_t i = 1; i < n; ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (members[i].keyView() == members[j].keyView()) report(members[i]);
      }
    }
    return;
  }
  std::vector<const Value*> sorted(n);
  for (size_t i = 0; i < n; ++i) sorted[i] = &members[i];
  std::sort(sorted.begin(), sorted.end(), [](const Value* a, const Value* b) {
    return a->keyView() != b->keyView() ? a->keyView() < b->keyView() : a->offset < b->offset;
  });
  for (size_t i = 1; i < n; ++i) {
    if (sorted[i]->keyView() == sorted[i - 1]->keyView()) report(*sorted[i]);
  }
}

}  // namespace mscclpp::plan::json
