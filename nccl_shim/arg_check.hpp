// NCCL's argument checks for collectives and point-to-point calls, in NCCL's order and with NCCL's result codes
// (all ncclInvalidArgument): root/peer range, datatype, reduce op (built-in range, user op known to this
// communicator and created for this datatype); then the checks NCCL leaves to a crash or to NCCL_CHECK_POINTERS:
// NULL buffers where this rank reads or writes them with count > 0, and byte counts that overflow.
#ifndef MSCCLPP_NCCL_SHIM_ARG_CHECK_HPP_
#define MSCCLPP_NCCL_SHIM_ARG_CHECK_HPP_

#include "coll_call.hpp"

namespace mscclpp::shim {

class Comm;

// Throws Error(InvalidArgument) with a message naming the call, the argument and its value.
void checkCallArgs(const CollCall& call, const Comm& comm);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_ARG_CHECK_HPP_
