// Helpers of the executor tests: small plans built as JSON in code, and a
// harness that runs one plan on the CPU backend with every rank a thread and
// gives the test the buffers to check.
#ifndef MSCCLPP_TESTS_UNIT_EXECUTOR_EXEC_TEST_UTIL_HPP_
#define MSCCLPP_TESTS_UNIT_EXECUTOR_EXEC_TEST_UTIL_HPP_

#include <cstdint>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/cpu/cpu_context.hpp"
#include "executor/emulation/local_world.hpp"
#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"

namespace mscclpp::test {

using json = nlohmann::json;

// References: local {type,index,size}, remote {buffer_id,...}, multicast {switch_channel_id,...}.
json lref(const char* type, int index, int size = 1);
json rref(int bufferId, int index, int size = 1);
json mref(int switchChannel, int index, int size = 1);

// An op; `extra` is merged in (channel_type, channel_ids, tbg_info, barrier_id, ...).
json op(const char* name, json src = json::array(), json dst = json::array(), json extra = json::object());
// A threadblock: channels is a list of {"channel_type": t, "channel_ids":
// [...]}, remote buffer refs a list of {"access_channel_type": t,
// "remote_buffer_ids": [...]}.
json threadblock(int id, json ops, json channels = json::array(), json remoteBufferRefs = json::array());
json gpu(int id, int inputChunks, int outputChunks, int scratchChunks, json threadblocks, json channels = json::array(),
         json remoteBuffers = json::array(), json semaphores = json::array());
json planJson(const char* name, const char* collective, const char* protocol, bool inplace, json gpus,
              json extra = json::object());

plan::PlanPtr loadPlan(const json& j);
// A file of tests/data/exec or of the reference corpus.
plan::PlanPtr loadDataPlan(const std::string& relativePath);
std::string referencePlanDir();
std::string execDataDir();
std::string defaultPlanDir();
// Every datatype the executor knows, in enum order.
const std::vector<DataType>& allDataTypes();

// Runs a plan with every rank as a thread: one context per rank, launches on demand.
class ThreadRun {
 public:
  ThreadRun(plan::PlanPtr plan, uint64_t inputBytes, uint64_t outputBytes, DataType dtype = DataType::Float32);
  ~ThreadRun();

  exec::LocalWorld& world() { return *world_; }
  template <class T>
  T* input(int rank) {
    return reinterpret_cast<T*>(world_->input(rank));
  }
  template <class T>
  T* output(int rank) {
    return reinterpret_cast<T*>(world_->output(rank));
  }
  template <class T>
  T* scratch(int rank) {
    return reinterpret_cast<T*>(world_->resources(rank).scratch);
  }
  template <class T, class F>
  void fillInput(int rank, F f) {
    T* p = input<T>(rank);
    for (uint64_t i = 0; i < world_->inputBytes() / sizeof(T); ++i) p[i] = f(i);
  }
  void poisonOutputs();

  // One launch on every rank (threads); returns "" or the errors of the ranks that failed.
  std::string launch(DataType dtype = DataType::Float32, ReduceOp op = ReduceOp::Sum,
                     PacketType packet = PacketType::LL16, double timeoutSeconds = 20);

 private:
  plan::PlanPtr plan_;
  std::unique_ptr<exec::LocalWorld> world_;
  std::vector<std::unique_ptr<exec::CpuContext>> contexts_;
};

}  // namespace mscclpp::test

#endif  // MSCCLPP_TESTS_UNIT_EXECUTOR_EXEC_TEST_UTIL_HPP_
