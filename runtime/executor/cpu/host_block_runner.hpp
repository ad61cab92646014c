// The CPU backend's entry into the op interpreter: one call runs one plan
// threadblock on the calling thread, as thread 0 of 1. Instantiated per
// datatype and native op in the generated interp_inst_<type>.cc files.
#ifndef MSCCLPP_EXECUTOR_CPU_HOST_BLOCK_RUNNER_HPP_
#define MSCCLPP_EXECUTOR_CPU_HOST_BLOCK_RUNNER_HPP_

#include <cstdint>

#include "executor/exec_layout.hpp"
#include "mscclpp/datatype.hpp"

namespace mscclpp::exec {

using HostBlockFn = void (*)(const ExecContextDevice& ctx, uint32_t block, const LaunchArgs& args);

// Defined (and explicitly instantiated) only in the interp_inst_*.cc files.
template <class T, class Op>
void runHostBlock(const ExecContextDevice& ctx, uint32_t block, const LaunchArgs& args);

// The instantiation for dtype and a native op. Throws
// Error(InvalidArgument) for values outside the table.
HostBlockFn hostBlockFunction(DataType dtype, ReduceOp op);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_HOST_BLOCK_RUNNER_HPP_
