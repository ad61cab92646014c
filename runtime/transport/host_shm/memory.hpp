// Shared host memory: the allocator behind allocSharedHost, its process-wide table of live
// allocations (registerMemory looks a pointer up there), and the importer's mapping cache.
//
// Both tables are process-wide on purpose: they mirror per-process OS state (this process's
// mappings), like CUDA's own pointer table, and ranks that are threads of one process must share
// one mapping per peer allocation. Thread-safety: every function may be called from any thread.
#ifndef MSCCLPP_TRANSPORT_HOST_SHM_MEMORY_HPP_
#define MSCCLPP_TRANSPORT_HOST_SHM_MEMORY_HPP_

#include <cstddef>
#include <memory>
#include <string>

#include "transport/transport.hpp"

namespace mscclpp::transport::host_shm {

// Where a shared host allocation lives: the HostShm record of a registration.
struct HostShmRecord : ExportRecord {
  std::string segmentName;  // "memfd:<pid>:<fd>:<inode>" or "posix:/mscclpp.<...>"
  uint64_t segmentSize = 0;
  uint64_t offset = 0;  // of the registered range within the segment

  void serialize(ByteWriter& w) const override;
  static std::shared_ptr<const HostShmRecord> read(ByteReader& r);
};

std::shared_ptr<void> allocate(size_t bytes);
bool isShared(const void* ptr, size_t bytes);
bool unlinkName(const void* ptr);

// Fills `out` for [ptr, ptr+bytes) when it lies in one live allocation; false otherwise.
bool exportRange(const void* ptr, size_t bytes, HostShmRecord* out);

// Maps the allocation named by `e` (once per process while mapped) and sets *data to the start of
// the registered range (`bytes` long). `what` names the memory and its owner for errors.
std::shared_ptr<void> importRange(const HostShmRecord& e, size_t bytes, void** data, const std::string& what);

// Allocations imported and still mapped in this process (tests check "mapped once").
size_t liveImportCount();

}  // namespace mscclpp::transport::host_shm

#endif  // MSCCLPP_TRANSPORT_HOST_SHM_MEMORY_HPP_
