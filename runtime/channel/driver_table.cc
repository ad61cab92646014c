#include "channel/driver_table.hpp"

#include "core/cuda_driver_entry.hpp"

namespace mscclpp::detail {

#if MSCCLPP_HAVE_CUDA && CUDA_VERSION >= 12010

namespace {

template <class Fn>
void resolve(Fn* fn, const char* name) {
  *fn = cudaDriverEntry<Fn>(name, 12010);
}

}  // namespace

bool DriverTable::hasBindableMemory() const {
  return deviceGet && deviceGetAttribute && memGetAllocationGranularity && multicastGetGranularity && memCreate &&
         memAddressReserve && memMap && memSetAccess && memUnmap && memAddressFree && memRelease;
}

bool DriverTable::hasMulticast() const {
  return deviceGet && deviceGetAttribute && multicastCreate && multicastAddDevice && multicastBindMem &&
         multicastUnbind && multicastGetGranularity && memRetainAllocationHandle && memGetAddressRange &&
         memGetAllocationPropertiesFromHandle && memExport && memImport && memAddressReserve && memAddressFree &&
         memMap && memUnmap && memSetAccess && memRelease;
}

const DriverTable& driverTable() {
  static const DriverTable table = [] {
    DriverTable t{};
    resolve(&t.deviceGet, "cuDeviceGet");
    resolve(&t.deviceGetAttribute, "cuDeviceGetAttribute");
    resolve(&t.memGetAllocationGranularity, "cuMemGetAllocationGranularity");
    resolve(&t.memCreate, "cuMemCreate");
    resolve(&t.memAddressReserve, "cuMemAddressReserve");
    resolve(&t.memAddressFree, "cuMemAddressFree");
    resolve(&t.memMap, "cuMemMap");
    resolve(&t.memUnmap, "cuMemUnmap");
    resolve(&t.memSetAccess, "cuMemSetAccess");
    resolve(&t.memRelease, "cuMemRelease");
    resolve(&t.memRetainAllocationHandle, "cuMemRetainAllocationHandle");
    resolve(&t.memGetAddressRange, "cuMemGetAddressRange");
    resolve(&t.memGetAllocationPropertiesFromHandle, "cuMemGetAllocationPropertiesFromHandle");
    resolve(&t.memExport, "cuMemExportToShareableHandle");
    resolve(&t.memImport, "cuMemImportFromShareableHandle");
    resolve(&t.multicastCreate, "cuMulticastCreate");
    resolve(&t.multicastAddDevice, "cuMulticastAddDevice");
    resolve(&t.multicastBindMem, "cuMulticastBindMem");
    resolve(&t.multicastUnbind, "cuMulticastUnbind");
    resolve(&t.multicastGetGranularity, "cuMulticastGetGranularity");
    return t;
  }();
  return table;
}

#endif

}  // namespace mscclpp::detail
