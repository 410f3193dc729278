// HIP's side of the launch path: the device a launch goes to, its function loaded once per
// (device, code object), scratch and the launch call. kernel.cpp's launch steps call these where
// HIP is the driver in use (hip::in_use); selection, grids and parameters are shared with CUDA.
#pragma once

#include <array>
#include <cstdint>

#include "device.h"
#include "dispatch.h"
#include "kernel_state.h"
#include "module_cache.h"
#include "taot/hip_api.h"

namespace taot::detail {

// Where a HIP launch goes: the calling thread's current HIP device (hipGetDevice), as a ContextRef
// whose handle stands for the device (a kernel-space address, never dereferenced) and whose id,
// hip_place_id(), keys loaded functions and the module cache; and the device's facts.
struct HipPlace {
  ContextRef ref;
  const DeviceFacts* facts;
};

// The place id of HIP device `device` in the current HIP generation: its top bit set (no CUDA
// context id has it), then the generation, then the device.
inline std::uint64_t hip_place_id(hip::hipDevice_t device) noexcept {
  return std::uint64_t{1} << 63 | (hip::generation.load(std::memory_order_acquire) & 0x7fffffffULL) << 32 |
         static_cast<std::uint32_t>(device);
}

// The current HIP device and its facts; fails with HIP's error.
Expected<HipPlace> current_hip_place(const hip::Api& api);

// Loads `variant` on `place`, called with the module cache's lock held: the image built for the
// device's gfx name (an error naming it and the library's targets when none is), its module (once
// per device) and function, with block num_warps x its warp size. Images that need what HIP's launch
// does not pass (clusters, cooperative grids, PDL, host-encoded descriptor maps) are refused,
// naming why, as is one that needs more LDS than the device allows.
Expected<LoadedFunction*> load_hip_function(const hip::Api& api, const FactIndex& index,
                                            const table::Variant& variant, const HipPlace& place);

// Launches `function` (loaded by load_hip_function) on a grid of `grid` programs with `params`,
// through hipModuleLaunchKernel; `stream` is a hipStream_t passed where taot takes a CUstream.
// Scratch, when the image takes it, is allocated stream-ordered before (hipMallocAsync) and freed
// after (hipFreeAsync); its two pointers are `params`' last two, which this fills.
Status launch_hip_function(const hip::Api& api, const LoadedFunction& function, const std::string& variant,
                           const std::array<std::int64_t, 3>& grid, CUstream stream, void** params,
                           CUdeviceptr* global_scratch, CUdeviceptr* profile_scratch);

}  // namespace taot::detail
