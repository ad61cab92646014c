#include "executor/call_descriptor.hpp"

#include "core/format.hpp"
#include "core/hash.hpp"
#include "plan/plan_names.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::exec {

namespace {
constexpr size_t kMaxPlanName = 1024;

bool reduces(plan::Collective c) {
  return c == plan::Collective::AllReduce || c == plan::Collective::ReduceScatter || c == plan::Collective::Reduce;
}
}  // namespace

std::string CallDescriptor::describe() const {
  const char* coll = collective >= 0 ? plan::collectiveName(static_cast<plan::Collective>(collective)) : "?";
  const DataType t = static_cast<DataType>(dtype);
  const size_t elem = dtype >= 0 ? dataTypeSize(t) : 0;
  const bool variable = collective >= 0 && plan::isVariableCollective(static_cast<plan::Collective>(collective));
  std::string s =
      variable
          ? strFormat("%s of %s (sizes per call)", coll, elem > 0 ? dataTypeName(t) : "?")
          : strFormat(
                "%s of %s", coll,
                elem > 0
                    ? strFormat("%llu x %s", static_cast<unsigned long long>(sendBytes / elem), dataTypeName(t)).c_str()
                    : "?");
  if (!variable)
    s += strFormat(" (%s sent, %s received)", formatBytes(sendBytes).c_str(), formatBytes(recvBytes).c_str());
  if (op >= 0) {
    const char* name = reduceOpName(static_cast<ReduceOp>(op));
    s += strFormat(", %s", name ? name : "?");
  }
  if (root >= 0) s += strFormat(", root %d", root);
  s += plan.empty() ? ", plan not chosen yet" : ", on plan " + plan;
  return s;
}

void CallDescriptor::write(ByteWriter& w) const {
  w.put<int32_t>(collective);
  w.putString(plan);
  w.put<uint64_t>(planFingerprint);
  w.put<uint64_t>(sendBytes);
  w.put<uint64_t>(recvBytes);
  w.put<int32_t>(dtype);
  w.put<int32_t>(op);
  w.put<int32_t>(root);
}

CallDescriptor CallDescriptor::read(ByteReader& r) {
  CallDescriptor d;
  d.collective = r.get<int32_t>("collective");
  d.plan = r.getString("plan", kMaxPlanName);
  d.planFingerprint = r.get<uint64_t>("planFingerprint");
  d.sendBytes = r.get<uint64_t>("sendBytes");
  d.recvBytes = r.get<uint64_t>("recvBytes");
  d.dtype = r.get<int32_t>("dtype");
  d.op = r.get<int32_t>("op");
  d.root = r.get<int32_t>("root");
  return d;
}

bool sameCall(const CallDescriptor& a, const CallDescriptor& b) {
  if (a.collective != b.collective || a.sendBytes != b.sendBytes || a.recvBytes != b.recvBytes || a.dtype != b.dtype ||
      a.op != b.op || a.root != b.root) {
    return false;
  }
  if (a.plan.empty() || b.plan.empty()) return true;
  return a.plan == b.plan && a.planFingerprint == b.planFingerprint;
}

void describeCall(CallDescriptor* d, const plan::Plan& p, uint64_t fingerprint, uint64_t sendBytes, uint64_t recvBytes,
                  DataType dtype, ReduceOp op) {
  d->collective = static_cast<int32_t>(p.header.collective);
  d->plan = p.header.name;
  d->planFingerprint = fingerprint;
  // A variable-size call's ranks send and receive different amounts: the counts, not the calls, differ.
  const bool variable = plan::isVariableCollective(p.header.collective);
  d->sendBytes = variable ? 0 : sendBytes;
  d->recvBytes = variable ? 0 : recvBytes;
  d->dtype = static_cast<int32_t>(dtype);
  d->op = reduces(p.header.collective) ? static_cast<int32_t>(op) : -1;
  d->root = plan::isRootedCollective(p.header.collective) ? p.header.root : -1;
}

CallDescriptor describeCall(const plan::Plan& p, uint64_t fingerprint, uint64_t sendBytes, uint64_t recvBytes,
                            DataType dtype, ReduceOp op) {
  CallDescriptor d;
  describeCall(&d, p, fingerprint, sendBytes, recvBytes, dtype, op);
  return d;
}

uint64_t PlanFingerprints::of(const plan::PlanPtr& plan) {
  constexpr size_t kMaxFingerprints = 256;
  auto it = fingerprints_.find(plan.get());
  if (it != fingerprints_.end()) return it->second.second;
  if (fingerprints_.size() >= kMaxFingerprints) fingerprints_.clear();
  const uint64_t f = planFingerprint(*plan);
  fingerprints_.emplace(plan.get(), std::make_pair(plan, f));
  return f;
}

uint64_t planFingerprint(const plan::Plan& p) {
  const plan::PlanHeader& h = p.header;
  uint64_t f = hashString(h.name);
  for (uint64_t v :
       {static_cast<uint64_t>(h.collective), static_cast<uint64_t>(h.protocol), static_cast<uint64_t>(h.inPlace),
        static_cast<uint64_t>(h.worldSize), static_cast<uint64_t>(h.numThreadsPerBlock),
        static_cast<uint64_t>(h.useDoubleScratchBuffer), static_cast<uint64_t>(h.bufferAlignment), h.minMessageSize,
        h.maxMessageSize, static_cast<uint64_t>(h.root), static_cast<uint64_t>(h.reduceOps), h.slotBytes}) {
    f = mix64(f, v);
  }
  for (const plan::RankPlan& r : p.ranks) {
    f = mix64(f, (static_cast<uint64_t>(r.inputChunks) << 32) | r.outputChunks);
    f = mix64(f, r.scratchChunks);
    for (const plan::ChannelDecl& c : r.memoryChannels) f = mix64(f, static_cast<uint64_t>(c.peer) * 2 + c.implicit);
    for (const plan::ChannelDecl& c : r.portChannels)
      f = mix64(f, 0x1000 + static_cast<uint64_t>(c.peer) * 2 + c.implicit);
    f = mix64(f, (r.switchChannels.size() << 32) | r.remoteBuffers.size());
  }
  return f;
}

}  // namespace mscclpp::exec
