// The TCP transport's Driver: one Engine per
// communicator as its Session, memory exported as
// engine keys, and connections of two sockets.
#ifndef MSCCLPP_TRANSPORT_TCP_DRIVER_HPP_
#define MSCCLPP_TRANSPORT_TCP_DRIVER_HPP_

#include <memory>

#include "transport/tcp/engine.hpp"
#include "transport/transport.hpp"

namespace mscclpp::transport::tcp {

const Driver& driver();

// The engine behind a TCP session; tests reach its listening address through it.
std::shared_ptr<Engine> engineOf(Session& session);

}  // namespace mscclpp::transport::tcp

#endif  // MSCCLPP_TRANSPORT_TCP_DRIVER_HPP_
