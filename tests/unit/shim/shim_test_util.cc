#include "shim_test_util.hpp"

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "nccl_double.h"

namespace shimtest {

Double::Double(const char* path) { handle_ = dlopen(path, RTLD_LAZY | RTLD_NOLOAD); }

void* Double::sym(const char* name) const {
  REQUIRE(handle_ != nullptr);
  void* s = dlsym(handle_, name);
  REQUIRE(s != nullptr);
  return s;
}

int Double::count() const { return reinterpret_cast<ncclDoubleRecordCountFn>(sym("ncclDoubleRecordCount"))(); }
std::string Double::record(int i) const { return reinterpret_cast<ncclDoubleRecordFn>(sym("ncclDoubleRecord"))(i); }
void* Double::comm(int i) const { return reinterpret_cast<ncclDoubleRecordCommFn>(sym("ncclDoubleRecordComm"))(i); }
int Double::depth(int i) const { return reinterpret_cast<ncclDoubleRecordDepthFn>(sym("ncclDoubleRecordDepth"))(i); }
void Double::reset() const { reinterpret_cast<ncclDoubleResetFn>(sym("ncclDoubleReset"))(); }
void Double::setRecording(bool on) const {
  reinterpret_cast<ncclDoubleSetRecordingFn>(sym("ncclDoubleSetRecording"))(on ? 1 : 0);
}
long long Double::calls() const { return reinterpret_cast<ncclDoubleCallCountFn>(sym("ncclDoubleCallCount"))(); }
void Double::failInit(int rank, ncclResult_t result) const {
  reinterpret_cast<ncclDoubleFailInitFn>(sym("ncclDoubleFailInit"))(rank, static_cast<int>(result));
}
int Double::bcastBoundInside() const {
  return reinterpret_cast<ncclDoubleBcastBoundInsideFn>(sym("ncclDoubleBcastBoundInside"))();
}
bool Double::isComm(const void* comm) const {
  return reinterpret_cast<ncclDoubleIsCommFn>(sym("ncclDoubleIsComm"))(comm) != 0;
}

std::string Double::dump(int from) const {
  std::string out;
  for (int i = from; i < count(); ++i) out += "  [" + std::to_string(i) + "] " + record(i) + "\n";
  return out;
}

int Double::find(const std::string& prefix, int from) const {
  for (int i = from; i < count(); ++i) {
    if (record(i).compare(0, prefix.size(), prefix) == 0) return i;
  }
  return -1;
}

std::string ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

ncclComm_t soloComm(ncclConfig_t* config) {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  ncclResult_t r = config ? ncclCommInitRankConfig(&comm, 1, id, 0, config) : ncclCommInitRank(&comm, 1, id, 0);
  INFO("init: " << lastError());
  REQUIRE(r == ncclSuccess);
  REQUIRE(comm != nullptr);
  return comm;
}

std::string lastError() {
  const char* s = ncclGetLastError(nullptr);
  return s ? s : "(null)";
}

std::string takeLog(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  return text.str();
}

namespace {
// MSCCLPP_* variables are read once; ncclResetDebugInit makes the shim read them again.
void rereadEnvironment() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
}
}  // namespace

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  const char* old = std::getenv(name);
  hadOld_ = old != nullptr;
  if (old) old_ = old;
  if (value) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
  rereadEnvironment();
}

ScopedEnv::~ScopedEnv() {
  if (hadOld_) {
    setenv(name_.c_str(), old_.c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
  rereadEnvironment();
}

}  // namespace shimtest
