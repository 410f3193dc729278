/* A stand-in for libcuda.so.1 with the three entry points `taot tune` asks for a GPU count
 * (python/taot/measure/tuner.py, visible_gpu_count): cuInit answers $FAKE_CUINIT (default 0, success),
 * cuDeviceGetCount answers $FAKE_GPU_COUNT devices, cuGetErrorName names 100 and 999. */
#include <stdlib.h>

static int env_int(const char *name, int fallback) {
  const char *text = getenv(name);
  return text ? atoi(text) : fallback;
}

int cuInit(unsigned flags) {
  (void)flags;
  return env_int("FAKE_CUINIT", 0);
}

int cuDeviceGetCount(int *count) {
  *count = env_int("FAKE_GPU_COUNT", 0);
  return 0;
}

int cuGetErrorName(int status, const char **name) {
  *name = status == 100 ? "CUDA_ERROR_NO_DEVICE" : status == 999 ? "CUDA_ERROR_UNKNOWN" : 0;
  return *name ? 0 : 1;
}
