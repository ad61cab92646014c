// Pass 1 of plan loading: the header, every rank's declarations, the cross-rank rules.
// Threadblocks are only syntax-checked and kept as spans here;
// threadblock_loader.cc loads them for the ranks asked for.
#include "plan/plan_loader.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "plan/op_rules.hpp"
#include "plan/plan_file.hpp"
#include "plan/plan_loader_impl.hpp"
#include "plan/plan_names.hpp"

namespace mscclpp::plan {
namespace detail {

using json::Type;
using json::Value;

namespace {

// The widest plan. It bounds the per-rank tables a corrupt file makes us build.
constexpr uint32_t kMaxRanks = 1u << 20;

const char* const kHeaderKeys[] = {"name",
                                   "collective",
                                   "protocol",
                                   "inplace",
                                   "gpus",
                                   "num_threads_per_block",
                                   "use_double_scratch_buffer",
                                   "buffer_alignment",
                                   "min_message_size",
                                   "max_message_size",
                                   "reuse_resources",
                                   "format_version",
                                   "tags",
                                   "root",
                                   "nranks_per_node",
                                   "variable_sizes"};
const char* const kRankKeys[] = {"id",       "input_chunks",   "output_chunks", "scratch_chunks",
                                 "channels", "remote_buffers", "semaphores",    "threadblocks"};
const char* const kChannelKeys[] = {"channel_type", "connected_to", "buffer_type", "buff", "rank_groups"};
const char* const kRemoteBufferKeys[] = {"rank", "type", "access_channel_types"};

std::string rankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s + "]";
}

}  // namespace

void ReduceOpScanner::onStringMember(int depth, std::string_view key, std::string_view rawValue) {
  if (depth < 0 || depth > json::kMaxDepth) return;
  if (key == "name") {
    OpType type;
    levels_[depth].reduces = opTypeFromName(rawValue, &type) && opRule(type).reduces;
  } else if (key == "reduce_op") {
    PlanReduceOp op;
    if (planReduceOpFromName(rawValue, &op)) levels_[depth].op = static_cast<int>(op);
  }
}

void ReduceOpScanner::onObjectEnd(int depth) {
  if (depth < 0 || depth > json::kMaxDepth) return;
  Level& level = levels_[depth];
  if (level.reduces) mask_ |= 1u << (level.op >= 0 ? level.op : static_cast<int>(PlanReduceOp::Sum));
  level = Level();
}

PlanLoader::PlanLoader(std::string_view text, const std::string& source)
    : text_(text), source_(source), check_(source_), parser_(text_, source_) {}

void logUnknownKeys(const Checker& check, const json::Document& doc, const Value& object, const Path& at,
                    const char* const* known, size_t nKnown) {
  if (object.type != Type::Object) return;
  for (uint32_t i = 0; i < object.count; ++i) {
    const Value& m = doc.child(object, i);
    bool isKnown = false;
    for (size_t k = 0; k < nKnown && !isKnown; ++k) isKnown = m.keyView() == known[k];
    if (!isKnown) {
      MSCCLPP_TRACE(LogPlan, "%s: ignoring unknown key \"%.*s\" in %s", check.source().c_str(),
                    static_cast<int>(m.keyLen), m.key, at.isRoot() ? "the top level" : at.str().c_str());
    }
  }
}

ChannelType readChannelType(const Checker& check, const json::Document& doc, const Value& entry, const Path& at,
                            const char* typeKey, bool allowSwitch) {
  check.expectType(entry, at, Type::Object);
  const Value& typeValue = check.require(doc, entry, at, typeKey);
  ChannelType type = ChannelType::None;
  if (!channelTypeFromName(check.string(typeValue, at.key(typeKey)), &type) || type == ChannelType::None ||
      (type == ChannelType::Switch && !allowSwitch)) {
    check.failValue(at.key(typeKey), typeValue, "%s",
                    allowSwitch ? "is not one of memory, port, switch" : "is not one of memory, port");
  }
  return type;
}

void PlanLoader::declare() {
  traceKeys_ = logEnabled(LogLevel::Trace, LogPlan);
  const json::SkipRule rule{"threadblocks", 2};  // {"gpus": [{"threadblocks": [...]}]}
  parser_.parseDocument(&doc_, &rule, &scanner_);
  const Value& root = doc_.root();
  if (root.type != Type::Object) {
    MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: the plan is %s, expected an object", source_.c_str(),
                  json::typeName(root.type));
  }
  plan_ = std::make_shared<Plan>();
  readHeader(root);
  pairChannels();
  checkSwitchGroups();
  checkRemoteBufferChannels();
}

void PlanLoader::readHeader(const Value& root) {
  const Path top;
  PlanHeader& h = plan_->header;
  h.source = source_;

  const Value& gpus = check_.require(doc_, root, top, "gpus");
  const Path gpusPath = top.key("gpus");
  check_.expectType(gpus, gpusPath, Type::Array);
  if (gpus.count == 0) check_.failPath(gpusPath, "is empty (a plan has at least one rank)");
  if (gpus.count > kMaxRanks) check_.failPath(gpusPath, "has %u ranks (limit %u)", gpus.count, kMaxRanks);
  const int n = static_cast<int>(gpus.count);
  h.worldSize = n;

  const Value& name = check_.require(doc_, root, top, "name");
  std::string_view nameText = check_.string(name, top.key("name"));
  if (nameText.empty()) check_.failValue(top.key("name"), name, "is empty");
  h.name.assign(nameText.data(), nameText.size());

  const Value& collective = check_.require(doc_, root, top, "collective");
  if (!collectiveFromName(check_.string(collective, top.key("collective")), &h.collective)) {
    check_.failValue(top.key("collective"), collective, "is not one of %s", collectiveNameList());
  }
  const Value& protocol = check_.require(doc_, root, top, "protocol");
  std::string_view protocolText = check_.string(protocol, top.key("protocol"));
  if (protocolText == "Simple") {
    h.protocol = Protocol::Simple;
  } else if (protocolText == "LL") {
    h.protocol = Protocol::LL;
  } else {
    check_.failValue(top.key("protocol"), protocol, "is not one of Simple, LL");
  }
  h.inPlace = check_.boolean(check_.require(doc_, root, top, "inplace"), top.key("inplace"));

  if (const Value* v = doc_.member(root, "num_threads_per_block")) {
    const uint64_t threads = check_.u32(*v, top.key("num_threads_per_block"));
    if (threads < 1 || threads > 1024) check_.failValue(top.key("num_threads_per_block"), *v, "out of range (1..1024)");
    h.numThreadsPerBlock = static_cast<int>(threads);
  }
  if (const Value* v = doc_.member(root, "use_double_scratch_buffer")) {
    h.useDoubleScratchBuffer = check_.boolean(*v, top.key("use_double_scratch_buffer"));
  }
  if (const Value* v = doc_.member(root, "reuse_resources"))
    h.reuseResources = check_.boolean(*v, top.key("reuse_resources"));
  if (const Value* v = doc_.member(root, "buffer_alignment")) {
    const uint32_t a = check_.u32(*v, top.key("buffer_alignment"));
    if (a == 0 || (a & (a - 1)) != 0) check_.failValue(top.key("buffer_alignment"), *v, "is not a power of two");
    h.bufferAlignment = a;
  }
  if (const Value* v = doc_.member(root, "min_message_size"))
    h.minMessageSize = check_.u64(*v, top.key("min_message_size"));
  if (const Value* v = doc_.member(root, "max_message_size")) {
    h.maxMessageSize = check_.u64(*v, top.key("max_message_size"));
    if (h.maxMessageSize < h.minMessageSize) {
      check_.failValue(top.key("max_message_size"), *v, "is smaller than min_message_size=%llu",
                       static_cast<unsigned long long>(h.minMessageSize));
    }
  }
  if (const Value* v = doc_.member(root, "format_version")) {
    const uint32_t version = check_.u32(*v, top.key("format_version"));
    if (version > static_cast<uint32_t>(kPlanFormatVersion)) {
      check_.failValue(top.key("format_version"), *v, "is newer than this reader supports (%d)", kPlanFormatVersion);
    }
    h.formatVersion = static_cast<int>(version);
  }
  if (const Value* v = doc_.member(root, "tags")) {
    const Path tagsPath = top.key("tags");
    check_.expectType(*v, tagsPath, Type::Array);
    for (uint32_t i = 0; i < v->count; ++i) {
      const Value& tag = doc_.child(*v, i);
      std::string_view t = check_.string(tag, tagsPath.at(i));
      if (t.empty()) check_.failValue(tagsPath.at(i), tag, "is empty");
      h.tags.emplace_back(t);
    }
  }
  if (const Value* v = doc_.member(root, "root")) {
    const uint32_t r = check_.u32(*v, top.key("root"));
    if (r >= static_cast<uint32_t>(n)) check_.failValue(top.key("root"), *v, "out of range (the plan has %d ranks)", n);
    h.root = static_cast<int>(r);
  }
  if (const Value* v = doc_.member(root, "nranks_per_node")) {
    const uint32_t perNode = check_.u32(*v, top.key("nranks_per_node"));
    if (perNode < 1 || perNode > static_cast<uint32_t>(n)) {
      check_.failValue(top.key("nranks_per_node"), *v, "out of range (1..%d)", n);
    }
    if (static_cast<uint32_t>(n) % perNode != 0) {
      check_.failValue(top.key("nranks_per_node"), *v, "does not divide the plan's %d ranks", n);
    }
    h.nRanksPerNode = static_cast<int>(perNode);
  }
  readVariableSizes(check_, doc_, root, top, traceKeys_, &h);
  traceUnknownKeys(root, top, kHeaderKeys);

  plan_->ranks.resize(static_cast<size_t>(n));
  facts_.assign(static_cast<size_t>(n), RankFacts());
  for (int r = 0; r < n; ++r)
    readRank(r, doc_.child(gpus, static_cast<size_t>(r)), gpusPath.at(static_cast<size_t>(r)));
}

void PlanLoader::readRank(int r, const Value& gpu, const Path& at) {
  check_.expectType(gpu, at, Type::Object);
  RankPlan& rp = plan_->ranks[static_cast<size_t>(r)];
  rp.rank = r;
  const Value& id = check_.require(doc_, gpu, at, "id");
  if (check_.u32(id, at.key("id")) != static_cast<uint32_t>(r)) {
    check_.failValue(at.key("id"), id, "does not match its position %d in gpus (gpus[r].id must be r)", r);
  }
  rp.inputChunks = check_.u32(check_.require(doc_, gpu, at, "input_chunks"), at.key("input_chunks"));
  rp.outputChunks = check_.u32(check_.require(doc_, gpu, at, "output_chunks"), at.key("output_chunks"));
  rp.scratchChunks = check_.u32(check_.require(doc_, gpu, at, "scratch_chunks"), at.key("scratch_chunks"));
  if (r > 0) {
    // Every rank derives one chunk size from the call,
    // so remote references line up.
    const RankPlan& first = plan_->ranks[0];
    if (rp.inputChunks != first.inputChunks) {
      check_.failValue(at.key("input_chunks"), *doc_.member(gpu, "input_chunks"),
                       "differs from gpus[0].input_chunks=%u (every rank must split its buffers into the same chunks)",
                       first.inputChunks);
    }
    if (rp.outputChunks != first.outputChunks) {
      check_.failValue(at.key("output_chunks"), *doc_.member(gpu, "output_chunks"),
                       "differs from gpus[0].output_chunks=%u (every rank must split its buffers into the same chunks)",
                       first.outputChunks);
    }
  }

  const Value& channels = check_.require(doc_, gpu, at, "channels");
  check_.expectType(channels, at.key("channels"), Type::Array);
  readChannels(r, channels, at.key("channels"));
  checkVariableRank(check_, doc_, gpu, at, plan_->header, rp);

  const Value& remote = check_.require(doc_, gpu, at, "remote_buffers");
  check_.expectType(remote, at.key("remote_buffers"), Type::Array);
  readRemoteBuffers(r, remote, at.key("remote_buffers"));

  if (const Value* sems = doc_.member(gpu, "semaphores")) {
    const Path semPath = at.key("semaphores");
    check_.expectType(*sems, semPath, Type::Array);
    rp.semaphoreInitValues.reserve(sems->count);
    for (uint32_t i = 0; i < sems->count; ++i) {
      const Value& s = doc_.child(*sems, i);
      const Path sp = semPath.at(i);
      check_.expectType(s, sp, Type::Object);
      rp.semaphoreInitValues.push_back(check_.u32(check_.require(doc_, s, sp, "init_value"), sp.key("init_value")));
    }
  }

  const Value& tbs = check_.require(doc_, gpu, at, "threadblocks");
  check_.expectType(tbs, at.key("threadblocks"), Type::Array);
  facts_[static_cast<size_t>(r)].threadblocks = &tbs;
  traceUnknownKeys(gpu, at, kRankKeys);
}

void PlanLoader::readChannels(int r, const Value& list, const Path& at) {
  RankPlan& rp = plan_->ranks[static_cast<size_t>(r)];
  const int n = plan_->header.worldSize;
  for (uint32_t i = 0; i < list.count; ++i) {
    const Value& entry = doc_.child(list, i);
    const Path e = at.at(i);
    const ChannelType type = readChannelType(check_, doc_, entry, e, "channel_type", true);
    if (type == ChannelType::Memory || type == ChannelType::Port) {
      const Value& peers = check_.require(doc_, entry, e, "connected_to");
      const Path peersPath = e.key("connected_to");
      check_.expectType(peers, peersPath, Type::Array);
      auto& decls = type == ChannelType::Memory ? rp.memoryChannels : rp.portChannels;
      for (uint32_t k = 0; k < peers.count; ++k) {
        const Value& pv = doc_.child(peers, k);
        const uint32_t peer = check_.u32(pv, peersPath.at(k));
        if (peer >= static_cast<uint32_t>(n))
          check_.failValue(peersPath.at(k), pv, "out of range (the plan has %d ranks)", n);
        if (peer == static_cast<uint32_t>(r)) {
          check_.failValue(peersPath.at(k), pv, "is rank %d itself (a channel connects two different ranks)", r);
        }
        ChannelDecl d;
        d.peer = static_cast<int>(peer);
        decls.push_back(d);
      }
    } else {
      // MSCCL++ plans may spell "buffer_type" as "buff".
      const Value* bt = doc_.member(entry, "buffer_type");
      const Value* legacy = doc_.member(entry, "buff");
      if (bt == nullptr && legacy == nullptr) check_.fail(e, "missing required key \"buffer_type\"");
      BufferType bufferType = BufferType::Input;
      const Path btPath = e.key(bt != nullptr ? "buffer_type" : "buff");
      if (!bufferTypeFromName(check_.string(bt ? *bt : *legacy, btPath), &bufferType)) {
        check_.failValue(btPath, bt ? *bt : *legacy, "is not one of i, o, s");
      }
      if (bt != nullptr && legacy != nullptr && bt->str() != check_.string(*legacy, e.key("buff"))) {
        check_.failValue(e.key("buff"), *legacy, "disagrees with buffer_type=%s", literal(*bt).c_str());
      }
      const Value& groups = check_.require(doc_, entry, e, "rank_groups");
      const Path groupsPath = e.key("rank_groups");
      check_.expectType(groups, groupsPath, Type::Array);
      if (groups.count == 0) check_.failPath(groupsPath, "is empty (a switch channel binds at least one group)");
      for (uint32_t g = 0; g < groups.count; ++g) {
        const Value& group = doc_.child(groups, g);
        const Path gp = groupsPath.at(g);
        check_.expectType(group, gp, Type::Object);
        const Value& sizeValue = check_.require(doc_, group, gp, "size");
        const uint32_t size = check_.u32(sizeValue, gp.key("size"));
        const Value& ranks = check_.require(doc_, group, gp, "ranks");
        check_.expectType(ranks, gp.key("ranks"), Type::Array);
        SwitchChannelDecl decl;
        decl.bufferType = bufferType;
        bool containsSelf = false;
        // Stamps rather than a search keep big groups linear.
        if (memberStamp_.size() != static_cast<size_t>(n)) memberStamp_.assign(static_cast<size_t>(n), 0);
        ++stamp_;
        for (uint32_t k = 0; k < ranks.count; ++k) {
          const Value& mv = doc_.child(ranks, k);
          const Path ranksPath = gp.key("ranks");
          const Path mp = ranksPath.at(k);
          const uint32_t m = check_.u32(mv, mp);
          if (m >= static_cast<uint32_t>(n)) check_.failValue(mp, mv, "out of range (the plan has %d ranks)", n);
          if (memberStamp_[m] == stamp_) check_.failValue(mp, mv, "appears twice in the group");
          memberStamp_[m] = stamp_;
          containsSelf = containsSelf || m == static_cast<uint32_t>(r);
          decl.ranks.push_back(static_cast<int>(m));
        }
        if (size != ranks.count)
          check_.failValue(gp.key("size"), sizeValue, "does not match the %u ranks listed", ranks.count);
        if (!containsSelf) check_.failPath(gp.key("ranks"), "does not contain rank %d, which declares the group", r);
        rp.switchChannels.push_back(std::move(decl));
        facts_[static_cast<size_t>(r)].switchOrigin.emplace_back(i, g);
      }
    }
    traceUnknownKeys(entry, e, kChannelKeys);
  }
}

void PlanLoader::readRemoteBuffers(int r, const Value& list, const Path& at) {
  RankPlan& rp = plan_->ranks[static_cast<size_t>(r)];
  const int n = plan_->header.worldSize;
  rp.remoteBuffers.reserve(list.count);
  for (uint32_t i = 0; i < list.count; ++i) {
    const Value& entry = doc_.child(list, i);
    const Path e = at.at(i);
    check_.expectType(entry, e, Type::Object);
    RemoteBufferDecl d;
    const Value& rankValue = check_.require(doc_, entry, e, "rank");
    const uint32_t owner = check_.u32(rankValue, e.key("rank"));
    if (owner >= static_cast<uint32_t>(n))
      check_.failValue(e.key("rank"), rankValue, "out of range (the plan has %d ranks)", n);
    if (owner == static_cast<uint32_t>(r)) {
      check_.failValue(e.key("rank"), rankValue, "is rank %d itself (remote buffers belong to other ranks)", r);
    }
    d.rank = static_cast<int>(owner);
    const Value& typeValue = check_.require(doc_, entry, e, "type");
    if (!bufferTypeFromName(check_.string(typeValue, e.key("type")), &d.type)) {
      check_.failValue(e.key("type"), typeValue, "is not one of i, o, s");
    }
    const Value& access = check_.require(doc_, entry, e, "access_channel_types");
    const Path accessPath = e.key("access_channel_types");
    check_.expectType(access, accessPath, Type::Array);
    if (access.count == 0)
      check_.failPath(accessPath, "is empty (a remote buffer is reached through memory or port channels)");
    for (uint32_t k = 0; k < access.count; ++k) {
      const Value& av = doc_.child(access, k);
      ChannelType t = ChannelType::None;
      if (!channelTypeFromName(check_.string(av, accessPath.at(k)), &t) ||
          (t != ChannelType::Memory && t != ChannelType::Port)) {
        check_.failValue(accessPath.at(k), av, "is not one of memory, port");
      }
      (t == ChannelType::Memory ? d.viaMemory : d.viaPort) = true;
    }
    rp.remoteBuffers.push_back(d);
    traceUnknownKeys(entry, e, kRemoteBufferKeys);
  }
}

void PlanLoader::pairChannels() {
  pairChannelType(ChannelType::Memory);
  pairChannelType(ChannelType::Port);
}

// The k-th channel of a type from A to B pairs with the k-th from B to A.
// Where B lists fewer toward A,
// B gets the missing ones as implicit channels.
// MSCCL++ builds the same pairs, and its compiler emits such plans.
void PlanLoader::pairChannelType(ChannelType type) {
  const size_t n = plan_->ranks.size();
  auto decls = [&](size_t r) -> std::vector<ChannelDecl>& {
    return type == ChannelType::Memory ? plan_->ranks[r].memoryChannels : plan_->ranks[r].portChannels;
  };
  // listed[r]: peer -> number of channels r lists toward it, sorted by peer.
  std::vector<std::vector<std::pair<int, int>>> listed(n);
  for (size_t r = 0; r < n; ++r) {
    std::map<int, int> counts;
    for (ChannelDecl& d : decls(r)) d.pairIndex = counts[d.peer]++;
    listed[r].assign(counts.begin(), counts.end());
    (type == ChannelType::Memory ? facts_[r].listedMemory : facts_[r].listedPort) = decls(r).size();
  }
  auto listedCount = [&](size_t from, int to) {
    const auto& v = listed[from];
    auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(to, 0));
    return it != v.end() && it->first == to ? it->second : 0;
  };
  // Implicit channels each rank needs, by peer.
  std::vector<std::vector<std::pair<int, int>>> missing(n);  // peer, how many
  for (size_t r = 0; r < n; ++r) {
    for (const auto& [peer, count] : listed[r]) {
      const int back = listedCount(static_cast<size_t>(peer), static_cast<int>(r));
      if (back < count) missing[static_cast<size_t>(peer)].emplace_back(static_cast<int>(r), count - back);
    }
  }
  size_t added = 0;
  std::string example;
  for (size_t r = 0; r < n; ++r) {
    auto& m = missing[r];
    std::sort(m.begin(), m.end());
    for (const auto& [peer, count] : m) {
      const int already = listedCount(r, peer);
      for (int k = 0; k < count; ++k) {
        ChannelDecl d;
        d.peer = peer;
        d.pairIndex = already + k;
        d.implicit = true;
        decls(r).push_back(d);
      }
      if (example.empty()) {
        example =
            strFormat("rank %d lists %d %s channel(s) to rank %zu, which lists %d back", peer,
                      listedCount(static_cast<size_t>(peer), static_cast<int>(r)), channelTypeName(type), r, already);
      }
      added += static_cast<size_t>(count);
    }
  }
  if (added > 0) {
    MSCCLPP_INFO(LogPlan, "%s: added %zu implicit %s channel(s) so that every listed channel has its pair (e.g. %s)",
                 source_.c_str(), added, channelTypeName(type), example.c_str());
  }
  for (size_t r = 0; r < n; ++r) {
    auto& peerListed = type == ChannelType::Memory ? facts_[r].memoryPeerListed : facts_[r].portPeerListed;
    const size_t nListed = type == ChannelType::Memory ? facts_[r].listedMemory : facts_[r].listedPort;
    peerListed.resize(nListed);
    for (size_t c = 0; c < nListed; ++c) {
      const ChannelDecl& d = decls(r)[c];
      peerListed[c] = d.pairIndex < listedCount(static_cast<size_t>(d.peer), static_cast<int>(r));
    }
  }
}

// A multicast binding is created by all its members together,
// so each declares it.
// The k-th switch channel over one group and
// buffer pairs with the k-th at each member.
void PlanLoader::checkSwitchGroups() {
  const size_t n = plan_->ranks.size();
  // Interns each binding, counts it per rank,
  // then compares its members' counts.
  // That is linear in the declarations, however big the groups.
  std::map<std::pair<BufferType, std::vector<int>>, size_t> ids;
  std::vector<std::pair<size_t, size_t>> firstDeclaration;  // per id: rank, switch channel
  std::vector<std::unordered_map<size_t, size_t>> counts(n);
  for (size_t r = 0; r < n; ++r) {
    const auto& decls = plan_->ranks[r].switchChannels;
    for (size_t s = 0; s < decls.size(); ++s) {
      const auto inserted = ids.emplace(std::make_pair(decls[s].bufferType, decls[s].ranks), ids.size());
      if (inserted.second) firstDeclaration.emplace_back(r, s);
      ++counts[r][inserted.first->second];
    }
  }
  for (size_t id = 0; id < firstDeclaration.size(); ++id) {
    const auto [r, s] = firstDeclaration[id];
    const SwitchChannelDecl& decl = plan_->ranks[r].switchChannels[s];
    const size_t here = counts[r][id];
    for (int m : decl.ranks) {
      const auto it = counts[static_cast<size_t>(m)].find(id);
      const size_t there = it == counts[static_cast<size_t>(m)].end() ? 0 : it->second;
      if (there == here) continue;
      const auto [c, g] = facts_[r].switchOrigin[s];
      const Path top, gpus = top.key("gpus"), gpu = gpus.at(r), channels = gpu.key("channels");
      const Path channel = channels.at(c), groups = channel.key("rank_groups"), at = groups.at(g);
      check_.fail(at,
                  "rank %zu binds ranks %s on its %s buffer %zu time(s) but rank %d does %zu time(s) (every "
                  "member of a switch group declares the same switch channels)",
                  r, rankList(decl.ranks).c_str(), bufferTypeLongName(decl.bufferType), here, m, there);
    }
  }
}

void PlanLoader::checkRemoteBufferChannels() {
  const Value& gpus = *doc_.member(doc_.root(), "gpus");
  for (size_t r = 0; r < plan_->ranks.size(); ++r) {
    const RankPlan& rp = plan_->ranks[r];
    if (rp.remoteBuffers.empty()) continue;
    std::unordered_set<int> memoryPeers, portPeers;
    for (const ChannelDecl& d : rp.memoryChannels) memoryPeers.insert(d.peer);
    for (const ChannelDecl& d : rp.portChannels) portPeers.insert(d.peer);
    for (size_t i = 0; i < rp.remoteBuffers.size(); ++i) {
      const RemoteBufferDecl& rb = rp.remoteBuffers[i];
      for (ChannelType t : {ChannelType::Memory, ChannelType::Port}) {
        if (!(t == ChannelType::Memory ? rb.viaMemory : rb.viaPort)) continue;
        if ((t == ChannelType::Memory ? memoryPeers : portPeers).count(rb.rank) != 0) continue;
        const Value& access =
            *doc_.member(doc_.child(*doc_.member(doc_.child(gpus, r), "remote_buffers"), i), "access_channel_types");
        for (uint32_t k = 0; k < access.count; ++k) {
          const Value& av = doc_.child(access, k);
          if (av.str() != channelTypeName(t)) continue;
          const Path top, gpusPath = top.key("gpus"), gpu = gpusPath.at(r), list = gpu.key("remote_buffers");
          const Path entry = list.at(i), accessPath = entry.key("access_channel_types"), at = accessPath.at(k);
          check_.failValue(at, av, "but rank %zu has no %s channel to rank %d, the buffer's owner", r,
                           channelTypeName(t), rb.rank);
        }
      }
    }
  }
}

std::shared_ptr<Plan> PlanLoader::load(const LoadOptions& options) {
  declare();
  const int n = plan_->header.worldSize;
  if (options.onlyRank < -1 || options.onlyRank >= n) {
    MSCCLPP_THROW(ErrorCode::InvalidArgument, "%s: cannot load rank %d: the plan has %d ranks", source_.c_str(),
                  options.onlyRank, n);
  }
  for (int r = 0; r < n; ++r) {
    if (options.onlyRank < 0 || options.onlyRank == r) {
      loadThreadblocks(r);
    } else if (options.validateAllRanks) {
      loadThreadblocks(r);  // every rule, errors with this rank's JSON path
      RankPlan& other = plan_->ranks[static_cast<size_t>(r)];
      other.threadblocks = std::vector<ThreadblockPlan>();  // only this rank's ops are kept
      other.numBarriers = 0;
      other.hasOps = false;
    }
  }
  plan_->header.reduceOps |= scanner_.mask();
  return plan_;
}

PlanSummary PlanLoader::summarize() {
  declare();
  PlanSummary s;
  s.header = plan_->header;
  s.header.reduceOps = scanner_.mask();
  s.inputChunks = plan_->ranks[0].inputChunks;
  s.outputChunks = plan_->ranks[0].outputChunks;
  for (size_t r = 0; r < plan_->ranks.size(); ++r) {
    s.maxScratchChunks = std::max(s.maxScratchChunks, plan_->ranks[r].scratchChunks);
    s.numThreadblocks += facts_[r].threadblocks->count;
  }
  return s;
}

}  // namespace detail

PlanPtr loadPlanJson(std::string_view text, const std::string& sourceName, const LoadOptions& options) {
  detail::PlanLoader loader(text, sourceName);
  return loader.load(options);
}

PlanPtr loadPlanFile(const std::string& path, const LoadOptions& options) {
  const std::string text = readPlanFile(path);
  return loadPlanJson(text, path, options);
}

PlanSummary loadPlanSummaryJson(std::string_view text, const std::string& sourceName) {
  detail::PlanLoader loader(text, sourceName);
  return loader.summarize();
}

PlanSummary loadPlanSummaryFile(const std::string& path) {
  const std::string text = readPlanFile(path);
  return loadPlanSummaryJson(text, path);
}

}  // namespace mscclpp::plan
