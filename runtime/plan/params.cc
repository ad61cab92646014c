// Defines and registers the plan layer's parameters (params_plan.def).
#include "plan/params.hpp"

#define MSCCLPP_PARAMS_DEF "plan/params_plan.def"
#define MSCCLPP_PARAMS_OWNER "plan"
#include "core/params_define.inc"
