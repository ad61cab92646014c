// What the opaque handles of mscclpp_c.h hold. Internal to runtime/capi.
#ifndef MSCCLPP_CAPI_HANDLES_HPP_
#define MSCCLPP_CAPI_HANDLES_HPP_

#include <memory>

#include "mscclpp/communicator.hpp"
#include "mscclpp/executor.hpp"
#include "mscclpp/mscclpp_c.h"

// A communicator shared with the executors built on it (they keep it alive).
struct mscclppCommHandle {
  std::shared_ptr<mscclpp::Communicator> comm;
  // The barrier's own view of the bootstrap, so it never mixes with the communicator's or the
  // executor's traffic.
  std::shared_ptr<mscclpp::Bootstrap> control;
};

struct mscclppExecutorHandle {
  std::shared_ptr<mscclpp::Communicator> comm;  // whose rank execute() checks against
  std::unique_ptr<mscclpp::Executor> executor;
};

#endif  // MSCCLPP_CAPI_HANDLES_HPP_
