// Invalid environment values are rejected at init, never halfway through a collective.
// Every entry point that sets up the runtime calls checkEnvironment() first.
// A bad value fails that call with InvalidArgument, naming variable, value and accepted values.
// Parameter accessors throw the same error for a variable changed after init.
#ifndef MSCCLPP_CORE_ENV_CHECK_HPP_
#define MSCCLPP_CORE_ENV_CHECK_HPP_

namespace mscclpp {

// Checks every declared parameter and the logging variables.
// Throws InvalidArgument listing every value that is not valid.
void checkEnvironment();

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_ENV_CHECK_HPP_
