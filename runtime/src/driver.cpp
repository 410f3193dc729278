// Resolves the driver table from libcuda.so.1 with dlopen, once per process.
#include "taot/driver_api.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "context_state.h"
#include "taot/hip_api.h"

namespace taot::driver {
namespace {

std::atomic<const Api*> installed_api{nullptr};

struct Loaded {
  Api api;
  Status failure;  // ok when api is usable
};

Loaded load_real_driver() {
  Loaded loaded;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    loaded.failure = Status::error(
        TAOT_NO_DRIVER, std::string("cannot load the CUDA driver libcuda.so.1 (") +
                            (reason ? reason : "unknown reason") +
                            "); is the NVIDIA driver installed and this a GPU machine?");
    return loaded;
  }
#define TAOT_RESOLVE_REQUIRED(name, symbol)                                                          \
  loaded.api.name = reinterpret_cast<decltype(&::name)>(dlsym(library, symbol));                     \
  if (loaded.api.name == nullptr) {                                                                  \
    loaded.failure = Status::error(TAOT_NO_DRIVER, std::string("the CUDA driver libcuda.so.1 has no ") \
                                                       + symbol + "; the driver is too old");         \
    return loaded;                                                                                   \
  }
  TAOT_DRIVER_REQUIRED(TAOT_RESOLVE_REQUIRED)
#undef TAOT_RESOLVE_REQUIRED
#define TAOT_RESOLVE_OPTIONAL(name, symbol) \
  loaded.api.name = reinterpret_cast<decltype(&::name)>(dlsym(library, symbol));
  TAOT_DRIVER_OPTIONAL(TAOT_RESOLVE_OPTIONAL)
#undef TAOT_RESOLVE_OPTIONAL
  const CUresult init = loaded.api.cuInit(0);
  if (init != CUDA_SUCCESS) loaded.failure = call_error(loaded.api, "cuInit", init);
  return loaded;
}

}  // namespace

Expected<const Api*> get() {
  if (const Api* api = active_api.load(std::memory_order_acquire)) return api;
  if (const Api* api = installed_api.load(std::memory_order_acquire)) return api;
  if (hip::installed_for_testing() != nullptr)
    return Status::error(TAOT_NO_DRIVER, "a HIP table is installed for testing: HIP is the driver in use");
  static const Loaded real = load_real_driver();
  if (!real.failure.ok()) return Status::error(real.failure.code(), real.failure.message(), real.failure.cuda_result());
  active_api.store(&real.api, std::memory_order_release);
  return &real.api;
}

const Api* installed_for_testing() noexcept { return installed_api.load(std::memory_order_acquire); }

void install_for_testing(const Api* api) {
  generation.fetch_add(1, std::memory_order_acq_rel);
  installed_api.store(api, std::memory_order_release);
  active_api.store(api, std::memory_order_release);
}

Status call_error(const Api& api, const char* call, CUresult result) {
  const char* name = nullptr;
  const char* description = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  std::string message = std::string(call) + " failed: " +
                        (name ? name : "CUDA error " + std::to_string(static_cast<int>(result)));
  if (description) message += std::string(" (") + description + ")";
  if (result == CUDA_ERROR_ASSERT) message += ": " + detail::device_assert_note(api);
  return Status::error(TAOT_CUDA_ERROR, std::move(message), static_cast<int>(result));
}

}  // namespace taot::driver
