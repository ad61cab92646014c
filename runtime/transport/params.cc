// Defines and registers the transport layer's parameters (params_transport.def).
#include "transport/params.hpp"

#define MSCCLPP_PARAMS_DEF "transport/params_transport.def"
#define MSCCLPP_PARAMS_OWNER "transport"
#include "core/params_define.inc"
