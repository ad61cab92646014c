// CUDA IPC export/import of device memory. A registration exports the IPC handle of the
// allocation's base (found with cuMemGetAddressRange) plus the offset of the registered range, so
// sub-ranges of one cudaMalloc share one handle; importers open each peer allocation once per
// process (cudaIpcOpenMemHandle refuses a second open) and keep it open while any registration
// uses it. Compiled in every build; without CUDA the functions throw NotSupported.
// Thread-safety: all functions may be called from any thread.
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

// Whether this build can use CUDA IPC at all (a CUDA build; a device is checked at use).
bool compiledIn();

void exportRange(const void* ptr, size_t bytes, CudaIpcRecord* out);
std::shared_ptr<void> importRange(const CudaIpcRecord& e, size_t bytes, void** data, const std::string& what);

}  // namespace mscclpp::transport::cuda_ipc

#endif  // MSCCLPP_TRANSPORT_CUDA_IPC_MEMORY_HPP_
