// What a plan may ask of ranks on different hosts, for both backends: only
// port channels cross hosts (through the proxy and a network transport).
#ifndef MSCCLPP_EXECUTOR_HOST_REACH_HPP_
#define MSCCLPP_EXECUTOR_HOST_REACH_HPP_

#include "executor/refusal.hpp"
#include "mscclpp/communicator.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// The refusal when a plan has load/store access (memory channels, switch
// channels, remote buffers they access) between ranks on different hosts,
// naming the channel, the ranks and their hosts. From every rank's
// declarations, so all ranks refuse the same plan before any exchange.
// backend: "CPU" or "CUDA", for the message.
Refusal loadStoreAcrossHosts(const plan::Plan& p, const Communicator& comm, const char* backend);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_HOST_REACH_HPP_
