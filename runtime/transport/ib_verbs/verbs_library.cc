#include "transport/ib_verbs/verbs_library.hpp"

#include <dlfcn.h>

#include <map>
#include <mutex>

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

template <class Fn>
void resolveOptional(VerbsLibrary& lib, Fn*& out, const char* symbol) {
  out = reinterpret_cast<Fn*>(dlsym(lib.handle, symbol));
}

std::shared_ptr<VerbsLibrary> open(const std::string& name, std::string* why) {
  auto lib = std::make_shared<VerbsLibrary>();
  lib->name = name;
  lib->handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) {
    const char* e = dlerror();
    *why = e ? e : "unknown dlopen error";
    return nullptr;
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
  resolveOptional(*lib, lib->queryGidEx, "_ibv_query_gid_ex");
  resolveOptional(*lib, lib->regDmabufMr, "ibv_reg_dmabuf_mr");
  return lib;
}

}  // namespace

const std::vector<std::string>& defaultVerbsLibraryNames() {
  static const std::vector<std::string> names = {"libibverbs.so.1", "libibverbs.so"};
  return names;
}

std::shared_ptr<VerbsLibrary> loadFirstVerbsLibrary(const std::vector<std::string>& names) {
  // Kept for the process: HCAs, regions and queue pairs of every
  // communicator use one loaded library.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<VerbsLibrary>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  std::string tried;
  for (const std::string& name : names) {
    auto it = loaded.find(name);
    if (it != loaded.end()) return it->second;
    std::string why;
    std::shared_ptr<VerbsLibrary> lib = open(name, &why);
    if (lib) {
      MSCCLPP_INFO(LogTransport, "InfiniBand: loaded %s", name.c_str());
      loaded[name] = lib;
      return lib;
    }
    tried += (tried.empty() ? "" : "; ") + name + ": " + why;
  }
  MSCCLPP_THROW(ErrorCode::NotSupported,
                "InfiniBand: cannot load %s (install rdma-core or set "
                "MSCCLPP_IBVERBS_LIBRARY)",
                tried.c_str());
}

std::shared_ptr<VerbsLibrary> loadVerbsLibrary(const std::string& name) {
  return name.empty() ? loadFirstVerbsLibrary(defaultVerbsLibraryNames()) : loadFirstVerbsLibrary({name});
}

}  // namespace mscclpp::transport::ib_verbs
