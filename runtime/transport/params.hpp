// Parameters owned by the transport layer (params_transport.def); see core/params.hpp.
#ifndef MSCCLPP_TRANSPORT_PARAMS_HPP_
#define MSCCLPP_TRANSPORT_PARAMS_HPP_

#include "core/params.hpp"

#define MSCCLPP_PARAMS_DEF "transport/params_transport.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

#endif  // MSCCLPP_TRANSPORT_PARAMS_HPP_
