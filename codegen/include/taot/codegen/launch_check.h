// The launch ABI is checked, never assumed: the parameters the runtime passes to an image (in the
// launch ABI its manifest entry records, by the definition the runtime packs with:
// taot/launch_abi.h) against the parameter table of the image's own cubin. `taot gen` refuses an
// image whose lists differ.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "taot/codegen/errors.h"
#include "taot/codegen/manifest.h"

namespace taot::codegen {

// The bytes of each kernel parameter a launch of `image` passes, in order: the variant's params
// (pointers 8 bytes, scalars their type's size, descriptors expanded in the image's launch ABI,
// with TMA maps where the image has tensordesc metadata), then the scratch pointers.
std::vector<std::uint32_t> launch_param_sizes(const Kernel& kernel, const Variant& variant, const Image& image);

// Checks the bytes of `image`'s cubin against launch_param_sizes. Fails naming the kernel, the
// variant, the target and both lists when they differ ("expected 24 parameters [8, 8, ...], the
// cubin has 22 [...]"), and when a CUDA ELF has no entry function `image.function_name` or no
// parameter table for it. Bytes that are no CUDA ELF the cubin reader can parse are not checked
// (the driver refuses them when the library loads them). Thread-safe.
Status check_launch_abi(const Kernel& kernel, const Variant& variant, const Image& image, std::string_view cubin);

}  // namespace taot::codegen
