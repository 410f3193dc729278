// Kernel: select a variant, find (or load once) its function in the current context, evaluate
// the grid and launch with Triton 3.6's two trailing scratch pointers.
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dispatch.h"
#include "grid.h"
#include "module_cache.h"
#include "taot/driver_api.h"
#include "taot/runtime.h"

namespace taot {
namespace detail {

// A variant's function in one context. Nodes form a per-variant list that launches read without a
// lock, newest first; they are added under the module cache's lock and removed only by unload().
// Launches find a node by context handle; a context re-created at the same address gets a new node
// (found first) once a launch with the old one fails.
struct LoadedFunction {
  CUcontext context;
  std::uint64_t context_id;
  CUfunction function;
  const table::Image* image;
  LoadedFunction* next;
};

struct KernelState {
  explicit KernelState(DispatchIndex dispatch_index, std::size_t variant_count)
      : index(std::move(dispatch_index)), functions(new std::atomic<LoadedFunction*>[variant_count]) {
    for (std::size_t v = 0; v < variant_count; ++v) functions[v].store(nullptr, std::memory_order_relaxed);
  }
  DispatchIndex index;
  std::unique_ptr<std::atomic<LoadedFunction*>[]> functions;  // per variant
};

namespace {

constexpr std::uint32_t kDefaultSharedLimit = 48 * 1024;
constexpr std::int64_t kMaxGridX = 2147483647;
constexpr std::int64_t kMaxGridYZ = 65535;

// Launch results that can mean the function belongs to a context that no longer exists.
bool may_be_stale_context(CUresult result) {
  return result == CUDA_ERROR_CONTEXT_IS_DESTROYED || result == CUDA_ERROR_INVALID_HANDLE ||
         result == CUDA_ERROR_INVALID_CONTEXT;
}

LoadedFunction* find_function(const std::atomic<LoadedFunction*>& head, std::uint64_t context_id) {
  for (LoadedFunction* node = head.load(std::memory_order_acquire); node != nullptr; node = node->next)
    if (node->context_id == context_id) return node;
  return nullptr;
}

LoadedFunction* find_function_by_handle(const std::atomic<LoadedFunction*>& head, CUcontext context) {
  for (LoadedFunction* node = head.load(std::memory_order_acquire); node != nullptr; node = node->next)
    if (node->context == context) return node;
  return nullptr;
}

struct Device {
  CUdevice handle;
  int arch;
  std::string name;
};

Expected<Device> context_device(const driver::Api& api) {
  Device device{};
  CUresult result = api.cuCtxGetDevice(&device.handle);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuCtxGetDevice", result);
  int major = 0, minor = 0;
  result = api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device.handle);
  if (result == CUDA_SUCCESS)
    result = api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device.handle);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuDeviceGetAttribute", result);
  device.arch = major * 10 + minor;
  char name[256] = {};
  if (api.cuDeviceGetName(name, sizeof(name) - 1, device.handle) == CUDA_SUCCESS) device.name = name;
  return device;
}

// The image for a device of compute capability `arch`: an exact match first, else the newest
// portable cubin of the same major version that is not newer than the device.
const table::Image* pick_image(const table::Variant& variant, int arch) {
  const table::Image* best = nullptr;
  for (std::uint16_t i = 0; i < variant.image_count; ++i) {
    const table::Image& image = variant.images[i];
    if (image.arch == arch) return &image;
    const bool compatible = !image.arch_specific && image.arch / 10 == arch / 10 && image.arch < arch;
    if (compatible && (best == nullptr || image.arch > best->arch)) best = &image;
  }
  return best;
}

std::string variant_name(const DispatchIndex& index, const table::Variant& variant) {
  return index.qualified_name() + " variant " + variant.id;
}

Status check_launchable(const DispatchIndex& index, const table::Variant& variant, const table::Image& image) {
  std::string missing;
  if (image.global_scratch_size > 0)
    missing = "a global scratch buffer of " + std::to_string(image.global_scratch_size) + " bytes per program";
  else if (image.profile_scratch_size > 0)
    missing = "a profile scratch buffer of " + std::to_string(image.profile_scratch_size) + " bytes per program";
  else if (image.num_ctas > 1)
    missing = "a cluster launch (num_ctas=" + std::to_string(image.num_ctas) + ")";
  else if (image.cooperative)
    missing = "a cooperative launch";
  else if (image.pdl)
    missing = "programmatic dependent launch";
  if (missing.empty()) return Status();
  return Status::error(TAOT_NOT_SUPPORTED, variant_name(index, variant) + " (" + image.target + ") needs " +
                                               missing + ", which this runtime does not provide yet");
}

// Loads `variant` in `context`; called with the module cache's lock held.
Expected<LoadedFunction*> load_function(const driver::Api& api, const DispatchIndex& index,
                                        const table::Variant& variant, const ContextRef& context) {
  Expected<Device> device = context_device(api);
  if (!device.ok()) return std::move(device).take_status().with_context(variant_name(index, variant));
  const table::Image* image = pick_image(variant, device->arch);
  if (image == nullptr) {
    std::string targets;
    for (std::uint16_t i = 0; i < variant.image_count; ++i) targets += (i ? ", " : "") + std::string(variant.images[i].target);
    return Status::error(TAOT_UNSUPPORTED_DEVICE, index.qualified_name() + ": no cubin for this GPU (" +
                                                      device->name + ", sm_" + std::to_string(device->arch) +
                                                      "); the library was compiled for " + targets);
  }
  if (Status status = check_launchable(index, variant, *image); !status.ok()) return status;
  if (image->shared_bytes > kDefaultSharedLimit) {
    int limit = 0;
    const CUresult result = api.cuDeviceGetAttribute(&limit, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                                     device->handle);
    if (result != CUDA_SUCCESS) return driver::call_error(api, "cuDeviceGetAttribute", result);
    if (image->shared_bytes > static_cast<std::uint32_t>(limit))
      return Status::error(TAOT_OUT_OF_RESOURCES, variant_name(index, variant) + " needs " +
                                                      std::to_string(image->shared_bytes) +
                                                      " bytes of shared memory per block; " + device->name +
                                                      " allows " + std::to_string(limit));
  }
  Expected<CUmodule> module = ModuleCache::instance().acquire(api, context, image->cubin);
  if (!module.ok()) return std::move(module).take_status().with_context(variant_name(index, variant));
  CUfunction function = nullptr;
  CUresult result = api.cuModuleGetFunction(&function, *module, image->function_name);
  if (result == CUDA_SUCCESS && image->shared_bytes > kDefaultSharedLimit)
    result = api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(image->shared_bytes));
  if (result != CUDA_SUCCESS) {
    (void)ModuleCache::instance().release(api, context, image->cubin);
    return driver::call_error(api, "cuModuleGetFunction", result).with_context(variant_name(index, variant));
  }
  return new LoadedFunction{context.handle, context.id, function, image, nullptr};
}

// The function of `variant_index` in `context`: lock-free when loaded, else loaded exactly once.
Expected<LoadedFunction*> function_for(const driver::Api& api, KernelState& state, const table::KernelTable& table,
                                       std::size_t variant_index, const ContextRef& context) {
  std::atomic<LoadedFunction*>& head = state.functions[variant_index];
  if (LoadedFunction* loaded = find_function(head, context.id)) return loaded;
  std::lock_guard<std::mutex> lock(ModuleCache::instance().mutex());
  if (LoadedFunction* loaded = find_function(head, context.id)) return loaded;
  Expected<LoadedFunction*> loaded = load_function(api, state.index, table.variants[variant_index], context);
  if (!loaded.ok()) return loaded;
  (*loaded)->next = head.load(std::memory_order_relaxed);
  head.store(*loaded, std::memory_order_release);
  return loaded;
}

}  // namespace
}  // namespace detail

Kernel::~Kernel() {
  detail::KernelState* state = state_.load(std::memory_order_acquire);
  if (state == nullptr) return;
  for (std::size_t v = 0; v < table_->variant_count; ++v) {
    detail::LoadedFunction* node = state->functions[v].load(std::memory_order_relaxed);
    while (node != nullptr) delete std::exchange(node, node->next);
  }
  delete state;
}

Expected<detail::KernelState*> Kernel::state() {
  if (detail::KernelState* state = state_.load(std::memory_order_acquire)) return state;
  Expected<detail::DispatchIndex> index = detail::DispatchIndex::build(*table_);
  if (!index.ok()) return std::move(index).take_status();
  auto* built = new detail::KernelState(std::move(index).value(), table_->variant_count);
  detail::KernelState* expected = nullptr;
  if (!state_.compare_exchange_strong(expected, built, std::memory_order_acq_rel)) {
    delete built;
    return expected;
  }
  return built;
}

Expected<std::size_t> Kernel::select(const taot_arg* args, std::size_t arg_count, const Selection& selection) {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  return (*state)->index.select(args, arg_count, selection);
}

Status Kernel::launch(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection) {
  detail::KernelState* built = state_.load(std::memory_order_acquire);
  Expected<detail::KernelState*> state = built != nullptr ? Expected<detail::KernelState*>(built) : this->state();
  if (!state.ok()) return std::move(state).take_status();
  const detail::DispatchIndex& index = (*state)->index;
  const std::int64_t memoized = index.memoized(args, arg_count, selection);
  std::size_t selected = static_cast<std::size_t>(memoized);
  if (memoized < 0) {
    Expected<std::size_t> chosen = index.select(args, arg_count, selection);
    if (!chosen.ok()) return std::move(chosen).take_status();
    selected = *chosen;
  }
  const table::Variant& variant = table_->variants[selected];

  std::array<std::int64_t, 3> grid;
  if (Status status = detail::evaluate_grid(*table_, variant, args, grid); !status.ok()) return status;
  const auto [grid_x, grid_y, grid_z] = grid;
  if (grid_x == 0 || grid_y == 0 || grid_z == 0) return Status();
  if (grid_x > detail::kMaxGridX || grid_y > detail::kMaxGridYZ || grid_z > detail::kMaxGridYZ)
    return Status::error(TAOT_OUT_OF_RESOURCES, detail::variant_name(index, variant) + ": grid (" +
                                                    std::to_string(grid_x) + ", " + std::to_string(grid_y) + ", " +
                                                    std::to_string(grid_z) +
                                                    ") exceeds the CUDA limits (2147483647, 65535, 65535)");

  // Hot path: the driver table is loaded and the variant has a function in the current context.
  const driver::Api* api = driver::loaded();
  if (api == nullptr) {
    Expected<const driver::Api*> loaded_api = driver::get();
    if (!loaded_api.ok()) return std::move(loaded_api).take_status();
    api = *loaded_api;
  }
  CUcontext current = nullptr;
  const detail::LoadedFunction* function = nullptr;
  if (api->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr)
    function = detail::find_function_by_handle((*state)->functions[selected], current);
  if (function == nullptr) {
    Expected<detail::ContextRef> context = detail::current_context(*api);
    if (!context.ok()) return std::move(context).take_status().with_context(index.qualified_name());
    Expected<detail::LoadedFunction*> loaded = detail::function_for(*api, **state, *table_, selected, *context);
    if (!loaded.ok()) return std::move(loaded).take_status();
    function = *loaded;
  }

  // Kernel parameters are read in place from the caller's taot_arg unions.
  static const CUdeviceptr null_scratch = 0;
  constexpr std::size_t kInlineParams = 64;
  void* inline_params[kInlineParams];
  std::vector<void*> heap_params;
  void** params = inline_params;
  const std::size_t param_count = variant.param_count + 2u;
  if (param_count > kInlineParams) {
    heap_params.resize(param_count);
    params = heap_params.data();
  }
  for (std::uint16_t p = 0; p < variant.param_count; ++p)
    params[p] = const_cast<taot_arg*>(&args[variant.params[p]]);
  params[variant.param_count] = const_cast<CUdeviceptr*>(&null_scratch);      // global scratch
  params[variant.param_count + 1] = const_cast<CUdeviceptr*>(&null_scratch);  // profile scratch

  const auto launch_with = [&](const detail::LoadedFunction& target) {
    return api->cuLaunchKernel(target.function, static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y),
                               static_cast<unsigned>(grid_z), 32u * target.image->num_warps, 1, 1,
                               target.image->shared_bytes, stream, params, nullptr);
  };
  CUresult result = launch_with(*function);
  if (detail::may_be_stale_context(result)) {
    // The function may belong to a destroyed context that a new one replaced at the same address:
    // ask the driver for the context's id, and load and relaunch if it was so.
    Expected<detail::ContextRef> fresh = detail::current_context(*api);
    if (fresh.ok() && fresh->id != function->context_id) {
      Expected<detail::LoadedFunction*> reloaded = detail::function_for(*api, **state, *table_, selected, *fresh);
      if (!reloaded.ok()) return std::move(reloaded).take_status();
      result = launch_with(**reloaded);
    }
  }
  if (result != CUDA_SUCCESS)
    return driver::call_error(*api, "cuLaunchKernel", result).with_context(detail::variant_name(index, variant));
  return Status();
}

Status Kernel::preload() {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  Expected<const driver::Api*> api = driver::get();
  if (!api.ok()) return std::move(api).take_status();
  Expected<detail::ContextRef> context = detail::current_context(**api);
  if (!context.ok()) return std::move(context).take_status().with_context((*state)->index.qualified_name());
  for (std::size_t v = 0; v < table_->variant_count; ++v) {
    Expected<detail::LoadedFunction*> loaded = detail::function_for(**api, **state, *table_, v, *context);
    if (!loaded.ok()) return std::move(loaded).take_status();
  }
  return Status();
}

Status Kernel::unload() {
  detail::KernelState* state = state_.load(std::memory_order_acquire);
  if (state == nullptr) return Status();
  Expected<const driver::Api*> api = driver::get();
  if (!api.ok()) return std::move(api).take_status();
  Expected<detail::ContextRef> context = detail::current_context(**api);
  if (!context.ok()) return std::move(context).take_status().with_context(state->index.qualified_name());
  std::lock_guard<std::mutex> lock(detail::ModuleCache::instance().mutex());
  Status first_failure;
  for (std::size_t v = 0; v < table_->variant_count; ++v) {
    std::atomic<detail::LoadedFunction*>& head = state->functions[v];
    detail::LoadedFunction* kept = nullptr;
    detail::LoadedFunction* node = head.load(std::memory_order_acquire);
    while (node != nullptr) {
      detail::LoadedFunction* next = node->next;
      if (node->context_id == context->id) {
        Status status = detail::ModuleCache::instance().release(**api, *context, node->image->cubin);
        if (!status.ok() && first_failure.ok()) first_failure = std::move(status);
        delete node;
      } else {
        node->next = kept;
        kept = node;
      }
      node = next;
    }
    head.store(kept, std::memory_order_release);
  }
  return first_failure;
}

}  // namespace taot
