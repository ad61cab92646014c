#include "cli/plan/render/plan_picture.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <tuple>

#include "core/format.hpp"

namespace mscclpp::plan::render {
namespace {

bool isControl(OpType t) {
  switch (t) {
    case OpType::Signal:
    case OpType::Wait:
    case OpType::RelaxedSignal:
    case OpType::RelaxedWait:
    case OpType::Flush:
    case OpType::SemAcquire:
    case OpType::SemRelease:
      return true;
    default:
      return false;
  }
}

BoxStyle styleOf(const Op& op) {
  if (op.type == OpType::Barrier) return BoxStyle::Barrier;
  if (op.type == OpType::Pipeline) return BoxStyle::Pipeline;
  if (op.type == OpType::SemAcquire || op.type == OpType::SemRelease) return BoxStyle::Sync;
  switch (op.channelType) {
    case ChannelType::Memory:
      return BoxStyle::Memory;
    case ChannelType::Port:
      return BoxStyle::Port;
    case ChannelType::Switch:
      return BoxStyle::Switch;
    case ChannelType::None:
      break;
  }
  return BoxStyle::Local;
}

char bufferChar(BufferType t) { return t == BufferType::Input ? 'i' : t == BufferType::Output ? 'o' : 's'; }

// "i3", "o2-3", "r1.s0", "mc.s4"
std::string refText(const RankPlan& rp, const BufferRef& r) {
  std::string range = std::to_string(r.index);
  if (r.size > 1) range += "-" + std::to_string(r.index + r.size - 1);
  switch (r.kind) {
    case RefKind::Local:
      return std::string(1, bufferChar(r.type)) + range;
    case RefKind::Remote: {
      const RemoteBufferDecl& d = rp.remoteBuffers[r.id];
      return strFormat("r%d.%c", d.rank, bufferChar(d.type)) + range;
    }
    case RefKind::Multicast:
      return strFormat("mc.%c", bufferChar(rp.switchChannels[r.id].bufferType)) + range;
  }
  return "?";
}

std::string refList(const RankPlan& rp, const ThreadblockPlan& tb, uint32_t begin, uint32_t n, size_t most) {
  std::string s;
  for (uint32_t k = 0; k < n && k < most; ++k) s += (k ? "," : "") + refText(rp, tb.refs[begin + k]);
  if (n > most) s += strFormat("+%u", static_cast<unsigned>(n - most));
  return s;
}

std::string channelList(const RankPlan& rp, const ThreadblockPlan& tb, const Op& op) {
  std::string s;
  for (uint32_t k = 0; k < op.nIds; ++k) {
    const uint32_t id = tb.ids[op.idsBegin + k];
    if (op.type == OpType::SemAcquire || op.type == OpType::SemRelease) {
      s += strFormat("%ssemaphore %u", k ? ", " : "", id);
    } else if (op.channelType == ChannelType::Memory && id < rp.memoryChannels.size()) {
      s += strFormat("%s%u (to rank %d)", k ? ", " : "", id, rp.memoryChannels[id].peer);
    } else if (op.channelType == ChannelType::Port && id < rp.portChannels.size()) {
      s += strFormat("%s%u (to rank %d)", k ? ", " : "", id, rp.portChannels[id].peer);
    } else {
      s += strFormat("%s%u", k ? ", " : "", id);
    }
  }
  return s;
}

// Longest-path columns: each box right of its lane
// predecessor and of the sources of its arrows;
// the boxes of one barrier round share a column.
void layout(Picture* p, const std::vector<std::vector<int>>& barrierRounds) {
  const size_t n = p->boxes.size();
  std::vector<int> root(n);
  std::iota(root.begin(), root.end(), 0);
  for (const auto& round : barrierRounds)
    for (int b : round) root[b] = round[0];
  std::vector<std::vector<int>> next(n);
  std::vector<int> indeg(n, 0);
  auto edge = [&](int a, int b) {
    a = root[a], b = root[b];
    if (a == b) return;
    next[a].push_back(b);
    ++indeg[b];
  };
  for (size_t i = 1; i < n; ++i)
    if (p->boxes[i].lane == p->boxes[i - 1].lane) edge(static_cast<int>(i - 1), static_cast<int>(i));
  for (const Arrow& a : p->arrows) edge(a.from, a.to);
  std::vector<int> column(n, 0);
  std::deque<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (root[i] == static_cast<int>(i) && indeg[i] == 0) ready.push_back(static_cast<int>(i));
  std::vector<uint8_t> done(n, 0);
  while (!ready.empty()) {
    const int a = ready.front();
    ready.pop_front();
    done[a] = 1;
    for (int b : next[a]) {
      column[b] = std::max(column[b], column[a] + 1);
      if (--indeg[b] == 0) ready.push_back(b);
    }
  }
  // A cycle (a plan that deadlocks): the rest follows program order only.
  for (size_t i = 0; i < n; ++i) {
    if (root[i] != static_cast<int>(i) || done[i]) continue;
    if (i > 0 && p->boxes[i].lane == p->boxes[i - 1].lane) column[i] = std::max(column[i], column[root[i - 1]] + 1);
  }
  p->columns = 0;
  for (size_t i = 0; i < n; ++i) {
    p->boxes[i].column = column[root[i]];
    p->columns = std::max(p->columns, p->boxes[i].column + 1);
  }
}

}  // namespace

bool parseRankList(const std::string& text, int nRanks, std::set<int>* ranks, std::string* error) {
  ranks->clear();
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = text.find(',', at);
    const std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const size_t dash = part.find('-');
    auto number = [&](const std::string& s, int* v) {
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) return false;
      *v = std::stoi(s);
      return true;
    };
    int lo = 0, hi = 0;
    if (!(dash == std::string::npos ? number(part, &lo) && number(part, &hi)
                                    : number(part.substr(0, dash), &lo) && number(part.substr(dash + 1), &hi)) ||
        lo > hi) {
      *error = "'" + part + "' is not a rank or a range lo-hi (e.g. --ranks 0,2-3)";
      return false;
    }
    if (hi >= nRanks) {
      *error = strFormat("rank %d is not below the plan's %d ranks", hi, nRanks);
      return false;
    }
    for (int r = lo; r <= hi; ++r) ranks->insert(r);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return true;
}

Picture buildPicture(const Plan& plan, const verify::Result* v, const std::set<int>& ranksIn) {
  const PlanHeader& h = plan.header;
  Picture p;
  std::set<int> ranks = ranksIn;
  if (ranks.empty())
    for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) ranks.insert(r);
  p.title = strFormat("%s: %s, %d ranks, %s, %s", h.name.c_str(), collectiveName(h.collective), h.worldSize,
                      h.protocol == Protocol::LL ? "LL" : "Simple", h.inPlace ? "in place" : "out of place");
  if (ranks.size() < plan.ranks.size()) {
    std::vector<uint32_t> shown(ranks.begin(), ranks.end());
    std::string list;
    for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
    p.title += " (ranks " + list + " shown)";
  }
  p.verified = v != nullptr;
  if (v != nullptr) {
    p.proven = v->proven;
    p.verdict = v->proven ? "PROVEN: race-free, deadlock-free, no leftover counts, correct result"
                          : strFormat("NOT PROVEN: %zu finding(s)", v->findings.size());
    for (const auto& f : v->findings) p.findings.push_back(verify::formatFinding(f));
  } else {
    p.verdict = "not verified";
  }
  std::map<std::tuple<int, int, int>, int> boxOf;
  std::map<std::tuple<int, uint32_t>, std::map<int, int>> barrierUses;  // (rank, id) -> tb -> uses so far
  std::map<std::tuple<int, uint32_t, int>, std::vector<int>> rounds;    // (rank, id, k) -> boxes
  for (int r : ranks) {
    const RankPlan& rp = plan.ranks[r];
    for (int t = 0; t < static_cast<int>(rp.threadblocks.size()); ++t) {
      const ThreadblockPlan& tb = rp.threadblocks[t];
      const int lane = static_cast<int>(p.lanes.size());
      p.lanes.push_back({r, t});
      bool pendingSync = false;
      uint32_t pipelineEnd = 0;
      for (uint32_t i = 0; i < tb.ops.size(); ++i) {
        const Op& op = tb.ops[i];
        if (op.type == OpType::Nop) {
          pendingSync = true;
          continue;
        }
        Box b;
        b.rank = r;
        b.tb = t;
        b.op = static_cast<int>(i);
        b.lane = lane;
        b.style = styleOf(op);
        b.syncBefore = pendingSync;
        b.inPipeline = i < pipelineEnd;
        pendingSync = false;
        b.title = opTypeName(op.type);
        // How many peers the op serves, as the text summary counts them
        // ("rresx3" reads from and writes to three): its channels, else
        // its remote destinations, else its remote sources.
        auto remoteRefs = [&](uint32_t begin, uint32_t n) {
          uint32_t count = 0;
          for (uint32_t k = 0; k < n; ++k) count += tb.refs[begin + k].kind == RefKind::Remote;
          return count;
        };
        uint32_t width = op.type == OpType::SemAcquire || op.type == OpType::SemRelease ? 0 : op.nIds;
        if (width == 0 && !isControl(op.type)) width = remoteRefs(op.dstBegin, op.nDst);
        if (width == 0 && !isControl(op.type)) width = remoteRefs(op.srcBegin, op.nSrc);
        if (width > 1) b.title += strFormat("x%u", width);
        if (op.type == OpType::Pipeline) {
          pipelineEnd = i + 1 + op.bodyCount;
          b.title = "pipeline";
          b.chunks = strFormat("%u ops / unit", op.bodyCount);
        } else if (op.type == OpType::Barrier) {
          b.chunks = strFormat("b%u of %u", op.barrierId, op.numThreadblocks);
          int& k = barrierUses[{r, op.barrierId}][t];
          rounds[{r, op.barrierId, k++}].push_back(static_cast<int>(p.boxes.size()));
        } else if (isControl(op.type)) {
          std::string peers;
          for (uint32_t k = 0; k < op.nIds && k < 3; ++k) {
            const uint32_t id = tb.ids[op.idsBegin + k];
            const auto& list = op.channelType == ChannelType::Port ? rp.portChannels : rp.memoryChannels;
            if (op.type == OpType::SemAcquire || op.type == OpType::SemRelease)
              peers += strFormat("%ssem%u", k ? "," : "", id);
            else if (id < list.size())
              peers += strFormat("%sr%d", k ? "," : "", list[id].peer);
          }
          if (op.nIds > 3) peers += strFormat("+%u", op.nIds - 3);
          b.chunks =
              (op.type == OpType::Wait || op.type == OpType::RelaxedWait || op.type == OpType::SemAcquire ? "< "
                                                                                                          : "> ") +
              peers;
        } else {
          b.chunks = refList(rp, tb, op.srcBegin, op.nSrc, 2) + " > " + refList(rp, tb, op.dstBegin, op.nDst, 2);
        }
        std::string d = strFormat("rank %d threadblock %d op %u: %s", r, t, i, opTypeName(op.type));
        if (b.inPipeline) d += " (in a pipeline)";
        if (op.channelType != ChannelType::None) d += strFormat("\nchannel type: %s", channelTypeName(op.channelType));
        if (op.nIds > 0)
          d += "\n" + std::string(op.type == OpType::SemAcquire || op.type == OpType::SemRelease ? "" : "channels: ") +
               channelList(rp, tb, op);
        if (op.nSrc > 0) d += "\nsrc_buff: " + refList(rp, tb, op.srcBegin, op.nSrc, 64);
        if (op.nDst > 0) d += "\ndst_buff: " + refList(rp, tb, op.dstBegin, op.nDst, 64);
        if (op.tbgSize > 1) d += strFormat("\nthread-block group: slice %u of %u", op.tbgId, op.tbgSize);
        if (op.type == OpType::Pipeline)
          d += strFormat("\niterations: ceil(%u chunks / %llu-byte units)", op.numChunks,
                         static_cast<unsigned long long>(op.unitSize));
        if (op.type == OpType::Barrier)
          d += strFormat("\nbarrier %u among %u threadblocks", op.barrierId, op.numThreadblocks);
        if (b.syncBefore) d += "\nafter a block-wide barrier (nop)";
        if (i < tb.opSources.size() && !tb.opSources[i].empty()) d += "\nsource: " + tb.opSources[i];
        b.detail = d;
        boxOf[{r, t, static_cast<int>(i)}] = static_cast<int>(p.boxes.size());
        p.boxes.push_back(std::move(b));
      }
    }
  }
  auto find = [&](const verify::OpSite& s) {
    auto it = boxOf.find({s.rank, s.threadblock, s.op});
    return it == boxOf.end() ? -1 : it->second;
  };
  if (v != nullptr) {
    for (size_t k = 0; k < v->findings.size(); ++k) {
      for (const verify::OpSite* s : {&v->findings[k].at, &v->findings[k].other}) {
        const int b = find(*s);
        if (b < 0) continue;
        auto& list = p.boxes[b].findings;
        if (std::find(list.begin(), list.end(), static_cast<int>(k)) == list.end()) {
          list.push_back(static_cast<int>(k));
          p.boxes[b].detail += "\n! " + p.findings[k];
        }
      }
    }
    for (const verify::Flow& f : v->flows) {
      const int a = find(f.from), b = find(f.to);
      if (a < 0 || b < 0 || a == b) continue;
      Arrow arrow;
      arrow.from = a;
      arrow.to = b;
      arrow.data = f.kind == verify::Flow::Kind::Data;
      arrow.relaxed = f.relaxed;
      arrow.style = f.channel == ChannelType::Port     ? BoxStyle::Port
                    : f.channel == ChannelType::Memory ? BoxStyle::Memory
                                                       : BoxStyle::Sync;
      p.arrows.push_back(arrow);
    }
  }
  std::vector<std::vector<int>> barrierRounds;
  for (auto& [key, list] : rounds) barrierRounds.push_back(list);
  layout(&p, barrierRounds);
  return p;
}

}  // namespace mscclpp::plan::render
