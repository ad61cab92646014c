// The few CUDA calls host-side code needs to touch device memory,
// as when TCP writes into a GPU buffer or a FIFO zeroes its counters.
// Without CUDA they report "not device memory", and the copies throw
// NotSupported.
#ifndef MSCCLPP_TRANSPORT_DEVICE_MEMORY_HPP_
#define MSCCLPP_TRANSPORT_DEVICE_MEMORY_HPP_

#include <cstddef>

namespace mscclpp::transport {

// True when ptr is CUDA device memory, not host or managed memory. Never throws.
bool isDevicePointer(const void* ptr);
// Copies between host and device memory that return once the copy completed;
// errors name `what`. They run on a non-blocking stream the process keeps per
// device, never on the legacy default stream: cudaMemcpy is legacy-stream
// work, which the runtime's non-blocking streams do not wait for.
void copyHostToDevice(void* dst, const void* src, size_t bytes, const char* what);
void copyDeviceToHost(void* dst, const void* src, size_t bytes, const char* what);
// Zeroes `bytes` of device memory of `device` on that stream and waits for it
// (a cudaMemset is legacy-stream work: it may land after later work of other
// streams).
void zeroDeviceMemory(int device, void* ptr, size_t bytes, const char* what);
// Creates that stream of `device` now if it does not exist yet. Streams take
// hardware queues round-robin as they are created, so an owner whose later
// streams must not share a queue with each other creates it first.
void createDeviceStream(int device);
// The number of visible CUDA devices: 0 without CUDA or a device. Never throws.
int cudaDeviceCount();
// The current CUDA device, or -1 without one.
int currentCudaDevice();

}  // namespace mscclpp::transport

#endif  // MSCCLPP_TRANSPORT_DEVICE_MEMORY_HPP_
