// Native algorithms from C++, with MSCCL++'s names: describe a kernel as a NativeAlgorithm and
// add it to AlgorithmCollectionBuilder::getInstance(); install a selector there. The NCCL shim then
// runs it for calls no DSL plan fits, before the real NCCL (docs/algorithms.md). Inline over the C
// API (algorithm_api.h), so a library of kernels registers with whichever runtime the process runs:
// libmscclpp.so, or the preloaded shim's own copy. Registration may come before or after any
// communicator exists. Thread-safety: any member from any thread.
#ifndef MSCCLPP_ALGORITHM_HPP_
#define MSCCLPP_ALGORITHM_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mscclpp/algorithm_api.h"
#include "mscclpp/algorithm_device.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp {

enum class AlgorithmBufferMode {
  Any = MSCCLPP_ALGORITHM_ANY_BUFFERS,
  InPlace = MSCCLPP_ALGORITHM_IN_PLACE_ONLY,
  OutOfPlace = MSCCLPP_ALGORITHM_OUT_OF_PLACE_ONLY
};

// A registered algorithm as a selector sees it: a DSL plan ("plan") or a native kernel ("native").
struct AlgorithmInfo {
  std::string name, kind, collective;
  uint64_t minMessageBytes = 0, maxMessageBytes = 0;
  AlgorithmBufferMode bufferMode = AlgorithmBufferMode::Any;
  int worldSize = 0, nRanksPerNode = 0;  // 0: any
  std::vector<std::string> tags;
  bool builtin = false;
};

// What a collective call asks for. messageBytes: allgather's output size, else the input size.
struct CollectiveRequest {
  std::string collective;
  int worldSize = 0, nRanksPerNode = 0;
  uint64_t messageBytes = 0;
  bool inPlace = false;
  int dtype = 0, redOp = -1, root = -1;  // NCCL's numbering; -1 where the collective has none
  const void* sendBuffer = nullptr;
  const void* recvBuffer = nullptr;
};

namespace detail {

inline void throwIfFailed(int status, const char* message) {
  if (status >= 0) return;
  const ErrorCode code = status == mscclppInvalidUsage      ? ErrorCode::InvalidUsage
                         : status == mscclppInvalidArgument ? ErrorCode::InvalidArgument
                         : status == mscclppNotSupported    ? ErrorCode::NotSupported
                                                            : ErrorCode::InternalError;
  throw Error(code, std::string(message) + " (" + mscclppStatusName(status) + ")");
}

inline AlgorithmInfo infoOf(const mscclppAlgorithmInfo& c) {
  AlgorithmInfo i;
  i.name = c.name ? c.name : "";
  i.kind = c.kind ? c.kind : "";
  i.collective = c.collective ? c.collective : "";
  i.minMessageBytes = c.minMessageBytes;
  i.maxMessageBytes = c.maxMessageBytes;
  i.bufferMode = static_cast<AlgorithmBufferMode>(c.bufferMode);
  i.worldSize = c.worldSize;
  i.nRanksPerNode = c.nRanksPerNode;
  for (int t = 0; t < c.nTags; ++t) i.tags.emplace_back(c.tags[t]);
  i.builtin = c.builtin != 0;
  return i;
}

#if defined(__CUDACC__)
template <class Kernel>
int gpuQueryAnyType(int, int threads, int* maxThreads, int* blocksPerSm) {
  return algorithmGpuQuery<Kernel>(threads, maxThreads, blocksPerSm);
}
#endif

}  // namespace detail

// A native algorithm's description: which calls it serves, what its kernel
// needs, and the kernel. kernel<K>() takes a functor of algorithm_device.hpp;
// compiled by nvcc the description carries its GPU entry too.
class NativeAlgorithm {
 public:
  NativeAlgorithm(std::string name, std::string collective)
      : name_(std::move(name)), collective_(std::move(collective)) {
    desc_.version = MSCCLPP_ALGORITHM_API_VERSION;
    desc_.maxMessageBytes = UINT64_MAX;
    desc_.blocks = 1;
    desc_.threadsPerBlock = 1024;
  }
  NativeAlgorithm& messageSizeRange(uint64_t minBytes, uint64_t maxBytes) {
    desc_.minMessageBytes = minBytes, desc_.maxMessageBytes = maxBytes;
    return *this;
  }
  NativeAlgorithm& bufferMode(AlgorithmBufferMode mode) {
    desc_.bufferMode = static_cast<int>(mode);
    return *this;
  }
  // 0: any.
  NativeAlgorithm& constraint(int worldSize, int nRanksPerNode) {
    desc_.worldSize = worldSize, desc_.nRanksPerNode = nRanksPerNode;
    return *this;
  }
  NativeAlgorithm& tags(std::vector<std::string> tags) {
    tags_ = std::move(tags);
    return *this;
  }
  // MSCCLPP_ALGORITHM_* flags (algorithm_api.h).
  NativeAlgorithm& resources(uint32_t flags) {
    desc_.resources = flags;
    return *this;
  }
  NativeAlgorithm& scratchParts(uint32_t parts) {
    desc_.scratchParts = parts;
    return *this;
  }
  // Blocks per rank on a GPU and on the CPU backend (0: as on a GPU), threads per GPU block.
  NativeAlgorithm& blocks(uint32_t gpuBlocks, uint32_t hostBlocks = 0, uint32_t threadsPerBlock = 1024) {
    desc_.blocks = gpuBlocks, desc_.hostBlocks = hostBlocks, desc_.threadsPerBlock = threadsPerBlock;
    return *this;
  }
  // What AlgorithmBlock::step(i) means, for diagnostics.
  NativeAlgorithm& steps(std::vector<std::string> names) {
    steps_ = std::move(names);
    return *this;
  }
  template <class Kernel>
  NativeAlgorithm& kernel() {
    desc_.hostBlock = &algorithmHostBlock<Kernel>;
#if defined(__CUDACC__)
    desc_.gpuLaunch = &algorithmGpuLaunch<Kernel>;
    desc_.gpuQuery = &detail::gpuQueryAnyType<Kernel>;
    desc_.gpuDtypes = 0xfffu;  // the kernel reads the datatype from AlgorithmBlock::dtype()
#endif
    return *this;
  }
  // The C description; its pointers live as long as this object.
  const mscclppAlgorithmDesc& desc() const {
    tagPtrs_.clear();
    for (const std::string& t : tags_) tagPtrs_.push_back(t.c_str());
    stepPtrs_.clear();
    for (const std::string& s : steps_) stepPtrs_.push_back(s.c_str());
    desc_.name = name_.c_str();
    desc_.collective = collective_.c_str();
    desc_.tags = tagPtrs_.data();
    desc_.nTags = static_cast<int>(tagPtrs_.size());
    desc_.stepNames = stepPtrs_.data();
    desc_.nSteps = static_cast<int>(stepPtrs_.size());
    return desc_;
  }

 private:
  std::string name_, collective_;
  std::vector<std::string> tags_, steps_;
  mutable std::vector<const char*> tagPtrs_, stepPtrs_;
  mutable mscclppAlgorithmDesc desc_{};
};

// The process's algorithm collection (MSCCL++'s AlgorithmCollectionBuilder):
// native algorithms added here come before the built-in ones, and the
// selector may choose among every candidate, the DSL plan included.
class AlgorithmCollectionBuilder {
 public:
  // Its argument: the candidates in the default order; it returns an index,
  // -1 for none (the real NCCL) or -2 for the default. Every rank must
  // answer alike for the same request.
  using Selector = std::function<int(const std::vector<AlgorithmInfo>&, const CollectiveRequest&)>;

  static std::shared_ptr<AlgorithmCollectionBuilder> getInstance() {
    static std::shared_ptr<AlgorithmCollectionBuilder> instance(new AlgorithmCollectionBuilder());
    return instance;
  }

  void addAlgorithm(const NativeAlgorithm& algorithm) {
    char err[1024];
    detail::throwIfFailed(mscclppAlgorithmRegister(&algorithm.desc(), err, sizeof(err)), err);
  }
  void removeAlgorithm(const std::string& name) {
    char err[1024];
    detail::throwIfFailed(mscclppAlgorithmUnregister(name.c_str(), err, sizeof(err)), err);
  }
  // An empty selector removes it.
  void setAlgorithmSelector(Selector selector) {
    std::lock_guard<std::mutex> lock(mutex_);
    selector_ = std::move(selector);
    detail::throwIfFailed(mscclppAlgorithmSetSelector(selector_ ? &trampoline : nullptr, selector_ ? this : nullptr),
                          "mscclppAlgorithmSetSelector failed");
  }
  // The native algorithms, registered ones first.
  std::vector<AlgorithmInfo> algorithms() const {
    std::vector<AlgorithmInfo> out;
    const int n = mscclppAlgorithmCount();
    for (int i = 0; i < n; ++i) {
      mscclppAlgorithmInfo c{};
      if (mscclppAlgorithmGetInfo(i, &c) == mscclppSuccess) out.push_back(detail::infoOf(c));
    }
    return out;
  }

 private:
  AlgorithmCollectionBuilder() = default;

  static int trampoline(const mscclppAlgorithmInfo* candidates, int n, const mscclppPlanRequest* r, void* self) {
    auto* builder = static_cast<AlgorithmCollectionBuilder*>(self);
    Selector selector;
    {
      std::lock_guard<std::mutex> lock(builder->mutex_);
      selector = builder->selector_;
    }
    if (!selector) return -2;
    std::vector<AlgorithmInfo> infos;
    for (int i = 0; i < n; ++i) infos.push_back(detail::infoOf(candidates[i]));
    CollectiveRequest req;
    req.collective = r->collective ? r->collective : "";
    req.worldSize = r->worldSize, req.nRanksPerNode = r->nRanksPerNode, req.messageBytes = r->messageBytes;
    req.inPlace = r->inPlace != 0, req.dtype = r->dtype, req.redOp = r->redOp, req.root = r->root;
    req.sendBuffer = r->sendBuffer, req.recvBuffer = r->recvBuffer;
    try {
      return selector(infos, req);
    } catch (...) {
      return -1;  // an exception may not cross the C API: no algorithm, the real NCCL runs the call
    }
  }

  std::mutex mutex_;
  Selector selector_;
};

}  // namespace mscclpp

#endif  // MSCCLPP_ALGORITHM_HPP_
