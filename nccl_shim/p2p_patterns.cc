#include "p2p_patterns.hpp"

namespace mscclpp::shim {

bool matchTwoRankExchange(const std::vector<const CollCall*>& p2p, int rank, int nRanks, CollCall* exchange) {
  if (nRanks != 2 || p2p.size() != 2) return false;
  const CollCall* send = nullptr;
  const CollCall* recv = nullptr;
  for (const CollCall* c : p2p) {
    if (c->kind == CollKind::Send && send == nullptr) send = c;
    if (c->kind == CollKind::Recv && recv == nullptr) recv = c;
  }
  if (send == nullptr || recv == nullptr) return false;
  const int peer = 1 - rank;
  // Only facts the peer sees mirrored enter the choice (its send is our recv and vice versa), never local ones
  // such as streams: both ranks then decide alike.
  if (send->root != peer || recv->root != peer || send->count != recv->count || send->dtype != recv->dtype ||
      send->count == 0) {
    return false;
  }
  *exchange = *send;
  exchange->kind = CollKind::SendRecv;
  exchange->sendbuff = send->sendbuff;
  exchange->recvbuff = recv->recvbuff;
  exchange->root = peer;
  // The plan runs on the send's stream; a recv on another stream is ordered after it by the caller.
  exchange->stream = send->stream;
  return true;
}

}  // namespace mscclpp::shim
