// The picture of a plan as geometry: one lane per (rank, threadblock), ops placed left to right so
// that every op stands right of what must happen before it (its predecessor in the lane, the signal
// that releases it, the op whose data it reads), arrows for those relations, and the verifier's
// findings attached to the ops they name. svg_writer.hpp draws it.
#ifndef MSCCLPP_TOOLS_PLAN_RENDER_PLAN_PICTURE_HPP_
#define MSCCLPP_TOOLS_PLAN_RENDER_PLAN_PICTURE_HPP_

#include <set>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "plan/verify/verify.hpp"

namespace mscclpp::plan::render {

enum class BoxStyle { Memory, Port, Switch, Local, Sync, Barrier, Pipeline };

struct Box {
  int rank = 0, tb = 0, op = 0;
  int lane = 0;    // row
  int column = 0;  // x slot
  BoxStyle style = BoxStyle::Local;
  bool syncBefore = false;  // a nop (block-wide barrier) precedes it
  bool inPipeline = false;
  std::string title;          // "put", "wait x3"
  std::string chunks;         // "i0 > r1.s0"
  std::string detail;         // the hover text: op, channels, references, source line, findings
  std::vector<int> findings;  // indexes into Picture::findings
};

struct Arrow {
  int from = 0, to = 0;  // box indexes
  bool data = false;     // data flow (else signal -> wait)
  bool relaxed = false;
  BoxStyle style = BoxStyle::Memory;  // the channel, for signal arrows
};

struct Lane {
  int rank = 0, tb = 0;
};

struct Picture {
  std::string title;    // "allreduce_rsag_n2_ip: allreduce, 2 ranks, Simple, in place"
  std::string verdict;  // "PROVEN ..." / "NOT PROVEN: 2 findings"
  bool proven = false;
  bool verified = false;
  std::vector<Lane> lanes;
  std::vector<Box> boxes;
  std::vector<Arrow> arrows;
  std::vector<std::string> findings;  // one line each
  int columns = 0;
};

// Parses "0,2-3" (ranks below nRanks) into a set; false with a message on a bad list.
bool parseRankList(const std::string& text, int nRanks, std::set<int>* ranks, std::string* error);

// verdict is the verifier's result (null when the plan was not verified: no arrows, no findings).
// ranks empty = every rank.
Picture buildPicture(const Plan& plan, const verify::Result* verdict, const std::set<int>& ranks);

}  // namespace mscclpp::plan::render

#endif  // MSCCLPP_TOOLS_PLAN_RENDER_PLAN_PICTURE_HPP_
