// Our libraries export only their APIs, and nothing of theirs can be interposed. The dynamic symbol
// tables of libmscclpp.so and the shim name no internal namespace and no nested implementation
// type, and the public headers name none either. In one process where another library defining
// the same internal names was loaded first (interposer.cc), both libraries still behave as
// themselves and keep their own plan registries; victim.cc shows that the setup does interpose.
// This binary links none of our libraries: it loads them with dlopen, as an application would.
#include <dlfcn.h>
#include <nccl.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "../../support/run_command.hpp"
#include "mscclpp/plan_api.h"

namespace {

// The demangled names of the defined dynamic symbols of lib.
std::vector<std::string> exportedNames(const std::string& lib) {
  std::vector<std::string> names;
  std::string out = mscclpp::test::runCommand("nm -D --defined-only -C '" + lib + "' | cut -d' ' -f3-");
  size_t pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    if (eol > pos) names.push_back(out.substr(pos, eol - pos));
    pos = eol + 1;
  }
  return names;
}

// Names that belong inside a library: a namespace nested in mscclpp (mscclpp::plan::...), or a
// nested implementation type (Communicator::Impl, SwitchChannel::State).
bool isInternal(const std::string& name) {
  static const std::regex internal(R"(mscclpp::[a-z_][a-z0-9_]*::|::Impl\b|::State\b)");
  return std::regex_search(name, internal);
}

// libmscclpp.so's API: namespace mscclpp (functions, typeinfo, vtables) and the C API.
bool isPublicApi(const std::string& name) {
  for (const char* prefix :
       {"mscclpp::", "typeinfo for mscclpp::", "typeinfo name for mscclpp::", "vtable for mscclpp::",
        "VTT for mscclpp::", "non-virtual thunk to mscclpp::", "virtual thunk to mscclpp::"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return name.rfind("mscclpp", 0) == 0 && name.find("::") == std::string::npos;  // the C API
}

template <class F>
F symbol(void* lib, const char* name) {
  void* s = dlsym(lib, name);
  INFO(name << ": " << (s ? "" : dlerror()));
  REQUIRE(s != nullptr);
  return reinterpret_cast<F>(s);
}

}  // namespace

TEST_CASE("the libraries export no internal name", "[visibility]") {
  for (const char* lib : {MSCCLPP_LIB_PATH, SHIM_LIB_PATH, SHIM_REPLACE_LIB_PATH}) {
    std::vector<std::string> names = exportedNames(lib);
    INFO(lib << " exports " << names.size() << " symbols");
    CHECK(names.size() > 20);
    std::string internal;
    for (const auto& n : names)
      if (isInternal(n)) internal += "\n  " + n;
    INFO("internal names exported:" << internal);
    CHECK(internal.empty());
  }
  std::string foreign;
  std::vector<std::string> names = exportedNames(MSCCLPP_LIB_PATH);
  for (const auto& n : names)
    if (!isPublicApi(n)) foreign += "\n  " + n;
  INFO("libmscclpp.so exports names outside its API:" << foreign);
  CHECK(foreign.empty());
  // The API itself is there: a class, a free function, the C API, the type users catch.
  for (const char* name : {"mscclpp::Communicator::Communicator", "mscclpp::dataTypeSize", "mscclppPlanRegisterFile",
                           "typeinfo for mscclpp::Error", "mscclpp::ExecutionPlan::ExecutionPlan"}) {
    bool found = false;
    for (const auto& n : names) found = found || n.rfind(name, 0) == 0;
    INFO(name);
    CHECK(found);
  }
}

TEST_CASE("the public headers name no internal type or member", "[visibility]") {
  // What a user of the installed headers must never see: the runtime's namespaces, members
  // hidden from the library's exports, or an accessor to a class's implementation.
  static const std::regex internal(R"(\b(plan|exec)::|MSCCLPP_INTERNAL|\bimpl\s*\(\s*\))");
  int headers = 0;
  std::string found;
  for (const auto& entry : std::filesystem::directory_iterator(PUBLIC_HEADER_DIR)) {
    ++headers;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(line, internal))
        found += "\n  " + entry.path().filename().string() + ":" + std::to_string(n) + ": " + line;
  }
  CHECK(headers > 20);
  INFO("public headers that name internals:" << found);
  CHECK(found.empty());
}

TEST_CASE("internal names cannot be interposed by another library", "[visibility]") {
  setenv("MSCCLPP_PLAN_DIR", EMPTY_PLAN_DIR, 1);
  setenv("MSCCLPP_NCCL_LIB_PATH", NCCL_DOUBLE_PATH, 1);
  setenv("MSCCLPP_BACKEND", "cpu", 1);
  void* interposer = dlopen(INTERPOSER_PATH, RTLD_NOW | RTLD_GLOBAL);
  INFO(dlerror());
  REQUIRE(interposer != nullptr);

  // Control: a library with default visibility is interposed in this setup.
  void* victim = dlopen(VICTIM_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(victim != nullptr);
  CHECK(symbol<int64_t (*)()>(victim, "victimPlanMaxBytes")() == 1);

  using RegisterFile = int (*)(const char*, const char* const*, int, char*, size_t);
  using Count = int (*)();
  using GetInfo = int (*)(int, mscclppPlanInfo*);
  const std::string plans = PLAN_DIR;
  char err[1024] = {0};

  void* runtime = dlopen(MSCCLPP_LIB_PATH, RTLD_NOW | RTLD_GLOBAL);
  INFO(dlerror());
  REQUIRE(runtime != nullptr);
  auto registerFile = symbol<RegisterFile>(runtime, "mscclppPlanRegisterFile");
  auto count = symbol<Count>(runtime, "mscclppPlanCount");
  auto getInfo = symbol<GetInfo>(runtime, "mscclppPlanGetInfo");
  INFO(err);
  CHECK(registerFile((plans + "/allreduce_ll_n2_ip.json").c_str(), nullptr, 0, err, sizeof(err)) == 0);  // planMaxBytes
  REQUIRE(count() == 1);
  mscclppPlanInfo info{};
  REQUIRE(getInfo(0, &info) == 0);
  CHECK(std::string(info.name) == "allreduce_ll_n2_ip");
  CHECK(std::string(info.collective) == "allreduce");  // collectiveName
  CHECK(registerFile("/nonexistent/plan.json", nullptr, 0, err, sizeof(err)) < 0);
  CHECK_THAT(std::string(err), Catch::Contains("/nonexistent/plan.json"));  // strFormat

  void* shim = dlopen(SHIM_LIB_PATH, RTLD_NOW | RTLD_GLOBAL);
  INFO(dlerror());
  REQUIRE(shim != nullptr);
  // The shim carries its own runtime: its registry is its own, and behaves as ours too.
  auto shimRegisterFile = symbol<RegisterFile>(shim, "mscclppPlanRegisterFile");
  auto shimCount = symbol<Count>(shim, "mscclppPlanCount");
  auto shimGetInfo = symbol<GetInfo>(shim, "mscclppPlanGetInfo");
  CHECK(shimCount() == 0);
  CHECK(shimRegisterFile((plans + "/allgather_ll_n2_oop.json").c_str(), nullptr, 0, err, sizeof(err)) == 0);
  CHECK(shimCount() == 1);
  CHECK(count() == 1);
  REQUIRE(shimGetInfo(0, &info) == 0);
  CHECK(std::string(info.collective) == "allgather");
  // A one-rank communicator and a collective through the shim (to the test-double NCCL): the
  // bootstrap's waits use the real MSCCLPP_TIMEOUT_S, not the interposer's millisecond.
  auto getUniqueId = symbol<ncclResult_t (*)(ncclUniqueId*)>(shim, "ncclGetUniqueId");
  auto initRank = symbol<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>(shim, "ncclCommInitRank");
  auto allReduce =
      symbol<ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)>(
          shim, "ncclAllReduce");
  auto destroy = symbol<ncclResult_t (*)(ncclComm_t)>(shim, "ncclCommDestroy");
  ncclUniqueId id;
  REQUIRE(getUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  REQUIRE(initRank(&comm, 1, id, 0) == ncclSuccess);
  float x[2] = {1.0f, 0.0f};
  CHECK(allReduce(x, x + 1, 1, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
  CHECK(destroy(comm) == ncclSuccess);
}
