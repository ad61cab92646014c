#include "coll_call.hpp"

namespace mscclpp::shim {

namespace {
const char* at(const void* base, uint64_t offset) { return static_cast<const char*>(base) + offset; }
}  // namespace

uint64_t planMessageBytes(const CollCall& c, int nRanks) {
  uint64_t b = elementBytes(c);
  switch (c.kind) {
    case CollKind::AllGather:      // output size
    case CollKind::ReduceScatter:  // input size
    case CollKind::AllToAll:
      return b * static_cast<uint64_t>(nRanks);
    default:
      return b;
  }
}

uint64_t sendBytes(const CollCall& c, int nRanks) {
  uint64_t b = elementBytes(c);
  switch (c.kind) {
    case CollKind::ReduceScatter:
    case CollKind::AllToAll:
    case CollKind::Scatter:
      return b * static_cast<uint64_t>(nRanks);
    case CollKind::Recv:
      return 0;
    default:
      return b;
  }
}

uint64_t recvBytes(const CollCall& c, int nRanks) {
  uint64_t b = elementBytes(c);
  switch (c.kind) {
    case CollKind::AllGather:
    case CollKind::AllToAll:
    case CollKind::Gather:
      return b * static_cast<uint64_t>(nRanks);
    case CollKind::Send:
      return 0;
    default:
      return b;
  }
}

bool isInPlace(const CollCall& c, int rank) {
  uint64_t b = elementBytes(c);
  switch (c.kind) {
    case CollKind::AllGather:
      return c.sendbuff == at(c.recvbuff, b * static_cast<uint64_t>(rank));
    case CollKind::ReduceScatter:
      return c.recvbuff == at(c.sendbuff, b * static_cast<uint64_t>(rank));
    case CollKind::Gather:
      return c.sendbuff == at(c.recvbuff, b * static_cast<uint64_t>(c.root));
    case CollKind::Scatter:
      return c.recvbuff == at(c.sendbuff, b * static_cast<uint64_t>(c.root));
    case CollKind::Send:
    case CollKind::Recv:
      return false;
    default:
      return c.sendbuff == c.recvbuff;
  }
}

}  // namespace mscclpp::shim
