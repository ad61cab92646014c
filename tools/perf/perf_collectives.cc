#include "perf/perf_collectives.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mscclpp::perf {
namespace {

// The value rank r sends at element i: 1 to 3, so that sums
// stay exact; prod uses 1 and 2, so that products stay small.
int64_t value(int op, int r, size_t i) {
  return op == ncclProd ? 1 + static_cast<int64_t>((r + i) % 2) : 1 + static_cast<int64_t>((r + i) % 3);
}

// The reduction over n ranks of element i, as a double: every case is exact.
double reduced(int op, int n, size_t i) {
  double acc = static_cast<double>(value(op, 0, i));
  for (int r = 1; r < n; ++r) {
    const double v = static_cast<double>(value(op, r, i));
    switch (op) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
    }
  }
  return acc;
}

template <class T>
void store(char* at, double v) {
  const T t = static_cast<T>(v);
  std::memcpy(at, &t, sizeof(T));
}

template <class T>
double load(const char* at) {
  T t;
  std::memcpy(&t, at, sizeof(T));
  return static_cast<double>(t);
}

void storeAs(const DataType& type, char* at, double v) {
  switch (type.nccl) {
    case ncclInt8:
      return store<int8_t>(at, v);
    case ncclUint8:
      return store<uint8_t>(at, v);
    case ncclInt32:
      return store<int32_t>(at, v);
    case ncclUint32:
      return store<uint32_t>(at, v);
    case ncclInt64:
      return store<int64_t>(at, v);
    case ncclUint64:
      return store<uint64_t>(at, v);
    case ncclFloat64:
      return store<double>(at, v);
    default:
      return store<float>(at, v);
  }
}

double loadAs(const DataType& type, const char* at) {
  switch (type.nccl) {
    case ncclInt8:
      return load<int8_t>(at);
    case ncclUint8:
      return load<uint8_t>(at);
    case ncclInt32:
      return load<int32_t>(at);
    case ncclUint32:
      return load<uint32_t>(at);
    case ncclInt64:
      return load<int64_t>(at);
    case ncclUint64:
      return load<uint64_t>(at);
    case ncclFloat64:
      return load<double>(at);
    default:
      return load<float>(at);
  }
}

// What the type holds of an exact result: integers wrap as the
// arithmetic does, avg of integers truncates toward zero.
double expectedIn(const DataType& type, int op, int n, double exact) {
  const bool integer = type.nccl != ncclFloat32 && type.nccl != ncclFloat64;
  if (op == ncclAvg) exact = integer ? std::trunc(exact / n) : exact / n;
  char bytes[8];
  storeAs(type, bytes, exact);
  return loadAs(type, bytes);
}

bool near(const DataType& type, double got, double want) {
  if (type.nccl == ncclFloat32) return std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want));
  return got == want;
}

using AlltoAllFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);

// ncclAlltoAll when the NCCL in this process has it (2.28 and the
// shim do), else the grouped sends and receives nccl-tests uses.
ncclResult_t allToAll(const void* send, void* recv, size_t perPeer, const DataType& type, int nRanks, ncclComm_t comm,
                      cudaStream_t stream) {
  static const auto fn = reinterpret_cast<AlltoAllFn>(dlsym(RTLD_DEFAULT, "ncclAlltoAll"));
  if (fn != nullptr) return fn(send, recv, perPeer, type.nccl, comm, stream);
  const size_t block = perPeer * type.bytes;
  ncclResult_t r = ncclGroupStart();
  for (int p = 0; p < nRanks && r == ncclSuccess; ++p) {
    r = ncclSend(static_cast<const char*>(send) + p * block, perPeer, type.nccl, p, comm, stream);
    if (r == ncclSuccess) r = ncclRecv(static_cast<char*>(recv) + p * block, perPeer, type.nccl, p, comm, stream);
  }
  const ncclResult_t end = ncclGroupEnd();
  return r != ncclSuccess ? r : end;
}

// Mixture-of-experts routing: rank s's count elements go to the ranks in
// Zipf-like shares (1/(k+1) for the k-th rank of a rotation that differs
// per sender), none where (s + 2r) % 5 == 3, the rest of the rounding to
// itself. Every rank computes the same matrix.
std::vector<size_t> moeSplits(size_t count, int nRanks) {
  const size_t n = static_cast<size_t>(nRanks);
  std::vector<size_t> splits(n * n, 0);
  for (int s = 0; s < nRanks; ++s) {
    std::vector<double> weight(n, 0);
    double total = 0;
    for (int r = 0; r < nRanks; ++r) {
      const bool none = r != s && (s + 2 * r) % 5 == 3;
      weight[static_cast<size_t>(r)] = none ? 0 : 1.0 / (static_cast<double>((r + s) % nRanks) + 1);
      total += weight[static_cast<size_t>(r)];
    }
    size_t given = 0;
    for (size_t r = 0; r < n; ++r) {
      splits[static_cast<size_t>(s) * n + r] =
          static_cast<size_t>(std::floor(static_cast<double>(count) * weight[r] / total));
      given += splits[static_cast<size_t>(s) * n + r];
    }
    splits[static_cast<size_t>(s) * n + static_cast<size_t>(s)] += count - given;
  }
  return splits;
}

// Where rank r's part from sender s starts in r's receive buffer, in elements.
size_t receiveOffset(const Shape& shape, size_t n, size_t s, size_t r) {
  size_t at = 0;
  for (size_t q = 0; q < s; ++q) at += shape.splits[q * n + r];
  return at;
}

// Where sender s's part for rank r starts in s's send buffer, in elements.
size_t sendOffset(const Shape& shape, size_t n, size_t s, size_t r) {
  size_t at = 0;
  for (size_t q = 0; q < r; ++q) at += shape.splits[s * n + q];
  return at;
}

// One grouped ncclSend/ncclRecv per peer with the shape's counts, zeros
// included: PyTorch's all_to_all_single with split sizes.
ncclResult_t allToAllV(const Shape& shape, const CallBuffers& b, const DataType& type, int rank, int nRanks,
                       ncclComm_t comm, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(nRanks), me = static_cast<size_t>(rank);
  size_t sendAt = 0, recvAt = 0;
  ncclResult_t r = ncclGroupStart();
  for (size_t p = 0; p < n && r == ncclSuccess; ++p) {
    const size_t out = shape.splits[me * n + p], in = shape.splits[p * n + me];
    r = ncclSend(static_cast<const char*>(b.send) + sendAt * type.bytes, out, type.nccl, static_cast<int>(p), comm,
                 stream);
    if (r == ncclSuccess)
      r = ncclRecv(static_cast<char*>(b.recv) + recvAt * type.bytes, in, type.nccl, static_cast<int>(p), comm, stream);
    sendAt += out;
    recvAt += in;
  }
  const ncclResult_t end = ncclGroupEnd();
  return r != ncclSuccess ? r : end;
}

}  // namespace

const std::vector<CollInfo>& collectives() {
  static const std::vector<CollInfo> all = {
      {Coll::AllReduce, "all_reduce", true, false, true},
      {Coll::AllGather, "all_gather", false, false, true},
      {Coll::ReduceScatter, "reduce_scatter", true, false, true},
      {Coll::Broadcast, "broadcast", false, true, true},
      {Coll::Reduce, "reduce", true, true, true},
      {Coll::AllToAll, "alltoall", false, false, false},
      {Coll::AllToAllV, "alltoallv", false, false, false},
      {Coll::SendRecv, "sendrecv", false, false, false},
  };
  return all;
}

const CollInfo* findCollective(const std::string& name) {
  for (const CollInfo& c : collectives()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

const std::vector<DataType>& dataTypes() {
  static const std::vector<DataType> all = {
      {ncclInt8, "int8", 1},   {ncclUint8, "uint8", 1},   {ncclInt32, "int32", 4},   {ncclUint32, "uint32", 4},
      {ncclInt64, "int64", 8}, {ncclUint64, "uint64", 8}, {ncclFloat32, "float", 4}, {ncclFloat64, "double", 8},
  };
  return all;
}

const DataType* findDataType(const std::string& name) {
  for (const DataType& t : dataTypes()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

int redOpFromName(const std::string& name) {
  for (int op = 0; op < 5; ++op) {
    if (name == redOpName(op)) return op;
  }
  return -1;
}

const char* redOpName(int op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? names[op] : "none";
}

Shape shapeFor(Coll coll, size_t bytes, size_t elementBytes, int nRanks) {
  const size_t n = static_cast<size_t>(nRanks);
  Shape s;
  s.count = bytes / elementBytes;
  switch (coll) {
    case Coll::AllGather:
      s.count = s.count / n * n;
      s.sendCount = s.count / n;
      s.recvCount = s.count;
      break;
    case Coll::ReduceScatter:
      s.count = s.count / n * n;
      s.sendCount = s.count;
      s.recvCount = s.count / n;
      break;
    case Coll::AllToAll:
      s.count = s.count / n * n;
      s.sendCount = s.recvCount = s.count;
      break;
    case Coll::AllToAllV:
      s.sendCount = s.count;
      s.splits = moeSplits(s.count, nRanks);
      for (size_t r = 0; r < n; ++r) {
        size_t in = 0;
        for (size_t q = 0; q < n; ++q) in += s.splits[q * n + r];
        s.recvCount = std::max(s.recvCount, in);
      }
      break;
    default:
      s.sendCount = s.recvCount = s.count;
  }
  s.bytes = s.count * elementBytes;
  return s;
}

double busBandwidthFactor(Coll coll, int nRanks) {
  const double n = nRanks;
  switch (coll) {
    case Coll::AllReduce:
      return 2 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AllToAll:
    case Coll::AllToAllV:
      return (n - 1) / n;
    default:
      return 1;
  }
}

ncclResult_t issue(Coll coll, const Shape& shape, const CallBuffers& b, const DataType& type, ncclRedOp_t op, int root,
                   int rank, int nRanks, ncclComm_t comm, void* streamPtr) {
  const auto stream = static_cast<cudaStream_t>(streamPtr);
  switch (coll) {
    case Coll::AllReduce:
      return ncclAllReduce(b.send, b.recv, shape.count, type.nccl, op, comm, stream);
    case Coll::AllGather:
      return ncclAllGather(b.send, b.recv, shape.sendCount, type.nccl, comm, stream);
    case Coll::ReduceScatter:
      return ncclReduceScatter(b.send, b.recv, shape.recvCount, type.nccl, op, comm, stream);
    case Coll::Broadcast:
      return ncclBroadcast(b.send, b.recv, shape.count, type.nccl, root, comm, stream);
    case Coll::Reduce:
      return ncclReduce(b.send, b.recv, shape.count, type.nccl, op, root, comm, stream);
    case Coll::AllToAll:
      return allToAll(b.send, b.recv, shape.count / static_cast<size_t>(nRanks), type, nRanks, comm, stream);
    case Coll::AllToAllV:
      return allToAllV(shape, b, type, rank, nRanks, comm, stream);
    case Coll::SendRecv: {
      ncclResult_t r = ncclGroupStart();
      if (r != ncclSuccess) return r;
      r = ncclSend(b.send, shape.count, type.nccl, (rank + 1) % nRanks, comm, stream);
      if (r == ncclSuccess) r = ncclRecv(b.recv, shape.count, type.nccl, (rank + nRanks - 1) % nRanks, comm, stream);
      const ncclResult_t end = ncclGroupEnd();
      return r != ncclSuccess ? r : end;
    }
  }
  return ncclInvalidArgument;
}

std::vector<char> sendImage(const Shape& shape, const DataType& type, int op, int rank) {
  std::vector<char> image(shape.sendCount * type.bytes);
  for (size_t i = 0; i < shape.sendCount; ++i) {
    storeAs(type, image.data() + i * type.bytes, static_cast<double>(value(op, rank, i)));
  }
  return image;
}

size_t countWrong(Coll coll, const Shape& shape, const DataType& type, int op, int root, int rank, int nRanks,
                  const std::vector<char>& recv) {
  const size_t n = static_cast<size_t>(nRanks);
  size_t wrong = 0;
  if (coll == Coll::AllToAllV) {
    // Past this rank's total the buffer is undefined: not counted.
    const size_t me = static_cast<size_t>(rank);
    for (size_t s = 0; s < n; ++s) {
      const size_t from = sendOffset(shape, n, s, me), at = receiveOffset(shape, n, s, me);
      for (size_t k = 0; k < shape.splits[s * n + me]; ++k) {
        const double want = static_cast<double>(value(op, static_cast<int>(s), from + k));
        if (!near(type, loadAs(type, recv.data() + (at + k) * type.bytes), want)) ++wrong;
      }
    }
    return wrong;
  }
  for (size_t j = 0; j < shape.recvCount; ++j) {
    double want = 0;
    switch (coll) {
      case Coll::AllReduce:
        want = expectedIn(type, op, nRanks, reduced(op, nRanks, j));
        break;
      case Coll::AllGather:
        want = static_cast<double>(value(op, static_cast<int>(j / shape.sendCount), j % shape.sendCount));
        break;
      case Coll::ReduceScatter:
        want = expectedIn(type, op, nRanks, reduced(op, nRanks, static_cast<size_t>(rank) * shape.recvCount + j));
        break;
      case Coll::Broadcast:
        want = static_cast<double>(value(op, root, j));
        break;
      case Coll::Reduce:
        if (rank != root) return 0;  // undefined off the root
        want = expectedIn(type, op, nRanks, reduced(op, nRanks, j));
        break;
      case Coll::AllToAll: {
        const size_t block = shape.count / n;
        want =
            static_cast<double>(value(op, static_cast<int>(j / block), static_cast<size_t>(rank) * block + j % block));
        break;
      }
      case Coll::SendRecv:
        want = static_cast<double>(value(op, (rank + nRanks - 1) % nRanks, j));
        break;
      case Coll::AllToAllV:
        break;  // above
    }
    if (!near(type, loadAs(type, recv.data() + j * type.bytes), want)) ++wrong;
  }
  return wrong;
}

}  // namespace mscclpp::perf
