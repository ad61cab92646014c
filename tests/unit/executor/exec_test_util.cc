#include "exec_test_util.hpp"

#include <thread>

#include "core/params.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

namespace mscclpp::test {

json lref(const char* type, int index, int size) { return {{"type", type}, {"index", index}, {"size", size}}; }
json rref(int bufferId, int index, int size) { return {{"buffer_id", bufferId}, {"index", index}, {"size", size}}; }
json mref(int sw, int index, int size) { return {{"switch_channel_id", sw}, {"index", index}, {"size", size}}; }

json op(const char* name, json src, json dst, json extra) {
  json o = {{"name", name}};
  if (!src.empty()) o["src_buff"] = src;
  if (!dst.empty()) o["dst_buff"] = dst;
  for (auto& [k, v] : extra.items()) o[k] = v;
  return o;
}

json threadblock(int id, json ops, json channels, json remoteBufferRefs) {
  return {{"id", id}, {"ops", ops}, {"channels", channels}, {"remote_buffer_refs", remoteBufferRefs}};
}

json gpu(int id, int inputChunks, int outputChunks, int scratchChunks, json threadblocks, json channels,
         json remoteBuffers, json semaphores) {
  return {{"id", id},
          {"input_chunks", inputChunks},
          {"output_chunks", outputChunks},
          {"scratch_chunks", scratchChunks},
          {"threadblocks", threadblocks},
          {"channels", channels},
          {"remote_buffers", remoteBuffers},
          {"semaphores", semaphores}};
}

json planJson(const char* name, const char* collective, const char* protocol, bool inplace, json gpus, json extra) {
  json p = {{"name", name}, {"collective", collective},     {"protocol", protocol},  {"inplace", inplace},
            {"gpus", gpus}, {"num_threads_per_block", 256}, {"buffer_alignment", 16}};
  for (auto& [k, v] : extra.items()) p[k] = v;
  return p;
}

plan::PlanPtr loadPlan(const json& j) { return plan::loadPlanJson(j.dump(), j.value("name", "test") + ".json"); }

std::string referencePlanDir() { return MSCCLPP_TEST_REFERENCE_PLANS; }
std::string execDataDir() { return MSCCLPP_TEST_EXEC_DATA; }
std::string defaultPlanDir() { return MSCCLPP_TEST_DEFAULT_PLANS; }

const std::vector<DataType>& allDataTypes() {
  static const std::vector<DataType> types = {DataType::Int8,     DataType::Uint8,      DataType::Int32,
                                              DataType::Uint32,   DataType::Int64,      DataType::Uint64,
                                              DataType::Float16,  DataType::Float32,    DataType::Float64,
                                              DataType::BFloat16, DataType::Float8E4M3, DataType::Float8E5M2};
  return types;
}

plan::PlanPtr loadDataPlan(const std::string& relativePath) {
  return plan::loadPlanFile(execDataDir() + "/" + relativePath);
}

ThreadRun::ThreadRun(plan::PlanPtr plan, uint64_t inputBytes, uint64_t outputBytes, DataType dtype)
    : plan_(std::move(plan)) {
  world_ = std::make_unique<exec::LocalWorld>(plan_, inputBytes, outputBytes, dtype);
  for (int r = 0; r < world_->nRanks(); ++r) {
    contexts_.push_back(
        std::make_unique<exec::CpuContext>(plan_, r, world_->shape(r), world_->resources(r), params::timeoutSeconds()));
  }
}

ThreadRun::~ThreadRun() { contexts_.clear(); }

void ThreadRun::poisonOutputs() {
  for (int r = 0; r < world_->nRanks(); ++r) std::memset(world_->output(r), 0xA5, world_->outputBytes());
}

std::string ThreadRun::launch(DataType dtype, ReduceOp op, PacketType packet, double timeoutSeconds) {
  std::vector<std::string> errors(contexts_.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < contexts_.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        contexts_[r]->launch(dtype, op, packet, timeoutSeconds);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::string all;
  for (const auto& e : errors)
    if (!e.empty()) all += e + "\n";
  return all;
}

}  // namespace mscclpp::test
