// Internal to the plan loader: JSON paths for messages, and typed field access.
// Every problem reads "<source>: <path>=<value> <problem>" or "<source>: <path>: <problem>".
#ifndef MSCCLPP_PLAN_LOAD_CONTEXT_HPP_
#define MSCCLPP_PLAN_LOAD_CONTEXT_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "plan/json_reader.hpp"

namespace mscclpp::plan::detail {

// A JSON path as a chain of frames on the stack: nothing is allocated,
// and only an error renders it.
// A child must not outlive its parent.
class Path {
 public:
  Path() = default;
  Path key(const char* name) const& { return Path(this, name, kNoIndex); }
  Path at(size_t index) const& { return Path(this, nullptr, index); }
  // A child points to its parent: chained on a temporary, it would dangle.
  Path key(const char* name) && = delete;
  Path at(size_t index) && = delete;
  bool isRoot() const { return parent_ == nullptr; }
  // "gpus[3].threadblocks[5].ops[12].src_buff[1].index"; "" for the root.
  std::string str() const;

 private:
  static constexpr size_t kNoIndex = ~static_cast<size_t>(0);
  Path(const Path* parent, const char* name, size_t index) : parent_(parent), name_(name), index_(index) {}
  const Path* parent_ = nullptr;
  const char* name_ = nullptr;
  size_t index_ = kNoIndex;
};

// The value as a message shows it: scalars as written,
// strings quoted and shortened, containers by kind.
std::string literal(const json::Value& v);

class Checker {
 public:
  explicit Checker(const std::string& source) : source_(source) {}
  const std::string& source() const { return source_; }

  // A rule about an object:
  // "<source>: <path>: <problem>", or "<source>: <problem>" at the root.
  [[noreturn]] void fail(const Path& at, const char* fmt, ...) const __attribute__((format(printf, 3, 4)));
  // A statement about the value at path:
  // "<source>: <path> <problem>", such as "is empty".
  [[noreturn]] void failPath(const Path& at, const char* fmt, ...) const __attribute__((format(printf, 3, 4)));
  // "<source>: <path>=<literal of v> <problem>"
  [[noreturn]] void failValue(const Path& at, const json::Value& v, const char* fmt, ...) const
      __attribute__((format(printf, 4, 5)));

  const json::Value& require(const json::Document& doc, const json::Value& object, const Path& objectPath,
                             const char* key) const;
  void expectType(const json::Value& v, const Path& at, json::Type type) const;
  // A non-negative integer up to max; limitText
  // names the limit in messages: "32 bits".
  uint64_t integer(const json::Value& v, const Path& at, uint64_t max, const char* limitText) const;
  uint32_t u32(const json::Value& v, const Path& at) const {
    return static_cast<uint32_t>(integer(v, at, UINT32_MAX, "32 bits"));
  }
  uint64_t u64(const json::Value& v, const Path& at) const { return integer(v, at, UINT64_MAX, "64 bits"); }
  bool boolean(const json::Value& v, const Path& at) const;
  std::string_view string(const json::Value& v, const Path& at) const;

 private:
  std::string source_;
};

}  // namespace mscclpp::plan::detail

#endif  // MSCCLPP_PLAN_LOAD_CONTEXT_HPP_
