// The CUDA driver's virtual-memory and multicast functions the channel layer
// calls (bindable memory, NVLS bindings), resolved once through the runtime.
#ifndef MSCCLPP_CHANNEL_DRIVER_TABLE_HPP_
#define MSCCLPP_CHANNEL_DRIVER_TABLE_HPP_

#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda.h>

#if CUDA_VERSION >= 12010
namespace mscclpp::detail {

// Each member is null where the driver lacks the function.
struct DriverTable {
  decltype(&cuDeviceGet) deviceGet;
  decltype(&cuDeviceGetAttribute) deviceGetAttribute;
  decltype(&cuMemGetAllocationGranularity) memGetAllocationGranularity;
  decltype(&cuMemCreate) memCreate;
  decltype(&cuMemAddressReserve) memAddressReserve;
  decltype(&cuMemAddressFree) memAddressFree;
  decltype(&cuMemMap) memMap;
  decltype(&cuMemUnmap) memUnmap;
  decltype(&cuMemSetAccess) memSetAccess;
  decltype(&cuMemRelease) memRelease;
  decltype(&cuMemRetainAllocationHandle) memRetainAllocationHandle;
  decltype(&cuMemGetAddressRange) memGetAddressRange;
  decltype(&cuMemGetAllocationPropertiesFromHandle) memGetAllocationPropertiesFromHandle;
  decltype(&cuMemExportToShareableHandle) memExport;
  decltype(&cuMemImportFromShareableHandle) memImport;
  decltype(&cuMulticastCreate) multicastCreate;
  decltype(&cuMulticastAddDevice) multicastAddDevice;
  decltype(&cuMulticastBindMem) multicastBindMem;
  decltype(&cuMulticastUnbind) multicastUnbind;
  decltype(&cuMulticastGetGranularity) multicastGetGranularity;

  // What allocating multicast-capable memory needs (bindable_memory.cc).
  bool hasBindableMemory() const;
  // What binding memory to a multicast object needs (nvls_binding.cc).
  bool hasMulticast() const;
};

// Resolved at the first call, with the ABIs of CUDA 12.1.
const DriverTable& driverTable();

}  // namespace mscclpp::detail
#endif  // CUDA_VERSION >= 12010
#endif  // MSCCLPP_HAVE_CUDA
#endif  // MSCCLPP_CHANNEL_DRIVER_TABLE_HPP_
