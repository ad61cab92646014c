// The few CUDA calls host-side code needs to touch device memory,
// as when TCP writes into a GPU buffer. Without CUDA they report
// "not device memory", and the copies throw NotSupported.
#ifndef MSCCLPP_TRANSPORT_DEVICE_MEMORY_HPP_
#define MSCCLPP_TRANSPORT_DEVICE_MEMORY_HPP_

#include <cstddef>

namespace mscclpp::transport {

// True when ptr is CUDA device memory, not host or managed memory. Never throws.
bool isDevicePointer(const void* ptr);
// Synchronous copies; errors name `what`.
void copyHostToDevice(void* dst, const void* src, size_t bytes, const char* what);
void copyDeviceToHost(void* dst, const void* src, size_t bytes, const char* what);
// The number of visible CUDA devices: 0 without CUDA or a device. Never throws.
int cudaDeviceCount();
// The current CUDA device, or -1 without one.
int currentCudaDevice();

}  // namespace mscclpp::transport

#endif  // MSCCLPP_TRANSPORT_DEVICE_MEMORY_HPP_
