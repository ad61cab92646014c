// Parameters owned by the plan layer (params_plan.def); see core/params.hpp.
#ifndef MSCCLPP_PLAN_PARAMS_HPP_
#define MSCCLPP_PLAN_PARAMS_HPP_

#include "core/params.hpp"

#define MSCCLPP_PARAMS_DEF "plan/params_plan.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

#endif  // MSCCLPP_PLAN_PARAMS_HPP_
