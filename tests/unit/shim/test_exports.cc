// The shim's ABI surface: exactly the dynamic symbols of libnccl.so.2 2.28.9
// plus the runtime's C APIs (the Python package finds them in a process that
// preloaded the shim), no more, no less, in both the preload library and the
// replace-mode copy (whose soname must be NCCL's).
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "../../support/run_command.hpp"

namespace {

using mscclpp::test::runCommand;

// Names of the defined dynamic symbols of lib (nm -D --defined-only), ignoring the linker's own markers.
std::set<std::string> exportsOf(const std::string& lib) {
  std::set<std::string> names;
  std::string out = runCommand("nm -D --defined-only '" + lib + "'");
  size_t pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    std::string line = out.substr(pos, eol - pos);
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) names.insert(line.substr(sp + 1));
    pos = eol + 1;
  }
  return names;
}

std::set<std::string> checkedInList() {
  std::ifstream in(SHIM_EXPORT_LIST);
  REQUIRE(in.good());
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) names.insert(line);
  }
  return names;
}

// NCCL's names and the C API names libmscclpp.so exports (mscclpp_c.h, plan_api.h: unmangled mscclpp*).
std::set<std::string> shimExports() {
  std::set<std::string> names = checkedInList();
  size_t capi = 0;
  for (const auto& n : exportsOf(MSCCLPP_LIB_PATH)) {
    if (n.rfind("mscclpp", 0) == 0) {
      names.insert(n);
      ++capi;
    }
  }
  CHECK(capi >= 20);  // the plan API and the communicator/executor C API
  return names;
}

std::string describeDiff(const std::set<std::string>& want, const std::set<std::string>& got) {
  std::string s;
  for (const auto& n : want) {
    if (!got.count(n)) s += " missing:" + n;
  }
  for (const auto& n : got) {
    if (!want.count(n)) s += " extra:" + n;
  }
  return s;
}

}  // namespace

TEST_CASE("the checked-in NCCL 2.28.9 export list is complete", "[exports]") {
  std::set<std::string> list = checkedInList();
  CHECK(list.size() == 105);
  size_t plain = 0, profiling = 0;
  for (const auto& n : list) {
    if (n.rfind("nccl", 0) == 0) ++plain;
    if (n.rfind("pnccl", 0) == 0) ++profiling;
  }
  CHECK(plain == 53);
  CHECK(profiling == 52);
}

TEST_CASE("the shim exports exactly NCCL's symbols and our C APIs", "[exports]") {
  std::set<std::string> want = shimExports();
  std::set<std::string> got = exportsOf(SHIM_LIB_PATH);
  INFO("difference:" << describeDiff(want, got));
  CHECK(got == want);
}

TEST_CASE("the replace-mode library has NCCL's symbols and soname", "[exports]") {
  std::set<std::string> want = shimExports();
  std::set<std::string> got = exportsOf(SHIM_REPLACE_LIB_PATH);
  INFO("difference:" << describeDiff(want, got));
  CHECK(got == want);
  std::string dyn = runCommand("readelf -d '" + std::string(SHIM_REPLACE_LIB_PATH) + "'");
  CHECK(dyn.find("Library soname: [libnccl.so.2]") != std::string::npos);
}

TEST_CASE("the checked-in list matches the installed real libnccl.so.2", "[exports]") {
  std::ifstream real(REAL_NCCL_PATH);
  if (!real.good()) {
    WARN("no real libnccl.so.2 at " << REAL_NCCL_PATH << ": compared with the checked-in list only");
    return;
  }
  int version = 0;
  void* h = dlopen(REAL_NCCL_PATH, RTLD_LAZY | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  auto getVersion = reinterpret_cast<int (*)(int*)>(dlsym(h, "ncclGetVersion"));
  REQUIRE(getVersion != nullptr);
  getVersion(&version);
  dlclose(h);
  if (version != 22809) {
    WARN("the real NCCL is version " << version << ", not 2.28.9: its export list may differ");
    return;
  }
  std::set<std::string> want = checkedInList();
  std::set<std::string> got = exportsOf(REAL_NCCL_PATH);
  INFO("difference:" << describeDiff(want, got));
  CHECK(got == want);
}

TEST_CASE("every shim export resolves; nccl names alias pnccl ones", "[exports]") {
  void* h = dlopen(SHIM_LIB_PATH, RTLD_LAZY | RTLD_LOCAL);
  INFO(dlerror());
  REQUIRE(h != nullptr);
  for (const auto& name : checkedInList()) {
    void* s = dlsym(h, name.c_str());
    INFO(name);
    CHECK(s != nullptr);
    if (name.rfind("nccl", 0) == 0 && name != "ncclResetDebugInitInternal") {
      CHECK(dlsym(h, ("p" + name).c_str()) == s);
    }
  }
  dlclose(h);
}
