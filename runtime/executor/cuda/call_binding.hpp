// How one call's user buffers become a plan's input and output on the GPU.
// Zero-copy where the plan's semantics allow it; else context-owned staging,
// allocated once per context, never per call (docs/cuda-backend.md,
// "Execution contexts", lists when). The steps around the kernel:
//   pre:  input <- send (a copy, or premulsum's scaling)
//   post: recv <- output when staged; avg: recv /= ranks
// Thread-safety: pure functions.
#ifndef MSCCLPP_EXECUTOR_CUDA_CALL_BINDING_HPP_
#define MSCCLPP_EXECUTOR_CUDA_CALL_BINDING_HPP_

#include <cstdint>
#include <string>

#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"
#include "plan/plan_sizing.hpp"

namespace mscclpp::exec {

// Where a plan buffer lives: in a user buffer (zero-copy) or at an offset of the context's staging.
struct BufferPlace {
  char* user = nullptr;        // the user's pointer (null when staged or absent)
  uint64_t stagingOffset = 0;  // valid when staged
  bool staged = false;
  uint64_t bytes = 0;
};

struct CallBinding {
  // The plan's input and output (for in-place plans both lie inside `data`).
  BufferPlace input, output;
  bool inPlacePlan = false;
  BufferPlace data;           // in-place plans: the data buffer holding both (user or staged)
  uint64_t stagingBytes = 0;  // context-owned bytes the binding needs (0: fully zero-copy)

  // pre-step: copy or premultiply preBytes from preSrc into the plan's
  // input. Skipped for 0 bytes; in place when the source is the input.
  const char* preSrc = nullptr;
  uint64_t preBytes = 0;
  bool preInPlace = false;  // the source is the plan's input (premulsum scales in place)
  // post-step: copy postBytes of the plan's output to postDst (when the output was staged).
  char* postDst = nullptr;
  uint64_t postBytes = 0;
  // What an avg call divides of recv (after the post-step). Set for every op:
  // sum and avg calls share a context.
  uint64_t divideBytes = 0;
  // Padded calls, planPartBytes > 0: the steps move parts of userPartBytes,
  // at pitch userPartBytes in the user's buffers, planPartBytes in staging.
  uint64_t userPartBytes = 0, planPartBytes = 0;
  uint32_t preParts = 1, postParts = 1;

  std::string why;  // why staging was used ("" when zero-copy): for the INFO log
};

struct CallRequest {
  const plan::Plan* plan = nullptr;
  int rank = 0;
  const char* send = nullptr;
  char* recv = nullptr;
  uint64_t sendBytes = 0;
  uint64_t recvBytes = 0;
  ReduceOp op = ReduceOp::Sum;
  // False when peers in other processes cannot map the user's buffers:
  // everything is staged.
  bool zeroCopy = true;
  // The plan's geometry for the call's sizes (the context's shape); padded: everything is staged.
  plan::CallGeometry geometry;
};

// Decides the binding. Throws Error(InvalidArgument) for an impossible
// request, such as a null buffer the collective needs.
CallBinding bindCall(const CallRequest& req);

// The part of the binding that decides a context's identity: the staged
// layout and the user pointers. Equal keys share a context.
struct BindingKey {
  const char* send = nullptr;
  const char* recv = nullptr;
  uint64_t sendBytes = 0, recvBytes = 0;
  bool premul = false;  // premulsum stages differently than the other ops
  bool zeroCopy = true;
  bool operator==(const BindingKey& o) const {
    return send == o.send && recv == o.recv && sendBytes == o.sendBytes && recvBytes == o.recvBytes &&
           premul == o.premul && zeroCopy == o.zeroCopy;
  }
};
BindingKey bindingKeyOf(const CallRequest& req);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_CALL_BINDING_HPP_
