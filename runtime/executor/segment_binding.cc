#include "executor/segment_binding.hpp"

#include <algorithm>

#include "core/format.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::exec {

Refusal tryShapeVariableCall(const plan::Plan& plan, int rank, uint64_t inputBytes, uint64_t outputBytes,
                             DataType dtype, CallShape* out) {
  const plan::PlanHeader& h = plan.header;
  const plan::RankPlan& rp = plan.ranks[rank];
  const uint64_t factor = (h.protocol == plan::Protocol::LL ? 2 : 1) * (h.useDoubleScratchBuffer ? 2 : 1);
  const unsigned __int128 scratch = static_cast<unsigned __int128>(h.slotBytes) * rp.scratchChunks * factor;
  if (scratch > UINT64_MAX) {
    return strFormat("plan %s (%s): %u scratch slots of %s exceed 2^64 bytes", h.name.c_str(), h.source.c_str(),
                     rp.scratchChunks, formatBytes(h.slotBytes).c_str());
  }
  CallShape& shape = *out;
  shape = CallShape();
  shape.inputBytes = inputBytes;
  shape.outputBytes = outputBytes;
  shape.geometry.inputBytes = inputBytes;
  shape.geometry.outputBytes = outputBytes;
  shape.elementBytes = dataTypeSize(dtype);
  // References count scratch in slots; input and output segments start at 0.
  shape.chunkBytes = h.slotBytes;
  shape.scratchChunkBytes = h.slotBytes;
  shape.scratchBytes = static_cast<uint64_t>(scratch);
  return std::nullopt;
}

uint64_t variableCapacity(const plan::Plan& plan, const uint64_t* counts, size_t elementBytes) {
  const int n = plan.header.worldSize;
  uint64_t largest = 0;
  for (int r = 0; r < n; ++r) {
    uint64_t in = 0, out = 0;
    if (!plan::variableCallBytes(plan.header.collective, n, counts, elementBytes, r, &in, &out)) return UINT64_MAX;
    largest = std::max(largest, std::max(in, out));
  }
  if (largest <= 1) return largest;
  if (largest > (UINT64_MAX >> 1) + 1) return largest;
  uint64_t c = 1;
  while (c < largest) c <<= 1;
  return c;
}

std::string withRankCounts(const std::string& why, int rank, int n, const uint64_t* counts) {
  std::string sends, receives;
  for (int p = 0; p < n; ++p) {
    sends += strFormat("%s%llu", p ? ", " : "", ull(counts[static_cast<size_t>(rank) * n + p]));
    receives += strFormat("%s%llu", p ? ", " : "", ull(counts[static_cast<size_t>(p) * n + rank]));
  }
  return strFormat("%s; rank %d sends %s and receives %s elements", why.c_str(), rank, sends.c_str(), receives.c_str());
}

std::string checkCountRule(const plan::Plan& plan, int rank, const uint64_t* counts) {
  const plan::PlanHeader& h = plan.header;
  const std::string rule = plan::checkCountMatrix(h.collective, h.worldSize, counts);
  if (rule.empty()) return rule;
  return strFormat("plan %s (%s) rank %d: %s", h.name.c_str(), h.source.c_str(), rank, rule.c_str());
}

std::string checkCounts(const plan::Plan& plan, int rank, const uint64_t* counts, size_t elementBytes,
                        uint64_t sendBytes, uint64_t recvBytes) {
  const plan::PlanHeader& h = plan.header;
  const int n = h.worldSize;
  uint64_t in = 0, out = 0;
  if (!plan::variableCallBytes(h.collective, n, counts, elementBytes, rank, &in, &out)) {
    return strFormat("plan %s (%s) rank %d: the counts' bytes exceed 2^64", h.name.c_str(), h.source.c_str(), rank);
  }
  if (in > sendBytes || out > recvBytes) {
    const bool send = in > sendBytes;
    return strFormat("plan %s (%s) rank %d: the counts need %s of %s buffer, which has %s", h.name.c_str(),
                     h.source.c_str(), rank, formatBytes(send ? in : out).c_str(), send ? "the send" : "the receive",
                     formatBytes(send ? sendBytes : recvBytes).c_str());
  }
  return std::string();
}

std::string bindSegments(const std::vector<SegmentRef>& segments, int n, const uint64_t* counts, size_t elementBytes,
                         std::vector<std::vector<ResolvedRef>>* refs, const std::string& where) {
  for (const SegmentRef& s : segments) {
    const unsigned __int128 bytes =
        static_cast<unsigned __int128>(counts[static_cast<size_t>(s.sender) * n + s.receiver]) * elementBytes;
    unsigned __int128 offset = s.fixedOffset;
    if (s.placed) {
      unsigned __int128 sum = 0;
      for (uint32_t k = 0; k < s.prefix; ++k)
        sum += s.alongRow ? counts[static_cast<size_t>(s.line) * n + k] : counts[static_cast<size_t>(k) * n + s.line];
      offset += sum * elementBytes;
    }
    if (s.slotBytes > 0 && bytes > s.slotBytes) {
      return strFormat(
          "%s threadblock %u op %u: the segment rank %u sends to rank %u, %s, does not fit a scratch slot "
          "of %s",
          where.c_str(), s.block, s.op, s.sender, s.receiver, formatBytes(static_cast<uint64_t>(bytes)).c_str(),
          formatBytes(s.slotBytes).c_str());
    }
    if ((offset + bytes) * s.factor > s.limit) {
      return strFormat(
          "%s threadblock %u op %u: the segment rank %u sends to rank %u needs bytes [%llu, %llu) of a buffer of %llu "
          "bytes",
          where.c_str(), s.block, s.op, s.sender, s.receiver, ull(static_cast<uint64_t>(offset * s.factor)),
          ull(static_cast<uint64_t>((offset + bytes) * s.factor)), ull(s.limit));
    }
    ResolvedRef& r = (*refs)[s.block][s.ref];
    r.offset = static_cast<uint64_t>(offset);
    r.bytes = static_cast<uint64_t>(bytes);
  }
  return std::string();
}

}  // namespace mscclpp::exec
