// CPU cost per launch from C++, side by side: taot's generated API (dispatching among all
// variants), the same kernel with launch-time rules (two heuristics, a requirement and a 20-entry
// tuned table, so that every launch walks the table step), a raw cuLaunchKernel of the same
// preloaded function, the two floors under a launcher that must find the current context's
// function (the raw launch after cuCtxGetCurrent; a context-independent CUkernel from cuLibrary*),
// and (when built with it) the C that upstream triton.tools.compile +
// triton.tools.link generate for the same kernel and config.
// Launches are timed in batches of 256 right after a sync, below the stream's queue depth, so the
// CPU is what is measured. Prints a table, then the launch path's pieces timed alone.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "gpu_check.h"
#include "ruled_add_kernel.h"
#include "vector_add.h"
#ifdef TAOT_HAVE_UPSTREAM
extern "C" {
#include "add_up_linked.h"
}
#endif

namespace {

constexpr int kBatch = 256;
constexpr int kRounds = 400;

struct Method {
  std::string name;
  std::function<void()> launch;
  std::vector<double> per_launch_us;
};

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

}  // namespace

int main() {
  make_primary_context_current(0);
  CUstream stream;
  GPU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::int32_t n = 1024;
  CUdeviceptr x, y, out;
  GPU_CHECK(cuMemAlloc(&x, n * 4));
  GPU_CHECK(cuMemAlloc(&y, n * 4));
  GPU_CHECK(cuMemAlloc(&out, n * 4));

  // The variant taot picks by default for these arguments; the raw launch uses its very cubin.
  const taot_arg args[] = {taot::arg(taot::Ptr(x, taot::DType::fp32)), taot::arg(taot::Ptr(y, taot::DType::fp32)),
                           taot::arg(taot::Ptr(out, taot::DType::fp32)), taot::arg(n)};
  taot::Expected<std::size_t> chosen = vector_add::add_kernel_kernel().select(args, 4);
  if (!chosen.ok()) {
    std::fprintf(stderr, "select failed: %s\n", chosen.status().message().c_str());
    return 1;
  }
  const taot::VariantInfo variant = vector_add::add_kernel_variants()[*chosen];
  CUdevice device;
  GPU_CHECK(cuCtxGetDevice(&device));
  int major = 0, minor = 0;
  GPU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  GPU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  const taot::table::Image* image = nullptr;
  for (std::uint16_t i = 0; i < variant.data().image_count; ++i)
    if (variant.data().images[i].arch == major * 10 + minor) image = &variant.data().images[i];
  if (image == nullptr) {
    std::fprintf(stderr, "no exact cubin for sm_%d%d\n", major, minor);
    return 1;
  }
  CUmodule module;
  CUfunction function;
  GPU_CHECK(cuModuleLoadData(&module, image->cubin));
  GPU_CHECK(cuModuleGetFunction(&function, module, image->function_name));
  CUdeviceptr null_scratch = 0;
  void* raw_params[] = {&x, &y, &out, &n, &null_scratch, &null_scratch};
  const unsigned block = 32u * image->num_warps;
  const unsigned grid = static_cast<unsigned>((n + *variant.config_integer("BLOCK_SIZE") - 1) / *variant.config_integer("BLOCK_SIZE"));

  RuledAddKernel ruled(vector_add::add_kernel_kernel().table());
  taot::Expected<taot::Choice> ruled_choice = ruled.kernel().choose(args, 4);
  if (!ruled_choice.ok() || ruled_choice->variant != *chosen) {
    std::fprintf(stderr, "the ruled kernel chose %s, not the variant of the plain one\n",
                 ruled_choice.ok() ? vector_add::add_kernel_variants()[ruled_choice->variant].id()
                                   : ruled_choice.status().message().c_str());
    return 1;
  }

  std::vector<Method> methods;
  methods.push_back({"raw cuLaunchKernel", [&] {
                       GPU_CHECK(cuLaunchKernel(function, grid, 1, 1, block, 1, 1, image->shared_bytes, stream, raw_params, nullptr));
                     }, {}});
  // Two floors under any launcher that must find the function for the current context: asking
  // the driver for that context, or handing it a context-independent CUkernel (cuLibrary*, as the
  // CUDA runtime does) and letting it find the function itself.
  methods.push_back({"raw + cuCtxGetCurrent", [&] {
                       CUcontext current;
                       GPU_CHECK(cuCtxGetCurrent(&current));
                       GPU_CHECK(cuLaunchKernel(function, grid, 1, 1, block, 1, 1, image->shared_bytes, stream, raw_params, nullptr));
                     }, {}});
  CUlibrary library;
  CUkernel library_kernel;
  GPU_CHECK(cuLibraryLoadData(&library, image->cubin, nullptr, nullptr, 0, nullptr, nullptr, 0));
  GPU_CHECK(cuLibraryGetKernel(&library_kernel, library, image->function_name));
  methods.push_back({"raw CUkernel (cuLibrary)", [&] {
                       GPU_CHECK(cuLaunchKernel(reinterpret_cast<CUfunction>(library_kernel), grid, 1, 1, block, 1, 1,
                                                image->shared_bytes, stream, raw_params, nullptr));
                     }, {}});
  methods.push_back({"taot (auto dispatch)", [&] {
                       taot::Status status = vector_add::add_kernel(stream, taot::Ptr(x, taot::DType::fp32),
                                                                    taot::Ptr(y, taot::DType::fp32),
                                                                    taot::Ptr(out, taot::DType::fp32), n);
                       if (!status.ok()) {
                         std::fprintf(stderr, "%s\n", status.message().c_str());
                         std::exit(1);
                       }
                     }, {}});
  methods.push_back({"taot (rules + 20-entry table)", [&] {
                       taot::Status status = ruled.kernel().launch(stream, args, 4);
                       if (!status.ok()) {
                         std::fprintf(stderr, "%s\n", status.message().c_str());
                         std::exit(1);
                       }
                     }, {}});
#ifdef TAOT_HAVE_UPSTREAM
  load_add_up();
  methods.push_back({"upstream triton.tools AOT C", [&] { GPU_CHECK(add_up_default(stream, x, y, out, n)); }, {}});
#endif

  for (auto& method : methods) {  // warm-up: module loads, first-launch costs
    for (int i = 0; i < 1000; ++i) method.launch();
  }
  GPU_CHECK(cuStreamSynchronize(stream));
  for (int round = 0; round < kRounds; ++round) {
    for (auto& method : methods) {
      GPU_CHECK(cuStreamSynchronize(stream));
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kBatch; ++i) method.launch();
      const auto stop = std::chrono::steady_clock::now();
      method.per_launch_us.push_back(std::chrono::duration<double, std::micro>(stop - start).count() / kBatch);
    }
  }
  GPU_CHECK(cuStreamSynchronize(stream));

  char name[256] = {};
  GPU_CHECK(cuDeviceGetName(name, sizeof(name) - 1, device));
  std::printf("CPU cost per launch, vector_add fp32 n=%d, variant %s (of %zu), %s\n", n, variant.id(),
              vector_add::add_kernel_variants().size(), name);
  std::printf("batches of %d launches after a sync, %d rounds, methods interleaved\n", kBatch, kRounds);
  std::printf("%-30s %10s %10s %10s %10s %18s\n", "method", "median us", "p10 us", "p90 us", "vs raw",
              "halves vs raw");
  const auto half = [](const std::vector<double>& values, int which) {
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    return which == 0 ? std::vector<double>(values.begin(), middle) : std::vector<double>(middle, values.end());
  };
  const double raw_median = percentile(methods[0].per_launch_us, 0.5);
  for (const auto& method : methods) {
    const double median = percentile(method.per_launch_us, 0.5);
    const double first = percentile(half(method.per_launch_us, 0), 0.5) / percentile(half(methods[0].per_launch_us, 0), 0.5);
    const double second = percentile(half(method.per_launch_us, 1), 0.5) / percentile(half(methods[0].per_launch_us, 1), 0.5);
    std::printf("%-30s %10.3f %10.3f %10.3f %9.3fx %8.3fx %8.3fx\n", method.name.c_str(), median,
                percentile(method.per_launch_us, 0.1), percentile(method.per_launch_us, 0.9), median / raw_median, first,
                second);
  }

  // Where taot's extra CPU time goes: the pieces of its launch path, timed alone (no GPU work).
  const auto per_call_ns = [](int calls, const std::function<void()>& body) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) body();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / calls;
  };
  constexpr int kCalls = 1000000;
  CUcontext current = nullptr;
  unsigned long long context_id = 0;
  std::printf("\nlaunch-path pieces, CPU ns per call (%d calls each)\n", kCalls);
  std::printf("%-44s %8.1f\n", "cuCtxGetCurrent", per_call_ns(kCalls, [&] { cuCtxGetCurrent(&current); }));
  std::printf("%-44s %8.1f\n", "cuCtxGetId", per_call_ns(kCalls, [&] { cuCtxGetId(current, &context_id); }));
  std::printf("%-44s %8.1f\n", "taot select (dispatch among all variants)", per_call_ns(kCalls, [&] {
                if (!vector_add::add_kernel_kernel().select(args, 4).ok()) std::exit(1);
              }));
  std::printf("%-44s %8.1f  (step: %s)\n", "taot choose with rules + table", per_call_ns(kCalls, [&] {
                if (!ruled.kernel().choose(args, 4).ok()) std::exit(1);
              }), taot::step_name(ruled_choice->step));
  std::printf("%-44s %8.1f\n", "taot launch with n=0 (select + grid, no launch)", per_call_ns(kCalls, [&] {
                if (!vector_add::add_kernel(stream, taot::Ptr(x, taot::DType::fp32), taot::Ptr(y, taot::DType::fp32),
                                            taot::Ptr(out, taot::DType::fp32), 0).ok())
                  std::exit(1);
              }));
  return 0;
}
