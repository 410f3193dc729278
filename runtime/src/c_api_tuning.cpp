// The C ABI of run-time tuned tables (taot_kernel_load_tuning, taot_kernel_reset_tuning) over
// Kernel::load_tuning and Kernel::reset_tuning, and of first-call autotuning over taot::set_autotune,
// taot::set_autotune_dir and Kernel's set_autotune, warmup and reset_autotune.
#include <optional>
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

namespace {
std::optional<bool> switch_of(int mode) { return mode < 0 ? std::nullopt : std::optional<bool>(mode != 0); }
}  // namespace

void taot_set_autotune(int mode) { taot::set_autotune(switch_of(mode)); }

void taot_set_autotune_dir(const char* path) { taot::set_autotune_dir(path != nullptr ? path : ""); }

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

taot_status taot_kernel_warmup(taot_kernel* handle, CUstream stream, const taot_arg* args, size_t arg_count,
                               size_t* variant_index, taot_step* step) {
  return taot::detail::guarded([&]() -> taot::Status {
    if (handle == nullptr) return taot::detail::null_kernel();
    taot::Expected<taot::Choice> choice = taot::Kernel::from_handle(handle)->warmup(stream, args, arg_count);
    if (!choice.ok()) return std::move(choice).take_status();
    if (variant_index != nullptr) *variant_index = choice->variant;
    if (step != nullptr) *step = static_cast<taot_step>(choice->step);
    return taot::Status();
  });
}

}  // extern "C"
