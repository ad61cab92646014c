// Communicator: identity, split, registration cache, memory exchange, setup futures.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "../../support/scoped_env.hpp"
#include "../bootstrap/rank_threads.hpp"
#include "comm/communicator_impl.hpp"
#include "mscclpp/communicator.hpp"
#include "transport/cuda_ipc/memory.hpp"
#include "transport/host_shm/memory.hpp"
#include "transport/ib_verbs/memory.hpp"
#include "transport/registration.hpp"
#include "transport/tcp/memory.hpp"

using namespace mscclpp;
using mscclpp::test::runRanks;

namespace {

const transport::host_shm::HostShmRecord& shmRecord(const RegisteredMemory& m) {
  const auto* r = RegisteredMemoryAccess::impl(m)->record<transport::host_shm::HostShmRecord>(Transport::HostShm);
  REQUIRE(r != nullptr);
  return *r;
}

std::vector<std::shared_ptr<Communicator>> makeComms(const std::vector<std::shared_ptr<Bootstrap>>& bs) {
  std::vector<std::shared_ptr<Communicator>> comms(bs.size());
  runRanks(static_cast<int>(bs.size()), [&](int r) { comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice); });
  return comms;
}

}  // namespace

TEST_CASE("ranks on one host see each other as local", "[comm]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = kind == "tcp" ? test::makeTcpBootstraps(3) : test::makeInProcessBootstraps(3);
      auto comms = makeComms(bs);
      for (int r = 0; r < 3; ++r) {
        Communicator& c = *comms[r];
        CHECK(c.rank() == r);
        CHECK(c.size() == 3);
        CHECK(c.localRank() == r);
        CHECK(c.nRanksPerNode() == 3);
        CHECK(c.localRanks() == std::vector<int>{0, 1, 2});
        CHECK(c.isSameHost((r + 1) % 3));
        CHECK(c.device() == kHostDevice);
        CHECK(c.hostIdOf(0) == c.hostId());
        CHECK(c.hostId().find(':') != std::string::npos);  // host name : boot id
      }
      CHECK_THROWS_WITH(comms[0]->isSameHost(3), "communicator rank 0/3: isSameHost: no rank 3");
    }
  }
}

TEST_CASE("MSCCLPP_HOSTID overrides the host identity", "[comm]") {
  test::ScopedEnv env("MSCCLPP_HOSTID", "rack7-node3");
  auto comms = makeComms(test::makeInProcessBootstraps(2));
  CHECK(comms[0]->hostId() == "rack7-node3");
  CHECK(comms[1]->hostIdOf(0) == "rack7-node3");
  test::ScopedEnv tooLong("MSCCLPP_HOSTID", std::string(300, 'x').c_str());
  auto bs = test::makeInProcessBootstraps(1);
  CHECK_THROWS_WITH(Communicator(bs[0], kHostDevice), Catch::Contains("has 300 bytes, more than 240 (MSCCLPP_HOSTID)"));
}

TEST_CASE("a device that does not exist is refused", "[comm]") {
  auto bs = test::makeInProcessBootstraps(1);
  CHECK_THROWS_WITH(Communicator(bs[0], 3), "communicator rank 0/1: device 3 requested but 0 CUDA devices are visible");
  Communicator c(bs[0]);  // auto: no device here
  CHECK(c.device() == kHostDevice);
}

TEST_CASE("split forms communicators by color ordered by key", "[comm]") {
  auto comms = makeComms(test::makeTcpBootstraps(4));
  std::vector<std::shared_ptr<Communicator>> subs(4);
  runRanks(4, [&](int r) { subs[r] = comms[r]->split(r == 3 ? -1 : r % 2, -r); });
  CHECK(subs[3] == nullptr);
  REQUIRE(subs[0] != nullptr);
  CHECK(subs[0]->size() == 2);
  CHECK(subs[2]->rank() == 0);  // key -2 < key 0
  CHECK(subs[0]->rank() == 1);
  CHECK(subs[1]->size() == 1);
  CHECK(subs[1]->nRanksPerNode() == 1);
  // The children work while the parent is used too.
  runRanks(4, [&](int r) {
    if (subs[r]) subs[r]->bootstrap()->barrier();
    comms[r]->bootstrap()->barrier();
  });
}

TEST_CASE("aborting a split leaves the parent working", "[comm]") {
  auto comms = makeComms(test::makeTcpBootstraps(2));
  std::vector<std::shared_ptr<Communicator>> subs(2);
  runRanks(2, [&](int r) { subs[r] = comms[r]->split(0, r); });
  subs[0]->abort();
  CHECK(subs[0]->aborted());
  CHECK_THROWS_WITH(subs[0]->bootstrap()->barrier(), Catch::Contains("aborted"));
  CHECK_THROWS_WITH(subs[0]->registerMemory(&comms, 8, Transport::Tcp),
                    "communicator rank 0/2: registerMemory: the communicator was aborted");
  runRanks(2, [&](int r) { comms[r]->bootstrap()->barrier(); });
}

TEST_CASE("registerMemory caches per buffer and checks its arguments", "[comm][memory]") {
  auto comms = makeComms(test::makeInProcessBootstraps(1));
  Communicator& c = *comms[0];
  auto shm = allocSharedHost<char>(4096);
  RegisteredMemory a = c.registerMemory(shm.get(), 4096, Transport::HostShm | Transport::Tcp);
  uint64_t made = CommunicatorAccess::impl(c).registrationCount;
  RegisteredMemory b = c.registerMemory(shm.get(), 4096, Transport::HostShm | Transport::Tcp);
  CHECK(RegisteredMemoryAccess::impl(a) ==
        RegisteredMemoryAccess::impl(b));  // the same registration: no new TCP key, no new lookup
  CHECK(CommunicatorAccess::impl(c).registrationCount == made);
  CHECK(a.data() == shm.get());
  CHECK(a.isLocal());
  CHECK(a.rank() == 0);
  CHECK(a.transports() == (Transport::HostShm | Transport::Tcp));
  CHECK(shmRecord(a).offset == 0);
  RegisteredMemory sub = c.registerMemory(shm.get() + 1024, 512, Transport::HostShm);
  CHECK(RegisteredMemoryAccess::impl(sub) != RegisteredMemoryAccess::impl(a));
  CHECK(shmRecord(sub).offset == 1024);
  CHECK(shmRecord(sub).segmentName == shmRecord(a).segmentName);
  CHECK(CommunicatorAccess::impl(c).registrationCount == made + 1);

  std::vector<char> plain(64);
  CHECK_THROWS_WITH(c.registerMemory(plain.data(), 64, Transport::HostShm),
                    Catch::EndsWith("SHM needs memory from allocSharedHost, and this range is not in one"));
  CHECK_THROWS_WITH(c.registerMemory(shm.get(), 8192, Transport::HostShm),
                    Catch::EndsWith("SHM needs memory from allocSharedHost, and this range is not in one"));
  CHECK_THROWS_WITH(c.registerMemory(plain.data(), 64, Transport::Nvls), Catch::Contains("transports NVLS"));
  CHECK_THROWS_WITH(c.registerMemory(nullptr, 64, Transport::Tcp), Catch::Contains("a null pointer or zero size"));
  // A build without CUDA says so; a CUDA build on a machine without a GPU only names the need.
  CHECK_THROWS_WITH(c.registerMemory(plain.data(), 64, Transport::CudaIpc),
                    transport::cuda_ipc::compiledIn()
                        ? Catch::EndsWith("IPC needs CUDA device memory")
                        : Catch::EndsWith("IPC needs CUDA device memory (and this build has no CUDA support)"));
  CHECK_THROWS_WITH(c.registerMemory(plain.data(), 64, Transport::IB0), Catch::Contains("InfiniBand: "));
}

TEST_CASE("registered memory crosses ranks and maps once per allocation", "[comm][memory]") {
  auto comms = makeComms(test::makeTcpBootstraps(2));
  auto shm = allocSharedHost<uint32_t>(1024);
  for (int i = 0; i < 1024; ++i) shm.get()[i] = 0xabc00000u + i;
  size_t importsBefore = transport::host_shm::liveImportCount();
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    if (r == 0) {
      RegisteredMemory m = c.registerMemory(shm.get(), 4096, Transport::HostShm);
      c.sendMemory(m, 1, 0);
      c.sendMemory(c.registerMemory(shm.get() + 512, 2048, Transport::HostShm), 1, 0);
      c.bootstrap()->barrier();  // rank 1 imported and wrote
      CHECK(shm.get()[7] == 77u);
    } else {
      auto f1 = c.recvMemory(0, 0);
      auto f2 = c.recvMemory(0, 0);
      RegisteredMemory second = f2.get();  // out of order: the first one is received on the way
      RegisteredMemory first = f1.get();
      CHECK(first.size() == 4096);
      CHECK(second.size() == 2048);
      CHECK_FALSE(first.isLocal());
      CHECK(first.rank() == 0);
      REQUIRE(first.data() != nullptr);
      CHECK(first.data() != static_cast<void*>(shm.get()));  // our own mapping of the peer's memory
      CHECK(static_cast<uint32_t*>(first.data())[5] == 0xabc00005u);
      CHECK(static_cast<uint32_t*>(second.data())[0] == 0xabc00000u + 512);
      CHECK(static_cast<char*>(second.data()) - static_cast<char*>(first.data()) == 2048);
      CHECK(transport::host_shm::liveImportCount() == importsBefore + 1);  // one mapping for both
      static_cast<uint32_t*>(first.data())[7] = 77;
      c.bootstrap()->barrier();
    }
  });
}

TEST_CASE("serialised registrations are checked field by field", "[comm][memory]") {
  auto comms = makeComms(test::makeInProcessBootstraps(1));
  std::vector<char> buf(256);
  RegisteredMemory m = comms[0]->registerMemory(buf.data(), buf.size(), Transport::Tcp);
  std::vector<char> bytes = m.serialize();
  RegisteredMemory back = RegisteredMemory::deserialize(bytes);
  CHECK(back.size() == 256);
  CHECK(back.rank() == 0);
  CHECK(back.originalDataPtr() == buf.data());
  CHECK(back.data() == nullptr);  // TCP only: not mapped
  using transport::tcp::TcpRecord;
  CHECK(RegisteredMemoryAccess::impl(back)->record<TcpRecord>(Transport::Tcp)->key ==
        RegisteredMemoryAccess::impl(m)->record<TcpRecord>(Transport::Tcp)->key);
  CHECK(RegisteredMemoryAccess::impl(back)->record<TcpRecord>(Transport::Tcp)->engineId ==
        RegisteredMemoryAccess::impl(m)->record<TcpRecord>(Transport::Tcp)->engineId);

  std::vector<char> truncated(bytes.begin(), bytes.end() - 3);
  CHECK_THROWS_WITH(RegisteredMemory::deserialize(truncated),
                    Catch::StartsWith("RegisteredMemory::deserialize: truncated at field tcp.key"));
  std::vector<char> trailing = bytes;
  trailing.push_back(0);
  CHECK_THROWS_WITH(RegisteredMemory::deserialize(trailing),
                    "RegisteredMemory::deserialize: 1 trailing bytes after the last field");
  std::vector<char> magic = bytes;
  magic[0] ^= 1;
  CHECK_THROWS_WITH(RegisteredMemory::deserialize(magic),
                    "RegisteredMemory::deserialize: bad magic (not a serialised RegisteredMemory)");
  std::vector<char> bits = bytes;
  bits[8] = 0;
  bits[9] = static_cast<char>(0x80);  // bit 15: no such transport
  CHECK_THROWS_WITH(RegisteredMemory::deserialize(bits),
                    "RegisteredMemory::deserialize: unknown transport bits 0x8000");
  CHECK_THROWS_WITH(RegisteredMemory::deserialize({}), Catch::StartsWith("RegisteredMemory::deserialize: truncated"));
}

TEST_CASE("IB and IPC registrations round-trip through the wire form", "[comm][memory]") {
  auto impl = std::make_shared<RegisteredMemoryAccess::Impl>();
  impl->size = 1 << 20;
  impl->originalData = 0x7f0000001000;
  impl->ownerRank = 5;
  impl->ownerHostHash = 42;  // another host: nothing is mapped on import
  impl->transports = Transport::IB3 | Transport::CudaIpc;
  impl->deviceMemory = true;
  auto ib = std::make_shared<transport::ib_verbs::IbRecord>();
  ib->address = 0x7f0000001000;
  ib->rkey = 0x1234;
  ib->lkey = 99;
  impl->records[static_cast<size_t>(Transport::IB3)] = ib;
  auto ipc = std::make_shared<transport::cuda_ipc::CudaIpcRecord>();
  for (int i = 0; i < 64; ++i) ipc->handle[i] = static_cast<uint8_t>(i);
  ipc->baseOffset = 4096;
  ipc->allocationSize = 1 << 21;
  ipc->device = 2;
  impl->records[static_cast<size_t>(Transport::CudaIpc)] = ipc;
  RegisteredMemory back = RegisteredMemory::deserialize(RegisteredMemoryAccess::make(impl).serialize());
  CHECK(back.rank() == 5);
  CHECK(back.isDeviceMemory());
  CHECK(back.data() == nullptr);
  const auto* backIb = RegisteredMemoryAccess::impl(back)->record<transport::ib_verbs::IbRecord>(Transport::IB3);
  REQUIRE(backIb != nullptr);
  CHECK(backIb->address == 0x7f0000001000);
  CHECK(backIb->rkey == 0x1234);
  CHECK(backIb->lkey == 0);  // never sent
  const auto* backIpc =
      RegisteredMemoryAccess::impl(back)->record<transport::cuda_ipc::CudaIpcRecord>(Transport::CudaIpc);
  REQUIRE(backIpc != nullptr);
  CHECK(backIpc->handle == ipc->handle);
  CHECK(backIpc->baseOffset == 4096);
  CHECK(backIpc->allocationSize == (1 << 21));
  CHECK(backIpc->device == 2);
}

TEST_CASE("async errors keep the first one", "[comm]") {
  auto comms = makeComms(test::makeInProcessBootstraps(1));
  ErrorCode code;
  std::string msg;
  CHECK_FALSE(comms[0]->asyncError(&code, &msg));
  comms[0]->setAsyncError(ErrorCode::RemoteError, "proxy: rank 1 gone");
  comms[0]->setAsyncError(ErrorCode::Timeout, "later");
  REQUIRE(comms[0]->asyncError(&code, &msg));
  CHECK(code == ErrorCode::RemoteError);
  CHECK(msg == "proxy: rank 1 gone");
}

TEST_CASE("a failed peer fails the communicator, naming rank and host", "[comm][failure]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = kind == "tcp" ? test::makeTcpBootstraps(4) : test::makeInProcessBootstraps(4);
      auto comms = makeComms(bs);
      // A split without rank 2 is not affected by its failure; one with it is.
      std::vector<std::shared_ptr<Communicator>> halves(4);
      runRanks(4, [&](int r) { halves[r] = comms[r]->split(r % 2, r); });
      uint32_t early = 0, late = 0;
      std::shared_ptr<void> earlyWatch = comms[0]->raiseOnFailure(&early);
      CHECK_FALSE(comms[0]->failed());
      {
        uint32_t dropped = 0;
        comms[0]->raiseOnFailure(&dropped);  // the registration ends with its handle: never raised
      }
      bs[2]->abort();  // TCP: its sockets close without a goodbye, as in a crash; in process: a stand-in
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!comms[0]->failed() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      for (int r : {0, 1, 3}) {
        ErrorCode code = ErrorCode::InternalError;
        std::string why;
        const auto wait = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!comms[r]->failed(&code, &why) && std::chrono::steady_clock::now() < wait) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        INFO("rank " << r << ": " << why);
        CHECK(code == ErrorCode::RemoteError);
        CHECK_THAT(why, Catch::StartsWith("communicator rank " + std::to_string(r) + "/4: rank 2 (host " +
                                          comms[r]->hostIdOf(2) + ") failed: rank 2 "));
        ErrorCode async = ErrorCode::InternalError;
        CHECK(comms[r]->asyncError(&async, nullptr));
        CHECK(async == ErrorCode::RemoteError);
      }
      CHECK(early == 1u);
      std::shared_ptr<void> lateWatch = comms[0]->raiseOnFailure(&late);
      CHECK(late == 1u);                                             // registered after the failure: raised at once
      CHECK(halves[0]->failed());                                    // {0, 2}
      CHECK_FALSE(halves[1]->failed());                              // {1, 3}
      comms[0]->fail(ErrorCode::InternalError, "a second failure");  // the first one is kept
      std::string why;
      comms[0]->failed(nullptr, &why);
      CHECK_THAT(why, Catch::Contains("rank 2 (host "));
    }
  }
}

// A peer that leaves fails nothing by itself: a call that needs it does.
TEST_CASE("a departed peer fails a call only when it needs it", "[comm][failure]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = kind == "tcp" ? test::makeTcpBootstraps(3) : test::makeInProcessBootstraps(3);
      auto comms = makeComms(bs);
      // Rank 2 sends rank 0 one message, then leaves (its communicator and bootstrap go).
      int v = 42;
      comms[2]->bootstrap()->send(&v, sizeof(v), 0, 7);
      comms[2].reset();
      bs[2].reset();
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!comms[0]->departed() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      REQUIRE(comms[0]->departed());
      CHECK(comms[0]->hasDeparted(2));
      CHECK_FALSE(comms[0]->hasDeparted(1));
      CHECK(comms[0]->departedRanks() == std::vector<int>{2});
      CHECK_FALSE(comms[0]->failed());
      CHECK_FALSE(comms[0]->asyncError(nullptr, nullptr));  // an idle rank at teardown keeps no error
      // What it sent before it left still arrives; the live ranks still talk.
      int got = 0;
      comms[0]->bootstrap()->recv(&got, sizeof(got), 2, 7);
      CHECK(got == 42);
      comms[0]->bootstrap()->send(&v, sizeof(v), 1, 8);
      comms[1]->bootstrap()->recv(&got, sizeof(got), 0, 8);
      // A call that needs more from it fails the communicator, saying it left.
      try {
        comms[0]->bootstrap()->recv(&got, sizeof(got), 2, 9);
        FAIL("no error");
      } catch (const Error& e) {
        CHECK_THROWS_WITH(comms[0]->throwIfFailedAfter(e), Catch::StartsWith("communicator rank 0/3: rank 2 (host " +
                                                                             comms[0]->hostIdOf(2) + ") left: "));
      }
      ErrorCode code = ErrorCode::InternalError;
      CHECK(comms[0]->failed(&code, nullptr));
      CHECK(code == ErrorCode::RemoteError);
      CHECK(comms[0]->asyncError(&code, nullptr));
      CHECK(code == ErrorCode::RemoteError);
    }
  }
}
