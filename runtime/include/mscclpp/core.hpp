// The whole host-side runtime API in one include (MSCCL++'s core.hpp role): bootstrap, transports
// and registered memory, connections, the communicator, semaphores, the proxy service and channels.
// See each header for ownership, thread-safety and memory ordering; docs/runtime.md for the guide.
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
