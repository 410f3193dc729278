// The vector-add call the runtime's unit tests make on the fake driver: x, y and out at fixed fake
// addresses (so tests can find them in recorded params), then n; and the streams they launch on.
#pragma once

#include <cstdint>
#include <vector>

#include "taot/runtime.h"

namespace taot::testing {

inline constexpr std::uint64_t kX = 0x7f0000001000, kY = 0x7f0000002000, kOut = 0x7f0000003000;
inline const CUstream kStream = reinterpret_cast<CUstream>(0x55);
inline const CUstream kOtherStream = reinterpret_cast<CUstream>(0x66);

inline std::vector<taot_arg> add_args(std::int64_t n, DType dtype = DType::fp32) {
  return {arg(Ptr(CUdeviceptr{kX}, dtype)), arg(Ptr(CUdeviceptr{kY}, dtype)), arg(Ptr(CUdeviceptr{kOut}, dtype)),
          arg(n)};
}

}  // namespace taot::testing
