// rdma-core's libibverbs, loaded with dlopen: the functions
// the IB transport calls by symbol. ibv_post_send and
// ibv_poll_cq are inline in verbs.h and use the context's
// ops table. Loading fails with an error naming the library
// and the missing piece; nothing crashes without rdma-core.
#ifndef MSCCLPP_TRANSPORT_IB_VERBS_VERBS_LIBRARY_HPP_
#define MSCCLPP_TRANSPORT_IB_VERBS_VERBS_LIBRARY_HPP_

#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <vector>

namespace mscclpp::transport::ib_verbs {

struct VerbsLibrary {
  ~VerbsLibrary();

  std::string name;
  void* handle = nullptr;
  ibv_device** (*getDeviceList)(int*) = nullptr;
  void (*freeDeviceList)(ibv_device**) = nullptr;
  const char* (*getDeviceName)(ibv_device*) = nullptr;
  ibv_context* (*openDevice)(ibv_device*) = nullptr;
  int (*closeDevice)(ibv_context*) = nullptr;
  int (*queryDevice)(ibv_context*, ibv_device_attr*) = nullptr;
  int (*queryPort)(ibv_context*, uint8_t, ibv_port_attr*) = nullptr;
  int (*queryGid)(ibv_context*, uint8_t, int, ibv_gid*) = nullptr;
  ibv_pd* (*allocPd)(ibv_context*) = nullptr;
  int (*deallocPd)(ibv_pd*) = nullptr;
  ibv_mr* (*regMr)(ibv_pd*, void*, size_t, int) = nullptr;
  int (*deregMr)(ibv_mr*) = nullptr;
  ibv_cq* (*createCq)(ibv_context*, int, void*, ibv_comp_channel*, int) = nullptr;
  int (*destroyCq)(ibv_cq*) = nullptr;
  ibv_qp* (*createQp)(ibv_pd*, ibv_qp_init_attr*) = nullptr;
  int (*modifyQp)(ibv_qp*, ibv_qp_attr*, int) = nullptr;
  int (*destroyQp)(ibv_qp*) = nullptr;
  const char* (*wcStatusStr)(ibv_wc_status) = nullptr;
  // Optional: null in rdma-core before v32 (GID types) and v34 (dma-buf regions).
  int (*queryGidEx)(ibv_context*, uint32_t, uint32_t, ibv_gid_entry*, uint32_t, size_t) = nullptr;
  ibv_mr* (*regDmabufMr)(ibv_pd*, uint64_t, size_t, uint64_t, int, int) = nullptr;
};

// The names tried when MSCCLPP_IBVERBS_LIBRARY is unset: the runtime
// package's soname, then the development link that some systems have alone.
const std::vector<std::string>& defaultVerbsLibraryNames();

// dlopen(name) and resolve every symbol above; an empty name tries
// defaultVerbsLibraryNames() in order. Throws NotSupported: "InfiniBand:
// cannot load <name>: <dlerror>" (every name tried, each with its reason)
// or "InfiniBand: <name> has no symbol <sym>". One load per name and process.
std::shared_ptr<VerbsLibrary> loadVerbsLibrary(const std::string& name);
// The same over an explicit list of names.
std::shared_ptr<VerbsLibrary> loadFirstVerbsLibrary(const std::vector<std::string>& names);

}  // namespace mscclpp::transport::ib_verbs

#endif  // MSCCLPP_TRANSPORT_IB_VERBS_VERBS_LIBRARY_HPP_
