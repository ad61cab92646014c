// Why the executor declines a call (Executor::execute's Error(NotSupported) message), as a value: nullopt when
// the call is served. A refusal is decided before this rank exchanges anything for the call, from facts every
// rank of the plan shares (the plan, sizes, datatype, op, the ranks' hosts), so every rank refuses alike.
// Failures (a dead peer, a timeout, a bad argument) stay exceptions. Each check that refuses is one function
// returning a Refusal; its throwing form, where one exists, is built on it (no condition written twice), and
// RuntimeExecutor::tryExecute hands the value to callers that decide on it (the NCCL shim falls back to the real NCCL).
#ifndef MSCCLPP_EXECUTOR_REFUSAL_HPP_
#define MSCCLPP_EXECUTOR_REFUSAL_HPP_

#include <optional>
#include <string>

namespace mscclpp::exec {

using Refusal = std::optional<std::string>;

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_REFUSAL_HPP_
