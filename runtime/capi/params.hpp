// Parameters owned by the capi layer (params_capi.def); see core/params.hpp.
#ifndef MSCCLPP_CAPI_PARAMS_HPP_
#define MSCCLPP_CAPI_PARAMS_HPP_

#include "core/params.hpp"

#define MSCCLPP_PARAMS_DEF "capi/params_capi.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

#endif  // MSCCLPP_CAPI_PARAMS_HPP_
