#include "plan/verify/call_layout.hpp"

#include <algorithm>
#include <numeric>

#include "core/format.hpp"
#include "plan/plan_sizing.hpp"

namespace mscclpp::plan::verify {
namespace {

// A reference's thread-block-group slice, cut as context_image.cc cuts it:
// in units of the buffer alignment,
// the first units mod g slices one unit longer.
void tbgSlice(uint64_t bytes, uint64_t align, uint32_t j, uint32_t g, uint64_t* off, uint64_t* len) {
  const uint64_t units = bytes / align, base = units / g, extra = units % g;
  auto start = [&](uint64_t i) { return i * base + std::min<uint64_t>(i, extra); };
  *off = start(j) * align;
  *len = (start(j + 1) - start(j)) * align;
}

}  // namespace

bool messageForChunk(const Plan& plan, uint64_t chunkBytes, uint64_t* messageBytes) {
  const PlanHeader& h = plan.header;
  const RankPlan& r0 = plan.ranks.at(0);
  const uint64_t n = static_cast<uint64_t>(h.worldSize);
  if (r0.inputChunks == 0 && r0.outputChunks == 0) {
    if (h.collective != Collective::Test && h.collective != Collective::Custom) return false;
    *messageBytes = chunkBytes;  // a unit plan on scratch only: the input is one chunk
    return chunkBytes >= h.minMessageSize && chunkBytes <= h.maxMessageSize;
  }
  uint64_t message = 0;
  if (r0.inputChunks != 0) {
    const uint64_t in = r0.inputChunks * chunkBytes;
    switch (h.collective) {
      case Collective::AllGather:
        message = n * in;
        break;
      case Collective::Scatter:
        if (in % n != 0) return false;
        message = in / n;
        break;
      default:
        message = in;
        break;
    }
  } else {
    const uint64_t out = r0.outputChunks * chunkBytes;
    switch (h.collective) {
      case Collective::ReduceScatter:
        message = n * out;
        break;
      case Collective::Gather:
        if (out % n != 0) return false;
        message = out / n;
        break;
      default:
        message = out;
        break;
    }
  }
  if (message < h.minMessageSize || message > h.maxMessageSize) return false;
  if (h.collective == Collective::Test || h.collective == Collective::Custom) {
    *messageBytes = message;
    return true;
  }
  uint64_t in = 0, out = 0;
  std::string why;
  if (!callBytesFromMessage(h.collective, message, h.worldSize, &in, &out, &why)) return false;
  SizingResult s = sizePlan(h, r0, in, out, 1);
  if (!s.ok || s.chunkBytes != chunkBytes) return false;
  *messageBytes = message;
  return true;
}

CallLayout makeLayout(const Plan& plan, uint64_t chunkBytes, uint64_t reuseScratchBytes) {
  const PlanHeader& h = plan.header;
  CallLayout L;
  L.chunk = chunkBytes;
  L.scratchChunk = chunkBytes;
  L.align = h.bufferAlignment == 0 ? 1 : h.bufferAlignment;
  messageForChunk(plan, chunkBytes, &L.messageBytes);
  const uint64_t factor = (h.protocol == Protocol::LL ? 2 : 1) * (h.useDoubleScratchBuffer ? 2 : 1);
  uint32_t maxScratchChunks = 0;
  for (const auto& r : plan.ranks) maxScratchChunks = std::max(maxScratchChunks, r.scratchChunks);
  // reuse_resources, as shapeCall does it:
  // when a call needs more scratch than the executor allocates,
  // the scratch chunk shrinks to whole pipeline units and offsets wrap.
  if (h.reuseResources && maxScratchChunks > 0 && chunkBytes * maxScratchChunks * factor > reuseScratchBytes) {
    uint64_t unit = L.align;
    for (const auto& r : plan.ranks)
      for (const auto& tb : r.threadblocks)
        for (const auto& op : tb.ops)
          if (op.type == OpType::Pipeline && op.unitSize > 0) unit = std::lcm(unit, op.unitSize);
    const uint64_t per = reuseScratchBytes / (static_cast<uint64_t>(maxScratchChunks) * factor) / unit * unit;
    if (per == 0) {
      L.served = false;
      L.refusal = strFormat(
          "MSCCLPP_REUSE_SCRATCH_BYTES=%llu is too small for %u scratch chunks of whole %llu-byte "
          "pipeline units",
          ull(reuseScratchBytes), maxScratchChunks, ull(unit));
    } else if (per < chunkBytes) {
      L.scratchChunk = per;
      L.wrapScratch = true;
    }
  }
  L.ranks.resize(plan.ranks.size());
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    const RankPlan& rp = plan.ranks[r];
    RankLayout& R = L.ranks[r];
    uint64_t in = rp.inputChunks * chunkBytes, out = rp.outputChunks * chunkBytes;
    if (rp.inputChunks == 0 && rp.outputChunks == 0) in = chunkBytes;  // unit plans: the call's input
    if (rp.outputChunks == 0 && h.inPlace) out = in;                   // in-place allreduce without output chunks
    R.inputBytes = in;
    R.outputBytes = out;
    if (h.inPlace) {
      // One region, as inPlaceLayout lays it out.
      // The allgather and gather input lies at rank x input bytes;
      // the reducescatter and scatter output at rank x output bytes.
      R.inputPhys = R.outputPhys = kDataBuffer;
      switch (h.collective) {
        case Collective::AllGather:
        case Collective::Gather:
          R.inputBase = r * in;
          break;
        case Collective::ReduceScatter:
        case Collective::Scatter:
          R.outputBase = r * out;
          break;
        default:
          break;
      }
    }
    R.scratchBytes = (L.wrapScratch ? L.scratchChunk : chunkBytes) * rp.scratchChunks * factor;
    R.halfBytes = h.useDoubleScratchBuffer ? R.scratchBytes / 2 : 0;
  }
  return L;
}

void resolveRef(const Plan& plan, const CallLayout& L, const RefContext& ctx, const BufferRef& ref, bool packet,
                std::vector<Loc>* out) {
  const RankPlan& rp = plan.ranks[ctx.rank];
  BufferType type = ref.type;
  std::vector<uint32_t> owners;
  switch (ref.kind) {
    case RefKind::Local:
      owners.push_back(static_cast<uint32_t>(ctx.rank));
      break;
    case RefKind::Remote: {
      const RemoteBufferDecl& d = rp.remoteBuffers[ref.id];
      type = d.type;
      owners.push_back(static_cast<uint32_t>(d.rank));
      break;
    }
    case RefKind::Multicast: {
      const SwitchChannelDecl& s = rp.switchChannels[ref.id];
      type = s.bufferType;
      for (int m : s.ranks) owners.push_back(static_cast<uint32_t>(m));
      break;
    }
  }
  const bool scratch = type == BufferType::Scratch;
  const bool wrap = scratch && L.wrapScratch;
  uint64_t off = static_cast<uint64_t>(ref.index) * (wrap ? L.scratchChunk : L.chunk);
  uint64_t bytes = static_cast<uint64_t>(ref.size) * L.chunk;
  if (ctx.op->tbgSize > 1) {
    uint64_t sliceOff = 0, sliceLen = 0;
    tbgSlice(bytes, L.align, ctx.op->tbgId, ctx.op->tbgSize, &sliceOff, &sliceLen);
    off += sliceOff;
    bytes = sliceLen;
  }
  if (ctx.inPipeline) {  // as span(): this iteration's unit, clipped; scratch wraps
    if (ctx.pipeOff >= bytes) {
      bytes = 0;
    } else {
      const uint64_t b = std::min(bytes - ctx.pipeOff, ctx.unit);
      off += wrap ? ctx.pipeOff % L.scratchChunk : ctx.pipeOff;
      bytes = b;
    }
  }
  for (uint32_t owner : owners) {
    const RankLayout& R = L.ranks[owner];
    Loc loc;
    loc.rank = owner;
    loc.packet = packet;
    loc.len = bytes;
    uint64_t base = 0;
    switch (type) {
      case BufferType::Input:
        loc.phys = R.inputPhys;
        base = R.inputBase;
        break;
      case BufferType::Output:
        loc.phys = R.outputPhys;
        base = R.outputBase;
        break;
      case BufferType::Scratch:
        loc.phys = kScratchBuffer;
        base = ctx.half;  // the executing rank's half, for remote and multicast scratch too
        break;
    }
    loc.off = base + (packet ? 2 * off : off);
    out->push_back(loc);
  }
}

Place describePlace(const Plan& plan, const CallLayout& L, uint32_t rank, uint8_t phys, bool packet, uint64_t begin,
                    uint64_t end) {
  const RankLayout& R = L.ranks[rank];
  Place p;
  uint64_t unit = L.chunk, rel = begin, relEnd = end;
  const char* name = "";
  const bool inPlace = plan.header.inPlace;
  if (phys == kScratchBuffer) {
    const bool second = R.halfBytes > 0 && begin >= R.halfBytes;
    rel -= second ? R.halfBytes : 0;
    relEnd -= second ? R.halfBytes : 0;
    if (packet) {
      rel /= 2;
      relEnd = (relEnd + 1) / 2;
    }
    unit = L.scratchChunk;
    name = packet ? (second        ? "scratch (LL packets, second half)"
                     : R.halfBytes ? "scratch (LL packets, first half)"
                                   : "scratch (LL packets)")
                  : (second        ? "scratch (second half)"
                     : R.halfBytes ? "scratch (first half)"
                                   : "scratch");
  } else if (phys == kOutputBuffer) {
    rel -= R.outputBase;
    relEnd -= R.outputBase;
    name = "output";
  } else if (!inPlace) {
    rel -= R.inputBase;
    relEnd -= R.inputBase;
    name = "input";
  } else {
    const Collective c = plan.header.collective;
    name = (c == Collective::AllGather || c == Collective::Gather)        ? "output (in place)"
           : (c == Collective::ReduceScatter || c == Collective::Scatter) ? "input (in place)"
                                                                          : "input = output (in place)";
  }
  p.buffer = strFormat("rank %u %s", rank, name);
  if (unit == 0) unit = 1;
  const uint64_t first = rel / unit, last = (relEnd - 1) / unit;
  const bool whole = rel % unit == 0 && relEnd % unit == 0;
  if (whole) {
    p.chunks =
        first == last ? strFormat("chunk %llu", ull(first)) : strFormat("chunks %llu-%llu", ull(first), ull(last));
  } else if (first == last) {
    p.chunks =
        strFormat("chunk %llu bytes [%llu, %llu)", ull(first), ull(rel - first * unit), ull(relEnd - first * unit));
  } else {
    p.chunks =
        strFormat("chunks %llu-%llu (bytes [%llu, %llu) of the buffer)", ull(first), ull(last), ull(rel), ull(relEnd));
  }
  return p;
}

}  // namespace mscclpp::plan::verify
