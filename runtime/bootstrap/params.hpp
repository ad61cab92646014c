// Parameters owned by the bootstrap layer (params_bootstrap.def); see core/params.hpp.
#ifndef MSCCLPP_BOOTSTRAP_PARAMS_HPP_
#define MSCCLPP_BOOTSTRAP_PARAMS_HPP_

#include "core/params.hpp"

#define MSCCLPP_PARAMS_DEF "bootstrap/params_bootstrap.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

#endif  // MSCCLPP_BOOTSTRAP_PARAMS_HPP_
