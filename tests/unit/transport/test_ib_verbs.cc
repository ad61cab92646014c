// InfiniBand without a device: loading rdma-core, resolving symbols and the
// errors when there is no HCA; choosing HCA ports (MSCCLPP_HCA_DEVICES, PCIe
// distance). CUDA IPC without CUDA (or without a device).
#include <catch2/catch.hpp>

#include "../../support/scoped_env.hpp"
#include "../bootstrap/rank_threads.hpp"
#include "mscclpp/communicator.hpp"
#include "transport/cuda_ipc/memory.hpp"
#include "transport/device_memory.hpp"
#include "transport/ib_verbs/hca_list.hpp"
#include "transport/ib_verbs/memory.hpp"
#include "transport/ib_verbs/nic_choice.hpp"
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

TEST_CASE("without a library name the soname comes first", "[ib]") {
  CHECK(ib_verbs::defaultVerbsLibraryNames() == std::vector<std::string>{"libibverbs.so.1", "libibverbs.so"});
  // A missing first name falls through to the next; every reason is kept.
  auto lib = ib_verbs::loadFirstVerbsLibrary({"libmscclpp-no-such-verbs.so.1", "libibverbs.so.1"});
  CHECK(lib->name == "libibverbs.so.1");
  CHECK_THROWS_WITH(ib_verbs::loadFirstVerbsLibrary({"libno-a.so", "libno-b.so"}),
                    Catch::StartsWith("InfiniBand: cannot load libno-a.so: ") && Catch::Contains("; libno-b.so: "));
}

TEST_CASE("no HCA: opening a device fails naming what is missing", "[ib]") {
  test::ScopedEnv lib("MSCCLPP_IBVERBS_LIBRARY", "libibverbs.so.1");
  try {
    ib_verbs::openDevice(0);
    WARN("an InfiniBand device exists on this machine: the no-device path was not exercised");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::NotSupported);
    CHECK_THAT(e.what(),
               Catch::StartsWith("InfiniBand: no device found (libibverbs.so.1 loaded; ibv_get_device_list ") &&
                   Catch::EndsWith("IB0 is unavailable"));
  }
  CHECK_THROWS_WITH(ib_verbs::openDevice(9), "InfiniBand: device index 9 is not in 0..7");
}

TEST_CASE("no HCA: no nearest IB transport, and the reason", "[ib]") {
  test::ScopedEnv lib("MSCCLPP_IBVERBS_LIBRARY", "libibverbs.so.1");
  auto bs = test::makeInProcessBootstraps(1);
  Communicator c(bs[0], kHostDevice);
  std::string why;
  if (c.nearestIbTransport(&why) != Transport::Unknown) {
    WARN("an InfiniBand device exists on this machine: the no-device path was not exercised");
    return;
  }
  CHECK_THAT(why, Catch::StartsWith("no InfiniBand or RoCE port on this host (libibverbs.so.1 loaded; "));
  test::ScopedEnv off("MSCCLPP_IB_DISABLE", "1");
  CHECK(c.nearestIbTransport(&why) == Transport::Unknown);
  CHECK(why == "MSCCLPP_IB_DISABLE=1");
}

TEST_CASE("MSCCLPP_HCA_DEVICES takes NCCL_IB_HCA's syntax", "[ib][hca]") {
  using ib_verbs::HcaPort;
  const std::vector<HcaPort> active = {
      {"mlx5_0", 1, "", 0}, {"mlx5_0", 2, "", 0}, {"mlx5_1", 1, "", 0}, {"mlx5_10", 1, "", 0}, {"bnxt_re0", 1, "", 0}};
  auto names = [&](const std::string& text) {
    std::string out;
    for (const HcaPort& p : ib_verbs::selectPorts(active, ib_verbs::parseHcaFilter(text)))
      out += (out.empty() ? "" : " ") + p.name();
    return out;
  };
  CHECK(names("") == "mlx5_0:1 mlx5_0:2 mlx5_1:1 mlx5_10:1 bnxt_re0:1");
  CHECK(names("mlx5_1") == "mlx5_1:1 mlx5_10:1");  // a prefix
  CHECK(names("=mlx5_1") == "mlx5_1:1");
  CHECK(names("=mlx5_1,mlx5_0:2") == "mlx5_1:1 mlx5_0:2");  // in the list's order
  CHECK(names("^mlx5") == "bnxt_re0:1");
  CHECK(names("^=mlx5_0:1,bnxt_re0") == "mlx5_0:2 mlx5_1:1 mlx5_10:1");
  CHECK(names("=mlx9") == "");
  CHECK_THROWS_WITH(ib_verbs::parseHcaFilter("mlx5_0:x"),
                    "MSCCLPP_HCA_DEVICES='mlx5_0:x': 'mlx5_0:x' has no port number after ':' (expected name:port, "
                    "port >= 1)");
  CHECK_THROWS_WITH(ib_verbs::parseHcaFilter("mlx5_0,,mlx5_1"),
                    Catch::StartsWith("MSCCLPP_HCA_DEVICES='mlx5_0,,mlx5_1': an empty device name"));
}

TEST_CASE("the nearest HCA is the fewest PCIe links away", "[ib][nic]") {
  using ib_verbs::Locality;
  using ib_verbs::PortLocality;
  const std::string root0 = "/sys/devices/pci0000:00", root1 = "/sys/devices/pci0000:80";
  // Two switches under root complex 0, one under root complex 1.
  const std::string sw0 = root0 + "/0000:00:01.0/0000:01:00.0", sw1 = root0 + "/0000:00:02.0/0000:05:00.0";
  const std::string sw2 = root1 + "/0000:80:01.0/0000:81:00.0";
  std::vector<PortLocality> nics = {
      {sw1 + "/0000:07:00.0", {}}, {sw0 + "/0000:03:00.0", {}}, {sw2 + "/0000:83:00.0", {}}};
  CHECK(ib_verbs::pciDistance(sw0 + "/0000:02:00.0", sw0 + "/0000:03:00.0") == 2);    // one switch
  CHECK(ib_verbs::pciDistance(sw0 + "/0000:02:00.0", sw1 + "/0000:07:00.0") == 6);    // through the root port
  CHECK(ib_verbs::pciDistance(sw0 + "/0000:02:00.0", sw2 + "/0000:83:00.0") > 1000);  // another root complex
  CHECK(ib_verbs::pciDistance("", sw0) > 1000);
  std::string why;
  CHECK(ib_verbs::nearestPort(Locality{sw0 + "/0000:02:00.0", {}}, nics, 0, &why) == 1);
  CHECK_THAT(why, Catch::StartsWith("PCIe distance from the GPU; 1 of 3 port(s) as near"));
  CHECK(ib_verbs::nearestPort(Locality{sw2 + "/0000:82:00.0", {}}, nics, 5, &why) == 2);
  // Equally near ports are spread by local rank.
  std::vector<PortLocality> twins = {{sw0 + "/0000:03:00.0", {}}, {sw0 + "/0000:04:00.0", {}}};
  CHECK(ib_verbs::nearestPort(Locality{sw0 + "/0000:02:00.0", {}}, twins, 0, &why) == 0);
  CHECK(ib_verbs::nearestPort(Locality{sw0 + "/0000:02:00.0", {}}, twins, 1, &why) == 1);
  CHECK(ib_verbs::nearestPort(Locality{sw0 + "/0000:02:00.0", {}}, {}, 0, &why) == -1);
}

TEST_CASE("a host rank prefers HCAs local to its CPUs", "[ib][nic]") {
  using ib_verbs::Locality;
  using ib_verbs::PortLocality;
  CHECK(ib_verbs::parseCpuList("0-3,8,10-11") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(ib_verbs::parseCpuList("0-x").empty());
  std::vector<PortLocality> nics = {{"a", {0, 1}}, {"b", {2, 3}}};
  std::string why;
  CHECK(ib_verbs::nearestPort(Locality{"", {3}}, nics, 0, &why) == 1);
  CHECK_THAT(why, Catch::StartsWith("HCAs local to this rank's CPUs; 1 of 2"));
  CHECK(ib_verbs::nearestPort(Locality{"", {0, 1, 2, 3}}, nics, 3, &why) == 1);  // both local: by local rank
  CHECK(ib_verbs::nearestPort(Locality{"", {}}, nics, 2, &why) == 0);
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
