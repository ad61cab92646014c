// What every example program needs besides its kernels: the command line,
// the ranks (threads here, or this process as one rank of a launched job),
// buffers where the backend needs them, and one printed line per rank.
// It uses public headers only, as user code does. g++ compiles it for the
// CPU backend; nvcc for a visible GPU, else the CPU backend.
#ifndef MSCCLPP_EXAMPLES_EXAMPLE_SUPPORT_HPP_
#define MSCCLPP_EXAMPLES_EXAMPLE_SUPPORT_HPP_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "mscclpp/mscclpp.hpp"

namespace mscclpp {
namespace examples {

// ---- Command line ------------------------------------------------------------------------------
// --nranks N            world size
// --rank R --root H:P   run as rank R of a job whose rank 0 meets the others at H:P
//                       (e.g. started by tests/mp/runtime_launch); without --rank,
//                       every rank is a thread of this process
// --device auto|cpu|gpu auto: a GPU when built by nvcc and one is visible;
//                       gpu: require one, else exit 77 ("skipped")
// --transport T         port channels: auto|shm|tcp|ipc|ib|ib0..ib7; auto is the mapping
//                       transport when the peer shares the host, else TCP; ib is the
//                       InfiniBand port nearest this rank (Communicator::nearestIbTransport)
// --iterations N        repetitions where an example has them
struct Options {
  int nRanks = 2;
  int rank = -1;
  std::string root;
  std::string device = "auto";
  std::string transport = "auto";
  int iterations = 3;
};

constexpr int kExitSkipped = 77;  // Meson's "skipped" exit status

inline bool parseInt(const char* text, int lo, int hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

// Returns "" on success, else what is wrong with the command line.
inline std::string parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return "missing value after " + a;
    const char* v = argv[++i];
    if (a == "--nranks") {
      if (!parseInt(v, 1, 1024, &o->nRanks)) return std::string("--nranks: not a rank count in 1..1024: ") + v;
    } else if (a == "--rank") {
      if (!parseInt(v, 0, 1023, &o->rank)) return std::string("--rank: not a rank in 0..1023: ") + v;
    } else if (a == "--root") {
      o->root = v;
    } else if (a == "--device") {
      o->device = v;
      if (o->device != "auto" && o->device != "cpu" && o->device != "gpu") {
        return std::string("--device: expected auto, cpu or gpu, got ") + v;
      }
    } else if (a == "--transport") {
      o->transport = v;
    } else if (a == "--iterations") {
      if (!parseInt(v, 1, 1000000, &o->iterations)) return std::string("--iterations: not a count: ") + v;
    } else {
      return "unknown option " + a;
    }
  }
  if (o->rank >= 0 && o->root.empty()) return "--rank needs --root HOST:PORT (the rendezvous rank 0 runs)";
  if (o->rank >= o->nRanks)
    return "--rank " + std::to_string(o->rank) + " is not below --nranks " + std::to_string(o->nRanks);
  return "";
}

// ---- Devices -----------------------------------------------------------------------------------
// Number of visible CUDA devices; always 0 in code not built by nvcc.
inline int visibleGpuCount() {
#if defined(__CUDACC__)
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // "no device" is an answer here, not an error to keep
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

// The device a rank's communicator uses: a GPU (rank % visible GPUs) or kHostDevice.
inline int chooseDevice(const Options& o, int rank) {
  int gpus = visibleGpuCount();
  if (o.device == "cpu" || gpus == 0) return kHostDevice;
  return rank % gpus;
}

// ---- Buffers -----------------------------------------------------------------------------------
// `count` zeroed elements that kernels of `device` use and peers can map:
// shared host memory on the CPU backend, device memory on a GPU.
// Copies share the one buffer, which the last copy frees.
template <class T>
class Buffer {
 public:
  static_assert(std::is_trivially_copyable<T>::value, "buffers hold plain data");

  Buffer() = default;
  Buffer(int device, size_t count) : device_(device), count_(count) {
    if (device == kHostDevice) {
      ptr_ = allocSharedHost<T>(count == 0 ? 1 : count);
      return;
    }
#if defined(__CUDACC__)
    void* p = nullptr;
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaMalloc(&p, bytes() == 0 ? 1 : bytes()), "cudaMalloc");
    ptr_ = std::shared_ptr<T>(static_cast<T*>(p), [](T* q) { cudaFree(q); });
    check(cudaMemset(p, 0, bytes()), "cudaMemset");
#else
    throw Error(ErrorCode::NotSupported,
                "Buffer: device " + std::to_string(device) + " needs this example compiled by nvcc; use --device cpu");
#endif
  }
  // A buffer holding `values`.
  Buffer(int device, const std::vector<T>& values) : Buffer(device, values.size()) { upload(values); }

  T* data() const { return ptr_.get(); }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  int device() const { return device_; }

  void upload(const std::vector<T>& values) {
    if (values.size() != count_) {
      throw Error(ErrorCode::InvalidArgument, "Buffer::upload: " + std::to_string(values.size()) +
                                                  " values for a buffer of " + std::to_string(count_));
    }
    if (device_ == kHostDevice) {
      std::memcpy(data(), values.data(), bytes());
      return;
    }
#if defined(__CUDACC__)
    check(cudaMemcpy(data(), values.data(), bytes(), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
#endif
  }

  std::vector<T> download() const {
    std::vector<T> out(count_);
    if (device_ == kHostDevice) {
      std::memcpy(out.data(), data(), bytes());
      return out;
    }
#if defined(__CUDACC__)
    check(cudaMemcpy(out.data(), data(), bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
#endif
    return out;
  }

 private:
#if defined(__CUDACC__)
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
      throw Error(ErrorCode::CudaError, std::string("Buffer: ") + what + ": " + cudaGetErrorString(e));
    }
  }
#endif

  int device_ = kHostDevice;
  size_t count_ = 0;
  std::shared_ptr<T> ptr_;
};

// ---- One rank ----------------------------------------------------------------------------------
struct RankContext {
  std::shared_ptr<Communicator> comm;
  Options options;

  int rank() const { return comm->rank(); }
  int nRanks() const { return comm->size(); }
  int device() const { return comm->device(); }

  // Memory channels map the peer's memory: CUDA IPC or shared memory.
  Transport mappingTransport() const { return device() == kHostDevice ? Transport::HostShm : Transport::CudaIpc; }

  // Port channels: --transport, else mapping on this host and TCP across.
  Transport portTransport(int peer) const {
    const std::string& t = options.transport;
    if (t == "auto") return comm->isSameHost(peer) ? mappingTransport() : Transport::Tcp;
    if (t == "shm") return Transport::HostShm;
    if (t == "tcp") return Transport::Tcp;
    if (t == "ipc") return Transport::CudaIpc;
    if (t == "ib") {
      std::string why;
      Transport ib = comm->nearestIbTransport(&why);
      if (ib == Transport::Unknown) throw Error(ErrorCode::NotSupported, "--transport ib: " + why);
      return ib;
    }
    if (t.size() == 3 && t.compare(0, 2, "ib") == 0 && t[2] >= '0' && t[2] <= '7') {
      return static_cast<Transport>(static_cast<int>(Transport::IB0) + (t[2] - '0'));
    }
    throw Error(ErrorCode::InvalidArgument, "--transport: expected auto, shm, tcp, ipc, ib or ib0..ib7, got " + t);
  }

  // Fails unless the job has exactly n ranks (the two-rank examples).
  void requireRanks(const char* example, int n) const {
    if (nRanks() != n) {
      throw Error(ErrorCode::InvalidArgument, std::string(example) + " runs on exactly " + std::to_string(n) +
                                                  " ranks (got " + std::to_string(nRanks()) + ")");
    }
  }
};

// The proxy reports a failed transfer through its error handler, which the
// examples wire to Communicator::setAsyncError. Then the data is not trusted.
inline void throwIfAsyncError(const Communicator& comm) {
  ErrorCode code;
  std::string message;
  if (comm.asyncError(&code, &message)) throw Error(code, "a proxy failed: " + message);
}

// Builds this rank's communicator: a thread from a shared unique id,
// or a process joining the rendezvous at options.root.
inline std::shared_ptr<Communicator> makeCommunicator(const Options& o, int rank, const UniqueId* id) {
  int device = chooseDevice(o, rank);
  auto bootstrap = std::make_shared<TcpBootstrap>(rank, o.nRanks);
  if (id != nullptr) {
    bootstrap->initialize(*id);
  } else {
    bootstrap->initialize(o.root);
  }
  return std::make_shared<Communicator>(bootstrap, device);
}

// Runs fn as every rank on threads of this process; results in rank order.
// A failing rank aborts its communicator, so its peers fail at once
// rather than at their deadlines. The first failure is rethrown.
template <class Result>
std::vector<Result> runRanksAsThreads(const Options& o, const std::function<Result(RankContext&)>& fn) {
  UniqueId id = TcpBootstrap::createUniqueId();
  std::vector<Result> results(static_cast<size_t>(o.nRanks));
  std::mutex mutex;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < o.nRanks; ++r) {
    threads.emplace_back([&, r] {
      RankContext ctx{nullptr, o};
      try {
        ctx.comm = makeCommunicator(o, r, &id);
        results[r] = fn(ctx);
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (!first) first = std::current_exception();
        }
        if (ctx.comm) ctx.comm->abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
  return results;
}

// Each example's per-rank result has `summary`, one line on what the rank
// did and saw, and `mismatch`: "" when every checked value was right,
// else the first wrong one. The unit tests compare its data too.
inline std::string firstMismatch(const char* what, size_t index, uint64_t got, uint64_t expected) {
  return std::string(what) + "[" + std::to_string(index) + "] = " + std::to_string(got) + ", expected " +
         std::to_string(expected);
}

// The body of an example's main(): parses the command line, runs `run`
// as every rank (threads) or as --rank, and prints "<name>: rank R: <summary>"
// per rank. Exit 0 when every rank here succeeded with the expected data,
// 1 otherwise, 2 on a bad command line, 77 with --device gpu and no GPU.
template <class Result>
int exampleMain(int argc, char** argv, const char* name, int defaultRanks,
                const std::function<Result(RankContext&)>& run) {
  Options o;
  o.nRanks = defaultRanks;
  std::string err = parseOptions(argc, argv, &o);
  if (!err.empty()) {
    std::fprintf(stderr,
                 "%s: %s\nusage: %s [--nranks N] [--rank R --root HOST:PORT] [--device auto|cpu|gpu] "
                 "[--transport auto|shm|tcp|ipc|ibN] [--iterations N]\n",
                 name, err.c_str(), argv[0]);
    return 2;
  }
  if (o.device == "gpu" && visibleGpuCount() == 0) {
#if defined(__CUDACC__)
    std::printf("%s: SKIP: --device gpu: no CUDA device is visible\n", name);
#else
    std::printf("%s: SKIP: --device gpu: this program was compiled without nvcc (CPU backend only)\n", name);
#endif
    return kExitSkipped;
  }
  std::vector<Result> results;
  int firstRank = o.rank < 0 ? 0 : o.rank;
  try {
    if (o.rank < 0) {
      results = runRanksAsThreads<Result>(o, run);
    } else {
      RankContext ctx{makeCommunicator(o, o.rank, nullptr), o};
      try {
        results.push_back(run(ctx));
      } catch (...) {
        ctx.comm->abort();
        throw;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: FAILED: %s\n", name, e.what());
    return 1;
  }
  int status = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    int r = firstRank + static_cast<int>(i);
    if (results[i].mismatch.empty()) {
      std::printf("%s: rank %d: %s\n", name, r, results[i].summary.c_str());
    } else {
      std::printf("%s: rank %d: FAILED: %s\n", name, r, results[i].mismatch.c_str());
      status = 1;
    }
  }
  return status;
}

}  // namespace examples
}  // namespace mscclpp

#endif  // MSCCLPP_EXAMPLES_EXAMPLE_SUPPORT_HPP_
