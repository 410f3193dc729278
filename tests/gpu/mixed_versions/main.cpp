// Two taot libraries compiled by different Triton releases in one program: vector_add (pointers and
// scalars) and launch_features' host_descriptor_scale (host tensor descriptors), whose images record
// different launch ABIs ("3.5" and "3.7"); both launch correctly side by side, interleaved on one
// stream. On sm_90 the descriptors are TMA maps, which both ABIs pass alike: the parameter 3.7 added
// is passed only without TMA (before sm_90), which no GPU here runs; taot gen's check against real
// 3.6.0 and 3.7.1 cubins and the runtime's packing tests cover it (tests/unit). Checks both results
// on the CPU; exits non-zero on any error or mismatch.
#include <cstdio>
#include <vector>

#include "gpu_check.h"
#include "launch_features.h"
#include "vector_add.h"

#define TAOT_OK(call)                                                             \
  do {                                                                            \
    taot::Status taot_ok_status = (call);                                         \
    if (!taot_ok_status.ok()) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #call, taot_ok_status.message().c_str()); \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

template <class T>
T* device_copy(const std::vector<T>& host) {
  CUdeviceptr device;
  GPU_CHECK(cuMemAlloc(&device, host.size() * sizeof(T)));
  GPU_CHECK(cuMemcpyHtoD(device, host.data(), host.size() * sizeof(T)));
  return reinterpret_cast<T*>(device);
}

template <class T>
std::vector<T> host_copy(const T* device, std::size_t count) {
  std::vector<T> host(count);
  GPU_CHECK(cuMemcpyDtoH(host.data(), reinterpret_cast<CUdeviceptr>(device), count * sizeof(T)));
  return host;
}

int main() {
  make_primary_context_current();
  CUstream stream;
  GPU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  // vector_add: sum = x + y.
  const int n = 100003;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = std::sin(0.001f * i);
    y[i] = std::cos(0.003f * i);
  }
  // host_descriptor_scale: scaled = 2 * in over a rows x cols fp32 matrix whose edges are partial blocks.
  const int rows = 200, cols = 96;
  std::vector<float> in(rows * cols);
  for (int i = 0; i < rows * cols; ++i) in[i] = static_cast<float>((i * 37) % 1001) - 500.0f;
  const std::vector<float> nan_poison(in.size(), std::nanf(""));  // every element must be written

  float* dx = device_copy(x);
  float* dy = device_copy(y);
  float* dsum = device_copy(std::vector<float>(n, std::nanf("")));
  float* din = device_copy(in);
  float* dscaled = device_copy(nan_poison);
  for (int round = 0; round < 3; ++round) {  // the two libraries' launches interleaved on one stream
    TAOT_OK(vector_add::add_kernel(stream, dx, dy, dsum, n));
    TAOT_OK(launch_features::host_descriptor_scale(stream, taot::tensor_desc(din, {rows, cols}),
                                                   taot::tensor_desc(dscaled, {rows, cols}), rows, cols));
  }
  GPU_CHECK(cuStreamSynchronize(stream));
  const std::vector<float> sum = host_copy(dsum, n), scaled = host_copy(dscaled, in.size());

  int wrong_sum = 0, wrong_scaled = 0;
  for (int i = 0; i < n; ++i) wrong_sum += sum[i] != x[i] + y[i];
  for (std::size_t i = 0; i < in.size(); ++i) wrong_scaled += scaled[i] != 2.0f * in[i];
  std::printf("vector_add: %d of %d wrong; host_descriptor_scale: %d of %d wrong\n", wrong_sum, n, wrong_scaled,
              rows * cols);
  for (float* buffer : {dx, dy, dsum, din, dscaled}) GPU_CHECK(cuMemFree(reinterpret_cast<CUdeviceptr>(buffer)));
  GPU_CHECK(cuStreamDestroy(stream));
  return wrong_sum == 0 && wrong_scaled == 0 ? 0 : 1;
}
