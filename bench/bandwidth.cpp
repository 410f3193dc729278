// vector_add bandwidth at n = 2^28 fp32 through taot, against a device-to-device copy in the same
// run. Times with CUDA events, median of 30 after warm-up; counts 3 x 4 bytes per element for the
// add and 2 x 4 bytes per element (read + write) for the copy.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <vector>

#include "gpu_check.h"
#include "vector_add.h"

namespace {

double median_ms(CUstream stream, const std::function<void()>& work) {
  CUevent start, stop;
  GPU_CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  GPU_CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  for (int i = 0; i < 5; ++i) work();
  std::vector<double> times;
  for (int i = 0; i < 30; ++i) {
    GPU_CHECK(cuEventRecord(start, stream));
    work();
    GPU_CHECK(cuEventRecord(stop, stream));
    GPU_CHECK(cuEventSynchronize(stop));
    float ms = 0;
    GPU_CHECK(cuEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  GPU_CHECK(cuEventDestroy(start));
  GPU_CHECK(cuEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  make_primary_context_current(0);
  CUstream stream;
  GPU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  const std::int32_t n = 1 << 28;
  const std::size_t bytes = static_cast<std::size_t>(n) * 4;
  CUdeviceptr x, y, out;
  GPU_CHECK(cuMemAlloc(&x, bytes));
  GPU_CHECK(cuMemAlloc(&y, bytes));
  GPU_CHECK(cuMemAlloc(&out, bytes));
  GPU_CHECK(cuMemsetD32(x, 0x3f800000u, static_cast<std::size_t>(n)));  // 1.0f
  GPU_CHECK(cuMemsetD32(y, 0x40000000u, static_cast<std::size_t>(n)));  // 2.0f

  const double copy_ms = median_ms(stream, [&] { GPU_CHECK(cuMemcpyDtoDAsync(out, x, bytes, stream)); });
  const double copy_gbs = 2.0 * static_cast<double>(bytes) / (copy_ms * 1e6);
  std::printf("vector_add fp32 n=2^28: bandwidth through taot vs device-to-device copy (CUDA events, median of 30)\n");
  std::printf("%-36s %10s %10s %10s\n", "what", "ms", "GB/s", "vs copy");
  std::printf("%-36s %10.3f %10.1f %10.3f\n", "cuMemcpyDtoD (read+write)", copy_ms, copy_gbs, 1.0);

  struct Config {
    const char* label;
    std::optional<std::int64_t> block, warps;
  };
  const Config configs[] = {{"taot auto (default config)", {}, {}},
                            {"taot BLOCK_SIZE=1024 num_warps=8", 1024, 8},
                            {"taot BLOCK_SIZE=256 num_warps=4", 256, 4}};
  for (const Config& config : configs) {
    vector_add::add_kernel_config request;
    request.BLOCK_SIZE = config.block;
    request.num_warps = config.warps;
    const double ms = median_ms(stream, [&] {
      taot::Status status = vector_add::add_kernel(stream, taot::Ptr(x, taot::DType::fp32), taot::Ptr(y, taot::DType::fp32),
                                                   taot::Ptr(out, taot::DType::fp32), n, request);
      if (!status.ok()) {
        std::fprintf(stderr, "%s\n", status.message().c_str());
        std::exit(1);
      }
    });
    const double gbs = 3.0 * static_cast<double>(bytes) / (ms * 1e6);
    std::printf("%-36s %10.3f %10.1f %10.3f\n", config.label, ms, gbs, gbs / copy_gbs);
  }
  std::vector<float> sample(4);
  GPU_CHECK(cuMemcpyDtoH(sample.data(), out + bytes - 16, 16));
  const bool right = std::all_of(sample.begin(), sample.end(), [](float v) { return v == 3.0f; });
  std::printf("result check (last elements == 3): %s\n", right ? "ok" : "WRONG");
  return right ? 0 : 1;
}
