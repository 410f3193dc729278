// Kernel: select a variant, find (or load once) its function in the current context, evaluate
// the grid and launch with the trailing scratch pointers every Triton kernel takes (buffers from
// the scratch pool when the kernel needs them) and host-side tensor descriptors expanded in the
// image's launch ABI (TMA maps on sm_90), through cuLaunchKernelEx for clusters, cooperative
// grids, PDL. Where HIP is the driver in use (an AMD GPU), the function, scratch and the launch
// call go through hip_launch.h; selection, grids and parameters are the same.
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arg_kinds.h"
#include "branch_hints.h"
#include "choose.h"
#include "config_fields.h"
#include "dispatch.h"
#include "grid.h"
#include "hip_launch.h"
#include "kernel_state.h"
#include "module_cache.h"
#include "observer.h"
#include "profiler.h"
#include "recorder.h"
#include "scratch.h"
#include "tensordesc.h"
#include "taot/driver_api.h"
#include "taot/hip_api.h"
#include "taot/launch_abi.h"
#include "taot/toolchain.h"
#include "taot/runtime.h"

namespace taot {
namespace detail {

namespace {

constexpr std::uint32_t kDefaultSharedLimit = 48 * 1024;
constexpr std::size_t kInlineParams = 64;  // parameters a launch passes without allocating
constexpr std::size_t kFastParams = 16;    // parameters the common case passes (a small frame)

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

std::string variant_name(const FactIndex& index, const table::Variant& variant) {
  return index.qualified_name() + " variant " + variant.id;
}

Status grid_error(const FactIndex& index, const table::Variant& variant, const std::array<std::int64_t, 3>& grid,
                  std::uint16_t num_ctas) {
  std::string text = variant_name(index, variant) + ": grid (" + std::to_string(grid[0]) + ", " +
                     std::to_string(grid[1]) + ", " + std::to_string(grid[2]) + ")";
  if (num_ctas > 1) text += " of clusters of " + std::to_string(num_ctas) + " blocks";
  return Status::error(TAOT_OUT_OF_RESOURCES, text + " exceeds the CUDA limits (2147483647, 65535, 65535)");
}

// launch_function for a function with launch attributes: through cuLaunchKernelEx, programs
// along x being clusters of num_ctas blocks.
CUresult launch_with_attributes(const driver::Api& api, const LoadedFunction& function, std::int64_t x,
                                std::int64_t y, std::int64_t z, CUstream stream, void** params) {
  CUlaunchConfig config = {};
  config.gridDimX = static_cast<unsigned>(x * function.num_ctas);
  config.gridDimY = static_cast<unsigned>(y);
  config.gridDimZ = static_cast<unsigned>(z);
  config.blockDimX = function.block_threads;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = function.shared_bytes;
  config.hStream = stream;
  config.attrs = const_cast<CUlaunchAttribute*>(function.attributes);
  config.numAttrs = function.attribute_count;
  return api.cuLaunchKernelEx(&config, function.function, params, nullptr);
}

// Launches `function` on a grid of (x, y, z) programs with `params`: through cuLaunchKernel, or
// cuLaunchKernelEx when it has launch attributes (clusters, cooperative grids, PDL).
__attribute__((always_inline)) inline CUresult launch_function(const driver::Api& api, const LoadedFunction& function,
                                                               std::int64_t x, std::int64_t y, std::int64_t z,
                                                               CUstream stream, void** params) {
  if (TAOT_UNLIKELY(function.attribute_count != 0))
    return launch_with_attributes(api, function, x, y, z, stream, params);
  return api.cuLaunchKernel(function.function, static_cast<unsigned>(x), static_cast<unsigned>(y),
                            static_cast<unsigned>(z), function.block_threads, 1, 1, function.shared_bytes, stream,
                            params, nullptr);
}

// The parameters of a variant whose arguments all pack in place: pointers to the call arguments
// in the variant's order (read in place from the caller's taot_arg unions), then to the two
// scratch pointers. `params` holds param_count + kScratchPointers.
static_assert(abi::kScratchPointers == 2, "fill_params and expanded_params pass global and profile scratch");
__attribute__((always_inline)) inline void fill_params(const VariantPlan& plan, const taot_arg* args,
                                                      CUdeviceptr* global_scratch, CUdeviceptr* profile_scratch,
                                                      void** __restrict params) noexcept {
  const std::size_t count = plan.param_count;  // locals: the stores below may not alias them
  if (plan.in_order) {
    for (std::size_t p = 0; p < count; ++p) params[p] = const_cast<taot_arg*>(args + p);
  } else {
    const std::uint16_t* const order = plan.params;
    for (std::size_t p = 0; p < count; ++p) params[p] = const_cast<taot_arg*>(&args[order[p]]);
  }
  params[count] = global_scratch;
  params[count + 1] = profile_scratch;
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

// A failed cuModuleLoadData's error with, when the driver may be too old for the image (it refuses
// its format or finds no binary for the GPU), the ptxas that assembled the image, the driver that
// ptxas' CUDA release needs, and how to rebuild for an older driver.
Status with_toolchain_note(Status status, const table::Image& image) {
  const int result = status.cuda_result();
  if (result != CUDA_ERROR_UNSUPPORTED_PTX_VERSION && result != CUDA_ERROR_INVALID_IMAGE &&
      result != CUDA_ERROR_NO_BINARY_FOR_GPU)
    return status;
  std::string note = std::string("; image ") + image.target + " was assembled by ";
  const unsigned driver = toolchain::min_driver_for_ptxas(image.ptxas_version);
  if (image.ptxas_version == nullptr) {
    note += "a ptxas the manifest does not name";
  } else {
    note += std::string("ptxas ") + image.ptxas_version;
    if (driver != 0)
      note += ", which needs an NVIDIA driver of release " + std::to_string(driver) + " or newer (CUDA " +
              std::to_string(toolchain::cuda_major_of(image.ptxas_version)) + ".x minor-version compatibility)";
  }
  note += ": update the driver, or rebuild the library with an older ptxas (set TRITON_PTXAS_PATH and "
          "TRITON_PTXAS_BLACKWELL_PATH to one, e.g. /usr/local/cuda/bin/ptxas, and build again)";
  return Status::error(status.code(), status.message() + note, result);
}

// Loads `variant` in `context`; called with the module cache's lock held.
Expected<LoadedFunction*> load_function(const driver::Api& api, const FactIndex& index,
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
  if (!module.ok())
    return with_toolchain_note(std::move(module).take_status(), *image).with_context(variant_name(index, variant));
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
  auto* loaded = new LoadedFunction{context.handle, function};
  loaded->block_threads = block_threads_of(*image);
  loaded->shared_bytes = image->shared_bytes;
  loaded->num_ctas = image->num_ctas;
  loaded->scratch = image->global_scratch_size > 0 || image->profile_scratch_size > 0;
  loaded->context_id = context.id;
  loaded->image = image;
  loaded->context_state = *context_state;
  loaded->launch_name = interned_name(variant_name(index, variant));
  set_launch_attributes(*loaded);
  return loaded;
}

// The function of `variant_index` in `context`: lock-free when loaded, else loaded exactly once.
Expected<LoadedFunction*> function_for(const driver::Api& api, KernelState& state, const table::KernelTable& table,
                                       std::size_t variant_index, const ContextRef& context) {
  std::atomic<LoadedFunction*>& head = state.plans[variant_index].functions;
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
// shape and strides on sm_90; Triton's decomposition below, each in the image's launch ABI): each
// such argument packed by its kind's rules, the others read in place, then the two scratch
// pointers. The values live in this thread's storage until its next such launch, which the driver
// has copied them by.
Expected<void**> expanded_params(const driver::Api& api, const KernelState& state, const table::KernelTable& table,
                                 const table::Variant& variant, const table::Image& image, const taot_arg* args,
                                 CUdeviceptr* global_scratch, CUdeviceptr* profile_scratch) {
  thread_local std::vector<void*> params;
  thread_local std::vector<TensordescParams> expanded;
  std::size_t param_count = abi::kScratchPointers;
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

// One launch call's inputs, kept for its recovery: the variant, the function launched (in the
// context it was loaded in), the grid of programs, the stream and the parameters.
struct LaunchAttempt {
  const driver::Api& api;
  KernelState& state;
  std::size_t selected;
  const LoadedFunction& function;
  std::array<std::int64_t, 3> grid;
  CUstream stream;
  void** params;
};

// After the launch call of `attempt` failed with `result`: when its function may belong to a
// destroyed context that a new one replaced at the same address, asks the driver for the
// context's id and, if it was so, loads the variant there and launches again (`*launched` the
// function that launched), or sets `*launch_again` when the launch must start over (its scratch
// belongs to the old context). Otherwise, or when the relaunch fails, the error.
Status recover_launch(CUresult result, const LaunchAttempt& attempt, const LoadedFunction** launched,
                      bool* launch_again) {
  const LoadedFunction& function = attempt.function;
  const table::KernelTable& table = attempt.state.index.table();
  *launched = &function;
  *launch_again = false;
  if (may_be_stale_context(result)) {
    Expected<ContextRef> fresh = current_context(attempt.api);
    if (fresh.ok() && fresh->id != function.context_id) {
      Expected<LoadedFunction*> reloaded = function_for(attempt.api, attempt.state, table, attempt.selected, *fresh);
      if (!reloaded.ok()) return std::move(reloaded).take_status();
      if (function.scratch) {
        *launch_again = true;
        return Status();
      }
      const std::array<std::int64_t, 3>& grid = attempt.grid;
      result = launch_function(attempt.api, **reloaded, grid[0], grid[1], grid[2], attempt.stream, attempt.params);
      *launched = *reloaded;
    }
  }
  if (result == CUDA_SUCCESS) return Status();
  return driver::call_error(attempt.api, (*launched)->attribute_count > 0 ? "cuLaunchKernelEx" : "cuLaunchKernel",
                            result)
      .with_context(variant_name(attempt.state.index, table.variants[attempt.selected]));
}

// The steps of a launch, in order. Kernel::launch takes the common case through the remembered_*
// ones alone and hands anything else to Kernel::launch_any, which takes a launch through all.

// Step 1, the device: the current context and the facts of its device, where the launch's choice
// or grid depends on them (both null otherwise, or for a choice made without a context).
struct LaunchDevice {
  CUcontext context = nullptr;
  const DeviceFacts* facts = nullptr;
};

// The driver table, loaded on first use.
Status load_driver(const driver::Api** api) {
  if (*api != nullptr) return Status();
  Expected<const driver::Api*> loaded = driver::get();
  if (!loaded.ok()) {
    Status cuda = std::move(loaded).take_status();
    if (Status hip = hip::unusable_runtime(); !hip.ok())  // a ROCm machine: its reason is the one that matters
      return Status::error(cuda.code(), cuda.message() + "; and the HIP runtime, found, cannot be used: " + hip.message(),
                           cuda.cuda_result());
    return cuda;
  }
  *api = *loaded;
  return Status();
}

// The facts this thread remembers for the device of the current context (`*current`): one driver
// call, no lock. Null when no context is current or this thread has not asked about its device
// yet (resolve_device does).
__attribute__((always_inline)) inline const DeviceFacts* remembered_device(const driver::Api& api,
                                                                           CUcontext* current) noexcept {
  if (api.cuCtxGetCurrent(current) != CUDA_SUCCESS || *current == nullptr) return nullptr;
  return remembered_facts_of(*current);
}

// The current context and its device's facts: as this thread remembers them, else asked of the
// driver (device_facts), which may fail. Without a driver or a current context: an error when
// `required` (a launch), else `*device` left empty (a choice made without the device).
// Where HIP is the driver in use (`*api` stays null), the current HIP device and its facts.
Status resolve_device(const driver::Api** api, const FactIndex& index, bool required, LaunchDevice* device) {
  if (Status status = load_driver(api); !status.ok()) {
    const hip::Api* hip_api = hip::in_use();
    if (hip_api == nullptr) return required ? std::move(status) : Status();
    Expected<HipPlace> place = current_hip_place(*hip_api);
    if (!place.ok()) return required ? std::move(place).take_status().with_context(index.qualified_name()) : Status();
    device->context = place->ref.handle;
    device->facts = place->facts;
    return Status();
  }
  if ((*api)->cuCtxGetCurrent(&device->context) != CUDA_SUCCESS || device->context == nullptr) {
    device->context = nullptr;
    if (!required) return Status();
    Expected<ContextRef> context = current_context(**api);  // no context: current_context says why
    return (context.ok() ? Status::error(TAOT_NO_CONTEXT, "no CUDA context is current on this thread")
                         : std::move(context).take_status())
        .with_context(index.qualified_name());
  }
  device->facts = remembered_facts_of(device->context);
  if (device->facts == nullptr) {
    Expected<const DeviceFacts*> facts = device_facts(**api, device->context);
    if (!facts.ok()) return std::move(facts).take_status().with_context(index.qualified_name());
    device->facts = *facts;
  }
  return Status();
}

// Step 2, the variant. The choice the kernel remembers for `args` on `device`, deciding nothing:
// the choice cache's for a kernel with rules (`tuning`: the tables in force on the device), else
// the memo's; false when it must be decided (select_variant does). Allocates nothing.
__attribute__((always_inline)) inline bool remembered_choice(const KernelState& state, const taot_arg* args,
                                                             std::size_t arg_count, const Selection& selection,
                                                             const DeviceFacts* device, const TuningInForce& tuning,
                                                             Choice* choice) noexcept {
  if (TAOT_UNLIKELY(state.chooser.has_rules()))
    return state.chooser.cached(state.index, args, arg_count, selection, device, tuning, num_sms_of(device), choice);
  const std::int64_t memoized = state.index.memoized(args, arg_count, selection, device);
  if (TAOT_UNLIKELY(memoized < 0)) return false;
  *choice = Choice{static_cast<std::size_t>(memoized), Step::fallback};  // the memo holds automatic selections
  return true;
}

// The error for a launch that leaves a required config field (a constexpr the function has no
// default for) to taot, naming the first; ok when each is given, or the caller names a variant.
Status check_required_fields(const KernelState& state, const Selection& selection) {
  if (selection.is_variant()) return Status();
  const table::KernelTable& table = state.index.table();
  const FieldRequest* fields = selection.fields();
  for (std::size_t f = 0; f < table.field_count; ++f) {
    const table::ConfigField& field = table.fields[f];
    if (!field.required || (fields != nullptr && fields[f].set)) continue;
    std::string compiled;
    for (std::uint16_t v = 0; v < field.value_count; ++v) compiled += (v ? ", " : "") + value_text(field, v);
    return Status::error(TAOT_INVALID_ARGUMENT,
                         state.index.qualified_name() + ": " + field.name + " must be given: the function has no "
                         "default for this constexpr, so Triton's JIT requires it too (compiled values: " + compiled + ")");
  }
  return Status();
}

// The variant to launch for `args` on `device` (null: none, or not needed) and the step that chose
// it, into `*choice`: remembered, else decided (the rules' walk, or selection by the index's
// bitsets). `*untuned` (when given): first-call autotuning applies but the call's key was not
// tuned yet (the choice is the later steps'). Fails with the error that names what rules every
// variant out. Inlined, so that a remembered choice costs launch_any no call.
__attribute__((always_inline)) inline Status select_variant(const KernelState& state, const taot_arg* args,
                                                            std::size_t arg_count, const Selection& selection,
                                                            const DeviceFacts* device, Choice* choice,
                                                            bool* untuned = nullptr) {
  if (TAOT_UNLIKELY(state.has_required_fields))
    if (Status status = check_required_fields(state, selection); !status.ok()) return status;
  const TuningInForce tuning = state.tuning_for(device);
  if (remembered_choice(state, args, arg_count, selection, device, tuning, choice)) return Status();
  Expected<Choice> chosen =
      state.chooser.choose(state.index, args, arg_count, selection, device, tuning, num_sms_of(device), untuned);
  if (!chosen.ok()) return std::move(chosen).take_status();
  *choice = *chosen;
  return Status();
}

// First-call autotuning of the call's key, which select_variant found untuned: unless there is no
// device or `stream` is capturing a CUDA graph (then `*choice`, the later steps', stands), the
// key's candidates are timed on the call's arguments (tune_key) and the choice is made again.
// `*problem`: what kept the key from being tuned (a capture among them), or its results from being
// written (tune_key); a launch passes over it, warmup() returns it.
Status tune_then_select(Kernel& kernel, KernelState& state, CUstream stream, const taot_arg* args,
                        std::size_t arg_count, const Selection& selection, const Grid* grid, const DeviceFacts* device,
                        Choice* choice, Status* problem) {
  const driver::Api* api = driver::loaded();
  if (device == nullptr || api == nullptr) return Status();
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (const CUresult result = api->cuStreamIsCapturing(stream, &capturing); result != CUDA_SUCCESS) {
    *problem = driver::call_error(*api, "cuStreamIsCapturing", result).with_context(state.index.qualified_name());
    return Status();
  }
  if (capturing != CU_STREAM_CAPTURE_STATUS_NONE) {
    *problem = Status::error(TAOT_INVALID_ARGUMENT, state.index.qualified_name() +
                                                        ": first-call autotuning times launches, which a stream "
                                                        "capturing a CUDA graph cannot: warm up before the capture");
    return Status();
  }
  std::vector<std::int64_t> key;
  std::vector<AutotuneCandidate> candidates;
  if (Status status = state.chooser.autotune_candidates(state.index, args, arg_count, selection, device,
                                                        num_sms_of(device), &key, &candidates);
      !status.ok())
    return status;
  if (key.empty() || candidates.empty()) return Status();
  if (Status status = tune_key(kernel, state.autotuned, stream, args, arg_count, grid, *device, key, candidates,
                               problem);
      !status.ok())
    return status;
  return select_variant(state, args, arg_count, selection, device, choice);
}

// Whether a grid has a zero dimension: nothing to launch.
bool empty_grid(const std::array<std::int64_t, 3>& grid) noexcept {
  return grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
}

// Step 3, the grid: the one given (an error for a negative dimension), else the variant's grid
// programs evaluated for `args` (`num_sms`: the device's, for programs that read it). An error
// when it exceeds the CUDA limits; an empty grid is none.
Status launch_grid(const KernelState& state, std::size_t selected, const taot_arg* args, const Grid* given,
                   std::int64_t num_sms, std::array<std::int64_t, 3>& grid) {
  const table::KernelTable& table = state.index.table();
  const table::Variant& variant = table.variants[selected];
  if (given != nullptr) {
    grid = {given->x, given->y, given->z};
    if (grid[0] < 0 || grid[1] < 0 || grid[2] < 0)
      return Status::error(TAOT_INVALID_ARGUMENT, state.index.qualified_name() + ": the grid given, (" +
                                                      std::to_string(grid[0]) + ", " + std::to_string(grid[1]) + ", " +
                                                      std::to_string(grid[2]) + "), has a negative dimension");
  } else if (!state.plans[selected].grid.evaluate(args, grid)) {
    if (Status status = evaluate_grid(table, variant, args, num_sms, grid); !status.ok()) return status;
  }
  if (empty_grid(grid)) return Status();
  if (grid[0] > kMaxGridX || grid[1] > kMaxGridYZ || grid[2] > kMaxGridYZ)
    return grid_error(state.index, variant, grid, 1);
  return Status();
}

// Steps 2 and 3 of any launch or warmup: the variant, remembered or decided, and its grid (launch_grid);
// a key first-call autotuning has not tuned is tuned first (tune_then_select), unless the grid has
// no programs (a key of no work). `*problem`: what kept the key from being tuned.
Status select_with_grid(Kernel& kernel, KernelState& state, CUstream stream, const taot_arg* args,
                        std::size_t arg_count, const Selection& selection, const Grid* given_grid,
                        const DeviceFacts* device, Choice* choice, std::array<std::int64_t, 3>& grid, Status* problem) {
  bool untuned = false;
  if (Status status = select_variant(state, args, arg_count, selection, device, choice, &untuned); !status.ok())
    return status;
  if (Status status = launch_grid(state, choice->variant, args, given_grid, num_sms_of(device), grid); !status.ok())
    return status;
  if (TAOT_LIKELY(!untuned) || empty_grid(grid)) return Status();
  if (Status status = tune_then_select(kernel, state, stream, args, arg_count, selection, given_grid, device, choice,
                                       problem);
      !status.ok())
    return status;
  return launch_grid(state, choice->variant, args, given_grid, num_sms_of(device), grid);
}

// Step 4, the function: the variant's in the current context (`current`: the one step 1 found, or
// null to ask), found by handle once loaded, else loaded (once per context), into `*function`.
Status find_or_load_function(const driver::Api& api, KernelState& state, std::size_t selected, CUcontext current,
                             const LoadedFunction** function) {
  if (current != nullptr || (api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr)) {
    *function = find_function_by_handle(state.plans[selected].functions, current);
    if (*function != nullptr) return Status();
  }
  Expected<ContextRef> context = current_context(api);
  if (!context.ok()) return std::move(context).take_status().with_context(state.index.qualified_name());
  Expected<LoadedFunction*> loaded = function_for(api, state, state.index.table(), selected, *context);
  if (!loaded.ok()) return std::move(loaded).take_status();
  *function = *loaded;
  return Status();
}

// Step 5, scratch: the two pointers every Triton kernel takes last. For a function whose image
// takes global or profile scratch, buffers for `grid` from the scratch pool (per stream, in the
// function's context); else null.
struct LaunchScratch {
  CUdeviceptr global = 0;
  CUdeviceptr profile = 0;
};

Status acquire_scratch(const driver::Api& api, const KernelState& state, std::size_t selected,
                       const LoadedFunction& function, const std::array<std::int64_t, 3>& grid, CUstream stream,
                       LaunchScratch* scratch) {
  if (!function.scratch) return Status();
  const table::Variant& variant = state.index.table().variants[selected];
  const table::Image& image = *function.image;
  const std::uint64_t programs = static_cast<std::uint64_t>(grid[0] * function.num_ctas) * grid[1] * grid[2];
  Expected<ScratchLayout> layout = scratch_layout(programs, image.global_scratch_size, image.global_scratch_align,
                                                  image.profile_scratch_size, image.profile_scratch_align);
  if (!layout.ok()) return std::move(layout).take_status().with_context(variant_name(state.index, variant));
  Expected<CUdeviceptr> buffer =
      ScratchPool::instance().acquire(api, ContextRef{function.context, function.context_id}, stream, layout->total,
                                      layout->align, variant_name(state.index, variant));
  if (!buffer.ok()) return std::move(buffer).take_status();
  if (image.global_scratch_size > 0) scratch->global = *buffer + layout->global_offset;
  if (image.profile_scratch_size > 0) scratch->profile = *buffer + layout->profile_offset;
  return Status();
}

// Step 6, the parameters: the call arguments in the variant's order, read in place from the
// caller's taot_arg unions, then the two scratch pointers. Kernels with arguments that expand
// (descriptors) take the expanded parameters instead (built per launch, off this path for all
// other kernels). They point into `args` and `*scratch`, which outlive the launch call. Inlined,
// as the rest of launch_any's steps are: each is its only caller.
struct LaunchParams {
  void** data = inline_params;  // what the launch call takes
  void* inline_params[kInlineParams];
  std::vector<void*> heap;  // beyond kInlineParams
};

__attribute__((always_inline)) inline Status launch_params(const driver::Api& api, const KernelState& state,
                                                           std::size_t selected, const LoadedFunction& function,
                                                           const taot_arg* args, LaunchScratch* scratch,
                                                           LaunchParams* params) {
  const table::KernelTable& table = state.index.table();
  if (state.expanded_count > 0) {
    const table::Variant& variant = table.variants[selected];
    Expected<void**> expanded =
        expanded_params(api, state, table, variant, *function.image, args, &scratch->global, &scratch->profile);
    if (!expanded.ok()) return std::move(expanded).take_status().with_context(variant_name(state.index, variant));
    params->data = *expanded;
    return Status();
  }
  const VariantPlan& plan = state.plans[selected];
  if (plan.param_count + abi::kScratchPointers > kInlineParams) {
    params->heap.resize(plan.param_count + abi::kScratchPointers);
    params->data = params->heap.data();
  }
  fill_params(plan, args, &scratch->global, &scratch->profile, params->data);
  return Status();
}

// Step 7, the observer in force, if any (one atomic load on the way): told before the launch call
// and after it, with the launch's status.
class ObservedLaunch {
 public:
  ObservedLaunch(const table::KernelTable& table, const Choice& choice, const std::array<std::int64_t, 3>& grid,
                 CUstream stream, const taot_arg* args, std::size_t arg_count, taot_kernel* kernel)
      : observer_(tuning_on_this_thread ? nullptr : current_launch_observer()) {
    if (observer_ == nullptr) return;
    info_ = taot_launch_info{table.library, table.name, table.variants[choice.variant].id, choice.variant,
                             static_cast<taot_step>(choice.step), {grid[0], grid[1], grid[2]}, stream, args,
                             arg_count, kernel};
    if (observer_->begin != nullptr) observer_->begin(&info_, observer_->user);
  }
  // Tells the observer that the launch ended with `status`; returns `status`.
  Status end(Status status) const {
    if (observer_ != nullptr && observer_->end != nullptr) observer_->end(&info_, status.code(), observer_->user);
    return status;
  }

 private:
  const taot_launch_observer* observer_;
  taot_launch_info info_;
};

// Step 8, the launch call (launch_function), recovered when it fails (recover_launch); a launch
// that succeeded is recorded as its context's last, which a later CUDA_ERROR_ASSERT names.
__attribute__((always_inline)) inline void record_launch(const LoadedFunction& launched) noexcept {
  launched.context_state->last_launch.store(launched.launch_name, std::memory_order_relaxed);
}

// The function of `variant_index` on the HIP place `place`: lock-free when loaded, else loaded
// exactly once (load_hip_function).
Expected<LoadedFunction*> hip_function_for(const hip::Api& api, KernelState& state, std::size_t variant_index,
                                           const HipPlace& place) {
  std::atomic<LoadedFunction*>& head = state.plans[variant_index].functions;
  if (LoadedFunction* loaded = find_function(head, place.ref.id)) return loaded;
  std::lock_guard<std::mutex> lock(ModuleCache::instance().mutex());
  if (LoadedFunction* loaded = find_function(head, place.ref.id)) return loaded;
  Expected<LoadedFunction*> loaded = load_hip_function(api, state.index, state.index.table().variants[variant_index], place);
  if (!loaded.ok()) return loaded;
  (*loaded)->next = head.load(std::memory_order_relaxed);
  head.store(*loaded, std::memory_order_release);
  return loaded;
}

// Steps 4 to 8 where HIP is the driver in use: the function on the current HIP device, the
// parameters packed as on CUDA (the call arguments in the variant's order, then the two scratch
// pointers), the observer, and the launch with scratch (launch_hip_function). `stream` is a
// hipStream_t.
Status launch_with_hip(const hip::Api& api, KernelState& state, const Choice& choice,
                       const std::array<std::int64_t, 3>& grid, CUstream stream, const taot_arg* args,
                       std::size_t arg_count, taot_kernel* kernel) {
  const std::size_t selected = choice.variant;
  Expected<HipPlace> place = current_hip_place(api);
  if (!place.ok()) return std::move(place).take_status().with_context(state.index.qualified_name());
  Expected<LoadedFunction*> function = hip_function_for(api, state, selected, *place);
  if (!function.ok()) return std::move(function).take_status();
  LaunchScratch scratch;
  LaunchParams params;
  static const driver::Api kNoCudaDriver{};  // AMD images take descriptors decomposed: no TMA map is made
  if (Status status = launch_params(kNoCudaDriver, state, selected, **function, args, &scratch, &params); !status.ok())
    return status;
  const ObservedLaunch observed(state.index.table(), choice, grid, stream, args, arg_count, kernel);
  return observed.end(launch_hip_function(api, **function, *(*function)->launch_name, grid, stream, params.data,
                                          &scratch.global, &scratch.profile));
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
    detail::LoadedFunction* node = state->plans[v].functions.load(std::memory_order_relaxed);
    while (node != nullptr) delete std::exchange(node, node->next);
  }
  delete state;
}

Expected<detail::KernelState*> Kernel::state() {
  if (detail::KernelState* state = state_.load(std::memory_order_acquire)) return state;
  detail::start_profiler_if_requested();  // $TAOT_PROFILE, read once, before any kernel's first launch
  detail::start_recorder_if_requested();  // $TAOT_RECORD, likewise; in front of the profiler's observer
  Expected<detail::FactIndex> index = detail::FactIndex::build(*table_);
  if (!index.ok()) return std::move(index).take_status();
  Expected<detail::RuleChooser> chooser = detail::RuleChooser::build(*index);
  if (!chooser.ok()) return std::move(chooser).take_status();
  auto* built = new detail::KernelState(std::move(index).value(), std::move(chooser).value(), *table_);
  if (Status status = detail::load_tuning_directory(built->tuning, *table_); !status.ok()) {
    delete built;
    return std::move(status).with_context(std::string(table_->library) + "::" + table_->name);
  }
  detail::load_autotune_directory(built->autotuned);
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
  Expected<detail::KernelState*> built = this->state();
  if (!built.ok()) return std::move(built).take_status();
  const detail::KernelState& state = **built;
  // The current context's device, if any, where the choice depends on it.
  const driver::Api* api = driver::loaded();
  detail::LaunchDevice device;
  if (state.choice_needs_device()) {
    Status status = detail::resolve_device(&api, state.index, /*required=*/false, &device);
    if (!status.ok()) return status;
  }
  if (device.facts == nullptr && state.rules_read_num_sms)
    return Status::error(TAOT_NO_CONTEXT, state.index.qualified_name() +
                                              ": the kernel's rules read num_sms, which needs a current CUDA context "
                                              "(make one current first)");
  Choice choice{};
  if (Status status = detail::select_variant(state, args, arg_count, selection, device.facts, &choice); !status.ok())
    return status;
  return choice;
}

Expected<Choice> Kernel::warmup(CUstream stream, const taot_arg* args, std::size_t arg_count,
                                const Selection& selection) {
  return warmup_any(stream, args, arg_count, selection, nullptr);
}

Expected<Choice> Kernel::warmup(CUstream stream, const taot_arg* args, std::size_t arg_count,
                                const Selection& selection, const Grid& grid) {
  return warmup_any(stream, args, arg_count, selection, &grid);
}

Expected<Choice> Kernel::warmup_any(CUstream stream, const taot_arg* args, std::size_t arg_count,
                                    const Selection& selection, const Grid* grid) {
  if (args == nullptr && arg_count != 0) return null_args(*table_, arg_count);
  Expected<detail::KernelState*> built = this->state();
  if (!built.ok()) return std::move(built).take_status();
  detail::KernelState& state = **built;
  const driver::Api* api = driver::loaded();
  detail::LaunchDevice device;
  if (Status status = detail::resolve_device(&api, state.index, /*required=*/true, &device); !status.ok())
    return status;
  Choice choice{};
  std::array<std::int64_t, 3> programs;
  Status problem;
  if (Status status = detail::select_with_grid(*this, state, stream, args, arg_count, selection, grid, device.facts,
                                               &choice, programs, &problem);
      !status.ok())
    return status;
  if (!problem.ok()) return problem;
  return choice;
}

// The common case of a launch (everything already known: the kernel's state, the choice, the
// function in the current context; no observer, scratch or descriptors). Every way off it goes to
// launch_any before anything was done; the hints keep it one straight run of code, since a driver's
// launch call in between leaves little of it in the caches.
Status Kernel::launch(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection) {
  detail::KernelState* const state = state_.load(std::memory_order_acquire);
  const driver::Api* const api = driver::loaded();
  if (TAOT_UNLIKELY(state == nullptr || api == nullptr || (args == nullptr && arg_count != 0) ||
                    !state->launches_fast || detail::current_launch_observer() != nullptr))
    return launch_any(stream, args, arg_count, selection, nullptr);

  // The choice, remembered, on the device (where it matters) this thread remembers for the context.
  CUcontext current = nullptr;
  const detail::DeviceFacts* device = nullptr;
  detail::TuningInForce tables;
  if (TAOT_UNLIKELY(state->chooser.has_rules())) {  // (out of line: kernels without rules are the common case)
    const detail::TuningSet& tuning = state->tuning.current();
    const std::uint64_t autotuning = state->autotuning();
    if (state->choice_needs_device(tuning, autotuning) &&
        TAOT_UNLIKELY((device = detail::remembered_device(*api, &current)) == nullptr))
      return launch_any(stream, args, arg_count, selection, nullptr);
    tables = state->tuning_for(tuning, device, autotuning);
  } else if (TAOT_UNLIKELY(state->index.device_aware()) &&
             (device = detail::remembered_device(*api, &current)) == nullptr) {
    return launch_any(stream, args, arg_count, selection, nullptr);
  }
  Choice choice;
  if (TAOT_UNLIKELY(!detail::remembered_choice(*state, args, arg_count, selection, device, tables, &choice)))
    return launch_any(stream, args, arg_count, selection, nullptr);
  const std::size_t selected = choice.variant;

  // The grid of a common shape, within the CUDA limits; the function loaded in the current context.
  const detail::VariantPlan& plan = state->plans[selected];
  std::array<std::int64_t, 3> grid;
  if (TAOT_UNLIKELY(!plan.grid.evaluate(args, grid))) return launch_any(stream, args, arg_count, selection, nullptr);
  if (TAOT_UNLIKELY(grid[0] == 0)) return Status();  // nothing to launch
  if (TAOT_LIKELY(current == nullptr) &&
      TAOT_UNLIKELY(api->cuCtxGetCurrent(&current) != CUDA_SUCCESS || current == nullptr))
    return launch_any(stream, args, arg_count, selection, nullptr);
  const detail::LoadedFunction* function = detail::find_function_by_handle(plan.functions, current);
  if (TAOT_UNLIKELY(function == nullptr || function->scratch || grid[0] * function->num_ctas > detail::kMaxGridX ||
                    plan.param_count + abi::kScratchPointers > detail::kFastParams))
    return launch_any(stream, args, arg_count, selection, nullptr);

  void* params[detail::kFastParams];
  CUdeviceptr no_scratch = 0;
  detail::fill_params(plan, args, &no_scratch, &no_scratch, params);
  CUresult result = detail::launch_function(*api, *function, grid[0], grid[1], grid[2], stream, params);
  if (TAOT_UNLIKELY(result != CUDA_SUCCESS)) {
    bool launch_again = false;
    Status status = detail::recover_launch(
        result, detail::LaunchAttempt{*api, *state, selected, *function, grid, stream, params}, &function,
        &launch_again);
    if (!status.ok()) return status;
    if (launch_again) return launch(stream, args, arg_count, selection);
  }
  detail::record_launch(*function);
  return Status();
}

Status Kernel::launch(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection,
                      const Grid& grid) {
  return launch_any(stream, args, arg_count, selection, &grid);
}

Status Kernel::launch_any(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection,
                          const Grid* given_grid) {
  if (args == nullptr && arg_count != 0) return null_args(*table_, arg_count);
  Expected<detail::KernelState*> built = this->state();
  if (!built.ok()) return std::move(built).take_status();
  detail::KernelState& state = **built;

  // 1. The device, for kernels whose choice or grid depends on it (off the common path); the
  // current context asked here is asked once per launch.
  const driver::Api* api = driver::loaded();
  detail::LaunchDevice device;
  if (state.choice_needs_device() || (given_grid == nullptr && state.uses_num_sms)) {
    Status status = detail::resolve_device(&api, state.index, /*required=*/true, &device);
    if (!status.ok()) return status;
  }
  // 2. The variant (tuning the call's key first, when first-call autotuning has not yet). 3. The grid.
  Choice choice{};
  std::array<std::int64_t, 3> grid;
  Status problem;  // a launch that could not tune launches as it would without (warmup() says why)
  if (Status status = detail::select_with_grid(*this, state, stream, args, arg_count, selection, given_grid,
                                               device.facts, &choice, grid, &problem);
      !status.ok())
    return status;
  if (detail::empty_grid(grid)) return Status();  // nothing to launch
  const std::size_t selected = choice.variant;
  if (api == nullptr)  // steps 4 to 8 on HIP where it is the driver in use (docs/runtime.md, "Two drivers")
    if (const hip::Api* hip_api = hip::in_use())
      return detail::launch_with_hip(*hip_api, state, choice, grid, stream, args, arg_count, handle());

  // 4. The function, with its clusters: programs of a cluster kernel are clusters of num_ctas
  // blocks along x (Triton 3.6).
  if (Status status = detail::load_driver(&api); !status.ok()) return status;
  const detail::LoadedFunction* function = nullptr;
  if (Status status = detail::find_or_load_function(*api, state, selected, device.context, &function); !status.ok())
    return status;
  if (grid[0] * function->num_ctas > detail::kMaxGridX)
    return detail::grid_error(state.index, table_->variants[selected], grid, function->num_ctas);

  // 5. Scratch. 6. The parameters.
  detail::LaunchScratch scratch;
  if (Status status = detail::acquire_scratch(*api, state, selected, *function, grid, stream, &scratch); !status.ok())
    return status;
  detail::LaunchParams params;
  if (Status status = detail::launch_params(*api, state, selected, *function, args, &scratch, &params); !status.ok())
    return status;

  // 7. The observer, told before and after. 8. The launch call, and recovery when it fails.
  const detail::ObservedLaunch observed(*table_, choice, grid, stream, args, arg_count, handle());
  Status status;
  bool launch_again = false;
  CUresult result = detail::launch_function(*api, *function, grid[0], grid[1], grid[2], stream, params.data);
  if (result != CUDA_SUCCESS)
    status = detail::recover_launch(
        result, detail::LaunchAttempt{*api, state, selected, *function, grid, stream, params.data}, &function,
        &launch_again);
  if (launch_again) status = launch_any(stream, args, arg_count, selection, given_grid);
  else if (status.ok()) detail::record_launch(*function);
  return observed.end(std::move(status));
}

Status Kernel::preload() {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  // Where the functions go: the current context, or where HIP is the driver in use the current
  // HIP device (whose facts are always known).
  const hip::Api* hip_api = driver::loaded() == nullptr ? hip::in_use() : nullptr;
  const driver::Api* api = nullptr;
  detail::ContextRef context{};
  const detail::DeviceFacts* device = nullptr;
  if (hip_api != nullptr) {
    Expected<detail::HipPlace> place = detail::current_hip_place(*hip_api);
    if (!place.ok()) return std::move(place).take_status().with_context((*state)->index.qualified_name());
    context = place->ref;
    device = place->facts;
  } else {
    Expected<const driver::Api*> loaded = driver::get();
    if (!loaded.ok()) return std::move(loaded).take_status();
    api = *loaded;
    Expected<detail::ContextRef> current = detail::current_context(*api);
    if (!current.ok()) return std::move(current).take_status().with_context((*state)->index.qualified_name());
    context = *current;
    if ((*state)->index.device_aware()) {
      Expected<const detail::DeviceFacts*> facts = detail::device_facts(*api, context.handle);
      if (!facts.ok()) return std::move(facts).take_status().with_context((*state)->index.qualified_name());
      device = *facts;
    }
  }
  // Variants without an image for this device are left out (but one of them must have one).
  bool loaded_any = false;
  for (std::size_t v = 0; v < table_->variant_count; ++v) {
    const bool last = v + 1 == table_->variant_count;
    if (device != nullptr && detail::pick_image(table_->variants[v], *device) == nullptr && (loaded_any || !last))
      continue;
    Expected<detail::LoadedFunction*> loaded =
        hip_api != nullptr ? detail::hip_function_for(*hip_api, **state, v, detail::HipPlace{context, device})
                           : detail::function_for(*api, **state, *table_, v, context);
    if (!loaded.ok()) return std::move(loaded).take_status();
    loaded_any = true;
  }
  return Status();
}

Status Kernel::unload() {
  detail::KernelState* state = state_.load(std::memory_order_acquire);
  if (state == nullptr) return Status();
  const hip::Api* hip_api = driver::loaded() == nullptr ? hip::in_use() : nullptr;
  const driver::Api* api = nullptr;
  if (hip_api == nullptr) {
    Expected<const driver::Api*> loaded = driver::get();
    if (!loaded.ok()) return std::move(loaded).take_status();
    api = *loaded;
  }
  // The current context, or on HIP the current device.
  Expected<detail::ContextRef> context = [&]() -> Expected<detail::ContextRef> {
    if (hip_api == nullptr) return detail::current_context(*api);
    Expected<detail::HipPlace> place = detail::current_hip_place(*hip_api);
    if (!place.ok()) return std::move(place).take_status();
    return place->ref;
  }();
  if (!context.ok()) return std::move(context).take_status().with_context(state->index.qualified_name());
  std::lock_guard<std::mutex> lock(detail::ModuleCache::instance().mutex());
  Status first_failure;
  for (std::size_t v = 0; v < table_->variant_count; ++v) {
    std::atomic<detail::LoadedFunction*>& head = state->plans[v].functions;
    detail::LoadedFunction* kept = nullptr;
    detail::LoadedFunction* node = head.load(std::memory_order_acquire);
    while (node != nullptr) {
      detail::LoadedFunction* next = node->next;
      if (node->context_id == context->id) {
        Status status = hip_api != nullptr
                            ? detail::ModuleCache::instance().release(*hip_api, context->id, node->image->cubin)
                            : detail::ModuleCache::instance().release(*api, *context, node->image->cubin);
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
