// Why the executor declines a call, as a value: nullopt when it serves it.
// A refusal is decided before this rank exchanges anything for the call, from
// facts every rank of the plan shares, so every rank refuses alike. Failures
// stay exceptions. Each refusing check is one function; its throwing form is
// built on it; RuntimeExecutor::tryExecute hands the value to the shim.
// docs/executor.md, "Refusals are values".
#ifndef MSCCLPP_EXECUTOR_REFUSAL_HPP_
#define MSCCLPP_EXECUTOR_REFUSAL_HPP_

#include <optional>
#include <string>

namespace mscclpp::exec {

using Refusal = std::optional<std::string>;

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_REFUSAL_HPP_
