// Triton's dtype names and taot's DType values, both ways.
#include <string_view>

#include "taot/runtime.h"

namespace taot {
namespace {

struct NamedDType {
  DType dtype;
  const char* name;
};

constexpr NamedDType kNames[] = {
    {DType::i1, "i1"},           {DType::i8, "i8"},       {DType::i16, "i16"},   {DType::i32, "i32"},
    {DType::i64, "i64"},         {DType::u8, "u8"},       {DType::u16, "u16"},   {DType::u32, "u32"},
    {DType::u64, "u64"},         {DType::fp8e4nv, "fp8e4nv"}, {DType::fp8e5, "fp8e5"}, {DType::fp16, "fp16"},
    {DType::bf16, "bf16"},       {DType::fp32, "fp32"},   {DType::fp64, "fp64"},
};

}  // namespace

const char* dtype_name(DType dtype) noexcept {
  for (const NamedDType& named : kNames)
    if (named.dtype == dtype) return named.name;
  return "unknown";
}

DType dtype_from_name(std::string_view name) noexcept {
  for (const NamedDType& named : kNames)
    if (name == named.name) return named.dtype;
  return DType::unknown;
}

std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::i1: case DType::i8: case DType::u8: case DType::fp8e4nv: case DType::fp8e5: return 1;
    case DType::i16: case DType::u16: case DType::fp16: case DType::bf16: return 2;
    case DType::i32: case DType::u32: case DType::fp32: return 4;
    case DType::i64: case DType::u64: case DType::fp64: return 8;
    case DType::unknown: break;
  }
  return 0;
}

}  // namespace taot
