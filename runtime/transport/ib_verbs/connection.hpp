// The InfiniBand Connection: a reliable-connected queue pair per
// connection. write() posts RDMA writes; updateAndSync(), the
// signal, an RDMA atomic fetch-and-add of the increment where
// both HCAs have atomics, as MSCCL++ does, else an 8-byte RDMA
// write; the QP orders either after earlier writes. flush() polls
// the completion queue until every posted request completed.
#ifndef MSCCLPP_TRANSPORT_IB_VERBS_CONNECTION_HPP_
#define MSCCLPP_TRANSPORT_IB_VERBS_CONNECTION_HPP_

#include <atomic>
#include <memory>
#include <vector>

#include "core/deadline.hpp"
#include "mscclpp/connection.hpp"
#include "transport/ib_verbs/memory.hpp"

namespace mscclpp::transport::ib_verbs {

class QueuePair;

// Phase 1 of connect: a QP in INIT state, and the bytes the peer
// needs: its HCA port (IBn), LID, GID, QP number, PSN, MTU, atomics.
// `aborted` is the session's: once set, waits end with Aborted.
std::shared_ptr<QueuePair> createQueuePair(std::shared_ptr<Device> device,
                                           std::shared_ptr<const std::atomic<bool>> aborted);
std::vector<char> localQpInfo(const QueuePair& qp);

// Phase 2: moves the QP to RTR and RTS with the peer's info.
// Errors name both ranks and the verbs call. timeout bounds
// flush() without an argument and the drain of a full send queue.
std::shared_ptr<Connection> makeConnection(std::shared_ptr<QueuePair> qp, const std::vector<char>& remoteInfo,
                                           int localRank, int remoteRank, Transport transport,
                                           const TimeoutSetting& timeout);

}  // namespace mscclpp::transport::ib_verbs

#endif  // MSCCLPP_TRANSPORT_IB_VERBS_CONNECTION_HPP_
