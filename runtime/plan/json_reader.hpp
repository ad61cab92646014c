// A small JSON reader built for plan files: strict RFC 8259 syntax, a nesting limit instead of
// unbounded recursion, integers kept exact up to 64 bits (sign + magnitude), and the one feature a
// general-purpose DOM lacks: arrays named by a SkipRule are syntax-checked and recorded as byte spans
// instead of being parsed, so a communicator can parse only its own rank's threadblocks of an 85 MB
// plan and skip the others at scanning speed.
//
// Ownership: a Document's values point into the text given to the Parser (and into the Document's own
// arena for strings that contained escapes); the text must outlive the Document's use.
// Thread-safety: none; use one Parser/Document per thread.
#ifndef MSCCLPP_PLAN_JSON_READER_HPP_
#define MSCCLPP_PLAN_JSON_READER_HPP_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace mscclpp::plan::json {

// Deeper nesting is an error (a plan is 9 levels deep; the limit protects the stack).
constexpr int kMaxDepth = 64;

enum class Type : uint8_t { Null, Bool, Number, String, Array, Object };
const char* typeName(Type type);  // "null", "a boolean", "a number", "a string", "an array", "an object"

// Byte range [begin, end) of one value in the full text.
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

struct Value {
  const char* key = nullptr;  // member name when this value is an object member (not NUL-terminated)
  uint32_t keyLen = 0;
  Type type = Type::Null;
  bool boolean = false;
  bool integer = false;        // Number written without fraction or exponent whose magnitude fits in 64 bits
  bool negative = false;       // Number has a leading '-'
  bool skipped = false;        // Array whose elements were skipped: spans are Document::spans()[begin, begin+count)
  const char* text = nullptr;  // String: contents (escapes decoded); Number: the literal as written
  uint32_t textLen = 0;
  uint32_t begin = 0;      // Array/Object: index of the first child (or first span when skipped)
  uint32_t count = 0;      // Array/Object: number of children
  uint64_t magnitude = 0;  // Number with integer == true: the absolute value
  size_t offset = 0;       // byte offset in the full text (for line/column in messages)

  std::string_view keyView() const { return std::string_view(key, keyLen); }
  std::string_view str() const { return std::string_view(text, textLen); }
};

class Document {
 public:
  const Value& root() const { return values_[rootIndex_]; }
  bool empty() const { return values_.empty(); }
  // Children of an array or object, in text order.
  const Value& child(const Value& container, size_t i) const { return values_[container.begin + i]; }
  // The member named key, or nullptr. Objects hold no duplicate keys (the parser rejects them).
  const Value* member(const Value& object, std::string_view key) const;
  // Spans recorded for a skipped array.
  const Span& span(const Value& skippedArray, size_t i) const { return spans_[skippedArray.begin + i]; }
  void clear();

 private:
  friend class Parser;
  std::vector<Value> values_;
  std::vector<Value> stack_;  // children of containers still open
  std::vector<Span> spans_;
  std::deque<std::string> unescaped_;  // storage for strings that contained escapes (stable addresses)
  uint32_t rootIndex_ = 0;
};

// Arrays that are members named `key` of an object nested `objectDepth` containers deep (the root
// value has depth 0) are skipped: e.g. {"gpus": [{"threadblocks": [...]}]} with key "threadblocks"
// and objectDepth 2.
struct SkipRule {
  const char* key = nullptr;
  int objectDepth = 0;
};

// Receives the string-valued members and object ends met while skipping, so a caller can gather facts
// (e.g. the reduce ops of a plan) from skipped parts without parsing them. depth counts from the
// skipped element (0).
class SkipObserver {
 public:
  virtual ~SkipObserver() = default;
  virtual void onStringMember(int depth, std::string_view key, std::string_view rawValue) = 0;
  virtual void onObjectEnd(int depth) = 0;
};

class Parser {
 public:
  // source names the text in error messages (a file path or a caller-given name).
  Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  // Parses the whole text (one JSON value, surrounded by optional whitespace and an optional UTF-8 BOM).
  void parseDocument(Document* doc, const SkipRule* rule = nullptr, SkipObserver* observer = nullptr);
  // Parses one value recorded as a span (of the same text) into doc, as a document of its own.
  void parseSpan(const Span& span, Document* doc);

  // "line L, column C" of a byte offset, for messages.
  std::string position(size_t offset) const;

 private:
  [[noreturn]] void fail(const char* p, const std::string& what) const;
  void skipWhitespace();
  void parseValue(Document* doc, int depth, const char* key, uint32_t keyLen);
  void parseContainer(Document* doc, int depth, const char* key, uint32_t keyLen, bool isObject);
  void parseSkippedArray(Document* doc, int depth, const char* key, uint32_t keyLen);
  void parseString(Document* doc, const char** text, uint32_t* len);
  void parseNumber(Value* v);
  void parseLiteral(Value* v);
  void skipValueAt(int depth, int relDepth);
  const char* scanString(bool* hasEscapes);  // p_ at the opening quote; returns the closing quote
  const char* scanNumber(const char* p) const;
  void checkDuplicateKeys(const Value* members, size_t n) const;

  std::string_view text_;
  std::string source_;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  const SkipRule* rule_ = nullptr;
  SkipObserver* observer_ = nullptr;
};

}  // namespace mscclpp::plan::json

#endif  // MSCCLPP_PLAN_JSON_READER_HPP_
