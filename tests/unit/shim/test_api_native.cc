// Native algorithms through the NCCL API, the second step of the shim's
// choice: world sizes no default plan serves, every collective a native
// algorithm covers checked against NCCL's result computed here, the real
// NCCL (the double) never called for them; the order plan, native, NCCL;
// the switches of either step; an algorithm selector; the decision log.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "mscclpp/algorithm_api.h"
#include "mscclpp/plan_api.h"
#include "shim_test_util.hpp"

using shimtest::Double;
using shimtest::lastError;
using shimtest::ScopedEnv;

namespace {

const Double& dbl() {
  static Double d(NCCL_DOUBLE_PATH);
  return d;
}

bool ncclGot(const char* name) { return dbl().find(name) >= 0; }

std::vector<ncclComm_t> initAll(int n) {
  std::vector<ncclComm_t> comms(n, nullptr);
  REQUIRE(ncclCommInitAll(comms.data(), n, nullptr) == ncclSuccess);
  return comms;
}

void destroyAll(const std::vector<ncclComm_t>& comms) {
  for (ncclComm_t c : comms) CHECK(ncclCommDestroy(c) == ncclSuccess);
}

enum class Coll { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };
const char* const kCollNames[] = {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"};
constexpr int kRoot = 1;

void partsOf(Coll c, int n, int* sendParts, int* recvParts) {
  *sendParts = *recvParts = 1;
  if (c == Coll::AllGather) *recvParts = n;
  if (c == Coll::ReduceScatter) *sendParts = n;
  if (c == Coll::AllToAll) *sendParts = *recvParts = n;
}

// Small values: a sum or product of 16 ranks fits every integer type, and
// float sums are exact.
template <class T>
T valueOf(int rank, size_t i) {
  return static_cast<T>(1 + (rank * 3 + static_cast<int>(i % 7)) % 3);
}

template <class T>
T fold(ncclRedOp_t op, T a, T b) {
  switch (op) {
    case ncclProd:
      return static_cast<T>(a * b);
    case ncclMax:
      return a < b ? b : a;
    case ncclMin:
      return b < a ? b : a;
    default:
      return static_cast<T>(a + b);
  }
}

// NCCL's result on rank r.
template <class T>
std::vector<T> expected(Coll c, ncclRedOp_t op, int n, int r, size_t count) {
  int sp = 0, rp = 0;
  partsOf(c, n, &sp, &rp);
  std::vector<T> out(count * rp);
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t at = c == Coll::ReduceScatter ? r * count + i : i;
    switch (c) {
      case Coll::AllReduce:
      case Coll::ReduceScatter: {
        T acc = valueOf<T>(0, at);
        for (int k = 1; k < n; ++k) acc = fold<T>(op, acc, valueOf<T>(k, at));
        if (op == ncclAvg) acc = static_cast<T>(acc / n);
        out[i] = acc;
        break;
      }
      case Coll::AllGather:
        out[i] = valueOf<T>(static_cast<int>(i / count), i % count);
        break;
      case Coll::AllToAll:
        out[i] = valueOf<T>(static_cast<int>(i / count), r * count + i % count);
        break;
      case Coll::Broadcast:
        out[i] = valueOf<T>(kRoot, i);
        break;
    }
  }
  return out;
}

template <class T>
ncclResult_t call(Coll c, const T* send, T* recv, size_t count, ncclDataType_t dt, ncclRedOp_t op, ncclComm_t comm) {
  switch (c) {
    case Coll::AllReduce:
      return ncclAllReduce(send, recv, count, dt, op, comm, nullptr);
    case Coll::AllGather:
      return ncclAllGather(send, recv, count, dt, comm, nullptr);
    case Coll::ReduceScatter:
      return ncclReduceScatter(send, recv, count, dt, op, comm, nullptr);
    case Coll::AllToAll:
      return ncclAlltoAll(send, recv, count, dt, comm, nullptr);
    case Coll::Broadcast:
      return ncclBroadcast(send, recv, count, dt, kRoot, comm, nullptr);
  }
  return ncclInvalidArgument;
}

// One call of c on every rank, in a group from this thread; checks every
// rank's result and that the real NCCL was not called.
template <class T>
void checkCall(const std::vector<ncclComm_t>& comms, Coll c, size_t count, ncclDataType_t dt, ncclRedOp_t op,
               bool inPlace) {
  const int n = static_cast<int>(comms.size());
  int sp = 0, rp = 0;
  partsOf(c, n, &sp, &rp);
  std::vector<std::vector<T>> send(n, std::vector<T>(count * sp)), recv(n, std::vector<T>(count * rp + 3, T(99)));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < send[r].size(); ++i) send[r][i] = valueOf<T>(r, i);
    // NCCL's in-place layouts: allgather's input is its slot of the output,
    // reducescatter's output its slot of the input.
    if (inPlace && c == Coll::AllGather) std::copy(send[r].begin(), send[r].end(), recv[r].begin() + r * count);
    if (inPlace && c != Coll::AllGather && c != Coll::ReduceScatter)
      std::copy(send[r].begin(), send[r].end(), recv[r].begin());
  }
  dbl().reset();
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; ++r) {
    const T* s = send[r].data();
    T* d = recv[r].data();
    if (inPlace) {
      if (c == Coll::AllGather) s = d + r * count;
      if (c == Coll::ReduceScatter) d = send[r].data() + r * count;
      if (c != Coll::AllGather && c != Coll::ReduceScatter) s = d;
    }
    REQUIRE(call<T>(c, s, d, count, dt, op, comms[r]) == ncclSuccess);
  }
  ncclResult_t end = ncclGroupEnd();
  INFO(kCollNames[static_cast<int>(c)] << " on " << n << " ranks, count " << count << ", dtype " << dt << ", op " << op
                                       << (inPlace ? ", in place" : "") << ": " << lastError());
  REQUIRE(end == ncclSuccess);
  REQUIRE(dbl().count() == 0);  // a native algorithm served it, not the real NCCL
  for (int r = 0; r < n; ++r) {
    const std::vector<T> want = expected<T>(c, op, n, r, count);
    const T* got = inPlace && c == Coll::ReduceScatter ? send[r].data() + r * count : recv[r].data();
    INFO("rank " << r);
    REQUIRE(std::vector<T>(got, got + want.size()) == want);
    if (!(inPlace && c == Coll::ReduceScatter))
      for (size_t i = count * rp; i < recv[r].size(); ++i) REQUIRE(recv[r][i] == T(99));  // nothing past the end
  }
}

// The log of body run with NCCL_DEBUG=INFO for the shim.
template <class Body>
std::string logged(Body body) {
  const std::string path = "/tmp/mscclpp-shim-native-" + std::to_string(getpid()) + ".log";
  std::remove(path.c_str());
  {
    ScopedEnv debug("NCCL_DEBUG", "INFO");
    ScopedEnv subsys("NCCL_DEBUG_SUBSYS", "SHIM");
    ScopedEnv file("NCCL_DEBUG_FILE", path.c_str());
    ncclResetDebugInit();
    body();
  }
  ncclResetDebugInit();
  return shimtest::takeLog(path);
}

// One grouped float allreduce of count elements on comms.
void allreduce(const std::vector<ncclComm_t>& comms, size_t count) {
  std::vector<std::vector<float>> bufs(comms.size(), std::vector<float>(count, 1.0f));
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (size_t r = 0; r < comms.size(); ++r)
    REQUIRE(ncclAllReduce(bufs[r].data(), bufs[r].data(), count, ncclFloat32, ncclSum, comms[r], nullptr) ==
            ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  for (const auto& b : bufs) REQUIRE(b[count - 1] == static_cast<float>(comms.size()));
}

}  // namespace

TEST_CASE("3, 5, 6 and 16 ranks: every collective on native", "[native]") {
  for (int n : {3, 5, 6, 16}) {
    std::vector<ncclComm_t> comms = initAll(n);
    for (Coll c : {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter, Coll::AllToAll, Coll::Broadcast}) {
      for (size_t count : {size_t{1}, size_t{1001}}) {
        checkCall<int32_t>(comms, c, count, ncclInt32, ncclSum, false);
        if (n == 5) checkCall<int32_t>(comms, c, count, ncclInt32, ncclSum, true);
      }
    }
    checkCall<float>(comms, Coll::AllReduce, 70000, ncclFloat32, ncclSum, false);  // the large allreduce
    destroyAll(comms);
  }
}

TEST_CASE("allreduce and reduce-scatter in every reduce op", "[native]") {
  std::vector<ncclComm_t> comms = initAll(3);
  for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
    for (size_t count : {size_t{7}, size_t{70000}}) {
      checkCall<int64_t>(comms, Coll::AllReduce, count, ncclInt64, op, false);
      checkCall<uint8_t>(comms, Coll::ReduceScatter, count, ncclUint8, op, op == ncclMax);
    }
  }
  destroyAll(comms);
}

TEST_CASE("reduce, gather and scatter have no native step", "[native]") {
  std::vector<ncclComm_t> comms = initAll(3);
  std::vector<float> a(8, 1.0f), b(24, 0.0f);
  dbl().reset();
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 3; ++r)
    REQUIRE(ncclReduce(a.data(), b.data(), 8, ncclFloat32, ncclSum, 0, comms[r], nullptr) == ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  CHECK(ncclGot("ncclReduce("));  // the real NCCL, as without native algorithms
  destroyAll(comms);
}

TEST_CASE("the decision log names the native algorithm", "[native]") {
  std::string log = logged([] {
    std::vector<ncclComm_t> comms = initAll(3);
    allreduce(comms, 1024);         // 4 KiB: LL packets
    allreduce(comms, 1024 * 1024);  // 4 MiB: read-reduce
    destroyAll(comms);
  });
  INFO(log);
  CHECK(log.find("[0] MSCCLPP INFO SHIM native algorithm allreduce_packets ran: allreduce, 3 ranks, 4 KiB, f32, sum, "
                 "in-place") != std::string::npos);
  CHECK(log.find("[2] MSCCLPP INFO SHIM native algorithm allreduce_read_reduce ran: allreduce, 3 ranks, 4 MiB") !=
        std::string::npos);
}

namespace {

// In place: the DSL plan; out of place: the first native candidate.
int planInPlace(const mscclppAlgorithmInfo* candidates, int n, const mscclppPlanRequest* request, void*) {
  const std::string want = request->inPlace ? "plan" : "native";
  for (int i = 0; i < n; ++i)
    if (want == candidates[i].kind) return i;
  return -2;
}

}  // namespace

TEST_CASE("the destroy summary counts native calls apart", "[native]") {
  char err[512];
  REQUIRE(mscclppPlanRegisterFile(DEFAULT_PLAN_DIR "/allreduce_ll_n2_ip.json", nullptr, 0, err, sizeof(err)) ==
          mscclppSuccess);
  REQUIRE(mscclppAlgorithmSetSelector(&planInPlace, nullptr) == mscclppSuccess);
  std::string log = logged([] {
    std::vector<ncclComm_t> comms = initAll(2);
    allreduce(comms, 256);  // in place
    std::vector<std::vector<float>> in(2, std::vector<float>(256, 1.0f)), out(2, std::vector<float>(256));
    for (int k = 0; k < 2; ++k) {
      REQUIRE(ncclGroupStart() == ncclSuccess);
      for (int r = 0; r < 2; ++r)
        REQUIRE(ncclAllReduce(in[r].data(), out[r].data(), 256, ncclFloat32, ncclSum, comms[r], nullptr) ==
                ncclSuccess);
      REQUIRE(ncclGroupEnd() == ncclSuccess);
    }
    CHECK(out[1][255] == 2.0f);
    destroyAll(comms);
  });
  REQUIRE(mscclppAlgorithmSetSelector(nullptr, nullptr) == mscclppSuccess);
  REQUIRE(mscclppPlanUnregister("allreduce_ll_n2_ip", err, sizeof(err)) == mscclppSuccess);
  INFO(log);
  CHECK(log.find("plan allreduce_ll_n2_ip ran: allreduce, 2 ranks, 1 KiB, f32, sum, in-place") != std::string::npos);
  CHECK(log.find("native algorithm allreduce_packets ran: allreduce, 2 ranks, 1 KiB, f32, sum\n") != std::string::npos);
  CHECK(log.find("rank 0 of 2 destroyed; allreduce: 3 calls, 3 KiB, 1 via plans, 2 via native algorithms, 0 via "
                 "NCCL") != std::string::npos);
}

TEST_CASE("MSCCLPP_NATIVE_ENABLE=0 sends the call to NCCL", "[native]") {
  std::string log = logged([] {
    ScopedEnv off("MSCCLPP_NATIVE_ENABLE", "0");
    ncclResetDebugInit();
    std::vector<ncclComm_t> comms = initAll(3);
    std::vector<std::vector<float>> bufs(3, std::vector<float>(16, 1.0f));
    dbl().reset();
    REQUIRE(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < 3; ++r)
      REQUIRE(ncclAllReduce(bufs[r].data(), bufs[r].data(), 16, ncclFloat32, ncclSum, comms[r], nullptr) ==
              ncclSuccess);
    REQUIRE(ncclGroupEnd() == ncclSuccess);
    CHECK(ncclGot("ncclAllReduce("));
    destroyAll(comms);
  });
  INFO(log);
  CHECK(log.find("NCCL ran because no plan for allreduce on 3 ranks") != std::string::npos);
  CHECK(log.find("; the native algorithms are off (MSCCLPP_NATIVE_ENABLE=0)") != std::string::npos);
}

TEST_CASE("a DSL plan comes first; MSCCLPP_PLANS_ENABLE=0 skips it", "[native]") {
  char err[512];
  REQUIRE(mscclppPlanRegisterFile(DEFAULT_PLAN_DIR "/allreduce_ll_n2_ip.json", nullptr, 0, err, sizeof(err)) ==
          mscclppSuccess);
  std::string log = logged([] {
    std::vector<ncclComm_t> comms = initAll(2);
    allreduce(comms, 256);
    destroyAll(comms);
  });
  INFO(log);
  CHECK(log.find("[0] MSCCLPP INFO SHIM plan allreduce_ll_n2_ip ran") != std::string::npos);
  log = logged([] {
    ScopedEnv off("MSCCLPP_PLANS_ENABLE", "0");
    ncclResetDebugInit();
    std::vector<ncclComm_t> comms = initAll(2);
    allreduce(comms, 256);
    destroyAll(comms);
  });
  INFO(log);
  CHECK(log.find("[0] MSCCLPP INFO SHIM native algorithm allreduce_packets ran") != std::string::npos);
  REQUIRE(mscclppPlanUnregister("allreduce_ll_n2_ip", err, sizeof(err)) == mscclppSuccess);
}

namespace {

// Picks the read-reduce allreduce, or none (the real NCCL) when told so.
int pickReadReduce(const mscclppAlgorithmInfo* candidates, int n, const mscclppPlanRequest*, void* none) {
  if (*static_cast<bool*>(none)) return -1;
  for (int i = 0; i < n; ++i)
    if (std::string(candidates[i].name) == "allreduce_read_reduce") return i;
  return -2;
}

}  // namespace

TEST_CASE("an algorithm selector picks among the candidates", "[native]") {
  static bool none = false;
  REQUIRE(mscclppAlgorithmSetSelector(&pickReadReduce, &none) == mscclppSuccess);
  std::string log = logged([] {
    std::vector<ncclComm_t> comms = initAll(3);
    allreduce(comms, 64);  // small: the default would be LL packets
    none = true;
    REQUIRE(mscclppAlgorithmSetSelector(&pickReadReduce, &none) == mscclppSuccess);  // a change: decided anew
    dbl().reset();
    std::vector<std::vector<float>> bufs(3, std::vector<float>(64, 1.0f));
    REQUIRE(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < 3; ++r)
      REQUIRE(ncclAllReduce(bufs[r].data(), bufs[r].data(), 64, ncclFloat32, ncclSum, comms[r], nullptr) ==
              ncclSuccess);
    REQUIRE(ncclGroupEnd() == ncclSuccess);
    CHECK(ncclGot("ncclAllReduce("));
    destroyAll(comms);
  });
  REQUIRE(mscclppAlgorithmSetSelector(nullptr, nullptr) == mscclppSuccess);
  INFO(log);
  CHECK(log.find("native algorithm allreduce_read_reduce ran: allreduce, 3 ranks, 256 B") != std::string::npos);
  CHECK(log.find("NCCL ran because the algorithm selector chose none of") != std::string::npos);
}
