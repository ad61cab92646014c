// Any count through the shim, on the default plans and the CPU backend,
// ranks of one process driven in a group. Every collective at counts that
// do and do not fit the plans' chunks runs on a plan, never on the NCCL
// double, and gives NCCL's result as computed here. [defaultplans] runs the
// documented two-rank exchange (grouped ncclSend + ncclRecv).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "shim_test_util.hpp"

using shimtest::Double;
using shimtest::lastError;

namespace {

const Double& dbl() {
  static Double d(NCCL_DOUBLE_PATH);
  return d;
}

bool ncclGotCall() {
  for (const char* name : {"ncclAllReduce(", "ncclAllGather(", "ncclReduceScatter(", "ncclBroadcast(", "ncclReduce(",
                           "ncclAlltoAll(", "ncclGather(", "ncclScatter(", "ncclSend(", "ncclRecv("}) {
    if (dbl().find(name) >= 0) return true;
  }
  return false;
}

std::vector<ncclComm_t> initAll(int n) {
  std::vector<ncclComm_t> comms(n, nullptr);
  REQUIRE(ncclCommInitAll(comms.data(), n, nullptr) == ncclSuccess);
  return comms;
}

enum class Coll { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, Gather, Scatter };

const char* collName(Coll c) {
  static const char* const names[] = {"allreduce", "allgather", "reducescatter", "alltoall",
                                      "broadcast", "reduce",    "gather",        "scatter"};
  return names[static_cast<int>(c)];
}

// Per-rank send parts and receive parts (in counts) of a collective, NCCL's shapes.
void partsOf(Coll c, int n, int* sendParts, int* recvParts) {
  *sendParts = *recvParts = 1;
  if (c == Coll::AllGather || c == Coll::Gather) *recvParts = n;
  if (c == Coll::ReduceScatter || c == Coll::Scatter) *sendParts = n;
  if (c == Coll::AllToAll) *sendParts = *recvParts = n;
}

template <class T>
T valueOf(int rank, size_t i) {
  return static_cast<T>((rank * 3 + static_cast<int>(i % 7)) % 11);  // small: sums of 4 fit every type
}

// NCCL's result for rank r (root 1 for rooted collectives); `defined` is false
// where NCCL leaves the receive buffer untouched (a reduce's or gather's
// non-root rank).
template <class T>
std::vector<T> expected(Coll c, int n, int r, size_t count, bool* defined) {
  const int root = 1;
  *defined = !((c == Coll::Reduce || c == Coll::Gather) && r != root);
  int sp = 0, rp = 0;
  partsOf(c, n, &sp, &rp);
  std::vector<T> out(count * rp);
  for (size_t i = 0; i < out.size(); ++i) {
    T sum = 0;
    switch (c) {
      case Coll::AllReduce:
      case Coll::Reduce:
        for (int k = 0; k < n; ++k) sum = static_cast<T>(sum + valueOf<T>(k, i));
        out[i] = sum;
        break;
      case Coll::ReduceScatter:
        for (int k = 0; k < n; ++k) sum = static_cast<T>(sum + valueOf<T>(k, r * count + i));
        out[i] = sum;
        break;
      case Coll::AllGather:
      case Coll::Gather:
        out[i] = valueOf<T>(static_cast<int>(i / count), i % count);
        break;
      case Coll::AllToAll:
        out[i] = valueOf<T>(static_cast<int>(i / count), r * count + i % count);
        break;
      case Coll::Broadcast:
        out[i] = valueOf<T>(root, i);
        break;
      case Coll::Scatter:
        out[i] = valueOf<T>(root, r * count + i);
        break;
    }
  }
  return out;
}

template <class T>
ncclResult_t call(Coll c, const T* send, T* recv, size_t count, ncclDataType_t dt, ncclComm_t comm) {
  switch (c) {
    case Coll::AllReduce:
      return ncclAllReduce(send, recv, count, dt, ncclSum, comm, nullptr);
    case Coll::AllGather:
      return ncclAllGather(send, recv, count, dt, comm, nullptr);
    case Coll::ReduceScatter:
      return ncclReduceScatter(send, recv, count, dt, ncclSum, comm, nullptr);
    case Coll::AllToAll:
      return ncclAlltoAll(send, recv, count, dt, comm, nullptr);
    case Coll::Broadcast:
      return ncclBroadcast(send, recv, count, dt, 1, comm, nullptr);
    case Coll::Reduce:
      return ncclReduce(send, recv, count, dt, ncclSum, 1, comm, nullptr);
    case Coll::Gather:
      return ncclGather(send, recv, count, dt, 1, comm, nullptr);
    case Coll::Scatter:
      return ncclScatter(send, recv, count, dt, 1, comm, nullptr);
  }
  return ncclInvalidArgument;
}

// Every collective at counts 1..maxCount (and a few larger) on n ranks, out of place, one group per call.
template <class T>
void sweep(int n, ncclDataType_t dt, size_t maxCount) {
  std::vector<ncclComm_t> comms = initAll(n);
  std::vector<size_t> counts;
  for (size_t c = 1; c <= maxCount; ++c) counts.push_back(c);
  for (size_t c : {255, 256, 257, 1000, 1023, 4097}) counts.push_back(c);
  for (Coll c : {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter, Coll::AllToAll, Coll::Broadcast, Coll::Reduce,
                 Coll::Gather, Coll::Scatter}) {
    int sp = 0, rp = 0;
    partsOf(c, n, &sp, &rp);
    for (size_t count : counts) {
      std::vector<std::vector<T>> send(n, std::vector<T>(count * sp)), recv(n, std::vector<T>(count * rp + 3, T(99)));
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < send[r].size(); ++i) send[r][i] = valueOf<T>(r, i);
      dbl().reset();
      REQUIRE(ncclGroupStart() == ncclSuccess);
      for (int r = 0; r < n; ++r)
        REQUIRE(call<T>(c, send[r].data(), recv[r].data(), count, dt, comms[r]) == ncclSuccess);
      ncclResult_t end = ncclGroupEnd();
      INFO(collName(c) << " count " << count << " dtype " << dt << ": " << lastError());
      REQUIRE(end == ncclSuccess);
      REQUIRE_FALSE(ncclGotCall());  // a plan served it
      for (int r = 0; r < n; ++r) {
        bool defined = true;
        std::vector<T> want = expected<T>(c, n, r, count, &defined);
        INFO("rank " << r);
        if (defined) REQUIRE(std::vector<T>(recv[r].begin(), recv[r].begin() + want.size()) == want);
        for (size_t i = count * rp; i < recv[r].size(); ++i) REQUIRE(recv[r][i] == T(99));  // nothing past the end
      }
    }
  }
  for (ncclComm_t comm : comms) CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

}  // namespace

TEST_CASE("any count: 4 ranks, int32, counts 1..40 and a few larger", "[anycount]") {
  sweep<int32_t>(4, ncclInt32, 40);
}

TEST_CASE("any count: 2 ranks, int8, counts 1..70 and a few larger", "[anycount]") { sweep<int8_t>(2, ncclInt8, 70); }

TEST_CASE("any count: 8 ranks, float32, counts 1..9 and a few larger", "[anycount]") {
  sweep<float>(8, ncclFloat32, 9);
}

TEST_CASE("the two-rank exchange runs on default plans at any count", "[defaultplans]") {
  std::vector<ncclComm_t> comms = initAll(2);
  for (size_t count : {1, 3, 64, 1001, 4096}) {
    std::vector<std::vector<float>> send(2, std::vector<float>(count)), recv(2, std::vector<float>(count, -1));
    for (int r = 0; r < 2; ++r)
      for (size_t i = 0; i < count; ++i) send[r][i] = static_cast<float>(r * 10000 + i);
    dbl().reset();
    REQUIRE(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < 2; ++r) {
      REQUIRE(ncclSend(send[r].data(), count, ncclFloat32, 1 - r, comms[r], nullptr) == ncclSuccess);
      REQUIRE(ncclRecv(recv[r].data(), count, ncclFloat32, 1 - r, comms[r], nullptr) == ncclSuccess);
    }
    ncclResult_t end = ncclGroupEnd();
    INFO("count " << count << ": " << lastError() << "\n" << dbl().dump());
    REQUIRE(end == ncclSuccess);
    CHECK_FALSE(ncclGotCall());
    CHECK(recv[0] == send[1]);
    CHECK(recv[1] == send[0]);
  }
  for (ncclComm_t comm : comms) CHECK(ncclCommDestroy(comm) == ncclSuccess);
}
