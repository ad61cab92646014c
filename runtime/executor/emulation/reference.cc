#include "executor/emulation/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "executor/reduce_ops.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::exec {
namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <class T>
double toDouble(T v) {
  return static_cast<double>(Arith<T>::toCompute(v));
}

template <class T>
T fromDouble(double v) {
  using C = typename Arith<T>::Compute;
  return Arith<T>::fromCompute(static_cast<C>(v));
}

template <class T>
T valueFor(ReduceOp op, uint64_t h) {
  const bool negative = (h >> 8) & 1;
  if constexpr (std::is_integral<T>::value) {
    T v = static_cast<T>(1 + h % 9);
    if constexpr (std::is_signed<T>::value) return negative ? static_cast<T>(-v) : v;
    return v;
  } else {
    double mag;
    if (std::is_same<T, __nv_fp8_e4m3>::value || std::is_same<T, __nv_fp8_e5m2>::value) {
      mag = 1.0;
    } else if (op == ReduceOp::Prod) {
      mag = (h % 4 == 0) ? 2.0 : 1.0;
    } else {
      mag = 0.5 * static_cast<double>(1 + h % 4);  // 0.5, 1, 1.5, 2
    }
    return fromDouble<T>(negative ? -mag : mag);
  }
}

template <class T>
std::string show(T v) {
  if constexpr (std::is_integral<T>::value) {
    return std::to_string(static_cast<long long>(v));
  } else {
    return strFormat("%.9g", toDouble(v));
  }
}

template <class T>
bool same(T expected, T actual) {
  if constexpr (std::is_integral<T>::value) {
    return expected == actual;
  } else {
    double e = toDouble(expected), a = toDouble(actual);
    if (std::isnan(a)) return false;
    // Inputs make reductions exact; the slack covers fp8 sums that leave the exact range.
    double tol = 0;
    if (std::is_same<T, __nv_fp8_e4m3>::value) tol = 0.125;
    if (std::is_same<T, __nv_fp8_e5m2>::value) tol = 0.25;
    return std::fabs(e - a) <= tol * std::fmax(1.0, std::fabs(e));
  }
}

template <class T, class Op>
void reduceAll(const CheckRequest& req, T* acc) {
  const uint64_t count = req.inputBytes / sizeof(T);
  const bool pre = req.op == ReduceOp::PreMulSum;
  const T scalar = pre ? *static_cast<const T*>(req.scalar) : T();
  for (int r = 0; r < req.nRanks; ++r) {
    const T* in = reinterpret_cast<const T*>(req.inputs[r]);
    for (uint64_t i = 0; i < count; ++i) {
      T v = pre ? preMultiply(in[i], scalar) : in[i];
      acc[i] = r == 0 ? v : Reducer<T, Op>::apply(acc[i], v);
    }
  }
  if (req.op == ReduceOp::Avg)
    for (uint64_t i = 0; i < count; ++i) acc[i] = divideBy(acc[i], static_cast<uint32_t>(req.nRanks));
}

template <class T, class Op>
T reduceAt(const CheckRequest& req, uint64_t elem) {
  return reinterpret_cast<const T*>(req.reduced)[elem];
}

// Variable-size collectives: each receive segment of the rank holds its
// sender's send segment (reducescatterv: the reduction of every rank's
// segment), and nothing past the last segment was written.
template <class T, class Compare>
void checkVariable(const CheckRequest& req, int rank, const char* output, Compare&& compare, CheckResult* res) {
  const plan::Collective c = req.collective;
  const int n = req.nRanks;
  const uint64_t* S = req.counts;
  auto at = [&](int s, int d) { return S[static_cast<size_t>(s) * n + d]; };
  // Element offset of the segment `owner` keeps for `peer` in its send or recv table.
  auto place = [&](int owner, bool send, int peer) -> uint64_t {
    if (!plan::tablePartitions(c, send ? plan::SegmentTable::Send : plan::SegmentTable::Recv)) return 0;
    uint64_t off = 0;
    for (int k = 0; k < peer; ++k) off += send ? at(owner, k) : at(k, owner);
    return off;
  };
  uint64_t end = 0;
  for (int s = 0; s < n; ++s) {
    const uint64_t len = at(s, rank);
    const uint64_t dst = place(rank, false, s);
    if (c == plan::Collective::ReduceScatterV) {
      // One segment, the reduction over every rank of the rank's part.
      if (s == 0)
        for (uint64_t i = 0; i < len; ++i)
          compare(i, reinterpret_cast<const T*>(req.reduced)[place(0, true, rank) + i]);
    } else {
      const uint64_t src = place(s, true, rank);
      for (uint64_t i = 0; i < len; ++i) compare(dst + i, reinterpret_cast<const T*>(req.inputs[s])[src + i]);
    }
    end = std::max(end, dst + len);
  }
  const uint64_t from = end * sizeof(T);
  for (uint64_t b = from; b < req.outputBytes; ++b) {
    if (static_cast<unsigned char>(output[b]) == kPoisonByte) continue;
    if (static_cast<int>(++res->mismatches) <= req.maxLines)
      res->text += strFormat("rank %d offset %llu: written past the rank's last segment (which ends at byte %llu)\n",
                             rank, static_cast<unsigned long long>(b), static_cast<unsigned long long>(from));
  }
}

template <class T, class Op>
CheckResult check(const CheckRequest& req, int rank, const char* output) {
  CheckResult res;
  res.checked = true;
  const uint64_t inCount = req.inputBytes / sizeof(T);
  const uint64_t outCount = req.outputBytes / sizeof(T);
  const T* out = reinterpret_cast<const T*>(output);
  const int n = req.nRanks;
  auto inputAt = [&](int r, uint64_t i) { return reinterpret_cast<const T*>(req.inputs[r])[i]; };
  auto compare = [&](uint64_t i, T expected) {
    if (same(expected, out[i])) return;
    if (static_cast<int>(++res.mismatches) <= req.maxLines) {
      res.text += strFormat("rank %d offset %llu (element %llu): expected %s, actual %s\n", rank,
                            static_cast<unsigned long long>(i * sizeof(T)), static_cast<unsigned long long>(i),
                            show(expected).c_str(), show(out[i]).c_str());
    }
  };
  switch (req.collective) {
    case plan::Collective::AllReduce:
      for (uint64_t i = 0; i < outCount && i < inCount; ++i) compare(i, reduceAt<T, Op>(req, i));
      break;
    case plan::Collective::Reduce:
      if (rank == req.root)
        for (uint64_t i = 0; i < outCount && i < inCount; ++i) compare(i, reduceAt<T, Op>(req, i));
      break;
    case plan::Collective::ReduceScatter:
      for (uint64_t i = 0; i < outCount; ++i)
        compare(i, reduceAt<T, Op>(req, static_cast<uint64_t>(rank) * outCount + i));
      break;
    case plan::Collective::AllGather:
      for (uint64_t i = 0; i < outCount; ++i) compare(i, inputAt(static_cast<int>(i / inCount), i % inCount));
      break;
    case plan::Collective::AllToAll: {
      const uint64_t block = outCount / n;
      for (uint64_t i = 0; i < outCount; ++i)
        compare(i, inputAt(static_cast<int>(i / block), static_cast<uint64_t>(rank) * block + i % block));
      break;
    }
    case plan::Collective::Broadcast:
      for (uint64_t i = 0; i < outCount; ++i) compare(i, inputAt(req.root, i));
      break;
    case plan::Collective::Gather:  // only the root's output is defined
      if (rank == req.root && inCount > 0)
        for (uint64_t i = 0; i < outCount; ++i) compare(i, inputAt(static_cast<int>(i / inCount), i % inCount));
      break;
    case plan::Collective::Scatter:
      for (uint64_t i = 0; i < outCount; ++i) compare(i, inputAt(req.root, static_cast<uint64_t>(rank) * outCount + i));
      break;
    case plan::Collective::SendRecv: {
      // The peer is the plan's choice: the output must be some other rank's input (the previous
      // rank in a ring is tried first).
      int found = -1;
      for (int d = 1; d <= n && found < 0; ++d) {
        int src = ((rank - d) % n + n) % n;
        if (src == rank && n > 1) continue;
        bool all = true;
        for (uint64_t i = 0; i < outCount && all; ++i) all = same(inputAt(src, i), out[i]);
        if (all) found = src;
      }
      if (found < 0) {
        for (uint64_t i = 0; i < outCount; ++i) compare(i, inputAt(((rank - 1) % n + n) % n, i));
      }
      break;
    }
    case plan::Collective::AllToAllV:
    case plan::Collective::AllGatherV:
    case plan::Collective::ReduceScatterV:
      checkVariable<T>(req, rank, output, compare, &res);
      break;
    default:
      res.checked = false;
      break;
  }
  return res;
}

}  // namespace

void fillInput(DataType dtype, ReduceOp op, uint64_t seed, int rank, void* dst, uint64_t bytes) {
  bool ok = dispatchDtypeOp(dtype, ReduceOp::Sum, [&](auto typeTag, auto) {
    using T = typename decltype(typeTag)::type;
    T* p = static_cast<T*>(dst);
    const uint64_t base = mix(seed * 1315423911ull + static_cast<uint64_t>(rank));
    for (uint64_t i = 0; i < bytes / sizeof(T); ++i) p[i] = valueFor<T>(op, mix(base + i));
  });
  MSCCLPP_ENFORCE(ok, ErrorCode::InvalidArgument, "unknown datatype %d", static_cast<int>(dtype));
}

void randomCounts(plan::Collective collective, int n, uint64_t maxCount, uint64_t seed, uint64_t call,
                  uint64_t* counts) {
  const uint64_t base = mix(seed * 0x2545f4914f6cdd1dull + call);
  auto pick = [&](uint64_t i) -> uint64_t {
    const uint64_t h = mix(base + i);
    switch (h % 8) {
      case 0:
      case 1:
        return 0;  // an empty pair
      case 2:
        return maxCount;  // the largest segment
      case 3:
        return maxCount == 0 ? 0 : 1 + (h >> 8) % (maxCount < 3 ? maxCount : 3);  // a few elements
      default:
        return maxCount == 0 ? 0 : (h >> 8) % (maxCount + 1);
    }
  };
  const bool emptyRow = n > 2 && mix(base ^ 0x5bd1e995ull) % 4 == 0;
  const int quiet = static_cast<int>(mix(base ^ 0x1b873593ull) % static_cast<uint64_t>(n));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const int key = collective == plan::Collective::AllGatherV       ? s
                      : collective == plan::Collective::ReduceScatterV ? d
                                                                       : s * n + d;
      const bool silent = emptyRow && (collective == plan::Collective::ReduceScatterV ? d : s) == quiet;
      counts[static_cast<size_t>(s) * n + d] = silent ? 0 : pick(static_cast<uint64_t>(key));
    }
}

void encodeScalar(DataType dtype, double value, void* out) {
  bool ok = dispatchDtypeOp(dtype, ReduceOp::Sum, [&](auto typeTag, auto) {
    using T = typename decltype(typeTag)::type;
    T v;
    if constexpr (std::is_integral<T>::value)
      v = static_cast<T>(value);
    else
      v = fromDouble<T>(value);
    std::memcpy(out, &v, sizeof(T));
  });
  MSCCLPP_ENFORCE(ok, ErrorCode::InvalidArgument, "unknown datatype %d", static_cast<int>(dtype));
}

void computeReduction(const CheckRequest& req, char* out) {
  ReduceOp native = (req.op == ReduceOp::Avg || req.op == ReduceOp::PreMulSum) ? ReduceOp::Sum : req.op;
  bool ok = dispatchDtypeOp(req.dtype, native, [&](auto typeTag, auto opTag) {
    using T = typename decltype(typeTag)::type;
    reduceAll<T, decltype(opTag)>(req, reinterpret_cast<T*>(out));
  });
  MSCCLPP_ENFORCE(ok, ErrorCode::InvalidArgument, "unknown datatype %d or op %d", static_cast<int>(req.dtype),
                  static_cast<int>(req.op));
}

CheckResult checkOutput(const CheckRequest& req, int rank, const char* output) {
  const bool reduces = req.collective == plan::Collective::AllReduce || req.collective == plan::Collective::Reduce ||
                       req.collective == plan::Collective::ReduceScatter;
  MSCCLPP_ENFORCE(!reduces || req.reduced != nullptr, ErrorCode::InternalError,
                  "checkOutput: a %s check needs the precomputed reduction", plan::collectiveName(req.collective));
  CheckResult res;
  ReduceOp native = (req.op == ReduceOp::Avg || req.op == ReduceOp::PreMulSum) ? ReduceOp::Sum : req.op;
  bool ok = dispatchDtypeOp(req.dtype, native, [&](auto typeTag, auto opTag) {
    res = check<typename decltype(typeTag)::type, decltype(opTag)>(req, rank, output);
  });
  MSCCLPP_ENFORCE(ok, ErrorCode::InvalidArgument, "unknown datatype %d or op %d", static_cast<int>(req.dtype),
                  static_cast<int>(req.op));
  return res;
}

}  // namespace mscclpp::exec
