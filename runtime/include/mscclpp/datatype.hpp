// Datatypes, reduce operations and packet types of collective calls. They are numbered as NCCL's
// ncclDataType_t and ncclRedOp_t, so the shim converts with a cast.
#ifndef MSCCLPP_DATATYPE_HPP_
#define MSCCLPP_DATATYPE_HPP_

#include <cstddef>
#include <cstdint>

#include "mscclpp/export.h"

namespace mscclpp {

enum class DataType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  BFloat16 = 9,
  Float8E4M3 = 10,
  Float8E5M2 = 11,
};
constexpr int kNumDataTypes = 12;

enum class ReduceOp : int {
  Sum = 0,
  Prod = 1,
  Max = 2,
  Min = 3,
  Avg = 4,        // sum, then divided by the number of ranks; integers truncate
  PreMulSum = 5,  // each input multiplied by the call's scalar, then summed
};
constexpr int kNumReduceOps = 6;

// The LL packet format of a launch (packet_device.hpp).
enum class PacketType : int { LL16 = 0, LL8 = 1 };

MSCCLPP_API size_t dataTypeSize(DataType type);
// "float32", "bfloat16", ...; nullptr outside the enum.
MSCCLPP_API const char* dataTypeName(DataType type);
// Accepts the names above, the short forms f32, f16, bf16, f64, i8, u8, i32, u32, i64, u64,
// f8e4m3 and f8e5m2, and NCCL's spellings such as ncclFloat32 or ncclHalf, in any case.
// Returns false for anything else.
MSCCLPP_API bool dataTypeFromName(const char* name, DataType* type);
MSCCLPP_API const char* reduceOpName(ReduceOp op);  // "sum", "prod", "max", "min", "avg", "premulsum"
MSCCLPP_API bool reduceOpFromName(const char* name, ReduceOp* op);

}  // namespace mscclpp

#endif  // MSCCLPP_DATATYPE_HPP_
