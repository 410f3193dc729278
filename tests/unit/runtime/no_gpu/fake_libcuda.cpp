// A libcuda.so.1 for a machine whose driver finds no GPU: every entry point taot resolves exists,
// cuInit fails with CUDA_ERROR_NO_DEVICE (100) and the rest fail with CUDA_ERROR_NOT_INITIALIZED
// (3). Declared without cuda.h, which renames some of these symbols with macros.
#include <cstddef>

namespace {
constexpr int kNotInitialized = 3;
constexpr int kNoDevice = 100;
}  // namespace

extern "C" {
int cuInit(unsigned) { return kNoDevice; }
int cuGetErrorName(int result, const char** name) {
  *name = result == kNoDevice ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_NOT_INITIALIZED";
  return 0;
}
int cuGetErrorString(int result, const char** text) {
  *text = result == kNoDevice ? "no CUDA-capable device is detected" : "initialization error";
  return 0;
}
int cuCtxGetCurrent(void**) { return kNotInitialized; }
int cuCtxGetDevice(int*) { return kNotInitialized; }
int cuDeviceGetAttribute(int*, int, int) { return kNotInitialized; }
int cuDeviceGetName(char*, int, int) { return kNotInitialized; }
int cuModuleLoadData(void**, const void*) { return kNotInitialized; }
int cuModuleUnload(void*) { return kNotInitialized; }
int cuModuleGetFunction(void**, void*, const char*) { return kNotInitialized; }
int cuFuncSetAttribute(void*, int, int) { return kNotInitialized; }
int cuFuncGetAttribute(int*, int, void*) { return kNotInitialized; }
int cuStreamIsCapturing(void*, int*) { return kNotInitialized; }
int cuCtxSynchronize() { return kNotInitialized; }
int cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**) {
  return kNotInitialized;
}
}
