// The picture of a plan as geometry: a lane per rank
// and threadblock. Every op stands right of what must
// happen before it: its lane predecessor, the signal
// that releases it, the op whose data it reads. Arrows
// show those relations; the verifier's findings attach
// to the ops they name. svg_writer.hpp draws it.
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

// Parses "0,2-3", ranks below nRanks, into a
// set; false with a message on a bad list.
bool parseRankList(const std::string& text, int nRanks, std::set<int>* ranks, std::string* error);

// verdict is the verifier's result; null when the plan was not
// verified, which draws no arrows and no findings. Empty ranks: all.
Picture buildPicture(const Plan& plan, const verify::Result* verdict, const std::set<int>& ranks);

}  // namespace mscclpp::plan::render

#endif  // MSCCLPP_TOOLS_PLAN_RENDER_PLAN_PICTURE_HPP_
