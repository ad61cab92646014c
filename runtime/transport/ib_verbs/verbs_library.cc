#include "transport/ib_verbs/verbs_library.hpp"

#include <dlfcn.h>

#include "core/enforce.hpp"
#include "core/logger.hpp"

namespace mscclpp::transport::ib_verbs {

VerbsLibrary::~VerbsLibrary() {
  if (handle) dlclose(handle);
}

namespace {
template <class Fn>
void resolve(VerbsLibrary& lib, Fn*& out, const char* symbol) {
  dlerror();
  void* p = dlsym(lib.handle, symbol);
  MSCCLPP_ENFORCE(p != nullptr, ErrorCode::NotSupported, "InfiniBand: %s has no symbol %s", lib.name.c_str(), symbol);
  out = reinterpret_cast<Fn*>(p);
}
}  // namespace

std::shared_ptr<VerbsLibrary> loadVerbsLibrary(const std::string& name) {
  auto lib = std::make_shared<VerbsLibrary>();
  lib->name = name;
  lib->handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) {
    const char* why = dlerror();
    MSCCLPP_THROW(ErrorCode::NotSupported,
                  "InfiniBand: cannot load %s: %s (install rdma-core or set "
                  "MSCCLPP_IBVERBS_LIBRARY)",
                  name.c_str(), why ? why : "unknown dlopen error");
  }
  resolve(*lib, lib->getDeviceList, "ibv_get_device_list");
  resolve(*lib, lib->freeDeviceList, "ibv_free_device_list");
  resolve(*lib, lib->getDeviceName, "ibv_get_device_name");
  resolve(*lib, lib->openDevice, "ibv_open_device");
  resolve(*lib, lib->closeDevice, "ibv_close_device");
  resolve(*lib, lib->queryDevice, "ibv_query_device");
  resolve(*lib, lib->queryPort, "ibv_query_port");
  resolve(*lib, lib->queryGid, "ibv_query_gid");
  resolve(*lib, lib->allocPd, "ibv_alloc_pd");
  resolve(*lib, lib->deallocPd, "ibv_dealloc_pd");
  resolve(*lib, lib->regMr, "ibv_reg_mr");
  resolve(*lib, lib->deregMr, "ibv_dereg_mr");
  resolve(*lib, lib->createCq, "ibv_create_cq");
  resolve(*lib, lib->destroyCq, "ibv_destroy_cq");
  resolve(*lib, lib->createQp, "ibv_create_qp");
  resolve(*lib, lib->modifyQp, "ibv_modify_qp");
  resolve(*lib, lib->destroyQp, "ibv_destroy_qp");
  resolve(*lib, lib->wcStatusStr, "ibv_wc_status_str");
  MSCCLPP_INFO(LogTransport, "InfiniBand: loaded %s", name.c_str());
  return lib;
}

}  // namespace mscclpp::transport::ib_verbs
