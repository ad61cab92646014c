// A GPU execution context: everything one rank needs to launch one plan for one set of user
// buffers, built once (collectively with the plan's other ranks) and then launched any number of
// times with no host synchronisation and no allocation:
//  * device memory of its own (one cudaMalloc, zeroed): the scratch buffer, the semaphore
//    counters peers signal, and staging for calls the user's buffers cannot serve (call_binding);
//  * the directory exchange with every other rank over the bootstrap: where its input, output,
//    scratch and counters are, as raw pointers for ranks of this process and CUDA IPC handles
//    (allocation base + offset, each peer allocation opened once per process) for other processes;
//  * the resolved image (context_image) packed into one device allocation and uploaded once
//    (device_image): ops, references, channel handles, and the state launches carry over (LL flag,
//    semaphore expected counters, sem_* counters, barriers, block records);
//  * the abort flag in mapped host memory (the proxy raises it; the host polls it without a sync);
//  * one live-wait slot per threadblock in mapped host memory, where a device wait that has lasted
//    1 ms says what it waits for (exec_layout.hpp LiveWaitSlot): the call monitor's view of a
//    launch in flight (liveSource);
//  * for port channels, a ProxyService on a device FIFO whose handler copies with
//    cudaMemcpyAsync on the rank's proxy stream and raises peers' counters in stream order;
//  * for switch channels, an NVLS multicast binding of the members' buffers when every member can
//    make one (sm_90 with NVSwitch, buffers from cuMemCreate at the multicast granularity): the
//    kernel then reduces and broadcasts with multimem instructions; otherwise it goes through the
//    members' buffers.
//
// A launch enqueues on the caller's stream: the avg / premulsum steps and staging copies around one
// kernel launch (one block per plan threadblock). It works inside CUDA-graph capture; replays
// advance the LL flag and counters on the device. A captured launch embeds this context's pointers,
// so the graph keeps the context alive: a cudaUserObject holding a reference, which CUDA releases
// once the graph and its executable graphs are destroyed and their launches completed (Runtime
// API, cudaUserObjectCreate / cudaGraphRetainUserObject); eviction from the cache does not free it.
// A failed launch (a wait passed MSCCLPP_TIMEOUT_S, a proxy error) raises the abort flag; the next
// use of the context sees it, synchronises with the failed launch's stream and throws the wait-for
// picture.
//
// The collective build point: once this rank's directory is sent, peers may launch kernels that spin
// on this rank until its own kernel runs, so nothing after that point may synchronise the device
// (cudaMalloc, cudaMemset, cudaMemcpy, cudaHostAlloc, cudaFree all do: CUDA Programming Guide,
// "Implicit Synchronization"). Every allocation is made and zeroed before the exchange; after it
// the build only writes host memory and enqueues the image upload on the caller's stream.
//
// Thread-safety: one thread at a time (the Executor serialises its calls). Ownership: the context
// owns its memory and proxy; it keeps peers' mappings (RegisteredMemory) and its world alive until
// destroyed. It is shared (the backend's cache, graphs that captured it) and destroyed only on the
// ContextReleaser's thread (context_releaser.hpp), which first waits for the devices of this
// process's ranks, so no launch can still use its memory; it never touches the caller's streams.
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_CONTEXT_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_CONTEXT_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "executor/call_descriptor.hpp"
#include "executor/call_monitor.hpp"
#include "executor/context_image.hpp"
#include "executor/cuda/call_binding.hpp"
#include "executor/cuda/gpu_launch.hpp"
#include "executor/cuda/gpu_memory.hpp"
#include "executor/cuda/gpu_world.hpp"
#include "executor/dtypes.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp/memory.hpp"
#include "mscclpp/proxy.hpp"

namespace mscclpp::detail {
class NvlsBinding;
}

namespace mscclpp::exec {

struct GpuCallArgs {
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;  // the call's op (avg and premulsum run the plan as sum)
  PacketType packet = PacketType::LL16;
  void* stream = nullptr;
  const void* scalar = nullptr;  // premulsum: one element of dtype, host memory
  bool capturing = false;        // the stream is being captured into a CUDA graph
  uint32_t call = 0;             // LaunchArgs::call: the call's tag for its published waits (launchCallTag)
};

class GpuContext : public std::enable_shared_from_this<GpuContext> {
 public:
  // Collective: every rank of the plan builds its context for the same call in the same order.
  // Returns the refusal, decided before exchanging anything, when the plan cannot run here (other hosts, peer
  // access, hardware queues, the dtype's GPU code, threads, residency: facts every rank evaluates alike), *built
  // left empty; throws other errors.
  // The call's buffers are bound by bindCall (zero-copy where possible); when peers in other
  // processes need a user buffer CUDA IPC cannot export, the call is bound again with staging.
  // The device image is uploaded on `stream` (the building call's), ahead of its first launch.
  // The directory exchange carries `call`: ranks building for different calls all refuse at once with
  // InvalidUsage naming both.
  static Refusal create(std::shared_ptr<GpuWorld> world, const plan::PlanPtr& plan, int rank, const CallShape& shape,
                        const CallRequest& request, const CallDescriptor& call, DataType dtype, ReduceOp nativeOp,
                        void* stream, std::shared_ptr<GpuContext>* built);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  // Enqueues the call on args.stream, or returns why it cannot run (the dtype's GPU code not built, residency,
  // reductions splitting its elements) before enqueueing anything. Throws when the context failed earlier (the
  // diagnosis).
  Refusal launch(const GpuCallArgs& args);

  // Whether an earlier launch raised the abort flag (a host read of mapped memory, no sync).
  bool failureRaised() const;
  // What the call monitor reads while a launch is in flight: its blocks' waits from the live-wait
  // slots (describeWaitSlots). Safe from any thread, also after the context is gone (then: nothing).
  const std::shared_ptr<const std::function<LiveCall()>>& liveSource() const { return liveSource_; }
  // Synchronises with the failed launch and throws its diagnosis (TimeoutError, Error(Aborted /
  // NotSupported / CudaError)). Marks the context unusable.
  [[noreturn]] void throwFailure();

  const CallBinding& binding() const { return binding_; }
  const ContextImage& image() const { return *image_; }
  uint32_t sharedBytes() const { return sharedBytes_; }
  uint32_t blocks() const { return image_ ? image_->device().nBlocks : 0; }
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
  // The construction before the build point: the refusals, then what needs nothing exchanged.
  Refusal admit(DataType dtype, ReduceOp nativeOp);
  void build(const CallShape& shape, const CallRequest& request, const CallDescriptor& call, void* stream);
  Refusal precheck(DataType dtype, ReduceOp op);
  Refusal kernelFor(DataType dtype, ReduceOp op, const KernelChoice** choice);
  Refusal decideKernel(DataType dtype, ReduceOp op, KernelChoice* choice);
  void bindBuffers(const CallRequest& request, bool crossProcessPeers);
  void retainInCapturedGraph(void* stream);
  void bindSwitchChannels(const CallShape& shape, int tag);
  void exchange(const CallShape& shape, int tag, const CallDescriptor& call);
  void writeSignal(uint32_t channel, uint64_t value, std::string* error);
  std::string handleRequest(const TriggerFields& f);
  char* placePtr(const BufferPlace& p) const;

  std::shared_ptr<GpuWorld> world_;
  plan::PlanPtr plan_;
  int rank_;
  std::string name_;  // "plan X (source) rank r"
  CallBinding binding_;
  int threads_ = 0;
  std::vector<uint64_t> blockListBytes_;
  std::vector<int> coResident_;         // ranks whose blocks share this GPU's SMs with ours
  std::vector<int> residentElsewhere_;  // those of them in other processes (MPS)
  uint64_t groupBlocks_ = 0;
  uint32_t sharedBytes_ = 0;  // the choice made for the building call's kernel
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
  std::unique_ptr<ProxyService> proxy_;
  std::vector<uint64_t> signalsSent_;  // per port channel: the value our proxy last wrote to the peer
  bool proxyDeviceSet_ = false;        // the proxy thread selected our device
  void* writeValue64_ = nullptr;       // cuStreamWriteValue64 when the device supports it

  std::unique_ptr<ContextImage> image_;
  std::unique_ptr<DeviceAllocation> imageMemory_;
  std::vector<char> hostImage_;      // the uploaded bytes, kept while the upload may read them
  std::vector<int> quiesceDevices_;  // the devices of this process's ranks: idle before we free
  // NVLS: per switch channel of the plan, the multicast address of its binding (null: the members'
  // buffers are used); the bindings stay alive with the context.
  std::vector<void*> multicast_;
  std::vector<std::shared_ptr<detail::NvlsBinding>> nvls_;
  const ExecContextDevice* deviceContext_ = nullptr;
  uint64_t mutableOffset_ = 0, mutableBytes_ = 0, stateOffset_ = 0, recordsOffset_ = 0;
  uint64_t timeoutNs_ = 0;
  double timeoutSeconds_ = 0;
  const char* timeoutSetting_ = "MSCCLPP_TIMEOUT_S";  // where timeoutSeconds_ came from, for messages
  void* lastStream_ = nullptr;
  bool launched_ = false;
  bool failed_ = false;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_CONTEXT_HPP_
