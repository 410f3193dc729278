// Resolves the HIP table from libamdhip64 with dlopen, once per process; decides which driver
// launches use (hip::in_use).
#include "taot/hip_api.h"

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "taot/driver_api.h"

namespace taot::hip {
namespace {

std::atomic<const Api*> installed_api{nullptr};

struct Loaded {
  Api api;
  Status failure;  // ok when api is usable
  bool found = false;  // libamdhip64 was loaded (a failure is then the runtime's own)
};

Loaded load_real_runtime() {
  Loaded loaded;
  void* library = nullptr;
  std::string reasons;
  for (const char* name : {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6"}) {
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    const char* reason = dlerror();
    reasons += std::string(reasons.empty() ? "" : "; ") + (reason ? reason : name);
  }
  if (library == nullptr) {
    loaded.failure = Status::error(TAOT_NO_DRIVER, "cannot load the HIP runtime libamdhip64.so (" + reasons +
                                                       "); is ROCm installed and this an AMD GPU machine?");
    return loaded;
  }
  loaded.found = true;
#define TAOT_RESOLVE_REQUIRED(name)                                                                    \
  loaded.api.name = reinterpret_cast<name##_t>(dlsym(library, #name));                                 \
  if (loaded.api.name == nullptr) {                                                                    \
    loaded.failure = Status::error(TAOT_NO_DRIVER, "the HIP runtime libamdhip64 has no " #name         \
                                                   "; taot needs HIP 6.0 or newer");                   \
    return loaded;                                                                                     \
  }
  TAOT_HIP_REQUIRED(TAOT_RESOLVE_REQUIRED)
#undef TAOT_RESOLVE_REQUIRED
#define TAOT_RESOLVE_OPTIONAL(name) loaded.api.name = reinterpret_cast<name##_t>(dlsym(library, #name));
  TAOT_HIP_OPTIONAL(TAOT_RESOLVE_OPTIONAL)
#undef TAOT_RESOLVE_OPTIONAL
  const hipError_t init = loaded.api.hipInit(0);
  if (init != hipSuccess) loaded.failure = call_error(loaded.api, "hipInit", init);
  return loaded;
}

const Loaded& real_runtime() {
  static const Loaded real = load_real_runtime();
  return real;
}

}  // namespace

Expected<const Api*> get() {
  if (const Api* api = installed_api.load(std::memory_order_acquire)) return api;
  const Loaded& real = real_runtime();
  if (!real.failure.ok()) return Status::error(real.failure.code(), real.failure.message(), real.failure.cuda_result());
  return &real.api;
}

Status unusable_runtime() {
  const Loaded& real = real_runtime();
  if (!real.found || real.failure.ok()) return Status();
  return Status::error(real.failure.code(), real.failure.message(), real.failure.cuda_result());
}

void install_for_testing(const Api* api) {
  generation.fetch_add(1, std::memory_order_acq_rel);
  driver::generation.fetch_add(1, std::memory_order_acq_rel);  // device facts are asked again
  installed_api.store(api, std::memory_order_release);
  // A real CUDA driver loaded earlier would otherwise be the one in use (a CUDA fake still is).
  if (api != nullptr && driver::installed_for_testing() == nullptr)
    driver::active_api.store(nullptr, std::memory_order_release);
}

const Api* installed_for_testing() noexcept { return installed_api.load(std::memory_order_acquire); }

const Api* in_use() {
  if (driver::loaded() != nullptr) return nullptr;  // CUDA's table is known: CUDA launches
  if (const Api* installed = installed_for_testing()) return installed;
  // Both real libraries' outcomes are remembered by their get(): decided once.
  static const Api* const real = []() -> const Api* {
    if (driver::get().ok()) return nullptr;
    Expected<const Api*> api = get();
    return api.ok() ? *api : nullptr;
  }();
  return real;
}

Status call_error(const Api& api, const char* call, hipError_t result) {
  const char* name = api.hipGetErrorName != nullptr ? api.hipGetErrorName(result) : nullptr;
  const char* description = api.hipGetErrorString != nullptr ? api.hipGetErrorString(result) : nullptr;
  std::string message = std::string(call) + " failed: " + (name ? name : "HIP error " + std::to_string(result));
  if (description) message += std::string(" (") + description + ")";
  return Status::error(TAOT_CUDA_ERROR, std::move(message), result);
}

Expected<std::string> device_gfx_name(const Api& api, hipDevice_t device) {
  std::vector<char> properties(kDevicePropertiesBytes, 0);
  const hipError_t result = api.hipGetDevicePropertiesR0600(properties.data(), device);
  if (result != hipSuccess) return call_error(api, "hipGetDevicePropertiesR0600", result);
  const char* name = properties.data() + kGcnArchNameOffset;
  const std::size_t length = strnlen(name, kGcnArchNameBytes);
  if (length == kGcnArchNameBytes || std::strncmp(name, "gfx", 3) != 0)
    return Status::error(TAOT_INTERNAL, "hipGetDevicePropertiesR0600 gave device " + std::to_string(device) +
                                            " no gfx name at gcnArchName's offset (" +
                                            std::to_string(kGcnArchNameOffset) +
                                            "): the HIP runtime's hipDeviceProp_tR0600 is not the layout taot knows");
  std::string gfx(name, length);
  return gfx.substr(0, gfx.find(':'));
}

}  // namespace taot::hip
