// The executor's cache of execution contexts: a small least-recently-used
// list. A lookup walks it and splices a hit to the front with no allocation,
// since every call does one. Only an insert allocates a node.
// Capacity: MSCCLPP_EXEC_CONTEXT_CACHE.
// Thread-safety: none (the Executor serialises its calls).
#ifndef MSCCLPP_EXECUTOR_CONTEXT_CACHE_HPP_
#define MSCCLPP_EXECUTOR_CONTEXT_CACHE_HPP_

#include <cstddef>
#include <list>
#include <memory>
#include <utility>
#include <vector>

namespace mscclpp::exec {

template <class Key, class Value>
class ContextCache {
 public:
  explicit ContextCache(size_t capacity = 16) : capacity_(capacity < 1 ? 1 : capacity) {}

  void setCapacity(size_t capacity) { capacity_ = capacity < 1 ? 1 : capacity; }
  size_t capacity() const { return capacity_; }
  size_t size() const { return entries_.size(); }

  // The value of `key` (now the most recently used), or nullptr.
  Value* find(const Key& key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().second.get();
      }
    }
    return nullptr;
  }

  // Adds a value as the most recently used. Values beyond the capacity are
  // handed back; the caller decides when they are destroyed.
  Value& insert(Key key, std::unique_ptr<Value> value, std::vector<std::unique_ptr<Value>>* evicted) {
    entries_.emplace_front(std::move(key), std::move(value));
    while (entries_.size() > capacity_) {
      if (evicted != nullptr) evicted->push_back(std::move(entries_.back().second));
      entries_.pop_back();
    }
    return *entries_.front().second;
  }

  // Removes the entry holding `value` and returns it (nullptr when absent).
  std::unique_ptr<Value> erase(const Value* value) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.get() == value) {
        std::unique_ptr<Value> v = std::move(it->second);
        entries_.erase(it);
        return v;
      }
    }
    return nullptr;
  }

  // Destroys every value, the least recently used first.
  void clear() {
    while (!entries_.empty()) entries_.pop_back();
  }

  // Calls f(key, value) from the most to the least recently used.
  template <class F>
  void forEach(F&& f) {
    for (auto& e : entries_) f(e.first, *e.second);
  }

 private:
  size_t capacity_;
  std::list<std::pair<Key, std::unique_ptr<Value>>> entries_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CONTEXT_CACHE_HPP_
