#include "executor/cuda/call_binding.hpp"

#include <algorithm>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "executor/context_image.hpp"
#include "executor/scale_steps.hpp"

namespace mscclpp::exec {
namespace {

constexpr uint64_t kStagingAlign = 256;

bool overlaps(const char* a, uint64_t aBytes, const char* b, uint64_t bBytes) {
  if (a == nullptr || b == nullptr || aBytes == 0 || bBytes == 0) return false;
  return a < b + bBytes && b < a + aBytes;
}

void stage(CallBinding& b, BufferPlace& p, uint64_t bytes) {
  p.staged = true;
  p.user = nullptr;
  p.bytes = bytes;
  p.stagingOffset = (b.stagingBytes + kStagingAlign - 1) / kStagingAlign * kStagingAlign;
  b.stagingBytes = p.stagingOffset + bytes;
}

void useUser(BufferPlace& p, char* user, uint64_t bytes) {
  p.staged = false;
  p.user = user;
  p.bytes = bytes;
}

// A place inside another place (in-place plans: input and output inside the data buffer).
BufferPlace inside(const BufferPlace& data, uint64_t offset, uint64_t bytes) {
  BufferPlace p;
  p.staged = data.staged;
  p.bytes = bytes;
  if (data.staged)
    p.stagingOffset = data.stagingOffset + offset;
  else
    p.user = data.user + offset;
  return p;
}

// Stages the plan's buffers at the padded geometry; the pre- and post-steps move the call's parts.
CallBinding bindPadded(const CallRequest& q, bool reads, bool writes) {
  const plan::PlanHeader& h = q.plan->header;
  const plan::CallGeometry& g = q.geometry;
  CallBinding b;
  b.inPlacePlan = h.inPlace;
  if (h.inPlace) {
    const InPlaceLayout l = inPlaceLayout(h.collective, q.rank, g.inputBytes, g.outputBytes);
    stage(b, b.data, l.dataBytes);
    b.input = inside(b.data, l.inputOffset, g.inputBytes);
    b.output = inside(b.data, l.outputOffset, g.outputBytes);
  } else {
    stage(b, b.input, g.inputBytes);
    stage(b, b.output, g.outputBytes);
  }
  b.userPartBytes = g.partBytes;
  b.planPartBytes = g.paddedPartBytes;
  if (reads && q.send != nullptr && q.sendBytes > 0) {
    b.preSrc = q.send;
    b.preBytes = q.sendBytes;
    b.preParts = g.inputParts;
  }
  if (writes && q.recv != nullptr && q.recvBytes > 0) {
    b.postDst = q.recv;
    b.postBytes = q.recvBytes;
    b.postParts = g.outputParts;
  }
  b.why = strFormat("the call's %llu-byte parts do not fit the plan's chunks: they run padded to %llu bytes",
                    static_cast<unsigned long long>(g.partBytes), static_cast<unsigned long long>(g.paddedPartBytes));
  return b;
}

}  // namespace

BindingKey bindingKeyOf(const CallRequest& q) {
  return BindingKey{q.send, q.recv, q.sendBytes, q.recvBytes, q.op == ReduceOp::PreMulSum, q.zeroCopy};
}

CallBinding bindCall(const CallRequest& q) {
  MSCCLPP_ENFORCE(q.plan != nullptr, ErrorCode::InvalidArgument, "bindCall: no plan");
  const plan::PlanHeader& h = q.plan->header;
  // Scatter reads only the root's send buffer; reduce and gather write only
  // the root's receive buffer. NCCL lets other ranks pass NULL there.
  const bool reads = h.collective != plan::Collective::Scatter || q.rank == h.root;
  MSCCLPP_ENFORCE(!reads || q.sendBytes == 0 || q.send != nullptr, ErrorCode::InvalidArgument,
                  "plan %s rank %d: a null send buffer of %llu bytes", h.name.c_str(), q.rank,
                  static_cast<unsigned long long>(q.sendBytes));
  const bool premul = q.op == ReduceOp::PreMulSum;
  const bool writes =
      (h.collective != plan::Collective::Reduce && h.collective != plan::Collective::Gather) || q.rank == h.root;
  MSCCLPP_ENFORCE(!writes || q.recvBytes == 0 || q.recv != nullptr, ErrorCode::InvalidArgument,
                  "plan %s rank %d: a null receive buffer of %llu bytes", h.name.c_str(), q.rank,
                  static_cast<unsigned long long>(q.recvBytes));
  // A variable-size plan's segments lie at the counts' offsets of the call's
  // buffers: its loader takes no in-place plan, and it has no padded shape.
  MSCCLPP_ENFORCE(!h.variableSizes || (!h.inPlace && !q.geometry.padded), ErrorCode::InternalError,
                  "plan %s rank %d: a variable-size plan bound %s", h.name.c_str(), q.rank,
                  h.inPlace ? "as an in-place plan" : "at a padded geometry");
  CallBinding b;
  if (q.geometry.padded) {
    b = bindPadded(q, reads, writes);
  } else if (h.inPlace) {
    b.inPlacePlan = true;
    const InPlaceLayout l = inPlaceLayout(h.collective, q.rank, q.sendBytes, q.recvBytes);
    char* userData = nullptr;
    char* send = const_cast<char*>(q.send);  // only used as the data buffer of an in-place call
    switch (h.collective) {
      case plan::Collective::AllGather:
      case plan::Collective::Gather:  // off the root the receive buffer may be NULL: staged then
        if (q.recv != nullptr && q.recvBytes >= l.dataBytes) userData = q.recv;
        if (userData == nullptr) b.why = "no receive buffer that can hold the in-place plan's data buffer";
        break;
      case plan::Collective::ReduceScatter:
      case plan::Collective::Scatter: {
        // The plan works inside the send buffer: only an in-place call may lend it.
        const bool callInPlace = q.send != nullptr && q.recv == q.send + l.outputOffset;
        if (callInPlace && q.sendBytes >= l.dataBytes) userData = send;
        if (!callInPlace)
          b.why = q.send == nullptr ? "no send buffer (a scatter's non-root rank)"
                                    : std::string("an in-place ") + plan::collectiveName(h.collective) +
                                          " plan serving an out-of-place call (the send buffer is const)";
        break;
      }
      default:
        if (q.recv != nullptr && q.recvBytes >= l.dataBytes) userData = q.recv;
        if (userData == nullptr && b.why.empty())
          b.why = "the receive buffer cannot hold the in-place plan's data buffer (a reduce's non-root rank?)";
        break;
    }
    if (userData != nullptr && q.send != userData + l.inputOffset &&
        overlaps(q.send, q.sendBytes, userData, l.dataBytes)) {
      // The send buffer overlaps the data buffer outside the input slot: an
      // overlapping cudaMemcpyAsync is undefined.
      userData = nullptr;
      b.why = "the send buffer overlaps the receive buffer but not at the in-place plan's input position";
    }
    if (!q.zeroCopy) {
      userData = nullptr;
      b.why = "the user buffers cannot be shared with peers in other processes (CUDA IPC export failed)";
    }
    if (userData != nullptr)
      useUser(b.data, userData, l.dataBytes);
    else
      stage(b, b.data, l.dataBytes);
    b.input = inside(b.data, l.inputOffset, q.sendBytes);
    b.output = inside(b.data, l.outputOffset, q.recvBytes);
    if (q.sendBytes > 0 && q.send != nullptr) {
      const bool sameAsInput = !b.input.staged && b.input.user == q.send;
      if (!sameAsInput || premul) {
        b.preSrc = q.send;
        b.preBytes = q.sendBytes;
        b.preInPlace = sameAsInput;
      }
    }
  } else {
    const bool alias = overlaps(q.send, q.sendBytes, q.recv, q.recvBytes);
    if (q.send == nullptr && q.sendBytes > 0) {
      stage(b, b.input, q.sendBytes);  // never read (a scatter's non-root rank): nothing to copy in
      b.why = "no send buffer (a scatter's non-root rank)";
    } else if (q.zeroCopy && !premul && !alias) {
      useUser(b.input, const_cast<char*>(q.send), q.sendBytes);
    } else {
      stage(b, b.input, q.sendBytes);
      if (q.sendBytes > 0) {
        b.preSrc = q.send;
        b.preBytes = q.sendBytes;
      }
      b.why = !q.zeroCopy ? "the user buffers cannot be shared with peers in other processes (CUDA IPC export failed)"
              : premul    ? "premulsum scales the input, which an out-of-place call must not modify"
                          : "the call's send and receive buffers overlap but the plan is out-of-place";
    }
    if (q.zeroCopy && (q.recv != nullptr || q.recvBytes == 0)) {
      useUser(b.output, q.recv, q.recvBytes);
    } else {
      stage(b, b.output, q.recvBytes);
      if (b.why.empty()) b.why = "no receive buffer (a reduce's non-root rank)";
    }
  }
  if (b.output.staged && writes && q.recv != nullptr && q.recvBytes > 0) {
    b.postDst = q.recv;
    b.postBytes = q.recvBytes;
  }
  // For every op: sum and avg calls share a context (the same key), and an
  // avg call divides what this says.
  if (q.recv != nullptr) {
    b.divideBytes = std::min<uint64_t>(q.recvBytes, reducedOutputBytes(h.collective, q.rank, h.root, q.recvBytes));
  }
  return b;
}

}  // namespace mscclpp::exec
