#include "plan/plan_sizing.hpp"

#include <numeric>

#include "core/format.hpp"

namespace mscclpp::plan {
namespace {

bool mulOverflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

std::string bytesText(uint64_t bytes) {
  const std::string f = formatBytes(bytes);
  // "3 MiB" is exact enough;
  // a rounded "1.5 MiB" or a plain count gets the exact value too.
  if (bytes < 1024 || f.find('.') != std::string::npos) {
    return bytes < 1024 ? f : strFormat("%s (%llu bytes)", f.c_str(), static_cast<unsigned long long>(bytes));
  }
  return f;
}

}  // namespace

SizingResult sizePlan(const PlanHeader& header, const RankPlan& rank, uint64_t inputBytes, uint64_t outputBytes,
                      size_t elementBytes) {
  return sizePlan(header, rank.inputChunks, rank.outputChunks, rank.scratchChunks, inputBytes, outputBytes,
                  elementBytes);
}

SizingResult sizePlan(const PlanHeader& header, uint32_t inputChunks, uint32_t outputChunks, uint32_t scratchChunks,
                      uint64_t inputBytes, uint64_t outputBytes, size_t elementBytes) {
  SizingResult r;
  if (inputChunks == 0 && outputChunks == 0) {
    r.reason = "the plan has no input or output chunks, so no chunk size follows from the call";
    return r;
  }
  const bool byInput = inputChunks != 0;
  const uint64_t base = byInput ? inputBytes : outputBytes;
  const uint64_t chunks = byInput ? inputChunks : outputChunks;
  const char* baseName = byInput ? "input" : "output";
  const uint64_t align = header.bufferAlignment == 0 ? 1 : header.bufferAlignment;
  if (base == 0) {
    r.reason =
        strFormat("an empty %s cannot be divided into %llu chunks", baseName, static_cast<unsigned long long>(chunks));
    return r;
  }
  // chunks <= 2^32 and align <= 2^32, so the product fits in 64 bits.
  if (base % (chunks * align) != 0) {
    r.reason = strFormat("%s %s is not divisible into %llu chunks of a multiple of %llu bytes", bytesText(base).c_str(),
                         baseName, static_cast<unsigned long long>(chunks), static_cast<unsigned long long>(align));
    return r;
  }
  const uint64_t chunk = base / chunks;
  if (header.reduceOps != 0 && elementBytes > 1 && chunk % elementBytes != 0) {
    r.reason = strFormat("a chunk of %s is not a multiple of the %zu-byte element the plan reduces",
                         bytesText(chunk).c_str(), elementBytes);
    return r;
  }
  const uint64_t otherChunks = byInput ? outputChunks : inputChunks;
  const uint64_t otherBytes = byInput ? outputBytes : inputBytes;
  if (otherChunks != 0) {
    uint64_t need = 0;
    const bool overflow = mulOverflows(otherChunks, chunk, &need);
    if (overflow || need != otherBytes) {
      r.reason = strFormat("%s is %s but the plan's %llu %s chunks of %s need %s", byInput ? "output" : "input",
                           bytesText(otherBytes).c_str(), static_cast<unsigned long long>(otherChunks),
                           byInput ? "output" : "input", bytesText(chunk).c_str(),
                           overflow ? "more than 2^64 bytes" : bytesText(need).c_str());
      return r;
    }
  }
  uint64_t scratch = 0;
  const uint64_t factor = (header.protocol == Protocol::LL ? 2 : 1) * (header.useDoubleScratchBuffer ? 2 : 1);
  if (mulOverflows(chunk, scratchChunks, &scratch) || mulOverflows(scratch, factor, &scratch)) {
    r.reason = strFormat("the scratch buffer (%u chunks of %s) would exceed 2^64 bytes", scratchChunks,
                         bytesText(chunk).c_str());
    return r;
  }
  r.ok = true;
  r.chunkBytes = chunk;
  r.scratchBytes = scratch;
  return r;
}

void bufferParts(Collective collective, int nRanks, uint32_t* inputParts, uint32_t* outputParts) {
  const uint32_t n = nRanks < 1 ? 1 : static_cast<uint32_t>(nRanks);
  *inputParts = *outputParts = 1;
  switch (collective) {
    case Collective::AllGather:
    case Collective::Gather:
      *outputParts = n;
      break;
    case Collective::ReduceScatter:
    case Collective::Scatter:
      *inputParts = n;
      break;
    case Collective::AllToAll:
      *inputParts = *outputParts = n;
      break;
    default:
      break;
  }
}

namespace {

// The smallest m such that parts times any
// multiple of m is a multiple of multiple.
uint64_t partStep(uint64_t parts, uint64_t multiple) { return multiple / std::gcd(multiple, parts); }

bool lcmInto(uint64_t* acc, uint64_t v) {
  const uint64_t g = std::gcd(*acc, v);
  return !mulOverflows(*acc / g, v, acc);
}

}  // namespace

SizingResult sizeCall(const PlanHeader& header, uint32_t inputChunks, uint32_t outputChunks, uint32_t scratchChunks,
                      int nRanks, uint64_t inputBytes, uint64_t outputBytes, size_t elementBytes, CallGeometry* g) {
  *g = CallGeometry{};
  g->inputBytes = inputBytes;
  g->outputBytes = outputBytes;
  SizingResult exact =
      sizePlan(header, inputChunks, outputChunks, scratchChunks, inputBytes, outputBytes, elementBytes);
  if (exact.ok || header.collective == Collective::Test || header.collective == Collective::Custom) return exact;
  uint32_t inParts = 1, outParts = 1;
  bufferParts(header.collective, nRanks, &inParts, &outParts);
  const uint64_t part = inputBytes / inParts;
  // Only a call of NCCL's shape, equal parts on both sides,
  // has a padded geometry.
  if (part == 0 || part * inParts != inputBytes || part * outParts != outputBytes || inputChunks + outputChunks == 0 ||
      (elementBytes > 1 && part % elementBytes != 0))
    return exact;
  const bool byInput = inputChunks != 0;
  const uint64_t chunks = byInput ? inputChunks : outputChunks;
  const uint64_t parts = byInput ? inParts : outParts;
  const uint64_t align = header.bufferAlignment == 0 ? 1 : header.bufferAlignment;
  // parts x padded part splits into chunks of a multiple of the alignment,
  // and of the element when the plan reduces; the part stays whole elements.
  uint64_t unit = partStep(parts, chunks * align);
  bool overflow = false;
  if (elementBytes > 1) {
    overflow = !lcmInto(&unit, elementBytes);
    if (header.reduceOps != 0 && !overflow) overflow = !lcmInto(&unit, partStep(parts, chunks * elementBytes));
  }
  uint64_t padded = 0;
  if (overflow || mulOverflows((part + unit - 1) / unit, unit, &padded) || padded < part) {
    exact.reason += " (and padding each part to a multiple of the plan's granularity overflows 64 bits)";
    return exact;
  }
  uint64_t in = 0, out = 0;
  if (mulOverflows(padded, inParts, &in) || mulOverflows(padded, outParts, &out)) {
    exact.reason += " (and the padded buffers would exceed 2^64 bytes)";
    return exact;
  }
  SizingResult r = sizePlan(header, inputChunks, outputChunks, scratchChunks, in, out, elementBytes);
  if (!r.ok) {
    r.reason =
        strFormat("%s; padded to %s per part: %s", exact.reason.c_str(), bytesText(padded).c_str(), r.reason.c_str());
    return r;
  }
  g->padded = true;
  g->inputParts = inParts;
  g->outputParts = outParts;
  g->partBytes = part;
  g->paddedPartBytes = padded;
  g->inputBytes = in;
  g->outputBytes = out;
  return r;
}

bool callBytes(Collective collective, uint64_t count, size_t elementBytes, int nRanks, uint64_t* inputBytes,
               uint64_t* outputBytes) {
  uint64_t bytes = 0;
  if (mulOverflows(count, elementBytes, &bytes) || nRanks < 1) return false;
  uint64_t all = 0;
  const bool allOverflows = mulOverflows(bytes, static_cast<uint64_t>(nRanks), &all);
  switch (collective) {
    case Collective::AllGather:
    case Collective::Gather:
      if (allOverflows) return false;
      *inputBytes = bytes;
      *outputBytes = all;
      return true;
    case Collective::ReduceScatter:
    case Collective::Scatter:
      if (allOverflows) return false;
      *inputBytes = all;
      *outputBytes = bytes;
      return true;
    case Collective::AllToAll:
      if (allOverflows) return false;
      *inputBytes = *outputBytes = all;
      return true;
    default:
      *inputBytes = *outputBytes = bytes;
      return true;
  }
}

bool callBytesFromMessage(Collective collective, uint64_t messageBytes, int nRanks, uint64_t* inputBytes,
                          uint64_t* outputBytes, std::string* reason) {
  const uint64_t n = nRanks < 1 ? 1 : static_cast<uint64_t>(nRanks);
  switch (collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
      if (messageBytes % n != 0) {
        *reason = strFormat("%s message of %s does not split into %llu equal parts", collectiveName(collective),
                            bytesText(messageBytes).c_str(), static_cast<unsigned long long>(n));
        return false;
      }
      *inputBytes = collective == Collective::AllGather ? messageBytes / n : messageBytes;
      *outputBytes = collective == Collective::AllGather ? messageBytes : messageBytes / n;
      return true;
    case Collective::Gather:
    case Collective::Scatter: {
      // The message is the per-rank part; the root's buffer holds n of them.
      uint64_t all = 0;
      if (mulOverflows(messageBytes, n, &all)) {
        *reason = strFormat("%s message of %s times %llu ranks exceeds 2^64 bytes", collectiveName(collective),
                            bytesText(messageBytes).c_str(), static_cast<unsigned long long>(n));
        return false;
      }
      *inputBytes = collective == Collective::Gather ? messageBytes : all;
      *outputBytes = collective == Collective::Gather ? all : messageBytes;
      return true;
    }
    default:
      *inputBytes = *outputBytes = messageBytes;
      return true;
  }
}

size_t ncclDataTypeBytes(int dtype) {
  // ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
  // ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3,
  // ncclFloat8e5m2
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dtype >= 0 && dtype < static_cast<int>(sizeof(sizes) / sizeof(sizes[0])) ? sizes[dtype] : 0;
}

}  // namespace mscclpp::plan
