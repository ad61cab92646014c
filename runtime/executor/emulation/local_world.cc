#include "executor/emulation/local_world.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#include "core/enforce.hpp"

namespace mscclpp::exec {

uint64_t LocalWorld::reserve(uint64_t bytes, uint64_t align) {
  size_ = (size_ + align - 1) / align * align;
  uint64_t off = size_;
  size_ += std::max<uint64_t>(bytes, 1);
  return off;
}

LocalWorld::LocalWorld(plan::PlanPtr plan, uint64_t inputBytes, uint64_t outputBytes, DataType dtype)
    : plan_(std::move(plan)), inputBytes_(inputBytes), outputBytes_(outputBytes) {
  const plan::Plan& p = *plan_;
  const int n = static_cast<int>(p.ranks.size());
  ranks_.resize(n);
  constexpr uint64_t kPage = 4096, kLine = 64;
  for (int r = 0; r < n; ++r) {
    RankLayout& L = ranks_[r];
    L.shape = shapeCall(p, r, inputBytes, outputBytes, dtype);
    // The world's buffers are the call's, so a size that runs only padded
    // has no place here. The executor's wiring uses the padded sizes.
    MSCCLPP_ENFORCE(!L.shape.geometry.padded, ErrorCode::NotSupported,
                    "plan %s: %llu input and %llu output bytes do not split into the plan's chunks; the emulation runs "
                    "exact sizes only (the executor serves such a call on its padded geometry: %llu bytes per part)",
                    p.header.name.c_str(), static_cast<unsigned long long>(inputBytes),
                    static_cast<unsigned long long>(outputBytes),
                    static_cast<unsigned long long>(L.shape.geometry.paddedPartBytes));
    if (p.header.inPlace) {
      InPlaceLayout ip = inPlaceLayout(p.header.collective, r, inputBytes, outputBytes);
      L.dataBytes = ip.dataBytes;
      L.data = reserve(ip.dataBytes, kPage);
      L.input = L.data + ip.inputOffset;
      L.output = L.data + ip.outputOffset;
    } else {
      L.input = reserve(inputBytes, kPage);
      L.output = reserve(outputBytes, kPage);
    }
    L.scratch = reserve(L.shape.scratchBytes, kPage);
    L.pristine = reserve(inputBytes, kPage);
    L.state = reserve(sizeof(ExecState), kLine);
    L.records = reserve(sizeof(BlockRecord) * std::max<size_t>(1, p.ranks[r].threadblocks.size()), kLine);
    L.report = reserve(sizeof(RankReport), kLine);
  }
  // One counter per directed channel pair, in the receiver's view: rank
  // r's channel to p with pair index k waits on (p -> r, k), signals (r -> p, k).
  for (int r = 0; r < n; ++r) {
    for (int port = 0; port < 2; ++port) {
      const auto& chans = port ? p.ranks[r].portChannels : p.ranks[r].memoryChannels;
      for (const plan::ChannelDecl& c : chans) {
        for (CounterKey key :
             {CounterKey{c.peer, r, c.pairIndex, port != 0}, CounterKey{r, c.peer, c.pairIndex, port != 0}}) {
          if (counters_.count(key) == 0) counters_[key] = reserve(sizeof(uint64_t), kLine);
        }
      }
    }
  }
  abortOffset_ = reserve(sizeof(uint32_t), kLine);
  barrierOffset_ = reserve(sizeof(DeviceSyncer), kLine);
  size_ = (size_ + kPage - 1) / kPage * kPage;
  void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    throw SystemError(strFormat("mmap of %llu bytes of shared memory for the emulation of plan %s",
                                static_cast<unsigned long long>(size_), p.header.name.c_str()),
                      errno);
  }
  base_ = static_cast<char*>(m);  // zero-filled by the kernel: counters, flags, scratch start at 0
}

LocalWorld::~LocalWorld() {
  if (base_ != nullptr) munmap(base_, size_);
}

uint64_t LocalWorld::counter(const CounterKey& key) const {
  auto it = counters_.find(key);
  MSCCLPP_ENFORCE(it != counters_.end(), ErrorCode::InternalError, "no semaphore counter for %d -> %d pair %d",
                  std::get<0>(key), std::get<1>(key), std::get<2>(key));
  return it->second;
}

char* LocalWorld::bufferOf(int rank, plan::BufferType type) const {
  const RankLayout& L = ranks_[rank];
  switch (type) {
    case plan::BufferType::Input:
      return at(L.input);
    case plan::BufferType::Output:
      return at(L.output);
    case plan::BufferType::Scratch:
      return at(L.scratch);
  }
  return nullptr;
}

uint64_t LocalWorld::bufferBytes(int rank, plan::BufferType type) const {
  switch (type) {
    case plan::BufferType::Input:
      return inputBytes_;
    case plan::BufferType::Output:
      return outputBytes_;
    case plan::BufferType::Scratch:
      return ranks_[rank].shape.scratchBytes;
  }
  return 0;
}

RankResources LocalWorld::resources(int rank) const {
  const plan::RankPlan& rp = plan_->ranks[rank];
  RankResources res;
  res.input = bufferOf(rank, plan::BufferType::Input);
  res.output = bufferOf(rank, plan::BufferType::Output);
  res.scratch = bufferOf(rank, plan::BufferType::Scratch);
  res.inputBytes = inputBytes_;
  res.outputBytes = outputBytes_;
  res.scratchBytes = ranks_[rank].shape.scratchBytes;
  for (const plan::RemoteBufferDecl& d : rp.remoteBuffers)
    res.remoteBuffers.push_back({bufferOf(d.rank, d.type), bufferBytes(d.rank, d.type)});
  for (const plan::ChannelDecl& c : rp.memoryChannels) {
    res.memoryInbound.push_back(reinterpret_cast<uint64_t*>(at(counter({c.peer, rank, c.pairIndex, false}))));
    res.memoryOutbound.push_back(reinterpret_cast<uint64_t*>(at(counter({rank, c.peer, c.pairIndex, false}))));
  }
  for (const plan::ChannelDecl& c : rp.portChannels) {
    res.portInbound.push_back(reinterpret_cast<uint64_t*>(at(counter({c.peer, rank, c.pairIndex, true}))));
    res.portOutbound.push_back(reinterpret_cast<uint64_t*>(at(counter({rank, c.peer, c.pairIndex, true}))));
  }
  for (const plan::SwitchChannelDecl& s : rp.switchChannels) {
    SwitchGroupResource g;
    g.bytes = UINT64_MAX;
    for (size_t i = 0; i < s.ranks.size(); ++i) {
      g.members.push_back(bufferOf(s.ranks[i], s.bufferType));
      g.bytes = std::min(g.bytes, bufferBytes(s.ranks[i], s.bufferType));
      if (s.ranks[i] == rank) g.myIndex = static_cast<uint32_t>(i);
    }
    if (s.ranks.empty()) g.bytes = 0;
    res.switchGroups.push_back(std::move(g));
  }
  res.abortFlag = abortFlag();
  res.sharedState.state = state(rank);
  res.sharedState.blockRecords = blockRecords(rank);
  return res;
}

}  // namespace mscclpp::exec
