// The whole host-side API in one include, as MSCCL++'s core.hpp: bootstrap, transports and
// registered memory, connections, the communicator, semaphores, the proxy service and channels.
#ifndef MSCCLPP_CORE_HPP_
#define MSCCLPP_CORE_HPP_

#include "mscclpp/bootstrap.hpp"
#include "mscclpp/channel.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/connection.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp/memory.hpp"
#include "mscclpp/proxy.hpp"
#include "mscclpp/semaphore.hpp"

#endif  // MSCCLPP_CORE_HPP_
