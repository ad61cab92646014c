// Parameters owned by the bootstrap layer (params_bootstrap.def); see core/params.hpp.
#ifndef MSCCLPP_BOOTSTRAP_PARAMS_HPP_
#define MSCCLPP_BOOTSTRAP_PARAMS_HPP_

#include "core/params.hpp"

#define MSCCLPP_PARAMS_DEF "bootstrap/params_bootstrap.def"
#include "core/params_declare.inc"
#undef MSCCLPP_PARAMS_DEF

namespace mscclpp::params {
// The rendezvous deadline for ranks that have not arrived: MSCCLPP_TIMEOUT_S when set, else
// MSCCLPP_INIT_TIMEOUT_S (a rank that never arrived cannot be told from a late one).
inline double rendezvousTimeoutSeconds() {
  const double t = timeoutSeconds();
  return t > 0 ? t : initTimeoutSeconds();
}
// The variable rendezvousTimeoutSeconds() comes from, for messages.
inline const char* rendezvousTimeoutName() {
  return timeoutSeconds() > 0 ? "MSCCLPP_TIMEOUT_S" : "MSCCLPP_INIT_TIMEOUT_S";
}
}  // namespace mscclpp::params

#endif  // MSCCLPP_BOOTSTRAP_PARAMS_HPP_
