#include "plan/verify/variable_model.hpp"

#include "core/format.hpp"
#include "plan/plan_names.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::plan::verify {
namespace {

// The owner of the buffer a reference names.
uint32_t ownerOf(const RankPlan& rp, const BufferRef& ref) {
  return ref.kind == RefKind::Remote ? static_cast<uint32_t>(rp.remoteBuffers[ref.id].rank)
                                     : static_cast<uint32_t>(rp.rank);
}

// A segment's length as a symbol: the count-matrix entries that are equal
// for every binding share one. allgatherv sends one count per sender,
// reducescatterv receives one count per receiver.
struct Length {
  int64_t sender = -1, receiver = -1;  // -1: any
  bool operator==(const Length& o) const { return sender == o.sender && receiver == o.receiver; }
};

// A scratch slot is sized by the executing rank's counts, a segment of an
// input or output by its owner's.
Length lengthOf(Collective c, const RankPlan& rp, const BufferRef& ref) {
  const uint32_t seen = ref.type == BufferType::Scratch ? static_cast<uint32_t>(rp.rank) : ownerOf(rp, ref);
  const SegmentSource s = segmentSource(c, seen, ref.segment, ref.segmentPeer);
  Length l{s.sender, s.receiver};
  if (c == Collective::AllGatherV) l.receiver = -1;
  if (c == Collective::ReduceScatterV) l.sender = -1;
  return l;
}

std::string describeLength(const Length& l) {
  if (l.receiver < 0) return strFormat("the count rank %lld sends to every rank", static_cast<long long>(l.sender));
  if (l.sender < 0)
    return strFormat("the count rank %lld receives from every rank", static_cast<long long>(l.receiver));
  return strFormat("the count rank %lld sends to rank %lld", static_cast<long long>(l.sender),
                   static_cast<long long>(l.receiver));
}

std::string describeRef(const RankPlan& rp, const BufferRef& ref) {
  const uint32_t owner = ownerOf(rp, ref);
  std::string where = ref.kind == RefKind::Remote ? strFormat("rank %u's ", owner) : std::string("its ");
  if (ref.type == BufferType::Scratch) return where + strFormat("scratch slot %u", ref.index);
  return where +
         strFormat("%s segment for rank %u", ref.type == BufferType::Input ? "input" : "output", ref.segmentPeer);
}

}  // namespace

Plan unitModel(const Plan& plan) {
  Plan m = plan;
  PlanHeader& h = m.header;
  const Collective c = h.collective;
  const bool sendParts = tablePartitions(c, SegmentTable::Send);
  const bool recvParts = tablePartitions(c, SegmentTable::Recv);
  const uint32_t n = static_cast<uint32_t>(h.worldSize);
  h.collective = fixedCollectiveOf(c);
  h.variableSizes = false;
  h.slotBytes = 0;
  h.minMessageSize = 0;
  h.maxMessageSize = UINT64_MAX;
  for (RankPlan& rp : m.ranks) {
    rp.inputChunks = sendParts ? n : 1;
    rp.outputChunks = recvParts ? n : 1;
    for (ThreadblockPlan& tb : rp.threadblocks)
      for (BufferRef& ref : tb.refs) {
        if (ref.segment == SegmentTable::None || ref.kind == RefKind::Multicast) continue;
        if (ref.type == BufferType::Input) ref.index = sendParts ? ref.segmentPeer : 0;
        if (ref.type == BufferType::Output) ref.index = recvParts ? ref.segmentPeer : 0;
        ref.size = 1;
        ref.segment = SegmentTable::None;
        ref.segmentPeer = 0;
      }
  }
  return m;
}

std::vector<Finding> lengthFindings(const Plan& plan) {
  std::vector<Finding> out;
  const Collective c = plan.header.collective;
  for (const RankPlan& rp : plan.ranks)
    for (const ThreadblockPlan& tb : rp.threadblocks)
      for (size_t i = 0; i < tb.ops.size(); ++i) {
        const Op& op = tb.ops[i];
        const uint32_t n = static_cast<uint32_t>(op.nSrc) + op.nDst;
        const BufferRef* first = nullptr;
        std::string firstName;
        for (uint32_t k = 0; k < n; ++k) {
          const bool isSrc = k < op.nSrc;
          const uint32_t pos = isSrc ? k : k - op.nSrc;
          const BufferRef& ref = tb.refs[isSrc ? op.srcBegin + pos : op.dstBegin + pos];
          if (ref.segment == SegmentTable::None) continue;
          const std::string name =
              strFormat("%s[%u] (%s)", isSrc ? "src_buff" : "dst_buff", pos, describeRef(rp, ref).c_str());
          if (first == nullptr) {
            first = &ref;
            firstName = name;
            continue;
          }
          const Length a = lengthOf(c, rp, *first), b = lengthOf(c, rp, ref);
          if (a == b) continue;
          Finding f;
          f.kind = FindingKind::WrongResult;
          f.at.rank = rp.rank;
          f.at.threadblock = tb.id;
          f.at.op = static_cast<int>(i);
          f.at.name = opTypeName(op.type);
          if (i < tb.opSources.size()) f.at.source = tb.opSources[i];
          f.message = strFormat(
              "%s is as long as %s, but %s is as long as %s: with counts where they differ (say 1 and 2 elements) the "
              "op moves only the shorter and leaves the rest of the longer segment unwritten",
              firstName.c_str(), describeLength(a).c_str(), name.c_str(), describeLength(b).c_str());
          out.push_back(std::move(f));
          break;
        }
      }
  return out;
}

}  // namespace mscclpp::plan::verify
