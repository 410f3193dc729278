// taot::Library: a generated library's kernels, for tools that walk it, and its C ABI.
#include <cstring>
#include <string>
#include <utility>

#include "c_api_errors.h"
#include "taot/runtime.h"
#include "taot/toolchain.h"

namespace taot {

Kernel* Library::find(std::string_view name) const noexcept {
  for (std::size_t k = 0; k < kernel_count_; ++k)
    if (name == kernels_[k]->table().name) return kernels_[k];
  return nullptr;
}

namespace {
// Calls `(kernel.*step)()` on every kernel; the first error, after all have been tried.
Status on_every_kernel(Kernel* const* kernels, std::size_t count, Status (Kernel::*step)()) {
  Status first_error;
  for (std::size_t k = 0; k < count; ++k)
    if (Status status = (kernels[k]->*step)(); !status.ok() && first_error.ok()) first_error = std::move(status);
  return first_error;
}
}  // namespace

Status Library::preload() const { return on_every_kernel(kernels_, kernel_count_, &Kernel::preload); }

Status Library::unload() const { return on_every_kernel(kernels_, kernel_count_, &Kernel::unload); }

}  // namespace taot

// taot_image_info has a member for each member of table::Image the list gives it (copy or own);
// those marked own are filled by hand in taot_kernel_image.
#define TAOT_IMAGE_INFO_HAS_copy(field) static_assert(sizeof(taot_image_info::field) > 0);
#define TAOT_IMAGE_INFO_HAS_own(field) static_assert(sizeof(taot_image_info::field) > 0);
#define TAOT_IMAGE_INFO_HAS_none(field)
#define TAOT_IMAGE_INFO_HAS(field, type, manifest_key, info, python, compare) TAOT_IMAGE_INFO_HAS_##info(field)
TAOT_IMAGE_FIELDS(TAOT_IMAGE_INFO_HAS)
#undef TAOT_IMAGE_INFO_HAS
#undef TAOT_IMAGE_INFO_HAS_copy
#undef TAOT_IMAGE_INFO_HAS_own
#undef TAOT_IMAGE_INFO_HAS_none

extern "C" {

uint32_t taot_library_abi_version(const taot_library* handle) {
  return handle == nullptr ? 0 : taot::Library::from_handle(handle)->abi_version();
}

const char* taot_library_name(const taot_library* handle) {
  return handle == nullptr ? "" : taot::Library::from_handle(handle)->name();
}

size_t taot_library_kernel_count(const taot_library* handle) {
  return handle == nullptr ? 0 : taot::Library::from_handle(handle)->kernel_count();
}

taot_kernel* taot_library_kernel(const taot_library* handle, size_t kernel_index) {
  if (handle == nullptr) return nullptr;
  const taot::Library& library = *taot::Library::from_handle(handle);
  return kernel_index < library.kernel_count() ? library.kernel(kernel_index).handle() : nullptr;
}

taot_kernel* taot_library_find_kernel(const taot_library* handle, const char* name) {
  if (handle == nullptr || name == nullptr) return nullptr;
  taot::Kernel* kernel = taot::Library::from_handle(handle)->find(name);
  return kernel == nullptr ? nullptr : kernel->handle();
}

size_t taot_kernel_image_count(const taot_kernel* handle, size_t variant_index) {
  if (handle == nullptr) return 0;
  const taot::table::KernelTable& table = taot::Kernel::from_handle(const_cast<taot_kernel*>(handle))->table();
  return variant_index < table.variant_count ? table.variants[variant_index].image_count : 0;
}

taot_status taot_kernel_image(const taot_kernel* handle, size_t variant_index, size_t image_index,
                              taot_image_info* info) {
  return taot::detail::guarded([&]() -> taot::Status {
    if (handle == nullptr) return taot::detail::null_kernel();
    const taot::table::KernelTable& table = taot::Kernel::from_handle(const_cast<taot_kernel*>(handle))->table();
    const std::string name = std::string(table.library) + "::" + table.name;
    if (info == nullptr) return taot::Status::error(TAOT_INVALID_ARGUMENT, name + ": taot_kernel_image's info is null");
    if (variant_index >= table.variant_count)
      return taot::Status::error(TAOT_INVALID_ARGUMENT, name + ": variant " + std::to_string(variant_index) +
                                                            " is past the last (" + std::to_string(table.variant_count) +
                                                            " variants)");
    const taot::table::Variant& variant = table.variants[variant_index];
    if (image_index >= variant.image_count)
      return taot::Status::error(TAOT_INVALID_ARGUMENT, name + ": variant " + variant.id + " has " +
                                                            std::to_string(variant.image_count) + " images, not " +
                                                            std::to_string(image_index + 1));
    const taot::table::Image& image = variant.images[image_index];
    *info = taot_image_info{};
    // The members the list marks copy; those it marks own need converting, and are filled below.
#define TAOT_IMAGE_INFO_copy(field) info->field = image.field;
#define TAOT_IMAGE_INFO_own(field)
#define TAOT_IMAGE_INFO_none(field)
#define TAOT_IMAGE_INFO_FILL(field, type, manifest_key, info, python, compare) TAOT_IMAGE_INFO_##info(field)
    TAOT_IMAGE_FIELDS(TAOT_IMAGE_INFO_FILL)
#undef TAOT_IMAGE_INFO_FILL
#undef TAOT_IMAGE_INFO_copy
#undef TAOT_IMAGE_INFO_own
#undef TAOT_IMAGE_INFO_none
    std::memcpy(info->cluster_dims, image.cluster_dims, sizeof info->cluster_dims);
    info->tensordesc_layout = taot::abi::tensordesc_layout_name(image.tensordesc_layout);
    info->min_driver = taot::toolchain::min_driver_for_ptxas(image.ptxas_version);
    info->vendor = taot::table::vendor_name(image.vendor);
    return taot::Status();
  });
}

}  // extern "C"
