// The C ABI of run-time tuned tables (taot_kernel_load_tuning, taot_kernel_reset_tuning) over
// Kernel::load_tuning and Kernel::reset_tuning.
#include <string>
#include <string_view>

#include "c_api_errors.h"
#include "taot/c_api.h"
#include "taot/runtime.h"

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

}  // extern "C"
