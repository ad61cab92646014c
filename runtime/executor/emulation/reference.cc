#include "executor/emulation/reference.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "executor/reduce_ops.hpp"

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
