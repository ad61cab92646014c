#include "executor/native_view.hpp"

#include <cstring>

#include "core/enforce.hpp"

namespace mscclpp::exec {
namespace {

uint64_t roundUp16(uint64_t n) { return (n + 15) / 16 * 16; }

// Offsets of the packed view's sections.
struct ViewLayout {
  uint64_t context = 0, memory = 0, port = 0, peers = 0, total = 0;
  explicit ViewLayout(int nRanks) {
    const uint64_t n = static_cast<uint64_t>(nRanks);
    memory = roundUp16(sizeof(AlgorithmDeviceContext));
    port = memory + roundUp16(n * sizeof(MemoryChannelDeviceHandle));
    peers = port + roundUp16(n * sizeof(PortChannelDeviceHandle));
    total = peers + roundUp16(n * sizeof(AlgorithmPeer));
  }
};

}  // namespace

NativeView::NativeView(const NativeProgram& program, const ContextImage& image, const ExecContextDevice& dev,
                       const MemoryChannelDeviceHandle* memoryHandles, const PortChannelDeviceHandle* portHandles) {
  const plan::Plan& plan = image.plan();
  const plan::RankPlan& rp = image.rankPlan();
  const int n = static_cast<int>(plan.ranks.size());
  const int rank = image.rank();
  MSCCLPP_ENFORCE(static_cast<int>(program.hostOf.size()) == n, ErrorCode::InternalError,
                  "native algorithm %s: a host index for %zu of %d ranks", plan.header.name.c_str(),
                  program.hostOf.size(), n);
  ctx_.rank = rank;
  ctx_.nRanks = n;
  ctx_.root = plan.header.root;
  ctx_.host = program.hostOf[static_cast<size_t>(rank)];
  ctx_.nHosts = 0;
  ctx_.localRank = 0;
  ctx_.nLocalRanks = 0;
  for (int r = 0; r < n; ++r) {
    const int32_t h = program.hostOf[static_cast<size_t>(r)];
    ctx_.nHosts = h + 1 > ctx_.nHosts ? h + 1 : ctx_.nHosts;
    if (h == ctx_.host) {
      ctx_.localRank += r < rank ? 1 : 0;
      ++ctx_.nLocalRanks;
    }
  }
  ctx_.nBlocks = dev.nBlocks;
  ctx_.input = dev.input;
  ctx_.output = dev.output;
  ctx_.scratch = dev.scratch;
  ctx_.inputBytes = image.resources().inputBytes;
  ctx_.outputBytes = image.resources().outputBytes;
  ctx_.scratchHalfBytes = dev.scratchHalfBytes;
  ctx_.scratchBytes = dev.doubleScratch ? image.resources().scratchBytes / 2 : image.resources().scratchBytes;
  ctx_.switchChannels = dev.switchChannels;
  ctx_.nSwitchChannels = dev.nSwitchChannels;
  MSCCLPP_ENFORCE(dev.nBarriers >= 1, ErrorCode::InternalError, "native algorithm %s: its plan declares no barrier",
                  plan.header.name.c_str());
  ctx_.gridBarrier = dev.barriers;
  ctx_.state = dev.state;
  ctx_.blockRecords = dev.blockRecords;
  ctx_.abortFlag = dev.abortFlag;
  ctx_.liveWaits = dev.liveWaits;

  peers_.assign(static_cast<size_t>(n),
                AlgorithmPeer{nullptr, nullptr, nullptr, kNoMemoryId, kNoMemoryId, kNoMemoryId, 0});
  for (int r = 0; r < n; ++r) peers_[static_cast<size_t>(r)].host = program.hostOf[static_cast<size_t>(r)];
  AlgorithmPeer& self = peers_[static_cast<size_t>(rank)];
  self.input = dev.input;
  self.output = dev.output;
  self.scratch = dev.scratch;
  self.inputId = kInputMemoryId;
  self.outputId = kOutputMemoryId;
  self.scratchId = kScratchMemoryId;
  const RankResources& res = image.resources();
  for (size_t k = 0; k < rp.remoteBuffers.size(); ++k) {
    const plan::RemoteBufferDecl& d = rp.remoteBuffers[k];
    AlgorithmPeer& p = peers_.at(static_cast<size_t>(d.rank));
    char* base = d.viaMemory ? res.remoteBuffers[k].base : nullptr;
    const uint32_t id = d.viaPort ? kFirstRemoteMemoryId + static_cast<uint32_t>(k) : kNoMemoryId;
    switch (d.type) {
      case plan::BufferType::Input:
        p.input = base, p.inputId = id;
        break;
      case plan::BufferType::Output:
        p.output = base, p.outputId = id;
        break;
      case plan::BufferType::Scratch:
        p.scratch = base, p.scratchId = id;
        break;
    }
  }

  memory_.assign(static_cast<size_t>(n), MemoryChannelDeviceHandle{});
  for (size_t c = 0; c < rp.memoryChannels.size(); ++c) {
    const int peer = rp.memoryChannels[c].peer;
    MemoryChannelDeviceHandle h = memoryHandles[c];
    const AlgorithmPeer& p = peers_.at(static_cast<size_t>(peer));
    h.dst_ = p.output != nullptr ? p.output : p.scratch;
    h.src_ = dev.input;
    h.packetBuffer_ = dev.scratch;
    memory_[static_cast<size_t>(peer)] = h;
  }
  port_.assign(static_cast<size_t>(n), PortChannelDeviceHandle{});
  for (size_t c = 0; c < rp.portChannels.size(); ++c) {
    const int peer = rp.portChannels[c].peer;
    PortChannelDeviceHandle h = portHandles[c];
    h.dst_ = peers_.at(static_cast<size_t>(peer)).outputId;
    h.src_ = kInputMemoryId;
    port_[static_cast<size_t>(peer)] = h;
  }
  ctx_.memoryChannels = memory_.data();
  ctx_.portChannels = port_.data();
  ctx_.peers = peers_.data();
}

uint64_t NativeView::packedBytes(int nRanks) { return ViewLayout(nRanks).total; }

std::vector<char> NativeView::pack(uint64_t base) const {
  MSCCLPP_ENFORCE(base % 16 == 0, ErrorCode::InternalError, "native view: base 0x%llx is not 16-aligned", ull(base));
  const ViewLayout L(ctx_.nRanks);
  std::vector<char> bytes(L.total, 0);
  const size_t n = static_cast<size_t>(ctx_.nRanks);
  std::memcpy(bytes.data() + L.memory, memory_.data(), n * sizeof(MemoryChannelDeviceHandle));
  std::memcpy(bytes.data() + L.port, port_.data(), n * sizeof(PortChannelDeviceHandle));
  std::memcpy(bytes.data() + L.peers, peers_.data(), n * sizeof(AlgorithmPeer));
  AlgorithmDeviceContext c = ctx_;
  c.memoryChannels = reinterpret_cast<MemoryChannelDeviceHandle*>(static_cast<uintptr_t>(base + L.memory));
  c.portChannels = reinterpret_cast<PortChannelDeviceHandle*>(static_cast<uintptr_t>(base + L.port));
  c.peers = reinterpret_cast<const AlgorithmPeer*>(static_cast<uintptr_t>(base + L.peers));
  std::memcpy(bytes.data() + L.context, &c, sizeof(c));
  return bytes;
}

}  // namespace mscclpp::exec
