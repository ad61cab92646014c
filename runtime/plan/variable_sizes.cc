#include "plan/variable_sizes.hpp"

#include "core/format.hpp"

namespace mscclpp::plan {

bool isVariableCollective(Collective c) {
  return c == Collective::AllToAllV || c == Collective::AllGatherV || c == Collective::ReduceScatterV;
}

Collective fixedCollectiveOf(Collective c) {
  switch (c) {
    case Collective::AllToAllV:
      return Collective::AllToAll;
    case Collective::AllGatherV:
      return Collective::AllGather;
    case Collective::ReduceScatterV:
      return Collective::ReduceScatter;
    default:
      return c;
  }
}

const char* segmentTableName(SegmentTable t) {
  switch (t) {
    case SegmentTable::Send:
      return "send";
    case SegmentTable::Recv:
      return "recv";
    case SegmentTable::None:
      break;
  }
  return "none";
}

bool tablePartitions(Collective c, SegmentTable table) {
  if (c == Collective::AllGatherV) return table == SegmentTable::Recv;
  if (c == Collective::ReduceScatterV) return table == SegmentTable::Send;
  return true;
}

SegmentSource segmentSource(Collective c, uint32_t owner, SegmentTable table, uint32_t peer) {
  SegmentSource s;
  const bool send = table == SegmentTable::Send;
  s.sender = send ? owner : peer;
  s.receiver = send ? peer : owner;
  s.line = owner;
  s.alongRow = send;
  s.prefix = tablePartitions(c, table) ? peer : 0;
  return s;
}

std::string checkCountMatrix(Collective c, int n, const uint64_t* counts) {
  if (c == Collective::AllGatherV) {
    for (int s = 0; s < n; ++s)
      for (int d = 1; d < n; ++d)
        if (counts[s * n + d] != counts[s * n]) {
          return strFormat(
              "allgatherv sends each rank's part to every rank, but rank %d sends %llu elements to rank 0 and %llu to "
              "rank %d",
              s, static_cast<unsigned long long>(counts[s * n]), static_cast<unsigned long long>(counts[s * n + d]), d);
        }
  }
  if (c == Collective::ReduceScatterV) {
    for (int d = 0; d < n; ++d)
      for (int s = 1; s < n; ++s)
        if (counts[s * n + d] != counts[d]) {
          return strFormat(
              "reducescatterv reduces one part per rank from every rank, but rank %d receives %llu elements from rank "
              "0 "
              "and %llu from rank %d",
              d, static_cast<unsigned long long>(counts[d]), static_cast<unsigned long long>(counts[s * n + d]), s);
        }
  }
  return std::string();
}

namespace {

bool addBytes(uint64_t* sum, uint64_t count, size_t elementBytes) {
  unsigned __int128 v = static_cast<unsigned __int128>(count) * elementBytes + *sum;
  if (v > UINT64_MAX) return false;
  *sum = static_cast<uint64_t>(v);
  return true;
}

// The end of a rank's last segment of one table.
bool tableEnd(Collective c, SegmentTable table, int n, const uint64_t* counts, size_t elementBytes, int rank,
              uint64_t* bytes) {
  const bool partitions = tablePartitions(c, table);
  uint64_t end = 0;
  for (int q = 0; q < n; ++q) {
    const SegmentSource s = segmentSource(c, static_cast<uint32_t>(rank), table, static_cast<uint32_t>(q));
    const uint64_t count = counts[static_cast<size_t>(s.sender) * n + s.receiver];
    if (partitions) {
      if (!addBytes(&end, count, elementBytes)) return false;
    } else {
      uint64_t one = 0;
      if (!addBytes(&one, count, elementBytes)) return false;
      end = one > end ? one : end;
    }
  }
  *bytes = end;
  return true;
}

}  // namespace

bool variableCallBytes(Collective c, int n, const uint64_t* counts, size_t elementBytes, int rank, uint64_t* inputBytes,
                       uint64_t* outputBytes) {
  return tableEnd(c, SegmentTable::Send, n, counts, elementBytes, rank, inputBytes) &&
         tableEnd(c, SegmentTable::Recv, n, counts, elementBytes, rank, outputBytes);
}

bool variableMessageBytes(int n, const uint64_t* counts, size_t elementBytes, uint64_t* bytes) {
  uint64_t largest = 0;
  for (size_t i = 0; i < static_cast<size_t>(n) * n; ++i) {
    uint64_t b = 0;
    if (!addBytes(&b, counts[i], elementBytes)) return false;
    largest = b > largest ? b : largest;
  }
  *bytes = largest;
  return true;
}

std::string variableSizingRefusal(const PlanHeader& header, uint32_t scratchChunks, uint64_t messageBytes) {
  if (scratchChunks > 0 && messageBytes > header.slotBytes) {
    return strFormat("its largest segment, %s, does not fit the plan's scratch slots of %s",
                     formatBytes(messageBytes).c_str(), formatBytes(header.slotBytes).c_str());
  }
  return std::string();
}

}  // namespace mscclpp::plan
