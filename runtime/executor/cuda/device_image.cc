#include "executor/cuda/device_image.hpp"

#include <cstring>

#include "core/enforce.hpp"
#include "executor/cuda/launch_config.hpp"

namespace mscclpp::exec {
namespace {

// Offsets of every section for one image's counts. Sizing and packing
// both use it, so they never disagree.
struct Layout {
  uint64_t total = 0;
  uint64_t context = 0, blocks = 0, memoryChannels = 0, portChannels = 0, switchChannels = 0;
  std::vector<uint64_t> ops, refs, ids, members;
  uint64_t mutableStart = 0;
  uint64_t state = 0, records = 0, expected = 0, semaphores = 0, barriers = 0;

  uint64_t take(uint64_t bytes) {
    uint64_t off = total;
    total += roundUpTo16(bytes);
    return off;
  }

  explicit Layout(const ImageCounts& c) {
    const uint64_t nBlocks = c.blocks.size();
    context = take(sizeof(ExecContextDevice));
    blocks = take(nBlocks * sizeof(ThreadblockDevice));
    for (const ImageCounts::Block& tb : c.blocks) {
      ops.push_back(take(uint64_t{tb.nOps} * sizeof(plan::Op)));
      refs.push_back(take(uint64_t{tb.nRefs} * sizeof(ResolvedRef)));
      ids.push_back(take(uint64_t{tb.nIds} * sizeof(uint32_t)));
    }
    memoryChannels = take(uint64_t{c.nMemoryChannels} * sizeof(MemoryChannelDeviceHandle));
    portChannels = take(uint64_t{c.nPortChannels} * sizeof(PortChannelDeviceHandle));
    switchChannels = take(c.switchMembers.size() * sizeof(SwitchChannelDeviceHandle));
    for (uint32_t n : c.switchMembers) members.push_back(take(uint64_t{n} * sizeof(void*)));
    mutableStart = total;
    state = take(sizeof(ExecState));
    records = take(nBlocks * sizeof(BlockRecord));
    expected = take(uint64_t{c.nMemoryChannels + c.nPortChannels} * sizeof(uint64_t));
    semaphores = take(uint64_t{c.nSemaphores} * sizeof(uint32_t));
    barriers = take(uint64_t{c.nBarriers} * sizeof(DeviceSyncer));
  }
};

template <class T>
T* at(std::vector<char>& bytes, uint64_t off) {
  return reinterpret_cast<T*>(bytes.data() + off);
}

template <class T>
T* devicePtr(uint64_t base, uint64_t off) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(base + off));
}

}  // namespace

bool ImageCounts::operator==(const ImageCounts& o) const {
  if (blocks.size() != o.blocks.size()) return false;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block &a = blocks[i], &b = o.blocks[i];
    if (a.nOps != b.nOps || a.nRefs != b.nRefs || a.nIds != b.nIds) return false;
  }
  return nMemoryChannels == o.nMemoryChannels && nPortChannels == o.nPortChannels && switchMembers == o.switchMembers &&
         nSemaphores == o.nSemaphores && nBarriers == o.nBarriers;
}

ImageCounts imageCountsOf(const ExecContextDevice& d) {
  ImageCounts c;
  for (uint32_t t = 0; t < d.nBlocks; ++t) c.blocks.push_back({d.blocks[t].nOps, d.blocks[t].nRefs, d.blocks[t].nIds});
  c.nMemoryChannels = d.nMemoryChannels;
  c.nPortChannels = d.nPortChannels;
  for (uint32_t s = 0; s < d.nSwitchChannels; ++s) c.switchMembers.push_back(d.switchChannels[s].nMembers);
  c.nSemaphores = d.nSemaphores;
  c.nBarriers = d.nBarriers;
  return c;
}

ImageCounts imageCountsOf(const plan::RankPlan& rp) {
  ImageCounts c;
  for (const plan::ThreadblockPlan& tb : rp.threadblocks) {
    c.blocks.push_back({static_cast<uint32_t>(tb.ops.size()), static_cast<uint32_t>(tb.refs.size()),
                        static_cast<uint32_t>(tb.ids.size())});
  }
  c.nMemoryChannels = static_cast<uint32_t>(rp.memoryChannels.size());
  c.nPortChannels = static_cast<uint32_t>(rp.portChannels.size());
  for (const plan::SwitchChannelDecl& s : rp.switchChannels)
    c.switchMembers.push_back(static_cast<uint32_t>(s.ranks.size()));
  c.nSemaphores = static_cast<uint32_t>(rp.semaphoreInitValues.size());
  c.nBarriers = static_cast<uint32_t>(rp.numBarriers);
  return c;
}

uint64_t packedImageBytes(const ImageCounts& counts) { return Layout(counts).total; }
uint64_t packedImageBytes(const ExecContextDevice& image) { return Layout(imageCountsOf(image)).total; }

PackedImage packDeviceImage(const ExecContextDevice& d, uint64_t base) {
  MSCCLPP_ENFORCE(base % 16 == 0, ErrorCode::InternalError, "device image: base address 0x%llx is not 16-aligned",
                  static_cast<unsigned long long>(base));
  const Layout L(imageCountsOf(d));
  PackedImage img;
  img.base = base;
  img.bytes.assign(L.total, 0);
  img.contextOffset = L.context;
  img.mutableOffset = L.mutableStart;
  img.mutableBytes = L.total - L.mutableStart;
  img.stateOffset = L.state;
  img.recordsOffset = L.records;

  // Threadblocks and their op lists.
  ThreadblockDevice* blocks = at<ThreadblockDevice>(img.bytes, L.blocks);
  for (uint32_t t = 0; t < d.nBlocks; ++t) {
    const ThreadblockDevice& src = d.blocks[t];
    ThreadblockDevice& dst = blocks[t];
    dst = src;
    if (src.nOps) std::memcpy(at<char>(img.bytes, L.ops[t]), src.ops, uint64_t{src.nOps} * sizeof(plan::Op));
    if (src.nRefs) std::memcpy(at<char>(img.bytes, L.refs[t]), src.refs, uint64_t{src.nRefs} * sizeof(ResolvedRef));
    if (src.nIds) std::memcpy(at<char>(img.bytes, L.ids[t]), src.ids, uint64_t{src.nIds} * sizeof(uint32_t));
    dst.ops = devicePtr<const plan::Op>(base, L.ops[t]);
    dst.refs = devicePtr<const ResolvedRef>(base, L.refs[t]);
    dst.ids = devicePtr<const uint32_t>(base, L.ids[t]);
    img.blockOpListBytes.push_back(blockOpListBytes(dst));
  }

  // Channel handles; each semaphore's private expected counter moves into the mutable section.
  uint64_t* expected = at<uint64_t>(img.bytes, L.expected);
  uint32_t k = 0;
  MemoryChannelDeviceHandle* mem = at<MemoryChannelDeviceHandle>(img.bytes, L.memoryChannels);
  for (uint32_t c = 0; c < d.nMemoryChannels; ++c, ++k) {
    mem[c] = d.memoryChannels[c];
    const uint64_t* e = d.memoryChannels[c].semaphore_.expectedInboundCounter;
    MSCCLPP_ENFORCE(e != nullptr, ErrorCode::InternalError, "device image: memory channel %u has no expected counter",
                    c);
    expected[k] = *e;
    mem[c].semaphore_.expectedInboundCounter = devicePtr<uint64_t>(base, L.expected + k * sizeof(uint64_t));
  }
  PortChannelDeviceHandle* port = at<PortChannelDeviceHandle>(img.bytes, L.portChannels);
  for (uint32_t c = 0; c < d.nPortChannels; ++c, ++k) {
    port[c] = d.portChannels[c];
    const uint64_t* e = d.portChannels[c].semaphore_.expectedInboundCounter;
    MSCCLPP_ENFORCE(e != nullptr, ErrorCode::InternalError, "device image: port channel %u has no expected counter", c);
    expected[k] = *e;
    port[c].semaphore_.expectedInboundCounter = devicePtr<uint64_t>(base, L.expected + k * sizeof(uint64_t));
  }
  SwitchChannelDeviceHandle* sw = at<SwitchChannelDeviceHandle>(img.bytes, L.switchChannels);
  for (uint32_t s = 0; s < d.nSwitchChannels; ++s) {
    sw[s] = d.switchChannels[s];
    const uint32_t n = d.switchChannels[s].nMembers;
    if (n > 0) {
      MSCCLPP_ENFORCE(d.switchChannels[s].memberPtrs != nullptr, ErrorCode::InternalError,
                      "device image: switch channel %u has %u members but no member table", s, n);
      std::memcpy(at<char>(img.bytes, L.members[s]), d.switchChannels[s].memberPtrs, uint64_t{n} * sizeof(void*));
      sw[s].memberPtrs = devicePtr<void* const>(base, L.members[s]);
    } else {
      sw[s].memberPtrs = nullptr;
    }
  }

  // Mutable state, with its current values.
  *at<ExecState>(img.bytes, L.state) = *d.state;
  if (d.nBlocks) std::memcpy(at<char>(img.bytes, L.records), d.blockRecords, uint64_t{d.nBlocks} * sizeof(BlockRecord));
  if (d.nSemaphores)
    std::memcpy(at<char>(img.bytes, L.semaphores), d.semaphores, uint64_t{d.nSemaphores} * sizeof(uint32_t));
  if (d.nBarriers)
    std::memcpy(at<char>(img.bytes, L.barriers), d.barriers, uint64_t{d.nBarriers} * sizeof(DeviceSyncer));

  // The root: every pointer into the image relocated, the rest kept.
  ExecContextDevice& ctx = *at<ExecContextDevice>(img.bytes, L.context);
  ctx = d;
  ctx.blocks = devicePtr<const ThreadblockDevice>(base, L.blocks);
  ctx.memoryChannels = devicePtr<MemoryChannelDeviceHandle>(base, L.memoryChannels);
  ctx.portChannels = devicePtr<PortChannelDeviceHandle>(base, L.portChannels);
  ctx.switchChannels = devicePtr<SwitchChannelDeviceHandle>(base, L.switchChannels);
  ctx.semaphores = devicePtr<uint32_t>(base, L.semaphores);
  ctx.barriers = devicePtr<DeviceSyncer>(base, L.barriers);
  ctx.state = devicePtr<ExecState>(base, L.state);
  ctx.blockRecords = devicePtr<BlockRecord>(base, L.records);
  return img;
}

}  // namespace mscclpp::exec
