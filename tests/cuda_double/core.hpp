// The CUDA double's process-wide state: configuration, devices, per-thread state (current device,
// last error), sticky errors, misuse and fault reports. Every API entry point starts with
// CD_ENTER(), which returns a device's sticky error (CUDA Runtime API, "Error Handling": once a
// context is corrupted by a kernel fault, every later call reports it) and refuses calls from a
// user-object destructor (CUDA Runtime API, cudaUserObjectCreate: "the destructor must not make
// CUDA API calls").
//
// Thread-safety: everything here is safe from any thread.
#ifndef CUDA_DOUBLE_CORE_HPP_
#define CUDA_DOUBLE_CORE_HPP_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace cudadouble {

// Read once from the environment (docs/cuda-double.md lists the variables).
struct Config {
  int devices = 8;                        // CUDA_DOUBLE_DEVICES
  int sms = 132;                          // CUDA_DOUBLE_SMS: streaming multiprocessors per device (H100 SXM)
  int queues = 8;                         // CUDA_DEVICE_MAX_CONNECTIONS: hardware queues per device (CUDA's default 8)
  bool streamMemOps = true;               // CUDA_DOUBLE_STREAM_MEM_OPS: CAN_USE_64_BIT_STREAM_MEM_OPS
  bool cooperative = true;                // CUDA_DOUBLE_COOPERATIVE: cudaDevAttrCooperativeLaunch
  bool multicast = true;                  // CUDA_DOUBLE_MULTICAST: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
  int multicastObjects = 1024;            // CUDA_DOUBLE_MULTICAST_OBJECTS: live multicast objects per process
  std::atomic<int> adversarialSyncMs{0};  // CUDA_DOUBLE_ADVERSARIAL_SYNC_MS
  std::atomic<int> adversarialLegacyMs{0};  // CUDA_DOUBLE_ADVERSARIAL_LEGACY_MS
  bool nullKernels = false;                 // CUDA_DOUBLE_NULL_KERNELS: launches complete without running
};
Config& config();

// H100-like limits every device reports and the block scheduler enforces.
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxThreadsPerSm = 2048;
constexpr int kMaxBlocksPerSm = 32;
constexpr int kRegistersPerSm = 65536;
constexpr size_t kSharedPerSm = 233472;           // 228 KiB
constexpr size_t kSharedReservedPerBlock = 1024;  // the runtime's per-block reservation (sm_80+)
constexpr size_t kSharedPerBlockOptin = 232448;   // 227 KiB
constexpr size_t kSharedPerBlockDefault = 49152;  // 48 KiB without the opt-in attribute

// ---- per-thread state -------------------------------------------------------------------------
int currentDevice();
void setCurrentDevice(int device);
bool validDevice(int device);

// Records e as this thread's last error (when it is an error) and returns it.
cudaError_t fail(cudaError_t e);
cudaError_t lastError(bool reset);

// ---- sticky errors (per device) ----------------------------------------------------------------
void setSticky(int device, cudaError_t e, const std::string& why);
cudaError_t stickyOf(int device);

// Times and counts the calling thread's outermost API call (cuda_double.h,
// cudadouble_api_tally). Every exported entry point declares one, through
// CD_ENTER() or, where it checks nothing on entry, CD_TALLY().
class ApiCall {
 public:
  explicit ApiCall(const char* name);
  ~ApiCall();
  ApiCall(const ApiCall&) = delete;
  ApiCall& operator=(const ApiCall&) = delete;
};
#define CD_TALLY_AS(name) ::cudadouble::ApiCall cdApiCall_(name)
#define CD_TALLY() CD_TALLY_AS(__func__)

// The entry check of every API call on `device` (-1: the current device).
cudaError_t enter(int device = -1);
#define CD_ENTER() \
  CD_TALLY();      \
  if (cudaError_t cdEnter_ = ::cudadouble::enter(); cdEnter_ != cudaSuccess) return cdEnter_

// Marks the calling thread as the one that runs user-object destructors.
void markCallbackThread();

// ---- reports --------------------------------------------------------------------------------------
// A use CUDA leaves undefined or rejects as a programming error: printed on stderr, counted.
void misuse(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// A device access to unmapped memory: printed, counted, and device's sticky cudaErrorIllegalAddress.
void fault(int device, const std::string& what);

struct Counters {
  std::atomic<uint64_t> misuses{0}, faults{0}, deviceSyncs{0}, kernelsLaunched{0}, streamsCreated{0};
  std::atomic<uint64_t> pageTableChanges{0}, kernelLoads{0}, loadsAtLaunch{0};
  std::atomic<uint64_t> cooperativeLaunches{0};
};
Counters& counters();
std::string lastMisuseText();
std::string lastFaultText();

uint64_t envInt(const char* name, uint64_t def, uint64_t lo, uint64_t hi);

}  // namespace cudadouble

#endif  // CUDA_DOUBLE_CORE_HPP_
