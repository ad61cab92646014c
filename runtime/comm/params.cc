// Defines and registers the comm layer's parameters (params_comm.def).
#include "comm/params.hpp"

#define MSCCLPP_PARAMS_DEF "comm/params_comm.def"
#define MSCCLPP_PARAMS_OWNER "comm"
#include "core/params_define.inc"
