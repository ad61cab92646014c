// The inside of a RegisteredMemory: common facts plus one export record per transport. Filled on
// the owner by registerMemory (comm/communicator_setup.cc, through the transports' memory.cc), turned into
// bytes by serialize() and back by deserialize() on the importer, which maps what it can.
#ifndef MSCCLPP_COMM_REGISTERED_MEMORY_IMPL_HPP_
#define MSCCLPP_COMM_REGISTERED_MEMORY_IMPL_HPP_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mscclpp/memory.hpp"

namespace mscclpp {

namespace transport {

// Where a shared host allocation lives (host_shm/memory.hpp).
struct HostShmExport {
  std::string segmentName;  // "memfd:<pid>:<fd>:<inode>" or "posix:/mscclpp.<...>"
  uint64_t segmentSize = 0;
  uint64_t offset = 0;  // of the registered range within the segment
};

// A CUDA allocation exported through IPC (cuda_ipc/memory.hpp).
struct CudaIpcExport {
  std::array<uint8_t, 64> handle{};  // cudaIpcMemHandle_t of the allocation base
  uint64_t baseOffset = 0;           // of the registered range from the base
  uint64_t allocationSize = 0;
  int32_t device = -1;
};

// A TCP memory key resolved by the owner's receiver thread (tcp/memory.hpp).
struct TcpExport {
  uint64_t engineId = 0;  // which communicator's TCP engine resolves the key
  uint64_t key = 0;
};

// An InfiniBand memory region (ib_verbs/memory.hpp).
struct IbExport {
  uint64_t address = 0;
  uint32_t rkey = 0;
  uint32_t lkey = 0;  // meaningful on the owner only
};

}  // namespace transport

struct RegisteredMemory::Impl {
  void* data = nullptr;  // usable here; null when not mapped in this process
  uint64_t originalData = 0;
  uint64_t size = 0;
  TransportFlags transports;
  int32_t ownerRank = -1;
  int32_t ownerPid = 0;
  uint64_t ownerProcessToken = 0;
  uint64_t ownerHostHash = 0;
  bool local = false;         // registered by this process (not imported)
  bool deviceMemory = false;  // CUDA device memory

  transport::HostShmExport shm;
  transport::CudaIpcExport ipc;
  transport::TcpExport tcp;
  std::array<transport::IbExport, 8> ib;

  // What must live as long as this registration: the TCP key, IB memory regions, the imported
  // shared-memory or IPC mapping. Released in reverse order.
  std::vector<std::shared_ptr<void>> keepAlive;
};

}  // namespace mscclpp

#endif  // MSCCLPP_COMM_REGISTERED_MEMORY_IMPL_HPP_
