// One native algorithm: its description (mscclpp/algorithm_api.h), the
// check whether it serves a call, and the program the executor runs for a
// communicator's shape: a plan generated for that world, declaring the
// resources the description asks for, and the kernel's entry points.
// Thread-safety: immutable but for the program cache, which has a lock.
#ifndef MSCCLPP_ALGORITHM_NATIVE_ALGORITHM_HPP_
#define MSCCLPP_ALGORITHM_NATIVE_ALGORITHM_HPP_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "executor/native_program.hpp"
#include "executor/refusal.hpp"
#include "mscclpp/algorithm_api.h"
#include "mscclpp/executor.hpp"
#include "plan/registry.hpp"

namespace mscclpp::algo {

// A call as the native step sees it: the plan registry's request, plus
// where every rank is and which backend runs it.
struct Request {
  plan::SelectRequest call;
  const std::vector<int32_t>* hostOf = nullptr;  // per rank: its host's index (hosts numbered by lowest rank)
  Backend backend = Backend::Cpu;
  int device = -1;  // CUDA: the caller's device (multicast checks)
};

struct NativeSpec {
  std::string name;
  plan::Collective collective = plan::Collective::AllReduce;
  uint64_t minBytes = 0, maxBytes = UINT64_MAX;
  int bufferMode = MSCCLPP_ALGORITHM_ANY_BUFFERS;
  int worldSize = 0, nRanksPerNode = 0;
  std::vector<std::string> tags;
  uint32_t resources = 0;
  uint32_t scratchParts = 0;
  uint32_t blocks = 1, hostBlocks = 1, threadsPerBlock = 1024;
  uint32_t gpuDtypes = 0;
  bool builtin = false;
  std::shared_ptr<const exec::NativeKernel> kernel;
};

// The description checked and copied; throws Error(InvalidArgument) naming the bad field.
NativeSpec specOf(const mscclppAlgorithmDesc& desc, bool builtin);

class NativeAlgorithm {
 public:
  explicit NativeAlgorithm(NativeSpec spec);

  const NativeSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  // The same on every rank that registered the same description.
  uint64_t fingerprint() const { return fingerprint_; }
  // Why it cannot serve the request, from facts every rank shares, or nullopt.
  exec::Refusal refusal(const Request& request) const;
  // The program for this world, in place or not, root; made once per shape.
  exec::NativeProgramPtr program(const std::vector<int32_t>& hostOf, bool inPlace, int root, Backend backend) const;
  // The C view; its strings live as long as this object.
  const mscclppAlgorithmInfo& info() const { return info_; }

 private:
  plan::PlanPtr makePlan(const std::vector<int32_t>& hostOf, bool inPlace, int root, Backend backend) const;

  NativeSpec spec_;
  uint64_t fingerprint_ = 0;
  std::vector<const char*> tagPointers_;
  mscclppAlgorithmInfo info_{};
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<std::vector<int32_t>, bool, int, int>, exec::NativeProgramPtr> programs_;
};

// Each rank's host index: hosts numbered in order of their lowest rank.
std::vector<int32_t> hostIndexes(const std::vector<std::string>& hostIds);

}  // namespace mscclpp::algo

#endif  // MSCCLPP_ALGORITHM_NATIVE_ALGORITHM_HPP_
