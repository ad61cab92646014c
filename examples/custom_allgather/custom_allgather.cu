// libcustom_allgather.so: registers the port-channel all-gather
// (custom_allgather.hpp) when it is loaded, so an unchanged NCCL program
// runs it for ncclAllGather under
//   LD_PRELOAD="libmscclpp_nccl.so libcustom_allgather.so" program
// and a Python program after ctypes.CDLL of it (docs/algorithms.md).
#include <cstdio>

#include "custom_allgather.hpp"

namespace {

struct RegisterAtLoad {
  RegisterAtLoad() {
    try {
      mscclpp::AlgorithmCollectionBuilder::getInstance()->addAlgorithm(custom::describe());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "libcustom_allgather: not registered: %s\n", e.what());
    }
  }
} registerAtLoad;

}  // namespace
