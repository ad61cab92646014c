// Environment parameters: every variable the C++ code reads is a row of core/params.def (layer,
// type, default, one line of doc) and is read through its accessor here, never with getenv.
// The first call of an accessor parses the variable and keeps the value for the process, like
// NCCL's parameters: cheap on hot paths, and every thread sees one value. resetCache() makes the
// next calls read the environment again (tests, ncclResetDebugInit). A value that does not parse
// throws Error(InvalidArgument) naming the variable, the value and what is accepted, at every
// call: errors are not cached. Thread-safe. docs/environment.md has the rules users see.
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
  const char* owner;  // the layer that reads it: "core", "plan", ..., "nccl_shim"
};

// Every parameter, by owner and then in the table's order.
std::vector<ParamDescriptor> allParams();

// The raw value of the variable if set and not empty, else nullptr.
const char* rawValue(const ParamDescriptor& param);

// Parses and checks the current value of the parameter, and throws as the accessors do.
void checkValue(const ParamDescriptor& param);

// Forgets every cached value: the next call of each accessor reads the environment again.
void resetCache();

// ---- what the accessors are made of

bool parseBool(const ParamDescriptor& param);
int64_t parseInt(const ParamDescriptor& param);
double parseDouble(const ParamDescriptor& param);
std::string parseString(const ParamDescriptor& param);
// One of the '|'-separated choices, compared case-insensitively; returns it as the table spells it.
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

// The rows of params.def, each in terms of MSCCLPP_PARAM_ROW(owner, C++ type, type name, parser,
// accessor, variable, default, doc), which the file including params.def defines.
#define MSCCLPP_PARAM_BOOL(owner, accessor, env, def, doc) \
  MSCCLPP_PARAM_ROW(owner, bool, "bool", parseBool, accessor, env, def, doc)
#define MSCCLPP_PARAM_INT(owner, accessor, env, def, doc) \
  MSCCLPP_PARAM_ROW(owner, int64_t, "int", parseInt, accessor, env, def, doc)
#define MSCCLPP_PARAM_DOUBLE(owner, accessor, env, def, doc) \
  MSCCLPP_PARAM_ROW(owner, double, "double", parseDouble, accessor, env, def, doc)
#define MSCCLPP_PARAM_STRING(owner, accessor, env, def, doc) \
  MSCCLPP_PARAM_ROW(owner, std::string, "string", parseString, accessor, env, def, doc)
// A string never printed: mscclpp-info says only whether it is set.
#define MSCCLPP_PARAM_SECRET(owner, accessor, env, doc) \
  MSCCLPP_PARAM_ROW(owner, std::string, "secret", parseString, accessor, env, "", doc)
#define MSCCLPP_PARAM_CHOICE(owner, accessor, env, def, choices, doc) \
  MSCCLPP_PARAM_ROW(owner, std::string, choices, parseChoice, accessor, env, def, doc)

// The accessors: params::timeoutSeconds(), params::backend(), ...
namespace mscclpp::params {
#define MSCCLPP_PARAM_ROW(owner, type, typeName, parse, accessor, env, def, doc) type accessor();
#include "core/params.def"
#undef MSCCLPP_PARAM_ROW

// The rendezvous deadline for ranks that have not arrived: MSCCLPP_TIMEOUT_S when set, else
// MSCCLPP_INIT_TIMEOUT_S (a rank that never arrived cannot be told from a late one).
inline double rendezvousTimeoutSeconds() {
  const double t = timeoutSeconds();
  return t > 0 ? t : initTimeoutSeconds();
}
// The variable rendezvousTimeoutSeconds() comes from, for messages.
inline const char* rendezvousTimeoutName() {
  return timeoutSeconds() > 0 ? "MSCCLPP_TIMEOUT_S" : "MSCCLPP_INIT_TIMEOUT_S";
}
}  // namespace mscclpp::params

#endif  // MSCCLPP_CORE_PARAMS_HPP_
