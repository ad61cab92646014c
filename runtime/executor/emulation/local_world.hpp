// The emulator's world: every rank's buffers, counters and context state in
// one shared anonymous mapping, laid out from the plan before any rank starts.
// Ranks are threads, or processes forked after the world exists: the mapping
// is inherited at the same address, so every pointer is valid in every rank.
// Per rank it holds input and output (or one data buffer), scratch, a copy of
// the input, received counters, context state and a report area. One abort
// flag and one cross-rank barrier serve all ranks.
// Thread-safety: built and destroyed by the owner; accessors from any rank.
#ifndef MSCCLPP_EXECUTOR_EMULATION_LOCAL_WORLD_HPP_
#define MSCCLPP_EXECUTOR_EMULATION_LOCAL_WORLD_HPP_

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "executor/context_image.hpp"
#include "executor/rank_resources.hpp"
#include "mscclpp/datatype.hpp"
#include "mscclpp/device_syncer.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// What a rank reports back through shared memory (fixed size, plain bytes: readable across fork).
struct RankReport {
  uint32_t status;      // 0 not run, 1 ok, 2 failed
  uint32_t errorCode;   // mscclpp::ErrorCode of the failure
  uint32_t launchFlag;  // flag of the last launch
  uint32_t failedIteration;
  uint64_t mismatches;      // total mismatching elements over all iterations
  double launchSeconds;     // sum of launch times
  char error[8192];         // the failure message (NUL-terminated, truncated)
  char mismatchText[4096];  // the first mismatch lines
};

class LocalWorld {
 public:
  // Sizes every rank's call (shapeCall) and allocates the mapping. Throws like shapeCall.
  LocalWorld(plan::PlanPtr plan, uint64_t inputBytes, uint64_t outputBytes, DataType dtype);
  ~LocalWorld();
  LocalWorld(const LocalWorld&) = delete;
  LocalWorld& operator=(const LocalWorld&) = delete;

  int nRanks() const { return static_cast<int>(ranks_.size()); }
  const plan::PlanPtr& plan() const { return plan_; }
  const CallShape& shape(int rank) const { return ranks_[rank].shape; }
  uint64_t inputBytes() const { return inputBytes_; }
  uint64_t outputBytes() const { return outputBytes_; }

  // The resources of rank's context (pointers into the mapping).
  RankResources resources(int rank) const;

  char* input(int rank) const { return at(ranks_[rank].input); }
  char* output(int rank) const { return at(ranks_[rank].output); }
  char* pristineInput(int rank) const { return at(ranks_[rank].pristine); }
  RankReport* report(int rank) const { return reinterpret_cast<RankReport*>(at(ranks_[rank].report)); }
  ExecState* state(int rank) const { return reinterpret_cast<ExecState*>(at(ranks_[rank].state)); }
  BlockRecord* blockRecords(int rank) const { return reinterpret_cast<BlockRecord*>(at(ranks_[rank].records)); }
  uint32_t* abortFlag() const { return reinterpret_cast<uint32_t*>(at(abortOffset_)); }
  DeviceSyncer* barrier() const { return reinterpret_cast<DeviceSyncer*>(at(barrierOffset_)); }
  uint64_t mappedBytes() const { return size_; }

 private:
  struct RankLayout {
    CallShape shape;
    uint64_t data = 0, input = 0, output = 0, scratch = 0, pristine = 0;
    uint64_t state = 0, records = 0, report = 0;
    uint64_t dataBytes = 0;
  };
  // (sender, receiver, pair index, port?) -> counter offset in the receiver's area.
  using CounterKey = std::tuple<int, int, int, bool>;

  char* at(uint64_t offset) const { return base_ + offset; }
  uint64_t reserve(uint64_t bytes, uint64_t align);
  uint64_t counter(const CounterKey& key) const;
  char* bufferOf(int rank, plan::BufferType type) const;
  uint64_t bufferBytes(int rank, plan::BufferType type) const;

  plan::PlanPtr plan_;
  uint64_t inputBytes_, outputBytes_;
  std::vector<RankLayout> ranks_;
  std::map<CounterKey, uint64_t> counters_;
  uint64_t abortOffset_ = 0, barrierOffset_ = 0;
  uint64_t size_ = 0;
  char* base_ = nullptr;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_EMULATION_LOCAL_WORLD_HPP_
