// Environment parameters. Every MSCCLPP_* variable the C++ code reads is declared exactly once, by
// the layer that owns it, in that layer's params_<layer>.def (type, default, one line of doc), and
// read through the accessor its <layer>/params.hpp declares (no getenv elsewhere). Each layer's
// params.cc registers its declarations at load time (params_define.inc), so the core names no
// other layer; `mscclpp-info --params` lists every registered parameter.
//
// Values are read once: the first call of an accessor parses the variable and keeps the value for
// the life of the process, like NCCL's parameters (cheap on hot paths, and every thread sees one
// value). resetCache() makes the next calls read the environment again (tests;
// ncclResetDebugInit). A value that does not parse throws Error(InvalidArgument) naming the
// variable, the value and what is accepted, at every call (errors are not cached).
//
// This header declares the core's own parameters (params_core.def) and the registry.
#ifndef MSCCLPP_CORE_PARAMS_HPP_
#define MSCCLPP_CORE_PARAMS_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace mscclpp::params {

struct ParamDescriptor {
  const char* envName;
  const char* typeName;      // "bool", "int", "double", "string", or the choices "a|b|c"
  const char* defaultValue;  // as text
  const char* doc;
  const char* owner;  // the layer that declared it ("core", "plan", ...)
};

// Every registered parameter, by owner and then in declaration order.
std::vector<ParamDescriptor> allParams();

// The raw value of the variable if set (and not empty), else nullptr.
const char* rawValue(const ParamDescriptor& param);

// Parses and checks the current value of the parameter (throws like the accessors do).
void checkValue(const ParamDescriptor& param);

// Forgets every cached value: the next call of each accessor reads the environment again.
void resetCache();

// ---- used by params_define.inc ---------------------------------------------------------------

// Adds a layer's table (static storage) to allParams().
struct Registration {
  Registration(const ParamDescriptor* table, size_t count);
};

bool parseBool(const ParamDescriptor& param);
int64_t parseInt(const ParamDescriptor& param);
double parseDouble(const ParamDescriptor& param);
std::string parseString(const ParamDescriptor& param);
// A string restricted to the '|'-separated choices, compared case-insensitively; returns the
// choice as spelled in the declaration.
std::string parseChoice(const ParamDescriptor& param);

// Bumped by resetCache().
uint64_t cacheGeneration();

// One parameter's value, parsed at the first get() of a cache generation. Thread-safe.
template <class T>
class Cached {
 public:
  T get(const ParamDescriptor& param, T (*parse)(const ParamDescriptor&)) {
    const uint64_t generation = cacheGeneration();
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation_ != generation) {
      value_ = parse(param);  // throws without caching anything
      generation_ = generation;
    }
    return value_;
  }

 private:
  std::mutex mutex_;
  uint64_t generation_ = 0;  // cacheGeneration() starts at 1: 0 is "never read"
  T value_{};
};

}  // namespace mscclpp::params

#define MSCCLPP_PARAMS_DEF "core/params_core.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

#endif  // MSCCLPP_CORE_PARAMS_HPP_
