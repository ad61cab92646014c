// The algorithms the NCCL shim chooses from, in the integration guide's
// order: a DSL plan the plan registry chooses, then a native algorithm
// (registered ones first, then the built-in ones), else none (the real
// NCCL). A DSL plan and a native kernel are both a Choice, so the shim's
// selector, decision log and agreement are written once. An algorithm
// selector may pick any candidate instead (docs/algorithms.md).
// Thread-safety: any member from any thread; the selector runs unlocked.
#ifndef MSCCLPP_ALGORITHM_ALGORITHM_REGISTRY_HPP_
#define MSCCLPP_ALGORITHM_ALGORITHM_REGISTRY_HPP_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithm/native_algorithm.hpp"
#include "plan/registry.hpp"

namespace mscclpp::algo {

struct Choice {
  enum class Kind { Plan, Native };
  Kind kind = Kind::Plan;
  std::string name;  // "" when none was chosen
  uint64_t fingerprint = 0;
  plan::SelectionPtr plan;                        // Kind::Plan: loaded for the request's rank
  std::shared_ptr<const NativeAlgorithm> native;  // Kind::Native
  std::string reason;                             // why this one, or why none
  explicit operator bool() const { return !name.empty(); }
  // "plan" or "native algorithm", as the decision log says it.
  const char* kindName() const { return kind == Kind::Plan ? "plan" : "native algorithm"; }
};
using ChoicePtr = std::shared_ptr<const Choice>;

class AlgorithmRegistry {
 public:
  enum class Status { Ok, Duplicate, NotFound, Builtin };

  // The process's registry, with the built-in algorithms.
  static AlgorithmRegistry& instance();
  // A registry with the built-in algorithms (tests make their own).
  AlgorithmRegistry();
  AlgorithmRegistry(const AlgorithmRegistry&) = delete;
  AlgorithmRegistry& operator=(const AlgorithmRegistry&) = delete;

  // A registered algorithm goes ahead of those registered before it.
  Status add(NativeSpec spec);
  Status remove(const std::string& name);
  void setSelector(mscclppAlgorithmSelectorFn fn, void* userData);
  // Registered ones (latest first), then built-in ones.
  std::vector<std::shared_ptr<const NativeAlgorithm>> natives() const;
  std::shared_ptr<const NativeAlgorithm> find(const std::string& name) const;

  // The choice for the request; never null (an empty one says why none).
  ChoicePtr select(const Request& request, plan::Registry& plans) const;
  // Bumped by add, remove and setSelector.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const NativeAlgorithm>> registered_;  // latest first
  std::vector<std::shared_ptr<const NativeAlgorithm>> builtin_;
  mscclppAlgorithmSelectorFn selector_ = nullptr;
  void* selectorData_ = nullptr;
  std::atomic<uint64_t> generation_{0};
};

// The plan registry's and the algorithm registry's generations together:
// a cache of choices is stale when it moved.
uint64_t selectionGeneration();

// The built-in algorithms' descriptions (builtin/builtin_algorithms.cc).
std::vector<NativeSpec> builtinSpecs();

}  // namespace mscclpp::algo

#endif  // MSCCLPP_ALGORITHM_ALGORITHM_REGISTRY_HPP_
