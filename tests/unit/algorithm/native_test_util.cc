#include "native_test_util.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "algorithm/algorithm_registry.hpp"
#include "core/format.hpp"
#include "executor/emulation/local_world_wiring.hpp"
#include "executor/emulation/reference.hpp"
#include "executor/executor_internal.hpp"
#include "plan/plan_sizing.hpp"

namespace mscclpp::test {

std::string onRanks(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::mutex m;
  std::string first;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(m);
        if (first.empty()) first = strFormat("rank %d: %s", r, e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  return first;
}

const std::vector<DataType>& everyDataType() {
  static const std::vector<DataType> all = {DataType::Int8,     DataType::Uint8,      DataType::Int32,
                                            DataType::Uint32,   DataType::Int64,      DataType::Uint64,
                                            DataType::Float16,  DataType::Float32,    DataType::Float64,
                                            DataType::BFloat16, DataType::Float8E4M3, DataType::Float8E5M2};
  return all;
}

const std::vector<ReduceOp>& everyReduceOp() {
  static const std::vector<ReduceOp> all = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max,
                                            ReduceOp::Min, ReduceOp::Avg,  ReduceOp::PreMulSum};
  return all;
}

namespace {

std::string describe(const NativeCase& c) {
  std::string hosts;
  for (int32_t h : c.hostOf) hosts += std::to_string(h);
  return strFormat("%s, %d ranks%s%s, %llu x %s, %s, %s, root %d", c.algorithm.c_str(), c.nRanks,
                   hosts.empty() ? "" : " on hosts ", hosts.c_str(), static_cast<unsigned long long>(c.count),
                   dataTypeName(c.dtype), reduceOpName(c.op), c.inPlace ? "in place" : "out of place", c.root);
}

}  // namespace

std::string runNative(const NativeCase& c) {
  const int n = c.nRanks;
  auto algorithm = algo::AlgorithmRegistry::instance().find(c.algorithm);
  if (!algorithm) return "no native algorithm " + c.algorithm;
  const plan::Collective coll = algorithm->spec().collective;
  const size_t elem = dataTypeSize(c.dtype);
  uint64_t inBytes = 0, outBytes = 0;
  plan::callBytes(coll, c.count, elem, n, &inBytes, &outBytes);
  std::vector<int32_t> hostOf = c.hostOf.empty() ? std::vector<int32_t>(static_cast<size_t>(n), 0) : c.hostOf;
  exec::NativeProgramPtr program = algorithm->program(hostOf, c.inPlace, c.root, Backend::Cpu);
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  unsigned char scalar[8] = {};
  exec::encodeScalar(c.dtype, 2.0, scalar);
  std::vector<std::vector<char>> inputs(static_cast<size_t>(n), std::vector<char>(inBytes));
  for (int r = 0; r < n; ++r) exec::fillInput(c.dtype, c.op, 11 + c.count, r, inputs[r].data(), inBytes);
  std::vector<const char*> ptrs;
  for (auto& in : inputs) ptrs.push_back(in.data());
  exec::CheckRequest req;
  req.collective = coll;
  req.root = c.root;
  req.nRanks = n;
  req.dtype = c.dtype;
  req.op = c.op;
  req.scalar = scalar;
  req.inputs = ptrs.data();
  req.inputBytes = inBytes;
  req.outputBytes = outBytes;
  std::vector<char> reduced(inBytes);
  if (coll == plan::Collective::AllReduce || coll == plan::Collective::ReduceScatter) {
    exec::computeReduction(req, reduced.data());
    req.reduced = reduced.data();
  }
  const std::string error = onRanks(n, [&](int rank) {
    exec::RuntimeExecutor ex(wiring, Backend::Cpu);
    // NCCL's in-place layouts: allgather's input is its slot of the output,
    // reducescatter's output its slot of the input, the others one buffer.
    const bool gatherLike = coll == plan::Collective::AllGather, scatterLike = coll == plan::Collective::ReduceScatter;
    std::vector<char> send(inBytes), recv(outBytes), both(std::max(inBytes, outBytes));
    for (int it = 0; it < c.iterations; ++it) {
      const void* s = send.data();
      void* d = recv.data();
      const char* out = recv.data();
      if (c.inPlace) {
        std::fill(both.begin(), both.end(), static_cast<char>(exec::kPoisonByte));
        char* in = both.data() + (gatherLike ? rank * inBytes : 0);
        std::memcpy(in, inputs[rank].data(), inBytes);
        s = in;
        d = both.data() + (scatterLike ? rank * outBytes : 0);
        out = static_cast<const char*>(d);
      } else {
        std::memcpy(send.data(), inputs[rank].data(), inBytes);
        std::fill(recv.begin(), recv.end(), static_cast<char>(exec::kPoisonByte));
      }
      if (auto refused = ex.tryExecute(rank, s, d, inBytes, outBytes, c.dtype, program, nullptr, c.op, scalar))
        throw std::runtime_error("refused: " + *refused);
      exec::CheckResult res = exec::checkOutput(req, rank, out);
      if (!res.checked) throw std::runtime_error("the reference cannot check this collective");
      if (res.mismatches != 0)
        throw std::runtime_error(strFormat("iteration %d: %llu mismatches:\n%s", it,
                                           static_cast<unsigned long long>(res.mismatches), res.text.c_str()));
    }
  });
  return error.empty() ? std::string() : describe(c) + ": " + error;
}

}  // namespace mscclpp::test
