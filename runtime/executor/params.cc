// Defines and registers the executor layer's parameters (params_executor.def).
#include "executor/params.hpp"

#define MSCCLPP_PARAMS_DEF "executor/params_executor.def"
#define MSCCLPP_PARAMS_OWNER "executor"
#include "core/params_define.inc"
