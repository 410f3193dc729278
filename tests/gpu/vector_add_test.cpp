// GPU test: every variant of the vector_add example against a CPU reference, for n in
// {1, 17, 1024, 2^20+3} (and multiples of 16 for %16 variants), aligned and misaligned pointers,
// fp32/fp16/bf16; then automatic and exact-config dispatch. Ends with "N passed, N failed".
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gpu_check.h"
#include "vector_add.h"
#include "vector_add_c.h"

namespace {

int passed = 0, failed = 0;

struct DtypeCase {
  taot::DType dtype;
  std::size_t element_size;
};

// Host values as float, device encoding as raw bits.
std::uint32_t encode(taot::DType dtype, float value) {
  switch (dtype) {
    case taot::DType::fp16: return float_to_fp16(value);
    case taot::DType::bf16: return float_to_bf16(value);
    default: return float_to_bits(value);
  }
}
float decode(taot::DType dtype, std::uint32_t bits) {
  switch (dtype) {
    case taot::DType::fp16: return fp16_to_float(static_cast<std::uint16_t>(bits));
    case taot::DType::bf16: return bf16_to_float(static_cast<std::uint16_t>(bits));
    default: return bits_to_float(bits);
  }
}

struct Buffers {
  std::size_t capacity;  // elements, including slack for offsets and guards
  std::size_t element_size;
  CUdeviceptr x = 0, y = 0, out = 0;
  std::vector<unsigned char> host_x, host_y;
};

std::vector<unsigned char> random_values(taot::DType dtype, std::size_t count, std::size_t element_size,
                                         std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<unsigned char> bytes(count * element_size);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t bits = encode(dtype, dist(rng));
    std::memcpy(&bytes[i * element_size], &bits, element_size);
  }
  return bytes;
}

std::uint32_t load_bits(const unsigned char* data, std::size_t index, std::size_t element_size) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, data + index * element_size, element_size);
  return bits;
}

// Runs one launch through `launch` and compares out[offset, offset+n) with x+y; elements just
// before and after must keep the poison pattern. Returns an empty string when right.
template <class Launch>
std::string run_case(const Buffers& buffers, taot::DType dtype, const std::size_t offsets[3], std::size_t n,
                     Launch&& launch) {
  const std::size_t element_size = buffers.element_size;
  const std::size_t window = n + 2 * 16;  // 16 guard elements on each side of the output
  GPU_CHECK(cuMemsetD8(buffers.out, 0xff, buffers.capacity * element_size));
  const CUdeviceptr x = buffers.x + offsets[0] * element_size;
  const CUdeviceptr y = buffers.y + offsets[1] * element_size;
  const CUdeviceptr out = buffers.out + (16 + offsets[2]) * element_size;
  taot::Status status = launch(taot::Ptr(x, dtype), taot::Ptr(y, dtype), taot::Ptr(out, dtype), static_cast<std::int32_t>(n));
  if (!status.ok()) return "launch failed: " + status.message();
  GPU_CHECK(cuCtxSynchronize());
  std::vector<unsigned char> result(window * element_size);
  GPU_CHECK(cuMemcpyDtoH(result.data(), buffers.out + offsets[2] * element_size, result.size()));
  const std::uint32_t poison = element_size == 4 ? 0xffffffffu : 0xffffu;
  for (std::size_t i = 0; i < window; ++i) {
    const std::uint32_t got = load_bits(result.data(), i, element_size);
    if (i < 16 || i >= 16 + n) {
      if (got != poison) return "wrote outside the output at guard element " + std::to_string(i);
      continue;
    }
    const std::size_t e = i - 16;
    const float a = decode(dtype, load_bits(buffers.host_x.data(), offsets[0] + e, element_size));
    const float b = decode(dtype, load_bits(buffers.host_y.data(), offsets[1] + e, element_size));
    const float expected = decode(dtype, encode(dtype, a + b));
    const float actual = decode(dtype, got);
    const float ulp = dtype == taot::DType::fp32 ? 0.0f : std::fabs(expected) * (dtype == taot::DType::bf16 ? 1.0f / 128 : 1.0f / 1024);
    if (!(std::fabs(actual - expected) <= ulp))
      return "element " + std::to_string(e) + ": got " + std::to_string(actual) + ", expected " + std::to_string(expected);
  }
  return "";
}

void record(const std::string& name, const std::string& problem) {
  if (problem.empty()) {
    ++passed;
  } else {
    ++failed;
    std::printf("FAIL %s: %s\n", name.c_str(), problem.c_str());
  }
}

}  // namespace

int main() {
  make_primary_context_current(0);
  CUstream stream;
  GPU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::mt19937 rng(1234);
  const std::size_t max_n = (1u << 20) + 16;
  const std::size_t capacity = max_n + 64;
  const DtypeCase dtypes[] = {{taot::DType::fp32, 4}, {taot::DType::fp16, 2}, {taot::DType::bf16, 2}};
  const taot::VariantList variants = vector_add::add_kernel_variants();
  std::printf("vector_add: %zu variants\n", variants.size());

  for (const DtypeCase& dtype_case : dtypes) {
    Buffers buffers{capacity, dtype_case.element_size};
    GPU_CHECK(cuMemAlloc(&buffers.x, capacity * buffers.element_size));
    GPU_CHECK(cuMemAlloc(&buffers.y, capacity * buffers.element_size));
    GPU_CHECK(cuMemAlloc(&buffers.out, (capacity + 32) * buffers.element_size));
    buffers.host_x = random_values(dtype_case.dtype, capacity, buffers.element_size, rng);
    buffers.host_y = random_values(dtype_case.dtype, capacity, buffers.element_size, rng);
    GPU_CHECK(cuMemcpyHtoD(buffers.x, buffers.host_x.data(), buffers.host_x.size()));
    GPU_CHECK(cuMemcpyHtoD(buffers.y, buffers.host_y.data(), buffers.host_y.size()));
    const char* dtype_name = taot::dtype_name(dtype_case.dtype);

    // Every variant of this dtype, through exact variant selection.
    for (taot::VariantInfo info : variants) {
      const auto& spec = info.data().specialization;
      if (spec[0].type != static_cast<taot_dtype>(dtype_case.dtype)) continue;
      const std::uint8_t n_hint = spec[3].hint;
      std::vector<std::size_t> sizes = n_hint == 16 ? std::vector<std::size_t>{16, 1024, max_n}
                                                    : std::vector<std::size_t>{1, 17, 1024, (1u << 20) + 3};
      for (int misaligned = 0; misaligned < 2; ++misaligned) {
        std::size_t offsets[3];
        bool any_misaligned = false;
        for (int p = 0; p < 3; ++p) {
          offsets[p] = (misaligned && spec[p].hint == 0) ? 1 : 0;
          any_misaligned |= offsets[p] != 0;
        }
        if (misaligned && !any_misaligned) continue;
        for (std::size_t n : sizes) {
          const std::string problem = run_case(buffers, dtype_case.dtype, offsets, n, [&](auto x, auto y, auto out, std::int32_t count) {
            return vector_add::add_kernel_variant(info.index(), stream, x, y, out, count);
          });
          record(std::string(info.id()) + (misaligned ? " misaligned" : " aligned") + " n=" + std::to_string(n), problem);
        }
      }
    }

    // Automatic dispatch and exact configs over offsets 0..3 per pointer.
    const std::size_t sizes[] = {1, 17, 1024, (1u << 20) + 3};
    for (int pattern = 0; pattern < 8; ++pattern) {
      const std::size_t offsets[3] = {static_cast<std::size_t>(pattern & 1) * 3, static_cast<std::size_t>((pattern >> 1) & 1),
                                      static_cast<std::size_t>((pattern >> 2) & 1) * 2};
      for (std::size_t n : sizes) {
        record(std::string("auto ") + dtype_name + " pattern " + std::to_string(pattern) + " n=" + std::to_string(n),
               run_case(buffers, dtype_case.dtype, offsets, n, [&](auto x, auto y, auto out, std::int32_t count) {
                 return vector_add::add_kernel(stream, x, y, out, count);
               }));
        vector_add::add_kernel_config config;
        config.BLOCK_SIZE = 256;
        config.num_warps = 8;
        record(std::string("config ") + dtype_name + " pattern " + std::to_string(pattern) + " n=" + std::to_string(n),
               run_case(buffers, dtype_case.dtype, offsets, n, [&](auto x, auto y, auto out, std::int32_t count) {
                 return vector_add::add_kernel(stream, x, y, out, count, config);
               }));
      }
    }
    // The C ABI: the typed entry point (automatic) and taot_launch with an exact config.
    const auto c_status = [](taot_status code) {
      return code == TAOT_OK ? taot::Status() : taot::Status::error(code, taot_last_error());
    };
    const auto c_ptr = [](taot::Ptr pointer) { return taot_ptr{pointer.address(), static_cast<std::int32_t>(pointer.dtype())}; };
    for (std::size_t n : sizes) {
      const std::size_t offsets[3] = {1, 0, 1};
      record(std::string("C entry ") + dtype_name + " n=" + std::to_string(n),
             run_case(buffers, dtype_case.dtype, offsets, n, [&](auto x, auto y, auto out, std::int32_t count) {
               return c_status(vector_add_add_kernel(stream, c_ptr(x), c_ptr(y), c_ptr(out), count));
             }));
      record(std::string("C taot_launch config ") + dtype_name + " n=" + std::to_string(n),
             run_case(buffers, dtype_case.dtype, offsets, n, [&](auto x, auto y, auto out, std::int32_t count) {
               const taot_arg args[] = {taot::arg(x), taot::arg(y), taot::arg(out), taot::arg(count)};
               const taot_config_value config[] = {{"BLOCK_SIZE", 256, 0.0}, {"num_warps", 4, 0.0}};
               return c_status(taot_launch(vector_add_add_kernel_handle(), stream, args, 4, config, 2));
             }));
      // Through the registry, as a tool that knows only the library would: the kernel found by name,
      // launched by the C API.
      record(std::string("registry taot_library_find_kernel ") + dtype_name + " n=" + std::to_string(n),
             run_case(buffers, dtype_case.dtype, offsets, n, [&](auto x, auto y, auto out, std::int32_t count) {
               const taot_arg args[] = {taot::arg(x), taot::arg(y), taot::arg(out), taot::arg(count)};
               taot_kernel* kernel = taot_library_find_kernel(vector_add_library(), "add_kernel");
               if (kernel == nullptr) return taot::Status::error(TAOT_INVALID_ARGUMENT, "add_kernel not in the registry");
               return c_status(taot_launch(kernel, stream, args, 4, nullptr, 0));
             }));
    }
    GPU_CHECK(cuMemFree(buffers.x));
    GPU_CHECK(cuMemFree(buffers.y));
    GPU_CHECK(cuMemFree(buffers.out));
  }

  // The registry: the library's name and ABI version, and every image of every variant that this
  // device runs (a cubin runs on its own major architecture, at or above its minor; an arch-specific
  // one only on its own) loads and names its function, with the registers ptxas reported.
  const taot_library* library = vector_add_library();
  record("registry ABI version and name",
         taot_library_abi_version(library) == TAOT_ABI_VERSION && std::string(taot_library_name(library)) == "vector_add" &&
                 taot_library_kernel_count(library) == 1
             ? ""
             : "unexpected registry header");
  std::size_t images_checked = 0;
  std::string image_problem;
  CUdevice device;
  GPU_CHECK(cuCtxGetDevice(&device));
  int major = 0, minor = 0;
  GPU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  GPU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  const unsigned arch = static_cast<unsigned>(major * 10 + minor);
  taot_kernel* registered = taot_library_kernel(library, 0);
  for (std::size_t v = 0; v < taot_kernel_variant_count(registered); ++v) {
    for (std::size_t i = 0; i < taot_kernel_image_count(registered, v); ++i) {
      taot_image_info info;
      if (taot_kernel_image(registered, v, i, &info) != TAOT_OK) {
        image_problem = taot_last_error();
        continue;
      }
      const bool runs_here = info.arch_specific ? info.arch == arch : info.arch / 10 == arch / 10 && info.arch <= arch;
      if (!runs_here) continue;
      CUmodule module;
      CUfunction function;
      if (cuModuleLoadData(&module, info.cubin) != CUDA_SUCCESS ||
          cuModuleGetFunction(&function, module, info.function_name) != CUDA_SUCCESS) {
        image_problem = std::string("image ") + info.target + " of " + taot_kernel_variant_id(registered, v) + " does not load";
        continue;
      }
      int registers = 0;
      GPU_CHECK(cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function));
      if (info.registers != 0 && static_cast<unsigned>(registers) != info.registers)
        image_problem = std::string(taot_kernel_variant_id(registered, v)) + ": registry says " +
                        std::to_string(info.registers) + " registers, the driver " + std::to_string(registers);
      GPU_CHECK(cuModuleUnload(module));
      ++images_checked;
    }
  }
  std::printf("registry: %zu images for sm_%u loaded through it\n", images_checked, arch);
  record("registry images load, registers as the driver reports",
         images_checked == 0 ? "no image of the registry runs on this device" : image_problem);

  // A dtype that was not compiled is an error naming the argument, not a launch.
  CUdeviceptr scratch;
  GPU_CHECK(cuMemAlloc(&scratch, 4096));
  taot::Status wrong = vector_add::add_kernel(stream, taot::Ptr(scratch, taot::DType::fp64),
                                              taot::Ptr(scratch, taot::DType::fp64), taot::Ptr(scratch, taot::DType::fp64), 16);
  record("fp64 is refused by name",
         wrong.code() == TAOT_NO_MATCHING_VARIANT && wrong.message().find("x_ptr = fp64 pointer") != std::string::npos
             ? ""
             : "got: " + wrong.message());
  // An empty grid launches nothing and succeeds.
  record("n = 0 launches nothing", vector_add::add_kernel(stream, taot::Ptr(scratch, taot::DType::fp32),
                                                          taot::Ptr(scratch, taot::DType::fp32),
                                                          taot::Ptr(scratch, taot::DType::fp32), 0)
                                           .ok()
                                       ? ""
                                       : "n = 0 failed");
  GPU_CHECK(cuMemFree(scratch));
  GPU_CHECK(cuStreamDestroy(stream));
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
