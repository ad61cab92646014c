// Parameters owned by the executor layer (params_executor.def); see core/params.hpp.
#ifndef MSCCLPP_EXECUTOR_PARAMS_HPP_
#define MSCCLPP_EXECUTOR_PARAMS_HPP_

#include "core/params.hpp"

#define MSCCLPP_PARAMS_DEF "executor/params_executor.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

#endif  // MSCCLPP_EXECUTOR_PARAMS_HPP_
