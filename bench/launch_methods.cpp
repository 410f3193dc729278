// The driver's own CPU cost per launch by the way parameters are passed, for one Triton kernel:
// cuLaunchKernel with kernelParams (an array of pointers), with `extra` (one packed buffer), and
// cuLaunchKernelEx with kernelParams. Says which form the runtime should use and what a launch
// costs at the least (the floor under taot's and torch's per-call figures).
// `bench_launch_methods CUBIN FUNCTION SHARED_BYTES WARPS`: vector_add's add_kernel as Triton 3.6
// compiles it (x, y, out, n, global scratch, profile scratch); bench/launch_methods.py makes the cubin.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gpu_check.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s CUBIN FUNCTION SHARED_BYTES WARPS\n", argv[0]);
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  const std::string cubin((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const unsigned shared = static_cast<unsigned>(std::atoi(argv[3]));
  const unsigned threads = 32u * static_cast<unsigned>(std::atoi(argv[4]));
  make_primary_context_current();
  CUdevice device;
  GPU_CHECK(cuCtxGetDevice(&device));
  CUmodule module;
  GPU_CHECK(cuModuleLoadData(&module, cubin.data()));
  CUfunction function;
  GPU_CHECK(cuModuleGetFunction(&function, module, argv[2]));
  CUstream stream;
  GPU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  const int n = 1024;
  CUdeviceptr x, y, out;
  GPU_CHECK(cuMemAlloc(&x, n * sizeof(float)));
  GPU_CHECK(cuMemAlloc(&y, n * sizeof(float)));
  GPU_CHECK(cuMemAlloc(&out, n * sizeof(float)));
  CUdeviceptr no_scratch = 0;
  int count = n;
  void* params[] = {&x, &y, &out, &count, &no_scratch, &no_scratch};
  // The same arguments packed at their natural alignment: 3 pointers, an i32, 2 pointers.
  alignas(8) unsigned char packed[48] = {};
  std::memcpy(packed + 0, &x, 8);
  std::memcpy(packed + 8, &y, 8);
  std::memcpy(packed + 16, &out, 8);
  std::memcpy(packed + 24, &count, 4);
  std::memcpy(packed + 32, &no_scratch, 8);
  std::memcpy(packed + 40, &no_scratch, 8);
  std::size_t packed_size = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                   CU_LAUNCH_PARAM_END};
  CUlaunchConfig config = {};
  config.gridDimX = 1;
  config.gridDimY = 1;
  config.gridDimZ = 1;
  config.blockDimX = threads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = shared;
  config.hStream = stream;

  struct Method {
    const char* name;
    CUresult (*launch)(CUfunction, unsigned, CUstream, void**, void**, CUlaunchConfig*);
  };
  const Method methods[] = {
      {"cuLaunchKernel, kernelParams",
       [](CUfunction f, unsigned s, CUstream st, void** p, void**, CUlaunchConfig* c) {
         return cuLaunchKernel(f, 1, 1, 1, c->blockDimX, 1, 1, s, st, p, nullptr);
       }},
      {"cuLaunchKernel, extra (packed buffer)",
       [](CUfunction f, unsigned s, CUstream st, void**, void** e, CUlaunchConfig* c) {
         return cuLaunchKernel(f, 1, 1, 1, c->blockDimX, 1, 1, s, st, nullptr, e);
       }},
      {"cuLaunchKernelEx, kernelParams",
       [](CUfunction f, unsigned, CUstream, void** p, void**, CUlaunchConfig* c) {
         return cuLaunchKernelEx(c, f, p, nullptr);
       }},
  };
  constexpr int kMethods = 3, kBatch = 256, kRounds = 400;
  std::vector<double> per_launch[kMethods];
  for (int round = 0; round < kRounds; ++round) {
    for (int m = 0; m < kMethods; ++m) {
      GPU_CHECK(cuStreamSynchronize(stream));
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kBatch; ++i) GPU_CHECK(methods[m].launch(function, shared, stream, params, extra, &config));
      const auto stop = std::chrono::steady_clock::now();
      per_launch[m].push_back(std::chrono::duration<double, std::nano>(stop - start).count() / kBatch);
    }
  }
  GPU_CHECK(cuStreamSynchronize(stream));
  char name[256];
  GPU_CHECK(cuDeviceGetName(name, sizeof name, device));
  std::printf("CPU ns per launch by parameter passing, %s, %s (%u threads), batches of %d after a sync, "
              "%d rounds interleaved\n", name, argv[2], threads, kBatch, kRounds);
  double first = 0;
  for (int m = 0; m < kMethods; ++m) {
    std::vector<double>& values = per_launch[m];
    std::sort(values.begin(), values.end());
    const double median = values[values.size() / 2];
    if (m == 0) first = median;
    std::printf("  %-40s median %7.1f  p10 %7.1f  p90 %7.1f  %.3fx\n", methods[m].name, median,
                values[values.size() / 10], values[values.size() * 9 / 10], median / first);
  }
  return 0;
}
