// CUDA IPC export and import of device memory. A registration
// exports the IPC handle of its allocation's base plus its offset,
// so ranges of one cudaMalloc share one handle. An importer opens
// each peer allocation once per process, since cudaIpcOpenMemHandle
// refuses a second open, and keeps it open while a registration
// uses it. Without CUDA the functions throw NotSupported.
// Thread-safety: any thread.
#ifndef MSCCLPP_TRANSPORT_CUDA_IPC_MEMORY_HPP_
#define MSCCLPP_TRANSPORT_CUDA_IPC_MEMORY_HPP_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/transport.hpp"

namespace mscclpp::transport::cuda_ipc {

// A CUDA allocation exported through IPC: the CudaIpc record of a registration.
struct CudaIpcRecord : ExportRecord {
  std::array<uint8_t, 64> handle{};  // cudaIpcMemHandle_t of the allocation base
  uint64_t baseOffset = 0;           // of the registered range from the base
  uint64_t allocationSize = 0;
  int32_t device = -1;

  void serialize(ByteWriter& w) const override;
  static std::shared_ptr<const CudaIpcRecord> read(ByteReader& r);
};

// Whether this is a CUDA build; a device is checked at use.
bool compiledIn();

void exportRange(const void* ptr, size_t bytes, CudaIpcRecord* out);
std::shared_ptr<void> importRange(const CudaIpcRecord& e, size_t bytes, void** data, const std::string& what);

// The process-wide identity of the CUDA allocation holding ptr:
// CU_POINTER_ATTRIBUTE_BUFFER_ID. Memory freed and allocated again,
// even at the same address, gets a new one and a new IPC handle, so
// caches keyed by it never serve a replaced buffer. 0 for host memory
// and without CUDA. No synchronisation; cheap enough per call.
uint64_t allocationId(const void* ptr);

}  // namespace mscclpp::transport::cuda_ipc

#endif  // MSCCLPP_TRANSPORT_CUDA_IPC_MEMORY_HPP_
