// Builds without CUDA: the built-in algorithms have no GPU code.
#include "algorithm/builtin/builtin_entries.hpp"

namespace mscclpp::algo {

BuiltinGpuEntry builtinGpuEntry(BuiltinKernel) { return BuiltinGpuEntry{}; }

}  // namespace mscclpp::algo
