// Pass 2 of plan loading: one rank's threadblocks, each parsed from its span.
// Every op is decoded, checked against op_rules.cc, and its references
// resolved to rank-level indexes and bounds-checked.
#include <algorithm>
#include <unordered_map>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "plan/op_rules.hpp"
#include "plan/plan_loader_impl.hpp"
#include "plan/plan_names.hpp"

namespace mscclpp::plan::detail {

using json::Type;
using json::Value;

namespace {

// Barrier ids index a per-rank array of device syncers.
// The limit bounds what a plan can make the executor allocate.
constexpr uint32_t kMaxBarrierId = 65535;
constexpr size_t kMaxRefsPerList = 65535;  // Op::nSrc and Op::nDst are 16 bits

const char* const kThreadblockKeys[] = {"id", "ops", "channels", "remote_buffer_refs"};
const char* const kTbChannelKeys[] = {"channel_type", "channel_ids", "buff", "buffer_type"};
const char* const kTbRemoteKeys[] = {"access_channel_type", "remote_buffer_ids"};
const char* const kOpKeys[] = {"name",         "channel_type", "channel_ids", "src_buff",         "dst_buff",
                               "reduce_op",    "tbg_info",     "barrier_id",  "num_threadblocks", "semaphore_ids",
                               "iter_context", "ops",          "buffer_type", "buffer_offset",    "size",
                               "dst_chunk",    "source"};
const char* const kRefKeys[] = {"type", "buffer_id", "switch_channel_id", "index", "size", "rank", "segment"};

struct BarrierUse {
  uint32_t numThreadblocks = 0;
  std::string firstUse;  // path of the first op using the id
  int lastThreadblock = -1;
  std::vector<int> threadblocks;
};

const char* allowedChannelTypes(const OpRule& rule) {
  const bool m = allowsChannelType(rule, ChannelType::Memory), p = allowsChannelType(rule, ChannelType::Port);
  if (allowsChannelType(rule, ChannelType::Switch)) return "switch";
  if (m && p) return "memory or port";
  if (m) return "memory";
  if (p) return "port";
  return "none";
}

// Loads one rank's threadblocks into its RankPlan.
class ThreadblockLoader {
 public:
  ThreadblockLoader(const Checker& check, const json::Document& doc, Plan& plan, const RankFacts& facts, int rank,
                    bool traceKeys)
      : check_(check),
        doc_(doc),
        plan_(plan),
        rp_(plan.ranks[static_cast<size_t>(rank)]),
        facts_(facts),
        rank_(rank),
        traceKeys_(traceKeys) {
    // The member with the fewest chunks bounds a switch channel's references:
    // one comparison per reference, however big the group.
    for (const SwitchChannelDecl& sc : rp_.switchChannels) {
      int smallest = sc.ranks.front();
      for (int m : sc.ranks) {
        if (chunksOf(m, sc.bufferType) < chunksOf(smallest, sc.bufferType)) smallest = m;
      }
      switchBound_.push_back(smallest);
    }
  }

  void loadThreadblock(size_t index, const Path& at);
  void finish(const Path& threadblocksPath);

 private:
  void readChannels(const Value& list, const Path& at);
  void readRemoteRefs(const Value& list, const Path& at);
  void loadOp(const Value& v, const Path& at, bool inPipeline);
  void loadRefs(const Value& op, const Path& at, const char* field, const RefRule& rule, const char* opName,
                ChannelType channelType, uint16_t* count, uint32_t* begin);
  BufferRef loadRef(const Value& ref, const Path& at, RefSlot slot, const char* opName, ChannelType channelType);
  BufferRef resolveMulticast(const Value& idValue, const Path& idPath, RefSlot slot, const char* opName);
  void checkBounds(const BufferRef& ref, const Value& ref_index, const Path& indexPath, const Value& sizeValue,
                   const Path& sizePath);
  void loadGroupLoadReduceUnfused(const Value& v, const Path& at, Op* op);
  uint32_t translateChannelIds(const Value& ids, const Path& at, ChannelType type, const char* opName);
  void checkWaitPeers(const Op& op, const Path& at);
  void checkPortTargets(const Op& op, const Path& at, const Value& v);
  uint32_t chunksOf(int rank, BufferType type) const;
  template <size_t N>
  void traceUnknownKeys(const Value& object, const Path& at, const char* const (&known)[N]) const {
    if (traceKeys_) logUnknownKeys(check_, doc_, object, at, known, N);
  }

  const Checker& check_;
  const json::Document& doc_;
  Plan& plan_;
  RankPlan& rp_;
  const RankFacts& facts_;
  const int rank_;
  const bool traceKeys_;
  ThreadblockPlan* tb_ = nullptr;
  int tbIndex_ = 0;
  // This threadblock's channel and remote buffer lists by type,
  // as rank-level ids.
  std::vector<uint32_t> channels_[4];
  std::vector<uint32_t> remoteBuffers_[4];
  std::unordered_map<uint32_t, BarrierUse> barriers_;
  std::vector<int> switchBound_;  // per switch channel: the member with the fewest chunks of its buffer
};

uint32_t ThreadblockLoader::chunksOf(int rank, BufferType type) const {
  const RankPlan& r = plan_.ranks[static_cast<size_t>(rank)];
  switch (type) {
    case BufferType::Input:
      return r.inputChunks;
    case BufferType::Output:
      return r.outputChunks;
    case BufferType::Scratch:
      return r.scratchChunks;
  }
  return 0;
}

void ThreadblockLoader::loadThreadblock(size_t index, const Path& at) {
  const Value& root = doc_.root();
  check_.expectType(root, at, Type::Object);
  tb_ = &rp_.threadblocks[index];
  tbIndex_ = static_cast<int>(index);
  const Value& id = check_.require(doc_, root, at, "id");
  if (check_.u32(id, at.key("id")) != index) {
    check_.failValue(at.key("id"), id, "does not match its position %zu in threadblocks (threadblocks[i].id must be i)",
                     index);
  }
  tb_->id = static_cast<int>(index);
  for (auto& c : channels_) c.clear();
  for (auto& r : remoteBuffers_) r.clear();

  const Value& channels = check_.require(doc_, root, at, "channels");
  check_.expectType(channels, at.key("channels"), Type::Array);
  readChannels(channels, at.key("channels"));
  if (const Value* refs = doc_.member(root, "remote_buffer_refs")) {
    check_.expectType(*refs, at.key("remote_buffer_refs"), Type::Array);
    readRemoteRefs(*refs, at.key("remote_buffer_refs"));
  }
  const Value& ops = check_.require(doc_, root, at, "ops");
  const Path opsPath = at.key("ops");
  check_.expectType(ops, opsPath, Type::Array);
  tb_->ops.reserve(ops.count);
  for (uint32_t i = 0; i < ops.count; ++i) loadOp(doc_.child(ops, i), opsPath.at(i), false);
  if (!tb_->opSources.empty()) tb_->opSources.resize(tb_->ops.size());
  if (tb_->refs.size() >= UINT32_MAX || tb_->ids.size() >= UINT32_MAX) check_.fail(at, "has too many references");
  traceUnknownKeys(root, at, kThreadblockKeys);
}

void ThreadblockLoader::readChannels(const Value& list, const Path& at) {
  for (uint32_t i = 0; i < list.count; ++i) {
    const Value& entry = doc_.child(list, i);
    const Path e = at.at(i);
    const ChannelType type = readChannelType(check_, doc_, entry, e, "channel_type", true);
    const Value& ids = check_.require(doc_, entry, e, "channel_ids");
    const Path idsPath = e.key("channel_ids");
    check_.expectType(ids, idsPath, Type::Array);
    // A switch entry may restate its bound buffer,
    // also as "buff"; it must agree.
    const Value* bound = doc_.member(entry, "buffer_type");
    const char* boundKey = "buffer_type";
    if (bound == nullptr) {
      bound = doc_.member(entry, "buff");
      boundKey = "buff";
    }
    BufferType boundType = BufferType::Input;
    if (type == ChannelType::Switch && bound != nullptr &&
        !bufferTypeFromName(check_.string(*bound, e.key(boundKey)), &boundType)) {
      check_.failValue(e.key(boundKey), *bound, "is not one of i, o, s");
    }
    const size_t declared = type == ChannelType::Memory ? facts_.listedMemory
                            : type == ChannelType::Port ? facts_.listedPort
                                                        : rp_.switchChannels.size();
    for (uint32_t k = 0; k < ids.count; ++k) {
      const Value& iv = doc_.child(ids, k);
      const uint32_t id = check_.u32(iv, idsPath.at(k));
      if (id >= declared) {
        check_.failValue(idsPath.at(k), iv, "out of range (rank %d declares %zu %s channels)", rank_, declared,
                         channelTypeName(type));
      }
      if (type == ChannelType::Switch && bound != nullptr && rp_.switchChannels[id].bufferType != boundType) {
        check_.failValue(e.key(boundKey), *bound, "does not match switch channel %u, which binds the %s buffer", id,
                         bufferTypeLongName(rp_.switchChannels[id].bufferType));
      }
      channels_[static_cast<size_t>(type)].push_back(id);
    }
    traceUnknownKeys(entry, e, kTbChannelKeys);
  }
}

void ThreadblockLoader::readRemoteRefs(const Value& list, const Path& at) {
  for (uint32_t i = 0; i < list.count; ++i) {
    const Value& entry = doc_.child(list, i);
    const Path e = at.at(i);
    const ChannelType type = readChannelType(check_, doc_, entry, e, "access_channel_type", false);
    const Value& ids = check_.require(doc_, entry, e, "remote_buffer_ids");
    const Path idsPath = e.key("remote_buffer_ids");
    check_.expectType(ids, idsPath, Type::Array);
    for (uint32_t k = 0; k < ids.count; ++k) {
      const Value& iv = doc_.child(ids, k);
      const uint32_t id = check_.u32(iv, idsPath.at(k));
      if (id >= rp_.remoteBuffers.size()) {
        check_.failValue(idsPath.at(k), iv, "out of range (rank %d declares %zu remote buffers)", rank_,
                         rp_.remoteBuffers.size());
      }
      const RemoteBufferDecl& rb = rp_.remoteBuffers[id];
      if (!(type == ChannelType::Memory ? rb.viaMemory : rb.viaPort)) {
        check_.failValue(idsPath.at(k), iv,
                         "is rank %d's %s buffer, which gpus[%d].remote_buffers[%u] does not make reachable through "
                         "%s channels",
                         rb.rank, bufferTypeLongName(rb.type), rank_, id, channelTypeName(type));
      }
      remoteBuffers_[static_cast<size_t>(type)].push_back(id);
    }
    traceUnknownKeys(entry, e, kTbRemoteKeys);
  }
}

uint32_t ThreadblockLoader::translateChannelIds(const Value& ids, const Path& at, ChannelType type,
                                                const char* opName) {
  check_.expectType(ids, at, Type::Array);
  if (ids.count == 0) check_.failPath(at, "is empty (%s needs at least one channel)", opName);
  const auto& list = channels_[static_cast<size_t>(type)];
  for (uint32_t k = 0; k < ids.count; ++k) {
    const Value& iv = doc_.child(ids, k);
    const uint32_t local = check_.u32(iv, at.at(k));
    if (local >= list.size()) {
      check_.failValue(at.at(k), iv, "out of range (the threadblock lists %zu %s channels)", list.size(),
                       channelTypeName(type));
    }
    tb_->ids.push_back(list[local]);
  }
  return ids.count;
}

void ThreadblockLoader::loadOp(const Value& v, const Path& at, bool inPipeline) {
  check_.expectType(v, at, Type::Object);
  const Value& nameValue = check_.require(doc_, v, at, "name");
  OpType type = OpType::Nop;
  if (!opTypeFromName(check_.string(nameValue, at.key("name")), &type)) {
    check_.failValue(at.key("name"), nameValue, "is not a known operation");
  }
  const char* opName = opTypeName(type);
  if (type == OpType::Pipeline && inPipeline) {
    check_.failValue(at.key("name"), nameValue, "inside a pipeline: nested pipelines are not supported");
  }
  if (isPacketOp(type) && plan_.header.protocol != Protocol::LL) {
    check_.failValue(at.key("name"), nameValue,
                     "is a packet operation but the plan's protocol is Simple (packet plans use protocol \"LL\")");
  }
  const OpRule& rule = opRule(type);
  Op op{};
  op.type = type;
  op.tbgId = 0;
  op.tbgSize = 1;
  op.reduceOp = PlanReduceOp::None;

  ChannelType channelType = ChannelType::None;
  if (const Value* ct = doc_.member(v, "channel_type")) {
    if (!channelTypeFromName(check_.string(*ct, at.key("channel_type")), &channelType)) {
      check_.failValue(at.key("channel_type"), *ct, "is not one of none, memory, port, switch");
    }
    if (!allowsChannelType(rule, channelType)) {
      if (channelType == ChannelType::None) {
        check_.failValue(at.key("channel_type"), *ct, "but %s needs channel_type %s", opName,
                         allowedChannelTypes(rule));
      }
      check_.failValue(at.key("channel_type"), *ct, "is not allowed for %s (%s)", opName,
                       allowsChannelType(rule, ChannelType::None) ? "it uses no channel" : allowedChannelTypes(rule));
    }
  } else if (!allowsChannelType(rule, ChannelType::None)) {
    check_.fail(at, "%s needs channel_type %s", opName, allowedChannelTypes(rule));
  }
  op.channelType = channelType;

  // Channel ids go through this threadblock's
  // list for the op's channel type.
  op.idsBegin = static_cast<uint32_t>(tb_->ids.size());
  const Value* ids = doc_.member(v, "channel_ids");
  if (rule.channelIds == ChannelIdsUse::Required && ids == nullptr) check_.fail(at, "%s needs channel_ids", opName);
  if (rule.channelIds != ChannelIdsUse::Unused && ids != nullptr) {
    op.nIds = translateChannelIds(*ids, at.key("channel_ids"), channelType, opName);
  }

  const bool unfusedGroupLoadReduce = type == OpType::GroupLoadReduce && doc_.member(v, "dst_chunk") != nullptr &&
                                      doc_.member(v, "src_buff") == nullptr;
  if (unfusedGroupLoadReduce) {
    loadGroupLoadReduceUnfused(v, at, &op);
  } else {
    loadRefs(v, at, "src_buff", rule.src, opName, channelType, &op.nSrc, &op.srcBegin);
    loadRefs(v, at, "dst_buff", rule.dst, opName, channelType, &op.nDst, &op.dstBegin);
  }
  if (rule.pairing == RefPairing::Equal && op.nSrc != op.nDst) {
    check_.fail(at, "%s has %u src_buff and %u dst_buff references; they must pair up one to one", opName, op.nSrc,
                op.nDst);
  }
  if (rule.pairing == RefPairing::EqualOrOneSrc && op.nSrc != op.nDst && op.nSrc != 1) {
    check_.fail(at,
                "%s has %u src_buff and %u dst_buff references; they must pair up one to one, or src_buff must "
                "have exactly one",
                opName, op.nSrc, op.nDst);
  }
  if (channelType == ChannelType::Port) checkPortTargets(op, at, v);
  if (type == OpType::Wait || type == OpType::RelaxedWait) checkWaitPeers(op, at);

  if (rule.reduces) {
    op.reduceOp = PlanReduceOp::Sum;  // the DSL's default
    if (const Value* r = doc_.member(v, "reduce_op")) {
      if (!planReduceOpFromName(check_.string(*r, at.key("reduce_op")), &op.reduceOp)) {
        check_.failValue(at.key("reduce_op"), *r, "is not one of sum, prod, min, max");
      }
    }
    plan_.header.reduceOps |= 1u << static_cast<unsigned>(op.reduceOp);
  }
  if (const Value* tbg = doc_.member(v, "tbg_info")) {
    const Path tp = at.key("tbg_info");
    check_.expectType(*tbg, tp, Type::Object);
    const Value& sizeValue = check_.require(doc_, *tbg, tp, "tbg_size");
    const uint32_t size = check_.u32(sizeValue, tp.key("tbg_size"));
    if (size < 1 || size > 65535) check_.failValue(tp.key("tbg_size"), sizeValue, "out of range (1..65535)");
    const Value& idValue = check_.require(doc_, *tbg, tp, "tb_id");
    const uint32_t id = check_.u32(idValue, tp.key("tb_id"));
    if (id >= size) check_.failValue(tp.key("tb_id"), idValue, "out of range (tbg_size is %u)", size);
    op.tbgId = static_cast<uint16_t>(id);
    op.tbgSize = static_cast<uint16_t>(size);
  }
  checkVariableOp(check_, at, plan_.header, op);
  if (rule.barrier) {
    const Value& idValue = check_.require(doc_, v, at, "barrier_id");
    const uint32_t id = check_.u32(idValue, at.key("barrier_id"));
    if (id > kMaxBarrierId)
      check_.failValue(at.key("barrier_id"), idValue, "out of range (barrier ids are 0..%u)", kMaxBarrierId);
    const Value& numValue = check_.require(doc_, v, at, "num_threadblocks");
    const uint32_t num = check_.u32(numValue, at.key("num_threadblocks"));
    if (num < 1 || num > rp_.threadblocks.size()) {
      check_.failValue(at.key("num_threadblocks"), numValue, "out of range (rank %d has %zu threadblocks)", rank_,
                       rp_.threadblocks.size());
    }
    BarrierUse& use = barriers_[id];
    if (use.numThreadblocks == 0) {
      use.numThreadblocks = num;
      use.firstUse = at.str();
    } else if (use.numThreadblocks != num) {
      check_.failValue(at.key("num_threadblocks"), numValue,
                       "differs from num_threadblocks=%u used with barrier_id=%u at %s", use.numThreadblocks, id,
                       use.firstUse.c_str());
    }
    if (use.lastThreadblock != tbIndex_) {
      use.lastThreadblock = tbIndex_;
      use.threadblocks.push_back(tbIndex_);
    }
    op.barrierId = id;
    op.numThreadblocks = num;
    rp_.numBarriers = std::max(rp_.numBarriers, id + 1);
  }
  if (rule.semaphores) {
    const Value& sems = check_.require(doc_, v, at, "semaphore_ids");
    const Path sp = at.key("semaphore_ids");
    check_.expectType(sems, sp, Type::Array);
    if (sems.count == 0) check_.failPath(sp, "is empty (%s needs at least one semaphore)", opName);
    op.idsBegin = static_cast<uint32_t>(tb_->ids.size());
    for (uint32_t k = 0; k < sems.count; ++k) {
      const Value& sv = doc_.child(sems, k);
      const uint32_t id = check_.u32(sv, sp.at(k));
      if (id >= rp_.semaphoreInitValues.size()) {
        check_.failValue(sp.at(k), sv, "out of range (rank %d declares %zu semaphores)", rank_,
                         rp_.semaphoreInitValues.size());
      }
      tb_->ids.push_back(id);
    }
    op.nIds = sems.count;
  }
  traceUnknownKeys(v, at, kOpKeys);
  if (const Value* where = doc_.member(v, "source")) {
    const std::string_view text = check_.string(*where, at.key("source"));
    if (tb_->opSources.size() <= tb_->ops.size()) tb_->opSources.resize(tb_->ops.size() + 1);
    tb_->opSources[tb_->ops.size()] = std::string(text);
  }
  if (!rule.pipeline) {
    tb_->ops.push_back(op);
    return;
  }
  const Value& ctx = check_.require(doc_, v, at, "iter_context");
  const Path cp = at.key("iter_context");
  check_.expectType(ctx, cp, Type::Object);
  const Value& unitValue = check_.require(doc_, ctx, cp, "unit_size");
  op.unitSize = check_.u64(unitValue, cp.key("unit_size"));
  if (op.unitSize == 0) check_.failValue(cp.key("unit_size"), unitValue, "must be positive");
  const Value& chunksValue = check_.require(doc_, ctx, cp, "num_chunks");
  op.numChunks = check_.u32(chunksValue, cp.key("num_chunks"));
  if (op.numChunks == 0) check_.failValue(cp.key("num_chunks"), chunksValue, "must be positive");
  const Value& body = check_.require(doc_, v, at, "ops");
  const Path bp = at.key("ops");
  check_.expectType(body, bp, Type::Array);
  const size_t pipelineIndex = tb_->ops.size();
  tb_->ops.push_back(op);
  for (uint32_t i = 0; i < body.count; ++i) loadOp(doc_.child(body, i), bp.at(i), true);
  tb_->ops[pipelineIndex].bodyCount = body.count;
}

void ThreadblockLoader::loadRefs(const Value& op, const Path& at, const char* field, const RefRule& rule,
                                 const char* opName, ChannelType channelType, uint16_t* count, uint32_t* begin) {
  *begin = static_cast<uint32_t>(tb_->refs.size());
  *count = 0;
  const Value* list = doc_.member(op, field);
  if (rule.max == 0) return;  // the op has no references of this side; a present key is ignored
  if (list == nullptr) check_.fail(at, "%s needs %s", opName, field);
  const Path lp = at.key(field);
  check_.expectType(*list, lp, Type::Array);
  const size_t n = list->count;
  if (n > kMaxRefsPerList) check_.failPath(lp, "has %zu references (limit %zu)", n, kMaxRefsPerList);
  if (n < rule.min || n > rule.max) {
    if (rule.min == rule.max) {
      check_.failPath(lp, "has %zu reference(s), %s takes exactly %u", n, opName, rule.min);
    } else if (n < rule.min) {
      check_.failPath(lp, "has %zu reference(s), %s needs at least %u", n, opName, rule.min);
    } else {
      check_.failPath(lp, "has %zu references, %s takes at most %u", n, opName, rule.max);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    tb_->refs.push_back(loadRef(doc_.child(*list, i), lp.at(i), rule.slot(i), opName, channelType));
  }
  *count = static_cast<uint16_t>(n);
}

BufferRef ThreadblockLoader::loadRef(const Value& ref, const Path& at, RefSlot slot, const char* opName,
                                     ChannelType channelType) {
  check_.expectType(ref, at, Type::Object);
  const Value* local = doc_.member(ref, "type");
  const Value* remote = doc_.member(ref, "buffer_id");
  const Value* multicast = doc_.member(ref, "switch_channel_id");
  const int kinds = (local != nullptr) + (remote != nullptr) + (multicast != nullptr);
  if (kinds == 0) {
    check_.fail(at, "is not a buffer reference (it needs one of type, buffer_id, switch_channel_id)");
  }
  if (kinds > 1) {
    check_.fail(at, "mixes %s (a reference is local {type}, remote {buffer_id} or multicast {switch_channel_id})",
                local && remote ? "type and buffer_id"
                : local         ? "type and switch_channel_id"
                                : "buffer_id and switch_channel_id");
  }
  const RefKind kind = local ? RefKind::Local : remote ? RefKind::Remote : RefKind::Multicast;
  const RefKind wanted = (slot == RefSlot::Local || slot == RefSlot::LocalPackets)     ? RefKind::Local
                         : (slot == RefSlot::Remote || slot == RefSlot::RemotePackets) ? RefKind::Remote
                                                                                       : RefKind::Multicast;
  if (kind != wanted) {
    static const char* const kindNames[] = {"local", "remote", "multicast"};
    check_.fail(at, "%s expects %s here, got a %s reference", opName, refSlotDescription(slot),
                kindNames[static_cast<int>(kind)]);
  }
  const Value& indexValue = check_.require(doc_, ref, at, "index");
  const Value& sizeValue = check_.require(doc_, ref, at, "size");
  BufferRef out{};
  out.index = check_.u32(indexValue, at.key("index"));
  out.size = check_.u32(sizeValue, at.key("size"));
  if (kind == RefKind::Local) {
    out.kind = RefKind::Local;
    if (!bufferTypeFromName(check_.string(*local, at.key("type")), &out.type)) {
      check_.failValue(at.key("type"), *local, "is not one of i, o, s");
    }
    // MSCCL++'s compiler writes the owning rank into local references.
    if (const Value* r = doc_.member(ref, "rank")) {
      if (check_.u32(*r, at.key("rank")) != static_cast<uint32_t>(rank_)) {
        check_.failValue(at.key("rank"), *r, "is not the rank of this op (%d)", rank_);
      }
    }
    if (slot == RefSlot::LocalPackets && out.type != BufferType::Scratch) {
      check_.failValue(at.key("type"), *local,
                       "is not scratch: %s keeps LL packets here, which live in scratch (\"s\")", opName);
    }
  } else if (kind == RefKind::Remote) {
    out.kind = RefKind::Remote;
    const Path idPath = at.key("buffer_id");
    const uint32_t local_id = check_.u32(*remote, idPath);
    const auto& list = remoteBuffers_[static_cast<size_t>(channelType)];
    if (local_id >= list.size()) {
      check_.failValue(idPath, *remote, "out of range (the threadblock lists %zu remote buffers for %s channels)",
                       list.size(), channelTypeName(channelType));
    }
    out.id = list[local_id];
    const RemoteBufferDecl& rb = rp_.remoteBuffers[out.id];
    out.type = rb.type;
    if (slot == RefSlot::RemotePackets && rb.type != BufferType::Scratch) {
      check_.failValue(idPath, *remote,
                       "is rank %d's %s buffer: %s writes LL packets, which must go to a scratch buffer", rb.rank,
                       bufferTypeLongName(rb.type), opName);
    }
  } else {
    out = resolveMulticast(*multicast, at.key("switch_channel_id"), slot, opName);
    out.index = check_.u32(indexValue, at.key("index"));
    out.size = check_.u32(sizeValue, at.key("size"));
  }
  checkBounds(out, indexValue, at.key("index"), sizeValue, at.key("size"));
  readSegment(check_, doc_, ref, at, plan_.header, traceKeys_, &out);
  traceUnknownKeys(ref, at, kRefKeys);
  return out;
}

BufferRef ThreadblockLoader::resolveMulticast(const Value& idValue, const Path& idPath, RefSlot slot,
                                              const char* opName) {
  BufferRef out{};
  out.kind = RefKind::Multicast;
  const uint32_t local = check_.u32(idValue, idPath);
  const auto& list = channels_[static_cast<size_t>(ChannelType::Switch)];
  if (local >= list.size()) {
    check_.failValue(idPath, idValue, "out of range (the threadblock lists %zu switch channels)", list.size());
  }
  out.id = list[local];
  out.type = rp_.switchChannels[out.id].bufferType;
  if (slot == RefSlot::MulticastPackets && out.type != BufferType::Scratch) {
    check_.failValue(idPath, idValue, "binds the %s buffer: %s carries LL packets, which live in scratch",
                     bufferTypeLongName(out.type), opName);
  }
  return out;
}

// index and size count chunks; their sum is 64-bit,
// so no 32-bit value wraps.
void ThreadblockLoader::checkBounds(const BufferRef& ref, const Value& indexValue, const Path& indexPath,
                                    const Value& sizeValue, const Path& sizePath) {
  if (ref.size == 0) check_.failValue(sizePath, sizeValue, "is empty (a reference covers at least one chunk)");
  const int owner = ref.kind == RefKind::Local    ? rank_
                    : ref.kind == RefKind::Remote ? rp_.remoteBuffers[ref.id].rank
                                                  : switchBound_[ref.id];
  const uint64_t chunks = chunksOf(owner, ref.type);
  if (static_cast<uint64_t>(ref.index) + ref.size <= chunks) return;
  // Only an error pays for the description of the buffer.
  const std::string what =
      ref.kind == RefKind::Local ? std::string(bufferTypeLongName(ref.type))
      : ref.kind == RefKind::Remote
          ? strFormat("rank %d's %s", owner, bufferTypeLongName(ref.type))
          : strFormat("rank %d's %s (bound by switch channel %u)", owner, bufferTypeLongName(ref.type), ref.id);
  if (ref.index >= chunks) {
    check_.failValue(indexPath, indexValue, "out of range (%s has %llu chunks)", what.c_str(),
                     static_cast<unsigned long long>(chunks));
  }
  check_.failValue(sizePath, sizeValue, "out of range (index %u + size %u exceeds the %llu chunks of %s)", ref.index,
                   ref.size, static_cast<unsigned long long>(chunks), what.c_str());
}

// MSCCL++'s compiler may emit the switch reduce unfused;
// it becomes the regular form.
//   {"name": "glre", "buffer_type", "buffer_offset", "size", "dst_chunk": {...}, "channel_ids": [k]}
// src is switch channel k's binding at buffer_offset and size;
// dst is dst_chunk.
void ThreadblockLoader::loadGroupLoadReduceUnfused(const Value& v, const Path& at, Op* op) {
  const Value* ids = doc_.member(v, "channel_ids");
  if (ids == nullptr) check_.fail(at, "glre with dst_chunk needs channel_ids (the switch channel it loads from)");
  if (ids->count != 1)
    check_.failPath(at.key("channel_ids"), "has %u ids, glre with dst_chunk takes exactly 1", ids->count);
  const Value& typeValue = check_.require(doc_, v, at, "buffer_type");
  BufferType boundType = BufferType::Input;
  if (!bufferTypeFromName(check_.string(typeValue, at.key("buffer_type")), &boundType)) {
    check_.failValue(at.key("buffer_type"), typeValue, "is not one of i, o, s");
  }
  const Value& offsetValue = check_.require(doc_, v, at, "buffer_offset");
  const Value& sizeValue = check_.require(doc_, v, at, "size");
  const Path idsPath = at.key("channel_ids");
  BufferRef src = resolveMulticast(doc_.child(*ids, 0), idsPath.at(0), RefSlot::Multicast, "glre");
  if (src.type != boundType) {
    check_.failValue(at.key("buffer_type"), typeValue, "does not match switch channel %u, which binds the %s buffer",
                     src.id, bufferTypeLongName(src.type));
  }
  src.index = check_.u32(offsetValue, at.key("buffer_offset"));
  src.size = check_.u32(sizeValue, at.key("size"));
  checkBounds(src, offsetValue, at.key("buffer_offset"), sizeValue, at.key("size"));
  op->srcBegin = static_cast<uint32_t>(tb_->refs.size());
  op->nSrc = 1;
  tb_->refs.push_back(src);
  const Value& dst = check_.require(doc_, v, at, "dst_chunk");
  op->dstBegin = static_cast<uint32_t>(tb_->refs.size());
  op->nDst = 1;
  tb_->refs.push_back(loadRef(dst, at.key("dst_chunk"), RefSlot::Local, "glre", ChannelType::Switch));
}

// A port op sends dst_buff[k] over channel_ids[k],
// which must lead to its owner.
void ThreadblockLoader::checkPortTargets(const Op& op, const Path& at, const Value& v) {
  const OpRule& rule = opRule(op.type);
  const char* opName = opTypeName(op.type);
  if (rule.portSrcIsPackets) {
    for (uint16_t k = 0; k < op.nSrc; ++k) {
      if (tb_->refs[op.srcBegin + k].type != BufferType::Scratch) {
        const Value& ref = doc_.child(*doc_.member(v, "src_buff"), k);
        const Path list = at.key("src_buff"), refPath = list.at(k);
        check_.failValue(refPath.key("type"), *doc_.member(ref, "type"),
                         "is not scratch: %s over port channels sends LL packets already in scratch (\"s\")", opName);
      }
    }
  }
  if (!rule.portIdsPerDst) return;
  if (doc_.member(v, "channel_ids") == nullptr) {
    check_.fail(at, "%s over port channels needs channel_ids (one per dst_buff reference)", opName);
  }
  if (op.nIds != op.nDst) {
    check_.failPath(at.key("channel_ids"), "has %u ids, %s over port channels needs one per dst_buff reference (%u)",
                    op.nIds, opName, op.nDst);
  }
  for (uint32_t k = 0; k < op.nDst; ++k) {
    const BufferRef& dst = tb_->refs[op.dstBegin + k];
    const int owner = rp_.remoteBuffers[dst.id].rank;
    const int peer = rp_.portChannels[tb_->ids[op.idsBegin + k]].peer;
    if (owner != peer) {
      const Value& ref = doc_.child(*doc_.member(v, "dst_buff"), k);
      const Path list = at.key("dst_buff"), refPath = list.at(k);
      check_.failValue(refPath.key("buffer_id"), *doc_.member(ref, "buffer_id"),
                       "is rank %d's %s buffer, but channel_ids[%u] leads to rank %d", owner,
                       bufferTypeLongName(dst.type), k, peer);
    }
  }
}

// A wait on a channel whose pair the
// peer does not list is never signalled.
void ThreadblockLoader::checkWaitPeers(const Op& op, const Path& at) {
  const bool memory = op.channelType == ChannelType::Memory;
  const auto& listed = memory ? facts_.memoryPeerListed : facts_.portPeerListed;
  const auto& decls = memory ? rp_.memoryChannels : rp_.portChannels;
  for (uint32_t k = 0; k < op.nIds; ++k) {
    const uint32_t c = tb_->ids[op.idsBegin + k];
    if (listed[c]) continue;
    const ChannelDecl& d = decls[c];
    const auto& peerDecls = memory ? plan_.ranks[static_cast<size_t>(d.peer)].memoryChannels
                                   : plan_.ranks[static_cast<size_t>(d.peer)].portChannels;
    const size_t back = static_cast<size_t>(std::count_if(
        peerDecls.begin(), peerDecls.end(), [&](const ChannelDecl& p) { return p.peer == rank_ && !p.implicit; }));
    const Path idsPath = at.key("channel_ids");
    check_.fail(idsPath.at(k),
                "%s on %s channel %u (#%d to rank %d) can never complete: rank %d lists %zu %s channel(s) to rank %d, "
                "so nothing signals it",
                opTypeName(op.type), channelTypeName(op.channelType), c, d.pairIndex, d.peer, d.peer, back,
                channelTypeName(op.channelType), rank_);
  }
}

void ThreadblockLoader::finish(const Path& threadblocksPath) {
  std::vector<uint32_t> ids;
  for (const auto& entry : barriers_) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (uint32_t id : ids) {
    const BarrierUse& use = barriers_[id];
    if (use.threadblocks.size() == use.numThreadblocks) continue;
    std::string list;
    for (size_t i = 0; i < use.threadblocks.size() && i < 8; ++i)
      list += (i ? ", " : "") + std::to_string(use.threadblocks[i]);
    if (use.threadblocks.size() > 8) list += ", ...";
    check_.fail(threadblocksPath,
                "barrier_id=%u declares num_threadblocks=%u but %zu threadblock(s) of rank %d use it (%s)", id,
                use.numThreadblocks, use.threadblocks.size(), rank_, list.c_str());
  }
  rp_.hasOps = true;
}

}  // namespace

void PlanLoader::loadThreadblocks(int r) {
  const RankFacts& facts = facts_[static_cast<size_t>(r)];
  const Value& list = *facts.threadblocks;
  const Path top, gpus = top.key("gpus"), gpu = gpus.at(static_cast<size_t>(r)), listPath = gpu.key("threadblocks");
  plan_->ranks[static_cast<size_t>(r)].threadblocks.resize(list.count);
  json::Document tbDoc;
  ThreadblockLoader loader(check_, tbDoc, *plan_, facts, r, traceKeys_);
  for (uint32_t t = 0; t < list.count; ++t) {
    parser_.parseSpan(doc_.span(list, t), &tbDoc);
    loader.loadThreadblock(t, listPath.at(t));
  }
  loader.finish(listPath);
}

}  // namespace mscclpp::plan::detail
