// Calls the generated vector_add library from C++ with the CUDA runtime API and checks the result
// on the CPU: one automatic launch (taot picks the variant), one with an exact config.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "vector_add.h"

#define CUDA_OK(call)                                                                         \
  do {                                                                                        \
    cudaError_t cuda_ok_error = (call);                                                       \
    if (cuda_ok_error != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(cuda_ok_error));     \
      return 1;                                                                               \
    }                                                                                         \
  } while (0)

int main() {
  const int n = 98432;
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = std::sin(0.001f * i);
    y[i] = std::cos(0.002f * i);
  }
  CUDA_OK(cudaSetDevice(0));  // makes device 0's primary context current: taot launches there
  float *dx, *dy, *dout;
  CUDA_OK(cudaMalloc(&dx, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&dy, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&dout, n * sizeof(float)));
  CUDA_OK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));

  // Automatic selection: float* pointers carry their dtype; alignment and n pick the variant.
  taot::Status status = vector_add::add_kernel(stream, dx, dy, dout, n);
  if (!status.ok()) {
    std::fprintf(stderr, "vector_add::add_kernel: %s\n", status.message().c_str());
    return 1;
  }
  // Exact selection by config.
  vector_add::add_kernel_config config;
  config.BLOCK_SIZE = 256;
  config.num_warps = 8;
  status = vector_add::add_kernel(stream, dx + 1, dy + 1, dout + 1, n - 1, config);  // misaligned: 4 bytes off
  if (!status.ok()) {
    std::fprintf(stderr, "vector_add::add_kernel (config): %s\n", status.message().c_str());
    return 1;
  }
  CUDA_OK(cudaMemcpyAsync(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));

  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += out[i] != x[i] + y[i];
  std::printf("vector_add: %d elements, %d wrong, %zu variants in the library\n", n, wrong,
              vector_add::add_kernel_variants().size());
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dout);
  return wrong == 0 ? 0 : 1;
}
