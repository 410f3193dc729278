// Kernel: select a variant, find (or load once) its function in the current context, evaluate
// the grid and launch with Triton 3.6's two trailing scratch pointers (buffers from the scratch
// pool when the kernel needs them) and host-side tensor descriptors expanded (TMA maps on sm_90),
// through cuLaunchKernelEx for clusters, cooperative grids, PDL.
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arg_kinds.h"
#include "dispatch.h"
#include "grid.h"
#include "kernel_state.h"
#include "module_cache.h"
#include "observer.h"
#include "profiler.h"
#include "recorder.h"
#include "scratch.h"
#include "tensordesc.h"
#include "taot/driver_api.h"
#include "taot/runtime.h"

namespace taot {
namespace detail {

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

std::string variant_name(const DispatchIndex& index, const table::Variant& variant) {
  return index.qualified_name() + " variant " + variant.id;
}

Status grid_error(const DispatchIndex& index, const table::Variant& variant, const std::array<std::int64_t, 3>& grid,
                  std::uint16_t num_ctas) {
  std::string text = variant_name(index, variant) + ": grid (" + std::to_string(grid[0]) + ", " +
                     std::to_string(grid[1]) + ", " + std::to_string(grid[2]) + ")";
  if (num_ctas > 1) text += " of clusters of " + std::to_string(num_ctas) + " blocks";
  return Status::error(TAOT_OUT_OF_RESOURCES, text + " exceeds the CUDA limits (2147483647, 65535, 65535)");
}

// Whether the image launches through cuLaunchKernelEx (launch attributes).
bool needs_launch_attributes(const table::Image& image) { return image.num_ctas > 1 || image.cooperative || image.pdl; }

// The image's launch attributes into `function` (at most 4: cluster dimension and scheduling, cooperative, PDL).
void set_launch_attributes(LoadedFunction& function) {
  const table::Image& image = *function.image;
  unsigned count = 0;
  CUlaunchAttribute* attributes = function.attributes;
  if (image.num_ctas > 1) {
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[count].value.clusterDim.x = image.num_ctas;
    attributes[count].value.clusterDim.y = 1;
    attributes[count++].value.clusterDim.z = 1;
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
    attributes[count++].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
  }
  if (image.cooperative) {
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attributes[count++].value.cooperative = 1;
  }
  if (image.pdl) {
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attributes[count++].value.programmaticStreamSerializationAllowed = 1;
  }
  function.attribute_count = count;
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
  if (needs_launch_attributes(*image) && api.cuLaunchKernelEx == nullptr)
    return Status::error(TAOT_NOT_SUPPORTED, variant_name(index, variant) + " needs cuLaunchKernelEx (clusters, "
                                                                            "cooperative grids, PDL): a CUDA 12.0 or newer driver");
  Expected<ContextState*> context_state = prepared_context(api, context);  // before the first launch in it
  if (!context_state.ok()) return std::move(context_state).take_status().with_context(variant_name(index, variant));
  Expected<CUmodule> module = ModuleCache::instance().acquire(api, context, image->cubin);
  if (!module.ok()) return std::move(module).take_status().with_context(variant_name(index, variant));
  CUfunction function = nullptr;
  const auto fail = [&](Status status) {
    (void)ModuleCache::instance().release(api, context, image->cubin);
    return std::move(status).with_context(variant_name(index, variant));
  };
  CUresult result = api.cuModuleGetFunction(&function, *module, image->function_name);
  if (result != CUDA_SUCCESS) return fail(driver::call_error(api, "cuModuleGetFunction", result));
  // Shared memory per block: the dynamic bytes Triton reports plus the cubin's static bytes (1 KiB
  // in some sm_90 kernels); above 48 KiB the dynamic part is opted in, per function, up to the
  // device's limit.
  int static_bytes = 0;
  result = api.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
  if (result != CUDA_SUCCESS) return fail(driver::call_error(api, "cuFuncGetAttribute", result));
  const std::uint64_t shared_total = std::uint64_t{image->shared_bytes} + static_cast<std::uint64_t>(static_bytes);
  if (shared_total > kDefaultSharedLimit) {
    int limit = 0;
    result = api.cuDeviceGetAttribute(&limit, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device->handle);
    if (result != CUDA_SUCCESS) return fail(driver::call_error(api, "cuDeviceGetAttribute", result));
    if (shared_total > static_cast<std::uint64_t>(limit)) {
      (void)ModuleCache::instance().release(api, context, image->cubin);
      return Status::error(TAOT_OUT_OF_RESOURCES,
                           variant_name(index, variant) + " needs " + std::to_string(shared_total) +
                               " bytes of shared memory per block (" + std::to_string(image->shared_bytes) +
                               " dynamic + " + std::to_string(static_bytes) + " static); " + device->name +
                               " allows " + std::to_string(limit));
    }
    result = api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(image->shared_bytes));
    if (result != CUDA_SUCCESS) return fail(driver::call_error(api, "cuFuncSetAttribute", result));
  }
  if (image->num_ctas > 8) {  // clusters above the portable size of 8 CTAs must be allowed per function
    result = api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (result != CUDA_SUCCESS) return fail(driver::call_error(api, "cuFuncSetAttribute", result));
  }
  auto* loaded = new LoadedFunction{context.handle, context.id, function, image, nullptr, {}, 0};
  loaded->context_state = *context_state;
  loaded->launch_name = interned_name(variant_name(index, variant));
  set_launch_attributes(*loaded);
  return loaded;
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

// The parameters of `variant` for a kernel with arguments that expand (descriptors: a TMA map,
// shape and strides on sm_90; Triton's decomposition below): each such argument packed by its
// kind's rules, the others read in place, then the two scratch pointers. The values live in this
// thread's storage until its next such launch, which the driver has copied them by.
Expected<void**> expanded_params(const driver::Api& api, const KernelState& state, const table::KernelTable& table,
                                 const table::Variant& variant, const table::Image& image, const taot_arg* args,
                                 CUdeviceptr* global_scratch, CUdeviceptr* profile_scratch) {
  thread_local std::vector<void*> params;
  thread_local std::vector<TensordescParams> expanded;
  std::size_t param_count = 2;
  for (std::uint16_t p = 0; p < variant.param_count; ++p) {
    const table::Arg& arg = table.args[variant.params[p]];
    param_count += table::visit_arg_kind(arg.kind, [&](auto tag) -> std::size_t {
      using Rules = RulesOf<decltype(tag)>;
      if constexpr (Rules::kPacksInPlace) return 1;
      else return Rules::param_count(arg, image);
    });
  }
  if (params.size() < param_count) params.resize(param_count);
  if (expanded.size() < state.expanded_count) expanded.resize(state.expanded_count);
  std::size_t next = 0;
  for (std::uint16_t p = 0; p < variant.param_count; ++p) {
    const std::uint16_t a = variant.params[p];
    const table::Arg& arg = table.args[a];
    Status packed = table::visit_arg_kind(arg.kind, [&](auto tag) -> Status {
      using Rules = RulesOf<decltype(tag)>;
      if constexpr (Rules::kPacksInPlace) {
        params[next++] = const_cast<taot_arg*>(&args[a]);
        return Status();
      } else {
        const std::uint16_t ordinal = state.expanded_ordinal[a];
        Status status = Rules::pack(arg, args[a], PackSite{api, image, &expanded[ordinal], ordinal}, &params[next]);
        next += Rules::param_count(arg, image);
        return status;
      }
    });
    if (!packed.ok()) return packed;
  }
  params[next++] = global_scratch;
  params[next] = profile_scratch;
  return params.data();
}

}  // namespace
}  // namespace detail

namespace {
Status null_args(const table::KernelTable& table, std::size_t arg_count) {
  return Status::error(TAOT_INVALID_ARGUMENT, std::string(table.library) + "::" + table.name + ": args is null but " +
                                                  std::to_string(arg_count) + " arguments were announced");
}
}  // namespace

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
  detail::start_profiler_if_requested();  // $TAOT_PROFILE, read once, before any kernel's first launch
  detail::start_recorder_if_requested();  // $TAOT_RECORD, likewise; in front of the profiler's observer
  Expected<detail::DispatchIndex> index = detail::DispatchIndex::build(*table_);
  if (!index.ok()) return std::move(index).take_status();
  auto* built = new detail::KernelState(std::move(index).value(), *table_);
  if (Status status = detail::load_tuning_directory(built->tuning, *table_); !status.ok()) {
    delete built;
    return std::move(status).with_context(std::string(table_->library) + "::" + table_->name);
  }
  detail::KernelState* expected = nullptr;
  if (!state_.compare_exchange_strong(expected, built, std::memory_order_acq_rel)) {
    delete built;
    return expected;
  }
  return built;
}

Expected<std::size_t> Kernel::select(const taot_arg* args, std::size_t arg_count, const Selection& selection) {
  Expected<Choice> choice = choose(args, arg_count, selection);
  if (!choice.ok()) return std::move(choice).take_status();
  return choice->variant;
}

Expected<Choice> Kernel::choose(const taot_arg* args, std::size_t arg_count, const Selection& selection) {
  if (args == nullptr && arg_count != 0) return null_args(*table_, arg_count);
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  const detail::DispatchIndex& index = (*state)->index;
  const detail::DeviceFacts* device = nullptr;
  if (index.device_aware() || (*state)->choice_needs_device(*table_)) {  // the current context's device, if any
    Expected<const driver::Api*> api = driver::get();
    CUcontext current = nullptr;
    if (api.ok() && (*api)->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr) {
      Expected<const detail::DeviceFacts*> facts = detail::device_facts(**api, current);
      if (!facts.ok()) return std::move(facts).take_status().with_context(index.qualified_name());
      device = *facts;
    }
  }
  if (device == nullptr && (*state)->rules_read_num_sms)
    return Status::error(TAOT_NO_CONTEXT, index.qualified_name() + ": the kernel's rules read num_sms, which needs a "
                                                                   "current CUDA context (make one current first)");
  return (*state)->choose(args, arg_count, selection, device);
}

Status Kernel::launch(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection) {
  return launch_on(stream, args, arg_count, selection, nullptr);
}

Status Kernel::launch(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection,
                      const Grid& grid) {
  return launch_on(stream, args, arg_count, selection, &grid);
}

Status Kernel::launch_on(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection,
                         const Grid* given_grid) {
  if (args == nullptr && arg_count != 0) return null_args(*table_, arg_count);
  detail::KernelState* built = state_.load(std::memory_order_acquire);
  Expected<detail::KernelState*> state = built != nullptr ? Expected<detail::KernelState*>(built) : this->state();
  if (!state.ok()) return std::move(state).take_status();
  const detail::DispatchIndex& index = (*state)->index;

  // The device, for kernels whose selection or grid depends on it (off the common path). The
  // current context asked here is asked once per launch.
  const driver::Api* api = driver::loaded();
  const detail::DeviceFacts* device = nullptr;
  CUcontext current = nullptr;
  bool asked_context = false;
  if (index.device_aware() || (given_grid == nullptr && (*state)->uses_num_sms) ||
      (*state)->choice_needs_device(*table_)) {
    if (api == nullptr) {
      Expected<const driver::Api*> loaded_api = driver::get();
      if (!loaded_api.ok()) return std::move(loaded_api).take_status();
      api = *loaded_api;
    }
    asked_context = api->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr;
    if (!asked_context) {  // no context: current_context says why
      Expected<detail::ContextRef> context = detail::current_context(*api);
      return (context.ok() ? Status::error(TAOT_NO_CONTEXT, "no CUDA context is current on this thread")
                           : std::move(context).take_status())
          .with_context(index.qualified_name());
    }
    Expected<const detail::DeviceFacts*> facts = detail::device_facts(*api, current);
    if (!facts.ok()) return std::move(facts).take_status().with_context(index.qualified_name());
    device = *facts;
  }

  std::size_t selected = 0;
  Step rule_step = Step::fallback;  // the step that chose, for kernels with rules (observers are told)
  if (index.has_rules()) {
    Expected<Choice> chosen = (*state)->choose(args, arg_count, selection, device);
    if (!chosen.ok()) return std::move(chosen).take_status();
    selected = chosen->variant;
    rule_step = chosen->step;
  } else {
    const std::int64_t memoized = index.memoized(args, arg_count, selection, device);
    selected = static_cast<std::size_t>(memoized);
    if (memoized < 0) {
      Expected<std::size_t> chosen = index.select(args, arg_count, selection, device);
      if (!chosen.ok()) return std::move(chosen).take_status();
      selected = *chosen;
    }
  }
  const table::Variant& variant = table_->variants[selected];

  std::array<std::int64_t, 3> grid;
  if (given_grid != nullptr) {
    grid = {given_grid->x, given_grid->y, given_grid->z};
    if (grid[0] < 0 || grid[1] < 0 || grid[2] < 0)
      return Status::error(TAOT_INVALID_ARGUMENT, index.qualified_name() + ": the grid given, (" +
                                                      std::to_string(grid[0]) + ", " + std::to_string(grid[1]) + ", " +
                                                      std::to_string(grid[2]) + "), has a negative dimension");
  } else if (Status status = detail::evaluate_grid(*table_, variant, args, device != nullptr ? device->multiprocessors : 0,
                                                   grid);
             !status.ok()) {
    return status;
  }
  // Named copies, not structured bindings: lambdas below capture them (clang 14 cannot capture bindings).
  const std::int64_t grid_x = grid[0], grid_y = grid[1], grid_z = grid[2];
  if (grid_x == 0 || grid_y == 0 || grid_z == 0) return Status();
  if (grid_x > detail::kMaxGridX || grid_y > detail::kMaxGridYZ || grid_z > detail::kMaxGridYZ)
    return detail::grid_error(index, variant, grid, 1);

  // Hot path: the driver table is loaded and the variant has a function in the current context.
  if (api == nullptr) {
    Expected<const driver::Api*> loaded_api = driver::get();
    if (!loaded_api.ok()) return std::move(loaded_api).take_status();
    api = *loaded_api;
  }
  const detail::LoadedFunction* function = nullptr;
  if (asked_context || (api->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr))
    function = detail::find_function_by_handle((*state)->functions[selected], current);
  if (function == nullptr) {
    Expected<detail::ContextRef> context = detail::current_context(*api);
    if (!context.ok()) return std::move(context).take_status().with_context(index.qualified_name());
    Expected<detail::LoadedFunction*> loaded = detail::function_for(*api, **state, *table_, selected, *context);
    if (!loaded.ok()) return std::move(loaded).take_status();
    function = *loaded;
  }

  const table::Image& image = *function->image;
  // Programs of a cluster kernel are clusters of num_ctas blocks along x (Triton 3.6).
  const std::int64_t blocks_x = grid_x * image.num_ctas;
  if (blocks_x > detail::kMaxGridX) return detail::grid_error(index, variant, grid, image.num_ctas);

  // Kernel parameters are read in place from the caller's taot_arg unions.
  CUdeviceptr global_scratch = 0, profile_scratch = 0;
  if (image.global_scratch_size > 0 || image.profile_scratch_size > 0) {
    const std::uint64_t programs = static_cast<std::uint64_t>(blocks_x) * grid_y * grid_z;
    Expected<detail::ScratchLayout> layout =
        detail::scratch_layout(programs, image.global_scratch_size, image.global_scratch_align,
                               image.profile_scratch_size, image.profile_scratch_align);
    if (!layout.ok()) return std::move(layout).take_status().with_context(detail::variant_name(index, variant));
    Expected<CUdeviceptr> buffer = detail::ScratchPool::instance().acquire(
        *api, detail::ContextRef{function->context, function->context_id}, stream, layout->total, layout->align,
        detail::variant_name(index, variant));
    if (!buffer.ok()) return std::move(buffer).take_status();
    if (image.global_scratch_size > 0) global_scratch = *buffer + layout->global_offset;
    if (image.profile_scratch_size > 0) profile_scratch = *buffer + layout->profile_offset;
  }
  // Parameters: the call arguments in the variant's order, read in place from the caller's
  // taot_arg unions, then the two scratch pointers. Kernels with arguments that expand
  // (descriptors) take the expanded parameters instead (built per launch, off this path for all
  // other kernels).
  constexpr std::size_t kInlineParams = 64;
  void* inline_params[kInlineParams];
  std::vector<void*> heap_params;
  void** params = inline_params;
  if ((*state)->expanded_count > 0) {
    Expected<void**> expanded = detail::expanded_params(*api, **state, *table_, variant, image, args,
                                                        &global_scratch, &profile_scratch);
    if (!expanded.ok()) return std::move(expanded).take_status().with_context(detail::variant_name(index, variant));
    params = *expanded;
  } else {
    const std::size_t param_count = variant.param_count + 2u;
    if (param_count > kInlineParams) {
      heap_params.resize(param_count);
      params = heap_params.data();
    }
    for (std::uint16_t p = 0; p < variant.param_count; ++p)
      params[p] = const_cast<taot_arg*>(&args[variant.params[p]]);
    params[variant.param_count] = &global_scratch;
    params[variant.param_count + 1] = &profile_scratch;
  }

  const auto launch_with = [&](const detail::LoadedFunction& target) {
    if (target.attribute_count == 0)
      return api->cuLaunchKernel(target.function, static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y),
                                 static_cast<unsigned>(grid_z), 32u * image.num_warps, 1, 1, image.shared_bytes,
                                 stream, params, nullptr);
    CUlaunchConfig config = {};
    config.gridDimX = static_cast<unsigned>(blocks_x);
    config.gridDimY = static_cast<unsigned>(grid_y);
    config.gridDimZ = static_cast<unsigned>(grid_z);
    config.blockDimX = 32u * image.num_warps;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = image.shared_bytes;
    config.hStream = stream;
    config.attrs = const_cast<CUlaunchAttribute*>(target.attributes);
    config.numAttrs = target.attribute_count;
    return api->cuLaunchKernelEx(&config, target.function, params, nullptr);
  };
  // The observer, if any (one atomic load on the way): told before and after the launch call.
  const taot_launch_observer* observer = detail::current_launch_observer();
  taot_launch_info info;
  if (observer != nullptr) {
    const Step step = index.has_rules()         ? rule_step
                      : selection.is_variant()  ? Step::variant
                      : selection.fields()      ? Step::config
                                                : Step::fallback;
    info = taot_launch_info{table_->library, table_->name, variant.id, selected, static_cast<taot_step>(step),
                            {grid_x, grid_y, grid_z}, stream, args, arg_count, handle()};
    if (observer->begin != nullptr) observer->begin(&info, observer->user);
  }
  const auto observed = [&](Status status) {
    if (observer != nullptr && observer->end != nullptr) observer->end(&info, status.code(), observer->user);
    return status;
  };
  CUresult result = launch_with(*function);
  const detail::LoadedFunction* launched = function;
  if (detail::may_be_stale_context(result)) {
    // The function may belong to a destroyed context that a new one replaced at the same address:
    // ask the driver for the context's id, and load and relaunch if it was so.
    Expected<detail::ContextRef> fresh = detail::current_context(*api);
    if (fresh.ok() && fresh->id != function->context_id) {
      Expected<detail::LoadedFunction*> reloaded = detail::function_for(*api, **state, *table_, selected, *fresh);
      if (!reloaded.ok()) return observed(std::move(reloaded).take_status());
      if (image.global_scratch_size > 0 || image.profile_scratch_size > 0)
        return observed(launch_on(stream, args, arg_count, selection, given_grid));  // scratch of the new context
      result = launch_with(**reloaded);
      launched = *reloaded;
    }
  }
  if (result != CUDA_SUCCESS)
    return observed(
        driver::call_error(*api, function->attribute_count > 0 ? "cuLaunchKernelEx" : "cuLaunchKernel", result)
            .with_context(detail::variant_name(index, variant)));
  launched->context_state->last_launch.store(launched->launch_name, std::memory_order_relaxed);
  if (observer != nullptr && observer->end != nullptr) observer->end(&info, TAOT_OK, observer->user);
  return Status();
}

Status Kernel::preload() {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  Expected<const driver::Api*> api = driver::get();
  if (!api.ok()) return std::move(api).take_status();
  Expected<detail::ContextRef> context = detail::current_context(**api);
  if (!context.ok()) return std::move(context).take_status().with_context((*state)->index.qualified_name());
  // Where variants differ in their targets, those without an image for this device are left out
  // (but one of them must have one).
  const detail::DeviceFacts* device = nullptr;
  if ((*state)->index.device_aware()) {
    Expected<const detail::DeviceFacts*> facts = detail::device_facts(**api, context->handle);
    if (!facts.ok()) return std::move(facts).take_status().with_context((*state)->index.qualified_name());
    device = *facts;
  }
  bool loaded_any = false;
  for (std::size_t v = 0; v < table_->variant_count; ++v) {
    const bool last = v + 1 == table_->variant_count;
    if (device != nullptr && detail::pick_image(table_->variants[v], device->arch) == nullptr && (loaded_any || !last))
      continue;
    Expected<detail::LoadedFunction*> loaded = detail::function_for(**api, **state, *table_, v, *context);
    if (!loaded.ok()) return std::move(loaded).take_status();
    loaded_any = true;
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
