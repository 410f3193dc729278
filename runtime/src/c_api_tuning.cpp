// The C ABI of run-time tuned tables (taot_kernel_load_tuning, taot_kernel_reset_tuning) over
// Kernel::load_tuning and Kernel::reset_tuning, and of first-call autotuning over taot::set_autotune,
// taot::set_autotune_dir and Kernel's set_autotune and reset_autotune (taot_kernel_warmup is in c_api.cpp,
// beside taot_launch_ex, whose options it takes).
#include <optional>
#include <string>
#include <string_view>

#include "c_api_errors.h"
#include "taot/c_api.h"
#include "taot/runtime.h"

namespace {
// A C switch: -1 none (the next level's), 0 off, 1 (any other) on.
std::optional<bool> switch_of(int mode) { return mode < 0 ? std::nullopt : std::optional<bool>(mode != 0); }
}  // namespace

extern "C" {

taot_status taot_kernel_load_tuning(taot_kernel* handle, const char* path, const char* device) {
  return taot::detail::guarded([&]() -> taot::Status {
    if (handle == nullptr) return taot::detail::null_kernel();
    taot::Kernel& kernel = *taot::Kernel::from_handle(handle);
    if (path == nullptr)
      return taot::Status::error(TAOT_INVALID_ARGUMENT, std::string(kernel.table().library) + "::" +
                                                            kernel.table().name + ": the tuning file's path is null");
    return kernel.load_tuning(path, device != nullptr ? std::string_view(device) : std::string_view());
  });
}

taot_status taot_kernel_reset_tuning(taot_kernel* handle) {
  return taot::detail::guarded([&]() -> taot::Status {
    return handle == nullptr ? taot::detail::null_kernel() : taot::Kernel::from_handle(handle)->reset_tuning();
  });
}

void taot_set_autotune(int mode) { taot::set_autotune(switch_of(mode)); }

taot_status taot_set_autotune_dir(const char* path) {
  return taot::detail::guarded([&]() -> taot::Status {
    taot::set_autotune_dir(path != nullptr ? path : "");
    return taot::Status();
  });
}

taot_status taot_kernel_set_autotune(taot_kernel* handle, int mode) {
  return taot::detail::guarded([&]() -> taot::Status {
    return handle == nullptr ? taot::detail::null_kernel() : taot::Kernel::from_handle(handle)->set_autotune(switch_of(mode));
  });
}

taot_status taot_kernel_reset_autotune(taot_kernel* handle) {
  return taot::detail::guarded([&]() -> taot::Status {
    return handle == nullptr ? taot::detail::null_kernel() : taot::Kernel::from_handle(handle)->reset_autotune();
  });
}

}  // extern "C"
