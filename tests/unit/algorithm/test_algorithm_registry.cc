// The choice between DSL plans and native algorithms (the algorithm
// registry): the integration guide's order, the switches of either step,
// a selector, refusals that say why, and kernels registered through the C
// API, whose wrong results the reference catches.
#include <catch2/catch.hpp>
#include <cstring>

#include "../../support/scoped_env.hpp"
#include "algorithm/algorithm_registry.hpp"
#include "core/params.hpp"
#include "mscclpp/algorithm_api.h"
#include "mscclpp/algorithm_device.hpp"
#include "native_test_util.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

// An "allreduce" that only copies its input: wrong on every rank but one-rank worlds.
struct CopyOnly {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    if (b.block() == 0) copy(c.output, c.input, c.inputBytes, b.thread(), b.threads());
  }
};

mscclppAlgorithmDesc copyOnlyDesc(const char* name) {
  mscclppAlgorithmDesc d{};
  d.version = MSCCLPP_ALGORITHM_API_VERSION;
  d.name = name;
  d.collective = "allreduce";
  d.maxMessageBytes = UINT64_MAX;
  d.resources = MSCCLPP_ALGORITHM_REDUCES;
  d.blocks = 1;
  d.threadsPerBlock = 64;
  d.hostBlock = &algorithmHostBlock<CopyOnly>;
  return d;
}

}  // namespace

TEST_CASE("the reference catches a registered kernel's wrong sums", "[native][registry]") {
  char err[256];
  mscclppAlgorithmDesc d = copyOnlyDesc("test_copy_only");
  REQUIRE(mscclppAlgorithmRegister(&d, err, sizeof(err)) == mscclppSuccess);
  const std::string failure = runNative(NativeCase{"test_copy_only", 2, DataType::Float32, ReduceOp::Sum, 5});
  CHECK_THAT(failure, Catch::Contains("test_copy_only, 2 ranks") && Catch::Contains("mismatches") &&
                          Catch::Contains("expected"));
  REQUIRE(mscclppAlgorithmUnregister("test_copy_only", err, sizeof(err)) == mscclppSuccess);
}
