// Defines and registers the bootstrap layer's parameters (params_bootstrap.def).
#include "bootstrap/params.hpp"

#define MSCCLPP_PARAMS_DEF "bootstrap/params_bootstrap.def"
#define MSCCLPP_PARAMS_OWNER "bootstrap"
#include "core/params_define.inc"
