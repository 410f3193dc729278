// Triton's dtype names, sizes and taot's DType values, made from the list in taot/dtype_list.h.
#include <string_view>

#include "taot/runtime.h"

namespace taot {
namespace {

struct DTypeFacts {
  DType dtype;
  const char* name;
  std::size_t bytes;
};

constexpr DTypeFacts kDTypes[] = {
#define TAOT_DTYPE_FACTS(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name) \
  {DType::name, #name, bytes},
    TAOT_DTYPES(TAOT_DTYPE_FACTS)
#undef TAOT_DTYPE_FACTS
};

}  // namespace

const char* dtype_name(DType dtype) noexcept {
  for (const DTypeFacts& facts : kDTypes)
    if (facts.dtype == dtype) return facts.name;
  return "unknown";
}

DType dtype_from_name(std::string_view name) noexcept {
  for (const DTypeFacts& facts : kDTypes)
    if (name == facts.name) return facts.dtype;
  return DType::unknown;
}

std::size_t dtype_size(DType dtype) noexcept {
  for (const DTypeFacts& facts : kDTypes)
    if (facts.dtype == dtype) return facts.bytes;
  return 0;
}

}  // namespace taot
