// Invalid environment values are rejected one way: at init. Every entry point that sets up the
// runtime (a bootstrap, a communicator, an executor, an NCCL communicator of the shim) calls
// checkEnvironment() first, so a bad value fails that call with InvalidArgument (the shim's
// ncclInvalidArgument) and a message naming the variable, the value and what is accepted; no
// value is found bad later, halfway through a collective. Parameter accessors still throw the
// same error if a variable is changed after init.
#ifndef MSCCLPP_CORE_ENV_CHECK_HPP_
#define MSCCLPP_CORE_ENV_CHECK_HPP_

namespace mscclpp {

// Checks every declared parameter (params::allParams) and the logging variables
// (logConfigFromEnvironment); throws Error(InvalidArgument) listing every value that is not valid.
void checkEnvironment();

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_ENV_CHECK_HPP_
