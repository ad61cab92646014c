// InfiniBand without a device: loading rdma-core, resolving symbols and the
// errors when there is no HCA. CUDA IPC without CUDA (or without a device).
#include <catch2/catch.hpp>

#include "../../support/scoped_env.hpp"
#include "../bootstrap/rank_threads.hpp"
#include "mscclpp/communicator.hpp"
#include "transport/cuda_ipc/memory.hpp"
#include "transport/device_memory.hpp"
#include "transport/ib_verbs/memory.hpp"
#include "transport/ib_verbs/verbs_library.hpp"

using namespace mscclpp;
using namespace mscclpp::transport;

TEST_CASE("rdma-core loads with dlopen and every symbol resolves", "[ib]") {
  auto lib = ib_verbs::loadVerbsLibrary("libibverbs.so.1");
  CHECK(lib->getDeviceList != nullptr);
  CHECK(lib->regMr != nullptr);
  CHECK(lib->modifyQp != nullptr);
  CHECK(lib->wcStatusStr != nullptr);
  CHECK(std::string(lib->wcStatusStr(IBV_WC_SUCCESS)) == "success");
}

TEST_CASE("a missing library or symbol is a clear error, not a crash", "[ib]") {
  try {
    ib_verbs::loadVerbsLibrary("libmscclpp-no-such-verbs.so.1");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::NotSupported);
    CHECK_THAT(e.what(), Catch::StartsWith("InfiniBand: cannot load libmscclpp-no-such-verbs.so.1: ") &&
                             Catch::Contains("cannot open shared object file") &&
                             Catch::EndsWith("(install rdma-core or set MSCCLPP_IBVERBS_LIBRARY)"));
  }
  CHECK_THROWS_WITH(ib_verbs::loadVerbsLibrary("libc.so.6"), "InfiniBand: libc.so.6 has no symbol ibv_get_device_list");
}

TEST_CASE("no HCA: opening a device fails naming what is missing", "[ib]") {
  try {
    ib_verbs::openDevice(0, "libibverbs.so.1");
    WARN("an InfiniBand device exists on this machine: the no-device path was not exercised");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::NotSupported);
    CHECK_THAT(e.what(),
               Catch::StartsWith("InfiniBand: no device found (libibverbs.so.1 loaded; ibv_get_device_list ") &&
                   Catch::EndsWith("IB0 is unavailable"));
  }
  CHECK_THROWS_WITH(ib_verbs::openDevice(9, "libibverbs.so.1"), "InfiniBand: device index 9 is not in 0..7");
}

TEST_CASE("IB failures name the call and the library", "[ib]") {
  test::ScopedEnv lib("MSCCLPP_IBVERBS_LIBRARY", "libmscclpp-no-such-verbs.so.1");
  auto bs = test::makeInProcessBootstraps(1);
  Communicator c(bs[0], kHostDevice);
  std::vector<char> buf(64);
  CHECK_THROWS_WITH(c.registerMemory(buf.data(), 64, Transport::IB1),
                    Catch::StartsWith("communicator rank 0/1: registerMemory(") &&
                        Catch::Contains(", 64, IB1): InfiniBand: cannot load libmscclpp-no-such-verbs.so.1"));
  CHECK_THROWS_WITH(c.connect(0, 0, Transport::IB1),
                    Catch::StartsWith("communicator rank 0/1: connect to rank 0 over IB1 (tag 0): InfiniBand: cannot "
                                      "load"));
}

TEST_CASE("CUDA IPC is refused precisely where it cannot work", "[ipc]") {
  auto bs = test::makeInProcessBootstraps(1);
  Communicator c(bs[0], kHostDevice);
  if (!cuda_ipc::compiledIn()) {
    CHECK_THROWS_WITH(c.connect(0, 0, Transport::CudaIpc),
                      "communicator rank 0/1: connect to rank 0 over IPC (tag 0): this build has no CUDA support");
    cuda_ipc::CudaIpcRecord e;
    CHECK_THROWS_WITH(cuda_ipc::exportRange(&e, 8, &e),
                      "registerMemory(CudaIpc): this build of MSCCL++ has no CUDA support");
    return;
  }
  if (cudaDeviceCount() == 0) {
    WARN("CUDA IPC transfers not tested: no CUDA device on this machine");
  }
  CHECK_THROWS_WITH(c.connect(0, 0, Transport::CudaIpc),
                    "communicator rank 0/1: connect to rank 0 over IPC (tag 0): this communicator has no CUDA device");
}
