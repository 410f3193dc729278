// HIP's side of the launch path; see hip_launch.h.
#include "hip_launch.h"

#include <cstdint>
#include <limits>
#include <string>

#include "scratch.h"

namespace taot::detail {
namespace {

std::string variant_name(const FactIndex& index, const table::Variant& variant) {
  return index.qualified_name() + " variant " + variant.id;
}

// "sm_90, gfx942, gfx950": the targets of the kernel (from its images when the table lists none).
std::string targets_of(const table::KernelTable& table, const table::Variant& variant) {
  std::string targets;
  for (std::uint16_t t = 0; t < table.target_count; ++t) targets += (t ? ", " : "") + std::string(table.targets[t]);
  if (table.target_count == 0)
    for (std::uint16_t i = 0; i < variant.image_count; ++i) targets += (i ? ", " : "") + std::string(variant.images[i].target);
  return targets;
}

// What an image needs that hipModuleLaunchKernel does not pass, or null.
const char* unsupported_on_hip(const table::Image& image) {
  if (image.num_ctas > 1) return "clusters (num_ctas > 1)";
  if (image.cooperative) return "a cooperative grid";
  if (image.pdl) return "programmatic dependent launch";
  if (image.tensordescs != nullptr) return "host-encoded descriptor maps (tensordesc_meta)";
  return nullptr;
}

// The handles standing for HIP devices: addresses no user-space pointer has, so that no CUDA
// context (real or fake) is ever taken for one.
constexpr std::uintptr_t kHipPlaceHandles = 0xffff000000000000;

// HIP's allocations are aligned to at least this many bytes.
constexpr std::uint32_t kHipAllocationAlign = 256;

}  // namespace

Expected<HipPlace> current_hip_place(const hip::Api& api) {
  hip::hipDevice_t device = 0;
  const hip::hipError_t result = api.hipGetDevice(&device);
  if (result != hip::hipSuccess) return hip::call_error(api, "hipGetDevice", result);
  Expected<const DeviceFacts*> facts = hip_device_facts(api, device);
  if (!facts.ok()) return std::move(facts).take_status();
  const auto handle = reinterpret_cast<CUcontext>(kHipPlaceHandles | static_cast<std::uint32_t>(device));
  return HipPlace{ContextRef{handle, hip_place_id(device)}, *facts};
}

Expected<LoadedFunction*> load_hip_function(const hip::Api& api, const FactIndex& index,
                                            const table::Variant& variant, const HipPlace& place) {
  const DeviceFacts& device = *place.facts;
  const table::Image* image = pick_amd_image(variant, device.gfx);
  if (image == nullptr)
    return Status::error(TAOT_UNSUPPORTED_DEVICE, index.qualified_name() + ": no image for this GPU (" + device.name +
                                                      ", " + device.gfx + "); the library was compiled for " +
                                                      targets_of(index.table(), variant));
  if (const char* missing = unsupported_on_hip(*image))
    return Status::error(TAOT_NOT_SUPPORTED, variant_name(index, variant) + " (image " + image->target + ") needs " +
                                                 missing + ", which taot's HIP launch does not pass");
  int limit = 0;
  hip::hipError_t result = api.hipDeviceGetAttribute(&limit, hip::hipDeviceAttributeMaxSharedMemoryPerBlock, device.device);
  if (result != hip::hipSuccess)
    return hip::call_error(api, "hipDeviceGetAttribute", result).with_context(variant_name(index, variant));
  if (image->shared_bytes > static_cast<std::uint32_t>(limit))
    return Status::error(TAOT_OUT_OF_RESOURCES, variant_name(index, variant) + " needs " +
                                                    std::to_string(image->shared_bytes) +
                                                    " bytes of shared memory (LDS) per block; " + device.name +
                                                    " allows " + std::to_string(limit));
  Expected<hip::hipModule_t> module = ModuleCache::instance().acquire(api, place.ref.id, image->cubin);
  if (!module.ok()) return std::move(module).take_status().with_context(variant_name(index, variant));
  hip::hipFunction_t function = nullptr;
  result = api.hipModuleGetFunction(&function, *module, image->function_name);
  if (result != hip::hipSuccess) {
    (void)ModuleCache::instance().release(api, place.ref.id, image->cubin);
    return hip::call_error(api, "hipModuleGetFunction", result).with_context(variant_name(index, variant));
  }
  auto* loaded = new LoadedFunction{place.ref.handle, reinterpret_cast<CUfunction>(function)};
  loaded->block_threads = block_threads_of(*image);
  loaded->shared_bytes = image->shared_bytes;
  loaded->num_ctas = 1;
  loaded->scratch = image->global_scratch_size > 0 || image->profile_scratch_size > 0;
  loaded->context_id = place.ref.id;
  loaded->image = image;
  loaded->launch_name = interned_name(variant_name(index, variant));
  return loaded;
}

Status launch_hip_function(const hip::Api& api, const LoadedFunction& function, const std::string& variant,
                           const std::array<std::int64_t, 3>& grid, CUstream stream, void** params,
                           CUdeviceptr* global_scratch, CUdeviceptr* profile_scratch) {
  const auto hip_stream = reinterpret_cast<hip::hipStream_t>(stream);
  // The grid is within CUDA's limits (launch_grid); HIP also bounds the work-items along a dimension
  // (blocks x threads per block) by 2^32 - 1.
  if (static_cast<std::uint64_t>(grid[0]) * function.block_threads > std::numeric_limits<std::uint32_t>::max())
    return Status::error(TAOT_INVALID_ARGUMENT,
                         variant + ": a grid of " + std::to_string(grid[0]) + " programs of " +
                             std::to_string(function.block_threads) +
                             " threads along x is more than HIP launches (2^32 - 1 work-items per dimension)");
  void* buffer = nullptr;
  if (function.scratch) {
    const table::Image& image = *function.image;
    const auto programs = static_cast<std::uint64_t>(grid[0]) * grid[1] * grid[2];
    Expected<ScratchLayout> layout = scratch_layout(programs, image.global_scratch_size, image.global_scratch_align,
                                                    image.profile_scratch_size, image.profile_scratch_align);
    if (!layout.ok()) return std::move(layout).take_status().with_context(variant);
    if (api.hipMallocAsync == nullptr || api.hipFreeAsync == nullptr)
      return Status::error(TAOT_NOT_SUPPORTED, variant + " takes scratch memory, which needs hipMallocAsync "
                                                         "(HIP 5.2 or newer)");
    if (layout->align > kHipAllocationAlign)
      return Status::error(TAOT_NOT_SUPPORTED, variant + " needs scratch aligned to " + std::to_string(layout->align) +
                                                   " bytes; HIP allocations are aligned to 256");
    const hip::hipError_t result = api.hipMallocAsync(&buffer, layout->total, hip_stream);
    if (result != hip::hipSuccess) return hip::call_error(api, "hipMallocAsync", result).with_context(variant);
    const auto base = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(buffer));
    if (image.global_scratch_size > 0) *global_scratch = base + layout->global_offset;
    if (image.profile_scratch_size > 0) *profile_scratch = base + layout->profile_offset;
  }
  const hip::hipError_t result = api.hipModuleLaunchKernel(
      reinterpret_cast<hip::hipFunction_t>(function.function), static_cast<unsigned>(grid[0]),
      static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2]), function.block_threads, 1, 1,
      function.shared_bytes, hip_stream, params, nullptr);
  Status status;
  if (result != hip::hipSuccess) status = hip::call_error(api, "hipModuleLaunchKernel", result).with_context(variant);
  if (buffer != nullptr) {  // freed in stream order: after the kernel ran
    const hip::hipError_t freed = api.hipFreeAsync(buffer, hip_stream);
    if (freed != hip::hipSuccess && status.ok()) status = hip::call_error(api, "hipFreeAsync", freed).with_context(variant);
  }
  return status;
}

}  // namespace taot::detail
