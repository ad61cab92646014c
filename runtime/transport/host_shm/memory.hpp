// Shared host memory: the allocator behind allocSharedHost, its
// table of live allocations that registerMemory looks pointers
// up in, and the importer's mapping cache. Both tables are
// process-wide on purpose: they mirror this process's mappings,
// like CUDA's own pointer table, and ranks that are threads of
// one process share one mapping per peer allocation.
// Thread-safety: any thread.
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
bool hasName(const void* ptr);

// Fills `out` for [ptr, ptr+bytes) when it lies
// in one live allocation, else returns false.
bool exportRange(const void* ptr, size_t bytes, HostShmRecord* out);

// Maps the allocation `e` names, once per process while
// mapped, and points *data at the registered range of
// `bytes`. `what` names the memory and its owner in errors.
std::shared_ptr<void> importRange(const HostShmRecord& e, size_t bytes, void** data, const std::string& what);

// Allocations imported and still mapped in
// this process; tests check "mapped once".
size_t liveImportCount();

// Removes the POSIX segments in /dev/shm that no process maps: left by
// processes that were killed. A lock that no live process we see holds
// is waited for up to waitMs: a process just killed still holds its own.
// Returns how many went.
size_t sweepUnusedSegments(int waitMs = 0);
// The same, waiting, only if this process uses POSIX segments or is set
// to (MSCCLPP_HOST_SHM=posix): for a communicator whose peer died, whose
// segments may be among them. On a thread of its own unless `wait`.
void sweepIfPosixUsed(bool wait = false);

}  // namespace mscclpp::transport::host_shm

#endif  // MSCCLPP_TRANSPORT_HOST_SHM_MEMORY_HPP_
