// A small JSON reader for plan files: strict RFC 8259, a nesting limit,
// and integers exact to 64 bits.
// Arrays a SkipRule names are only syntax-checked and kept as byte spans.
// A communicator then parses only its own rank's threadblocks of an 85 MB plan.
// Ownership: values point into the Parser's text, which must outlive the Document,
// or into the Document for strings with escapes.
// Thread-safety: none; use one Parser and Document per thread.
#ifndef MSCCLPP_PLAN_JSON_READER_HPP_
#define MSCCLPP_PLAN_JSON_READER_HPP_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace mscclpp::plan::json {

// Deeper nesting is an error: a plan is 9 levels deep,
// and the limit protects the stack.
constexpr int kMaxDepth = 64;

enum class Type : uint8_t { Null, Bool, Number, String, Array, Object };
const char* typeName(Type type);  // "null", "a boolean", "a number", "a string", "an array", "an object"

// The byte range [begin, end) of one value in the full text.
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

struct Value {
  const char* key = nullptr;  // an object member's name, not NUL-terminated
  uint32_t keyLen = 0;
  Type type = Type::Null;
  bool boolean = false;
  bool integer = false;        // Number: no fraction or exponent, and fits in 64 bits
  bool negative = false;       // Number: has a leading '-'
  bool skipped = false;        // Array: its elements are spans, from begin
  const char* text = nullptr;  // String: contents, escapes decoded; Number: the literal
  uint32_t textLen = 0;
  uint32_t begin = 0;      // Array, Object: the first child, or the first span
  uint32_t count = 0;      // Array, Object: number of children
  uint64_t magnitude = 0;  // Number with integer set: the absolute value
  size_t offset = 0;       // byte offset in the full text, for messages

  std::string_view keyView() const { return std::string_view(key, keyLen); }
  std::string_view str() const { return std::string_view(text, textLen); }
};

class Document {
 public:
  const Value& root() const { return values_[rootIndex_]; }
  bool empty() const { return values_.empty(); }
  // Children of an array or object, in text order.
  const Value& child(const Value& container, size_t i) const { return values_[container.begin + i]; }
  // The member named key, or nullptr.
  // The parser refuses duplicate keys.
  const Value* member(const Value& object, std::string_view key) const;
  // Spans recorded for a skipped array.
  const Span& span(const Value& skippedArray, size_t i) const { return spans_[skippedArray.begin + i]; }
  void clear();

 private:
  friend class Parser;
  std::vector<Value> values_;
  std::vector<Value> stack_;  // children of containers still open
  std::vector<Span> spans_;
  std::deque<std::string> unescaped_;  // strings with escapes; a deque keeps their addresses
  uint32_t rootIndex_ = 0;
};

// Skips the arrays named key in objects objectDepth containers deep.
// The root is at depth 0, so {"gpus": [{"threadblocks": [...]}]}
// skips with key "threadblocks" and objectDepth 2.
struct SkipRule {
  const char* key = nullptr;
  int objectDepth = 0;
};

// Sees the string members and object ends met while skipping.
// A caller gathers facts such as reduce ops
// from skipped parts without parsing them.
// depth counts from the skipped element, which is 0.
class SkipObserver {
 public:
  virtual ~SkipObserver() = default;
  virtual void onStringMember(int depth, std::string_view key, std::string_view rawValue) = 0;
  virtual void onObjectEnd(int depth) = 0;
};

class Parser {
 public:
  // source names the text in error messages: a path or a caller's name.
  Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  // Parses the whole text: one value,
  // with optional whitespace and UTF-8 BOM.
  void parseDocument(Document* doc, const SkipRule* rule = nullptr, SkipObserver* observer = nullptr);
  // Parses one span of the same text into doc, as a document of its own.
  void parseSpan(const Span& span, Document* doc);

  // "line L, column C" of a byte offset, for messages.
  std::string position(size_t offset) const;

 private:
  [[noreturn]] void fail(const char* p, const std::string& what) const;
  // What a walk does with the values it reads.
  // One walker serves all three,
  // so building and skipping share one syntax check and its messages.
  //   Build: adds them to the document.
  //   Skip: checks their syntax and shows string members to the observer.
  //   Spans: skips each element of an array and records its byte range.
  enum class Walk : uint8_t { Build, Skip, Spans };

  void skipWhitespace();
  void parseRoot(Document* doc, const SkipRule* rule, SkipObserver* observer, const char* emptyMessage);
  // depth counts containers from the root, for the nesting limit.
  // relDepth counts them from the skipped element, for the observer.
  void walkValue(Document* doc, Walk walk, int depth, int relDepth, const char* key, uint32_t keyLen);
  void walkContainer(Document* doc, Walk walk, int depth, int relDepth, const char* key, uint32_t keyLen);
  void walkMember(Document* doc, Walk walk, int depth, int relDepth);
  void parseString(Document* doc, const char** text, uint32_t* len);
  void parseNumber(Value* v);
  void parseLiteral(Value* v);
  const char* scanString(bool* hasEscapes);  // from the opening quote at p_ to the closing one
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
