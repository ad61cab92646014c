// Defines and registers the capi layer's parameters (params_capi.def).
#include "capi/params.hpp"

#define MSCCLPP_PARAMS_DEF "capi/params_capi.def"
#define MSCCLPP_PARAMS_OWNER "capi"
#include "core/params_define.inc"
