// The one registry of environment parameters. Every MSCCLPP_* variable the C++ code reads is
// declared exactly once, in the .def file of the layer that owns it (listed in params_list.def),
// with its type, default and one line of doc; it is read through the accessor declared here and
// nowhere else (no getenv elsewhere). `mscclpp-info --params` prints them all.
//
// Accessors parse the environment on every call (cheap, but not for hot paths: read a parameter
// when a communicator or context is built and keep the value). A value that does not parse throws
// Error(InvalidArgument) naming the variable, the value and what was expected.
#ifndef MSCCLPP_CORE_PARAMS_HPP_
#define MSCCLPP_CORE_PARAMS_HPP_

#include <cstdint>
#include <string>
#include <vector>

namespace mscclpp::params {

struct ParamDescriptor {
  const char* envName;
  const char* typeName;      // "bool", "int", "double", "string", or the choices "a|b|c"
  const char* defaultValue;  // as text
  const char* doc;
};

// Every declared parameter, in declaration order.
const std::vector<ParamDescriptor>& allParams();

// The raw value of the variable if set, else nullptr.
const char* rawValue(const ParamDescriptor& param);

// Parses and checks the current value of the parameter (throws like the accessors do).
void checkValue(const ParamDescriptor& param);

#define MSCCLPP_PARAM_BOOL(accessor, env, def, doc) bool accessor();
#define MSCCLPP_PARAM_INT(accessor, env, def, doc) int64_t accessor();
#define MSCCLPP_PARAM_DOUBLE(accessor, env, def, doc) double accessor();
#define MSCCLPP_PARAM_STRING(accessor, env, def, doc) std::string accessor();
// A string restricted to the '|'-separated choices, compared case-insensitively; returns the
// choice as spelled in the declaration.
#define MSCCLPP_PARAM_CHOICE(accessor, env, def, choices, doc) std::string accessor();
#include "params_list.def"
#undef MSCCLPP_PARAM_BOOL
#undef MSCCLPP_PARAM_INT
#undef MSCCLPP_PARAM_DOUBLE
#undef MSCCLPP_PARAM_STRING
#undef MSCCLPP_PARAM_CHOICE

}  // namespace mscclpp::params

#endif  // MSCCLPP_CORE_PARAMS_HPP_
