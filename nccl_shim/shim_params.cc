// Defines and registers the shim's parameters (params_shim.def). Its own static library, so that
// `mscclpp-info --params` lists them without linking the shim.
#include "shim_params.hpp"

#define MSCCLPP_PARAMS_DEF "params_shim.def"
#define MSCCLPP_PARAMS_OWNER "nccl_shim"
#include "core/params_define.inc"
