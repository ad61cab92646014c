// The collectives mscclpp-perf measures, as nccl-tests defines them:
// element counts per rank, the bus-bandwidth factor, the NCCL call, and
// the values each rank puts in and the results it must read back.
#ifndef MSCCLPP_TOOLS_PERF_PERF_COLLECTIVES_HPP_
#define MSCCLPP_TOOLS_PERF_PERF_COLLECTIVES_HPP_

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mscclpp::perf {

enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, AllToAllV, SendRecv };

struct CollInfo {
  Coll coll;
  const char* name;  // nccl-tests' name: all_reduce, ...
  bool reduces;
  bool rooted;
  bool inPlace;  // whether nccl-tests' in-place variant exists for it
};
const std::vector<CollInfo>& collectives();
const CollInfo* findCollective(const std::string& name);

struct DataType {
  ncclDataType_t nccl;
  const char* name;  // nccl-tests' -d name
  size_t bytes;
};
const std::vector<DataType>& dataTypes();
const DataType* findDataType(const std::string& name);
// sum, prod, max, min, avg; -1 when unknown.
int redOpFromName(const std::string& name);
const char* redOpName(int op);

// One size of the sweep: nccl-tests' count (the total elements the
// size column counts) and each rank's send and receive counts.
struct Shape {
  size_t count = 0;
  size_t sendCount = 0;
  size_t recvCount = 0;  // alltoallv: the most any rank receives
  size_t bytes = 0;      // count x element size: the size column
  // alltoallv: the elements rank s sends rank r at [s * nRanks + r].
  std::vector<size_t> splits;
};
// The shape for about `bytes` bytes on n ranks: counts round down to
// what the collective divides evenly, as nccl-tests does.
Shape shapeFor(Coll coll, size_t bytes, size_t elementBytes, int nRanks);

// nccl-tests' bus bandwidth from the algorithm bandwidth.
double busBandwidthFactor(Coll coll, int nRanks);

// What one rank passes to one call.
struct CallBuffers {
  const void* send;
  void* recv;
};
ncclResult_t issue(Coll coll, const Shape& shape, const CallBuffers& b, const DataType& type, ncclRedOp_t op, int root,
                   int rank, int nRanks, ncclComm_t comm, void* stream);

// Host images of a rank's send buffer before the call and of its receive
// buffer after it (the receive buffer's expected contents where the call
// defines them). Values are small whole numbers, exact in every type.
std::vector<char> sendImage(const Shape& shape, const DataType& type, int op, int rank);
// The number of wrong elements in a rank's receive image; elements the
// collective leaves undefined (the non-roots of a reduce) are not counted.
size_t countWrong(Coll coll, const Shape& shape, const DataType& type, int op, int root, int rank, int nRanks,
                  const std::vector<char>& recv);

}  // namespace mscclpp::perf

#endif  // MSCCLPP_TOOLS_PERF_PERF_COLLECTIVES_HPP_
