// Builds the host image of an execution context: every plan reference
// resolved, every channel handle filled, and bounds and shapes checked with
// errors naming plan, rank, threadblock, op and field. The CPU backend runs
// the interpreter on this image; the GPU backend uploads a packed copy.
// Thread-safety: immutable after build(), except the state memory it points
// to, which the blocks of one launch at a time update.
#ifndef MSCCLPP_EXECUTOR_CONTEXT_IMAGE_HPP_
#define MSCCLPP_EXECUTOR_CONTEXT_IMAGE_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/exec_layout.hpp"
#include "executor/rank_resources.hpp"
#include "executor/refusal.hpp"
#include "executor/segment_binding.hpp"
#include "mscclpp/datatype.hpp"
#include "mscclpp/fifo_device.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// Proxy memory ids: our input, output and scratch, then remote buffer k at kFirstRemoteMemoryId + k.
constexpr uint32_t kInputMemoryId = 0;
constexpr uint32_t kOutputMemoryId = 1;
constexpr uint32_t kScratchMemoryId = 2;
constexpr uint32_t kFirstRemoteMemoryId = 3;

// Decides the shape of a call into *shape: plan sizing and the
// reuse_resources scratch limit. Else returns why the plan cannot serve
// these sizes; shapeCall throws that as Error(NotSupported). Both throw
// Error(InvalidArgument) for a rank outside the plan.
Refusal tryShapeCall(const plan::Plan& plan, int rank, uint64_t inputBytes, uint64_t outputBytes, DataType dtype,
                     CallShape* shape);
CallShape shapeCall(const plan::Plan& plan, int rank, uint64_t inputBytes, uint64_t outputBytes, DataType dtype);

// Where an in-place plan's input lies in its data buffer, and that size.
// allgather: input at output + rank * inputBytes. reducescatter: output at
// input + rank * outputBytes. Other collectives: input == output.
struct InPlaceLayout {
  uint64_t dataBytes = 0;
  uint64_t inputOffset = 0;
  uint64_t outputOffset = 0;
};
InPlaceLayout inPlaceLayout(plan::Collective collective, int rank, uint64_t inputBytes, uint64_t outputBytes);

class ContextImage {
 public:
  struct MemoryEntry {
    char* base;
    uint64_t bytes;
  };

  // fifo: the proxy ring port channels push to; required with port channels.
  // timeoutNs: the handles' convenience timeout, not the interpreter's.
  static std::unique_ptr<ContextImage> build(plan::PlanPtr plan, int rank, const CallShape& shape,
                                             RankResources resources, const FifoDeviceHandle* fifo, uint64_t timeoutNs);

  const ExecContextDevice& device() const { return dev_; }
  const plan::Plan& plan() const { return *plan_; }
  const plan::PlanPtr& planPtr() const { return plan_; }
  const plan::RankPlan& rankPlan() const { return plan_->ranks[rank_]; }
  int rank() const { return rank_; }
  const CallShape& shape() const { return shape_; }
  const RankResources& resources() const { return res_; }
  // The proxy's memory table, indexed by memory id (base null: not accessible through the proxy).
  const std::vector<MemoryEntry>& memoryTable() const { return memoryTable_; }
  // A put trigger's source and destination, checked against the memory
  // table: "" with *src and *dst set, or the error naming channel, ids,
  // offsets and sizes. Both backends' proxies resolve puts with it.
  std::string resolvePut(const TriggerFields& f, char** src, char** dst) const;
  // Every offset and size a reducing op touches is a multiple of this (elements must divide it).
  uint64_t reduceGranularity() const { return reduceGranularity_; }
  bool usesPortChannels() const { return !rankPlan().portChannels.empty(); }
  bool usesSwitchChannels() const { return !rankPlan().switchChannels.empty(); }

  // Puts counters, records and flag back to their initial values (a fresh context's state).
  void resetState();

  // Variable-size plans: the segment references, and their binding to one
  // call's count matrix in the host image ("" or why the counts do not fit).
  const std::vector<SegmentRef>& segments() const { return segments_; }
  std::string bindSegments(const uint64_t* counts, size_t elementBytes);

 private:
  ContextImage() = default;
  void resolveThreadblocks();
  void fillChannels(const FifoDeviceHandle* fifo, uint64_t timeoutNs);
  void fillState();

  plan::PlanPtr plan_;
  int rank_ = -1;
  CallShape shape_;
  RankResources res_;
  ExecContextDevice dev_{};
  std::vector<std::vector<ResolvedRef>> refs_;
  std::vector<ThreadblockDevice> blocks_;
  std::vector<MemoryChannelDeviceHandle> memoryChannels_;
  std::vector<PortChannelDeviceHandle> portChannels_;
  std::vector<SwitchChannelDeviceHandle> switchChannels_;
  std::vector<std::vector<void*>> switchMembers_;
  std::vector<uint64_t> expected_;  // memory channels, then port channels
  std::vector<uint32_t> semaphores_;
  std::vector<DeviceSyncer> barriers_;
  std::vector<ExecState> ownState_;
  std::vector<BlockRecord> ownRecords_;
  std::vector<uint32_t> ownAbort_;
  std::vector<MemoryEntry> memoryTable_;
  std::vector<SegmentRef> segments_;
  uint64_t reduceGranularity_ = 0;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CONTEXT_IMAGE_HPP_
