// What each rank's output must hold after a call, per collective.
// The definitions are in docs/plan-format.md; the emulator checks the same with numbers.
//   allreduce, reduce      out[o] = reduction over ranks s of in_s[o]; reduce: root only
//   reducescatter          out_r[o] = reduction over s of in_s[r * outBytes + o]
//   allgather, gather      out[s * in + o] = in_s[o]; gather: root only
//   alltoall               out_r[s * B + o] = in_s[r * B + o], with B = outBytes / n
//   broadcast              out[o] = in_root[o]
//   scatter                out_r[o] = in_root[r * outBytes + o]
//   sendrecv               out_r = in_s for one rank s, another rank when n > 1
//   test, custom           nothing to check
#ifndef MSCCLPP_PLAN_VERIFY_COLLECTIVE_SPEC_HPP_
#define MSCCLPP_PLAN_VERIFY_COLLECTIVE_SPEC_HPP_

#include <cstdint>
#include <vector>

#include "plan/plan.hpp"
#include "plan/verify/call_layout.hpp"
#include "plan/verify/terms.hpp"

namespace mscclpp::plan::verify {

struct ExpectedPiece {
  uint64_t begin, end;  // physical positions in the rank's output buffer
  Value value;
};

struct Expectation {
  bool checked = false;     // false when the collective leaves the rank's output undefined
  bool anyOneRank = false;  // sendrecv: the output is one rank's whole input; value unused
  std::vector<ExpectedPiece> pieces;
};

bool hasDefinition(Collective c);
Expectation expectedOutput(const Plan& plan, const CallLayout& layout, uint32_t rank, TermTable* terms);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_COLLECTIVE_SPEC_HPP_
