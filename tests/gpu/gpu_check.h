// Helpers shared by the GPU tests and benchmarks: driver calls that must succeed, a primary
// context, and host conversions for fp16/bf16.
#pragma once

#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// Aborts the test program (never library code) with the failing call and its CUDA error name.
#define GPU_CHECK(call)                                                                  \
  do {                                                                                   \
    CUresult gpu_check_result = (call);                                                  \
    if (gpu_check_result != CUDA_SUCCESS) {                                              \
      const char* gpu_check_name = nullptr;                                              \
      cuGetErrorName(gpu_check_result, &gpu_check_name);                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,          \
                   gpu_check_name ? gpu_check_name : "unknown CUDA error");              \
      std::exit(2);                                                                      \
    }                                                                                    \
  } while (0)

// Makes device `ordinal`'s primary context current on this thread and returns it.
inline CUcontext make_primary_context_current(int ordinal = 0) {
  GPU_CHECK(cuInit(0));
  CUdevice device;
  GPU_CHECK(cuDeviceGet(&device, ordinal));
  CUcontext context;
  GPU_CHECK(cuDevicePrimaryCtxRetain(&context, device));
  GPU_CHECK(cuCtxSetCurrent(context));
  return context;
}

inline float bits_to_float(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
inline std::uint32_t float_to_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// bf16 <-> float, round to nearest even (inputs here are finite).
inline std::uint16_t float_to_bf16(float value) {
  const std::uint32_t bits = float_to_bits(value);
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}
inline float bf16_to_float(std::uint16_t bits) { return bits_to_float(static_cast<std::uint32_t>(bits) << 16); }

// IEEE half <-> float for normal and subnormal finite values, round to nearest even.
inline float fp16_to_float(std::uint16_t half) {
  const std::uint32_t sign = (half >> 15) & 1u, exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
  float magnitude;
  if (exponent == 0) magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
  else magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  return sign ? -magnitude : magnitude;
}
inline std::uint16_t float_to_fp16(float value) {
  const std::uint16_t sign = std::signbit(value) ? 0x8000u : 0u;
  float magnitude = std::fabs(value);
  if (magnitude >= 65520.0f) return sign | 0x7c00u;
  if (magnitude < std::ldexp(1.0f, -14)) {  // subnormal: units of 2^-24
    const float units = std::nearbyint(magnitude * std::ldexp(1.0f, 24));
    return sign | static_cast<std::uint16_t>(units);
  }
  int exponent;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  const float scaled = std::nearbyint(std::ldexp(magnitude, 11 - exponent));  // 11 significant bits
  std::uint32_t significand = static_cast<std::uint32_t>(scaled);
  if (significand == 2048u) {
    significand = 1024u;
    ++exponent;
  }
  const std::uint32_t biased = static_cast<std::uint32_t>(exponent - 1 + 15);
  if (biased >= 31) return sign | 0x7c00u;
  return static_cast<std::uint16_t>(sign | (biased << 10) | (significand & 0x3ffu));
}
