// The InfiniBand transport's Driver (transport.hpp), one for IB0..IB7: a Session opens HCA number
// <n> (memory.hpp) and registers memory regions on it; connections are reliable-connected queue
// pairs (connection.hpp). rdma-core is loaded with dlopen (verbs_library.hpp).
#ifndef MSCCLPP_TRANSPORT_IB_VERBS_DRIVER_HPP_
#define MSCCLPP_TRANSPORT_IB_VERBS_DRIVER_HPP_

#include "transport/transport.hpp"

namespace mscclpp::transport::ib_verbs {

const Driver& driver();

}  // namespace mscclpp::transport::ib_verbs

#endif  // MSCCLPP_TRANSPORT_IB_VERBS_DRIVER_HPP_
