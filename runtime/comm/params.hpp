// Parameters owned by the comm layer (params_comm.def); see core/params.hpp.
#ifndef MSCCLPP_COMM_PARAMS_HPP_
#define MSCCLPP_COMM_PARAMS_HPP_

#include "core/params.hpp"

#define MSCCLPP_PARAMS_DEF "comm/params_comm.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

#endif  // MSCCLPP_COMM_PARAMS_HPP_
