#include "executor/cpu/host_block_runner.hpp"

#include "core/enforce.hpp"
#include "executor/dtypes.hpp"

namespace mscclpp::exec {

HostBlockFn hostBlockFunction(DataType dtype, ReduceOp op) {
  HostBlockFn fn = nullptr;
  bool ok = dispatchDtypeOp(dtype, op, [&](auto typeTag, auto opTag) {
    using T = typename decltype(typeTag)::type;
    fn = &runHostBlock<T, decltype(opTag)>;
  });
  MSCCLPP_ENFORCE(ok && fn != nullptr, ErrorCode::InvalidArgument,
                  "no CPU interpreter for datatype %d with reduce op %d (native ops: sum, prod, max, min)",
                  static_cast<int>(dtype), static_cast<int>(op));
  return fn;
}

}  // namespace mscclpp::exec
