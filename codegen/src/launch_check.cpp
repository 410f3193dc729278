// Checking cubins' parameter lists against the launch ABI; see launch_check.h.
#include "taot/codegen/launch_check.h"

#include <fmt/format.h>

#include <string>

#include "arg_kinds.h"
#include "taot/codegen/cubin.h"

namespace taot::codegen {
namespace {

// "[8, 8, 1]"
std::string sizes_text(const std::vector<std::uint32_t>& sizes) {
  std::string text;
  for (std::uint32_t size : sizes) text += (text.empty() ? "" : ", ") + std::to_string(size);
  return "[" + text + "]";
}

}  // namespace

std::vector<std::uint32_t> launch_param_sizes(const Kernel& kernel, const Variant& variant, const Image& image) {
  const std::vector<std::size_t> call_args = kernel.call_arguments();
  const bool with_map = !image.tensordesc_meta.empty();
  std::vector<std::uint32_t> sizes;
  for (std::size_t param : variant.params) {
    const Arg& arg = kernel.args[call_args[param]];
    detail::arg_kind_rules(arg.kind).param_sizes(arg, variant.specialization[param], image.launch_abi, with_map, sizes);
  }
  for (std::size_t p = 0; p < image.launch_abi.scratch_pointers; ++p)
    sizes.push_back(static_cast<std::uint32_t>(abi::kPointerBytes));
  return sizes;
}

Status check_launch_abi(const Kernel& kernel, const Variant& variant, const Image& image, std::string_view cubin) {
  Expected<CubinInfo> info = read_cubin(cubin, image.cubin_path.generic_string());
  if (!info.ok()) return Status();
  const std::string where = fmt::format("kernel {} variant {} target {} ({})", kernel.name, variant.id, image.target,
                                        image.cubin_path.generic_string());
  const FunctionResources* function = info->find(image.function_name);
  if (function == nullptr || !function->entry)
    return input_error(fmt::format("{}: the cubin has no kernel {}", where, image.function_name));
  if (function->params.empty())
    return input_error(fmt::format("{}: the cubin records no parameters for kernel {} (no EIATTR_KPARAM_INFO)", where,
                                   image.function_name));
  std::vector<std::uint32_t> found;
  for (const KernelParam& param : function->params) {
    if (param.ordinal != found.size())
      return input_error(fmt::format("{}: the cubin's parameter table has no parameter {}", where, found.size()));
    found.push_back(param.size);
  }
  const std::vector<std::uint32_t> expected = launch_param_sizes(kernel, variant, image);
  if (found == expected) return Status();
  const std::string triton = image.triton_version.empty() ? "an unrecorded Triton" : "Triton " + image.triton_version;
  return input_error(fmt::format(
      "{}: the cubin does not take the parameters the runtime passes in the launch ABI the manifest records for it "
      "({}: tensor descriptor layout {}, {} scratch pointers): expected {} parameters {}, the cubin has {} {}; was it "
      "compiled by another Triton release? Compile it again (taot build)",
      where, triton, abi::tensordesc_layout_name(image.launch_abi.tensordesc_layout),
      image.launch_abi.scratch_pointers, expected.size(), sizes_text(expected), found.size(), sizes_text(found)));
}

}  // namespace taot::codegen
