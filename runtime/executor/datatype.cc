#include <strings.h>

#include "mscclpp/datatype.hpp"

namespace mscclpp {
namespace {

struct TypeRow {
  DataType type;
  size_t bytes;
  const char* name;
  const char* shortName;
};

constexpr TypeRow kTypes[] = {
    {DataType::Int8, 1, "int8", "i8"},
    {DataType::Uint8, 1, "uint8", "u8"},
    {DataType::Int32, 4, "int32", "i32"},
    {DataType::Uint32, 4, "uint32", "u32"},
    {DataType::Int64, 8, "int64", "i64"},
    {DataType::Uint64, 8, "uint64", "u64"},
    {DataType::Float16, 2, "float16", "f16"},
    {DataType::Float32, 4, "float32", "f32"},
    {DataType::Float64, 8, "float64", "f64"},
    {DataType::BFloat16, 2, "bfloat16", "bf16"},
    {DataType::Float8E4M3, 1, "float8e4m3", "f8e4m3"},
    {DataType::Float8E5M2, 1, "float8e5m2", "f8e5m2"},
};

constexpr const char* kOpNames[] = {"sum", "prod", "max", "min", "avg", "premulsum"};

const TypeRow* rowOf(DataType t) {
  int i = static_cast<int>(t);
  return (i >= 0 && i < kNumDataTypes) ? &kTypes[i] : nullptr;
}

}  // namespace

size_t dataTypeSize(DataType type) {
  const TypeRow* r = rowOf(type);
  return r ? r->bytes : 0;
}

const char* dataTypeName(DataType type) {
  const TypeRow* r = rowOf(type);
  return r ? r->name : nullptr;
}

bool dataTypeFromName(const char* name, DataType* type) {
  if (name == nullptr) return false;
  // NCCL's spellings (ncclFloat32, ncclBfloat16, ncclHalf, ncclChar, ...) are ours with a prefix.
  if (strncasecmp(name, "nccl", 4) == 0 && name[4] != '\0') name += 4;
  for (const TypeRow& r : kTypes) {
    if (strcasecmp(name, r.name) == 0 || strcasecmp(name, r.shortName) == 0) {
      *type = r.type;
      return true;
    }
  }
  // Common aliases.
  struct Alias {
    const char* name;
    DataType type;
  };
  static const Alias kAliases[] = {{"half", DataType::Float16},       {"float", DataType::Float32},
                                   {"char", DataType::Int8},          {"double", DataType::Float64},
                                   {"int", DataType::Int32},          {"fp16", DataType::Float16},
                                   {"fp32", DataType::Float32},       {"bfloat", DataType::BFloat16},
                                   {"fp8e4m3", DataType::Float8E4M3}, {"fp8e5m2", DataType::Float8E5M2}};
  for (const Alias& a : kAliases) {
    if (strcasecmp(name, a.name) == 0) {
      *type = a.type;
      return true;
    }
  }
  return false;
}

const char* reduceOpName(ReduceOp op) {
  int i = static_cast<int>(op);
  return (i >= 0 && i < kNumReduceOps) ? kOpNames[i] : nullptr;
}

bool reduceOpFromName(const char* name, ReduceOp* op) {
  if (name == nullptr) return false;
  for (int i = 0; i < kNumReduceOps; ++i) {
    if (strcasecmp(name, kOpNames[i]) == 0) {
      *op = static_cast<ReduceOp>(i);
      return true;
    }
  }
  return false;
}

}  // namespace mscclpp
