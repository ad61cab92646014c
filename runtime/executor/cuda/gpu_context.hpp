// One GPU execution context: what one rank needs to launch one plan on one
// set of user buffers. Built once, collectively with the plan's other ranks,
// then launched any number of times with no host synchronisation or allocation.
// Nothing after the build's directory exchange may synchronise the device:
// peers may already spin on this rank (docs/cuda-backend.md, "Execution contexts").
// Ownership: its memory comes from and returns to its world's ContextMemory;
// owns its proxy; keeps peers' mappings and its world alive. Shared by the
// backend's cache and by graphs that captured it; destroyed on the
// ContextReleaser's thread. Thread-safety: one thread at a time.
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_CONTEXT_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_CONTEXT_HPP_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "executor/call_descriptor.hpp"
#include "executor/call_monitor.hpp"
#include "executor/context_image.hpp"
#include "executor/cuda/call_binding.hpp"
#include "executor/cuda/device_image.hpp"
#include "executor/cuda/gpu_launch.hpp"
#include "executor/cuda/gpu_memory.hpp"
#include "executor/cuda/gpu_world.hpp"
#include "executor/dtypes.hpp"
#include "executor/native_program.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp/memory.hpp"
#include "mscclpp/proxy.hpp"

namespace mscclpp::detail {
class NvlsBinding;
}

namespace mscclpp::exec {

class FarPorts;

struct GpuCallArgs {
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;  // the call's op (avg and premulsum run the plan as sum)
  PacketType packet = PacketType::LL16;
  void* stream = nullptr;
  const void* scalar = nullptr;  // premulsum: one element of dtype, host memory
  bool capturing = false;        // the stream is being captured into a CUDA graph
  uint64_t captureId = 0;        // while capturing: the capture sequence (unique in the process)
  void* graph = nullptr;         // while capturing: its graph (cudaGraph_t)
  uint32_t call = 0;             // LaunchArgs::call: the call's tag for its published waits (launchCallTag)
  // Variable-size plans: the count matrix, in host or device memory.
  const uint64_t* counts = nullptr;
  bool countsOnDevice = false;
};

class GpuContext : public std::enable_shared_from_this<GpuContext> {
 public:
  // Collective: every rank of the plan builds for the same call in the same
  // order. Returns the refusal, decided before anything is exchanged, when
  // the plan cannot run here; *built stays empty. Throws other errors.
  // Buffers are bound zero-copy where possible, and staged when peers in
  // other processes need a buffer CUDA IPC cannot export. The image is
  // uploaded on `stream`, ahead of the first launch. The exchange carries
  // `call`: ranks building for different calls fail with InvalidUsage.
  // native: a native algorithm's program, whose kernel runs instead of the interpreter; null for a plan.
  static Refusal create(std::shared_ptr<GpuWorld> world, const plan::PlanPtr& plan, int rank, const CallShape& shape,
                        const CallRequest& request, const CallDescriptor& call, DataType dtype, ReduceOp nativeOp,
                        void* stream, std::shared_ptr<GpuContext>* built, NativeProgramPtr native = nullptr);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  // Enqueues the call on args.stream, or returns why it cannot run before
  // enqueueing anything. Throws the diagnosis when the context failed earlier.
  Refusal launch(const GpuCallArgs& args);

  // Whether an earlier launch raised the abort flag; reads mapped memory.
  bool failureRaised() const;
  // What the call monitor reads while a launch runs: its blocks' waits.
  // Safe from any thread, also after the context is gone.
  const std::shared_ptr<const std::function<LiveCall()>>& liveSource() const { return liveSource_; }
  // A launch failure a block published (describeSlotFailure), or "": any
  // thread, also after the context went (then always "").
  const std::shared_ptr<const std::function<std::string()>>& failureSource() const { return failureSource_; }
  // Synchronises with the failed launch and throws its diagnosis. Marks the
  // context unusable.
  [[noreturn]] void throwFailure();

  const CallBinding& binding() const { return binding_; }
  const ContextImage& image() const { return *image_; }
  uint32_t sharedBytes() const { return sharedBytes_; }
  uint32_t blocks() const { return image_ ? image_->device().nBlocks : 0; }
  // The blocks its kernels put on this GPU, for the residency of later calls.
  const ResidentLoad& residentLoad() const { return load_; }
  // Device memory this context allocated (region + image).
  uint64_t deviceBytes() const;

 private:
  struct KernelChoice {
    bool ready = false;
    uint32_t sharedBytes = 0;
  };
  struct Peer;
  struct LiveWaitReader;

  GpuContext(std::shared_ptr<GpuWorld> world, const plan::PlanPtr& plan, int rank);
  // Before the build point: the refusals, then what needs no exchange.
  Refusal admit(DataType dtype, ReduceOp nativeOp);
  void build(const CallShape& shape, const CallRequest& request, const CallDescriptor& call, void* stream);
  Refusal precheck(DataType dtype, ReduceOp op);
  // The executor kernel's limits, or the native kernel's (no shared memory).
  Refusal queryKernel(DataType dtype, ReduceOp op, int threads, uint32_t sharedBytes, GpuKernelQuery* out);
  // After the image: the native kernel's view, relocated and uploaded on stream.
  void uploadNativeView(const PackedImage& packed, void* stream);
  Refusal kernelFor(DataType dtype, ReduceOp op, const KernelChoice** choice);
  Refusal decideKernel(DataType dtype, ReduceOp op, KernelChoice* choice);
  void bindBuffers(const CallRequest& request, bool crossProcessPeers);
  void retainInCapturedGraph(uint64_t captureId, void* graph);
  // The bytes one call's steps around the kernel move: the binding's, or
  // for a variable-size call with host counts, those its counts name.
  // fillOutput: a staged output starts as a copy of the receive buffer, so
  // copying it back whole keeps the bytes no segment names (device counts).
  struct CallSteps {
    uint64_t preBytes = 0, postBytes = 0, divideBytes = 0;
    bool fillOutput = false;
  };
  Refusal bindCounts(const GpuCallArgs& a, CallSteps* steps);
  void bindSwitchChannels(const CallShape& shape, int tag);
  void exchange(const CallShape& shape, int tag, const CallDescriptor& call);
  void writeSignal(uint32_t channel, uint64_t value, std::string* error);
  std::string handleRequest(const TriggerFields& f);
  void finishProxyRequests();
  char* placePtr(const BufferPlace& p) const;

  std::shared_ptr<GpuWorld> world_;
  plan::PlanPtr plan_;
  NativeProgramPtr native_;
  int rank_;
  std::string name_;  // "plan X (source) rank r"
  CallBinding binding_;
  int threads_ = 0;
  std::vector<uint64_t> blockListBytes_;
  std::vector<int> coResident_;         // ranks whose blocks share this GPU's SMs with ours
  std::vector<int> residentElsewhere_;  // those of them in other processes (MPS)
  ResidentLoad load_;                   // our plan's blocks per resident rank, the smallest blocksPerSm of our kernels
  bool cooperative_ = false;            // launch cooperatively: our blocks wait on each other
  uint32_t sharedBytes_ = 0;            // the choice made for the building call's kernel
  KernelChoice kernels_[kNumDataTypes][kNumNativeOps];

  // Our device memory: [scratch | counters | staging].
  std::unique_ptr<DeviceAllocation> region_;
  uint64_t scratchOffset_ = 0, stagingOffset_ = 0;
  std::vector<std::pair<std::tuple<int, int, bool>, uint64_t>> counters_;  // (peer, pair, port) -> offset
  std::vector<RegisteredMemory> exported_;  // our registrations (kept while peers may use them)
  std::vector<std::shared_ptr<Peer>> peers_;
  RankResources resources_;

  std::unique_ptr<PinnedAllocation> abort_;                      // host-mapped: the kernel's waits poll it
  std::shared_ptr<void> failureRegistration_;                    // the communicator raises abort_ when it fails
  std::unique_ptr<PinnedAllocation> liveWaits_;                  // host-mapped LiveWaitSlot per threadblock
  std::shared_ptr<LiveWaitReader> liveWaitReader_;               // reads liveWaits_ until the context goes
  std::shared_ptr<const std::function<LiveCall()>> liveSource_;  // calls liveWaitReader_
  cudaStream_t proxyStream_ = nullptr;                           // the rank's (GpuWorld::proxyStream)

  // Calls liveWaitReader_ for a failure its blocks published.
  std::shared_ptr<const std::function<std::string()>> failureSource_;
  std::unique_ptr<ProxyService> proxy_;
  std::unique_ptr<FarPorts> far_;             // port channels to other hosts, or null
  std::vector<uint64_t> signalsSent_;         // per port channel: the value our proxy last wrote to the peer
  bool proxyDeviceSet_ = false;               // the proxy thread selected our device
  uint64_t* fifoHead_ = nullptr;              // the FIFO's head (device memory): requests pushed
  std::atomic<uint64_t> requestsHandled_{0};  // requests the proxy performed
  void* writeValue64_ = nullptr;              // cuStreamWriteValue64 when the device supports it

  std::unique_ptr<ContextImage> image_;
  std::unique_ptr<DeviceAllocation> imageMemory_;
  std::unique_ptr<PinnedAllocation> imageUpload_;  // what the upload reads, kept while it may
  std::vector<int> quiesceDevices_;                // the devices of this process's ranks: idle before we go
  // NVLS: per switch channel, the multicast address of its binding (null: the members'
  // buffers are used); the bindings stay alive with the context.
  std::vector<void*> multicast_;
  std::vector<std::shared_ptr<detail::NvlsBinding>> nvls_;
  const ExecContextDevice* deviceContext_ = nullptr;
  // Variable-size plans (else null), after the image in imageMemory_: the
  // count matrix host counts are stored in, the segment table.
  uint64_t* deviceCounts_ = nullptr;
  const uint32_t* deviceSegmentBegin_ = nullptr;
  const DeviceSegment* deviceSegments_ = nullptr;
  std::unique_ptr<DeviceAllocation> nativeMemory_;  // native algorithms: the kernel's AlgorithmDeviceContext
  std::unique_ptr<PinnedAllocation> nativeUpload_;  // what its upload reads, kept while it may
  uint64_t mutableOffset_ = 0, mutableBytes_ = 0, stateOffset_ = 0, recordsOffset_ = 0;
  uint64_t timeoutNs_ = 0;
  double timeoutSeconds_ = 0;
  const char* timeoutSetting_ = "MSCCLPP_TIMEOUT_S";  // where timeoutSeconds_ came from, for messages
  void* lastStream_ = nullptr;
  bool retainedAny_ = false;      // a captured graph was handed a reference to this context
  uint64_t retainedCapture_ = 0;  // the last such graph's capture sequence
  bool launched_ = false;
  bool failed_ = false;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_CONTEXT_HPP_
