// Parameters owned by the NCCL shim (params_shim.def); see runtime/core/params.hpp.
#ifndef MSCCLPP_NCCL_SHIM_SHIM_PARAMS_HPP_
#define MSCCLPP_NCCL_SHIM_SHIM_PARAMS_HPP_

#include "core/params.hpp"

#define MSCCLPP_PARAMS_DEF "params_shim.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

#endif  // MSCCLPP_NCCL_SHIM_SHIM_PARAMS_HPP_
