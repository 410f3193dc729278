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
    info->target = image.target;
    info->arch = image.arch;
    info->arch_specific = image.arch_specific;
    info->cubin = image.cubin;
    info->cubin_size = image.cubin_size;
    info->function_name = image.function_name;
    info->shared_bytes = image.shared_bytes;
    info->num_warps = image.num_warps;
    info->num_ctas = image.num_ctas;
    std::memcpy(info->cluster_dims, image.cluster_dims, sizeof info->cluster_dims);
    info->global_scratch_size = image.global_scratch_size;
    info->profile_scratch_size = image.profile_scratch_size;
    info->cooperative = image.cooperative;
    info->pdl = image.pdl;
    info->registers = image.registers;
    info->spill_stores = image.spill_stores;
    info->spill_loads = image.spill_loads;
    info->stack_bytes = image.stack_bytes;
    info->override_stage = image.override_stage;
    info->override_sha256 = image.override_sha256;
    info->triton_version = image.triton_version;
    info->ptxas_version = image.ptxas_version;
    info->tensordesc_layout = taot::abi::tensordesc_layout_name(image.tensordesc_layout);
    info->min_driver = taot::toolchain::min_driver_for_ptxas(image.ptxas_version);
    return taot::Status();
  });
}

}  // extern "C"
